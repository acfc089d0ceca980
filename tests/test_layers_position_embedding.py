"""PositionEmbedding: adds a learned embedding per position; init, config, .keras round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.layers import PositionEmbedding

from conftest import assert_round_trip_in_process, to_numpy


def test_position_embedding_is_added():
    x = np.random.default_rng(0).random((3, 4, 6)).astype("float32")
    layer = PositionEmbedding(initializer="ones")
    np.testing.assert_allclose(to_numpy(layer(x)), x + 1.0, rtol=1e-6)
    assert tuple(layer.embedding.shape) == (1, 4, 6)
    clone = PositionEmbedding.from_config(layer.get_config())
    assert isinstance(clone.initializer, keras.initializers.Ones)


def test_default_initialization_is_timms():
    layer = PositionEmbedding()
    layer.build((None, 65, 64))
    embedding = to_numpy(layer.embedding)
    assert np.std(embedding) == pytest.approx(0.02, rel=0.06)


def test_needs_a_fixed_number_of_tokens():
    with pytest.raises(ValueError, match="fixed number of tokens"):
        PositionEmbedding().build((None, None, 8))


@pytest.mark.parametrize("shape", [(2, 4), (2, 4, 4, 3)])
def test_needs_rank_3_inputs(shape):
    # A rank-2 input was an IndexError, a rank-4 one a broadcasting error inside call().
    with pytest.raises(ValueError, match=r"`input_shape` must have rank 3, \(batch, tokens, channels\)"):
        PositionEmbedding()(np.ones(shape, "float32"))
    with pytest.raises(ValueError, match="`input_shape`"):
        PositionEmbedding()(keras.Input(shape[1:]))


def test_bad_initializer_is_named():
    with pytest.raises(TypeError, match="`initializer`"):
        PositionEmbedding(initializer=3)
    with pytest.raises(ValueError, match="`initializer`"):
        PositionEmbedding(initializer="no_such_initializer")


def test_registered_name_loads_configs_saved_before_the_move():
    config = keras.saving.serialize_keras_object(PositionEmbedding(initializer="ones"))
    assert config["registered_name"] == "keras_structinit>PositionEmbedding"
    config["module"] = "keras_structinit.models.vit"  # where it lived before
    assert isinstance(keras.saving.deserialize_keras_object(config).initializer, keras.initializers.Ones)
    assert ks.models.PositionEmbedding is PositionEmbedding


def test_keras_round_trip_in_process(tmp_path):
    inputs = keras.Input((4, 6))
    model = keras.Model(inputs, PositionEmbedding(name="position_embedding")(inputs))
    x = np.random.default_rng(0).random((2, 4, 6)).astype("float32")
    layer = assert_round_trip_in_process(model, x, tmp_path).get_layer("position_embedding")
    assert isinstance(layer, PositionEmbedding)
    np.testing.assert_array_equal(
        to_numpy(layer.embedding), to_numpy(model.get_layer("position_embedding").embedding)
    )
