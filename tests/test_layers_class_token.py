"""ClassToken: prepends a learned token; init, config, .keras round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.layers import ClassToken

from conftest import assert_round_trip_in_process, to_numpy


def test_class_token_is_prepended():
    x = np.random.default_rng(0).random((3, 4, 6)).astype("float32")
    layer = ClassToken(initializer="ones")
    y = to_numpy(layer(x))
    assert y.shape == (3, 5, 6)
    np.testing.assert_array_equal(y[:, 0], 1.0)
    np.testing.assert_allclose(y[:, 1:], x)
    assert tuple(layer.token.shape) == (1, 1, 6)
    assert layer.compute_output_shape((None, 4, 6)) == (None, 5, 6)
    clone = ClassToken.from_config(layer.get_config())
    assert isinstance(clone.initializer, keras.initializers.Ones)


@pytest.mark.parametrize("shape", [(2, 4), (2, 4, 4, 3)])
def test_needs_rank_3_inputs(shape):
    # A rank-2 input was an IndexError inside call(); a rank-4 one silently grew its second axis.
    with pytest.raises(ValueError, match=r"`input_shape` must have rank 3, \(batch, tokens, channels\)"):
        ClassToken()(np.ones(shape, "float32"))
    with pytest.raises(TypeError, match="`initializer`"):
        ClassToken(initializer=3)


def test_default_initialization_is_timms():
    layer = ClassToken()
    layer.build((None, 4, 512))
    token = to_numpy(layer.token)
    assert 0 < np.abs(token).max() < 1e-5 and np.std(token) < 2e-6


def test_registered_name_loads_configs_saved_before_the_move():
    config = keras.saving.serialize_keras_object(ClassToken(initializer="ones"))
    assert config["registered_name"] == "keras_structinit>ClassToken"
    config["module"] = "keras_structinit.models.vit"  # where it lived before
    assert isinstance(keras.saving.deserialize_keras_object(config).initializer, keras.initializers.Ones)
    assert ks.models.ClassToken is ClassToken


def test_keras_round_trip_in_process(tmp_path):
    inputs = keras.Input((4, 6))
    model = keras.Model(inputs, ClassToken(name="class_token")(inputs))
    model.get_layer("class_token").token.assign(np.arange(6, dtype="float32").reshape(1, 1, 6))
    x = np.random.default_rng(0).random((2, 4, 6)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("class_token"), ClassToken)
