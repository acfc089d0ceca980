"""LayerScale: per-channel scale, config, argument checks, .keras round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.layers import LayerScale

from conftest import assert_round_trip_in_process, to_numpy


def test_layer_scale_multiplies_channels():
    layer = LayerScale(1e-3)
    x = np.ones((2, 3, 5), "float32")
    y = to_numpy(layer(x))
    assert tuple(layer.gamma.shape) == (5,)
    np.testing.assert_allclose(y, 1e-3, rtol=1e-6)
    layer.gamma.assign(np.arange(5, dtype="float32"))
    np.testing.assert_allclose(to_numpy(layer(x))[0, 0], np.arange(5))
    assert LayerScale.from_config(layer.get_config()).init_value == 1e-3


def test_bad_init_value():
    with pytest.raises(TypeError, match="init_value"):
        LayerScale("big")
    with pytest.raises(ValueError, match="init_value"):
        LayerScale(float("nan"))


def test_registered_name_loads_configs_saved_before_the_move():
    config = keras.saving.serialize_keras_object(LayerScale(0.5))
    assert config["registered_name"] == "keras_structinit>LayerScale"
    config["module"] = "keras_structinit.models.common"  # where it lived before
    assert keras.saving.deserialize_keras_object(config).init_value == 0.5
    assert ks.models.LayerScale is LayerScale


def test_keras_round_trip_in_process(tmp_path):
    inputs = keras.Input((4, 4, 6))
    model = keras.Model(inputs, LayerScale(0.5, name="scale")(inputs))
    model.get_layer("scale").gamma.assign(np.linspace(-1, 1, 6).astype("float32"))
    x = np.random.default_rng(0).random((2, 4, 4, 6)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("scale"), LayerScale)
    assert loaded.get_layer("scale").init_value == 0.5
