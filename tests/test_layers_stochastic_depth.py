"""StochasticDepth: identity at inference, whole-sample drops in training, config, round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.layers import StochasticDepth

from conftest import assert_round_trip_in_process, to_numpy


def test_stochastic_depth_is_identity_at_inference():
    layer = StochasticDepth(0.7, seed=1)
    x = np.random.default_rng(0).random((8, 4, 4, 3)).astype("float32")
    np.testing.assert_array_equal(to_numpy(layer(x)), x)
    np.testing.assert_array_equal(to_numpy(layer(x, training=False)), x)
    # rate 0 is the identity in training too.
    np.testing.assert_array_equal(to_numpy(StochasticDepth(0.0)(x, training=True)), x)


def test_stochastic_depth_drops_whole_samples_in_training():
    rate = 0.5
    layer = StochasticDepth(rate, seed=3)
    x = np.random.default_rng(1).random((64, 3, 3, 2)).astype("float32") + 0.5  # all > 0
    y = to_numpy(layer(x, training=True))
    dropped = np.all(y == 0, axis=(1, 2, 3))
    kept = np.all(np.isclose(y, x / (1 - rate), rtol=1e-6), axis=(1, 2, 3))
    # Every sample is either zeroed entirely or kept entirely (rescaled).
    assert np.all(dropped ^ kept)
    # P(all 64 samples on one side) = 2 * 2^-64.
    assert dropped.any() and kept.any()
    # The seed generator advances: a second call draws a new mask.
    masks = [np.all(to_numpy(layer(x, training=True)) == 0, axis=(1, 2, 3)) for _ in range(3)]
    assert any((m != dropped).any() for m in masks)


def test_stochastic_depth_config_and_bad_arguments():
    layer = StochasticDepth(0.25, seed=7, name="dp")
    clone = StochasticDepth.from_config(layer.get_config())
    assert (clone.rate, clone.seed, clone.name) == (0.25, 7, "dp")
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match="rate"):
            StochasticDepth(bad)
    for bad in ("0.1", True):
        with pytest.raises(TypeError, match="rate"):
            StochasticDepth(bad)
    for bad in ("7", 1.5):
        with pytest.raises(TypeError, match="seed"):
            StochasticDepth(0.1, seed=bad)
    for bad in (-1, 2**32):  # JAX overflowed (uint32 seeds); TF and torch accepted them
        with pytest.raises(ValueError, match="`seed`"):
            StochasticDepth(0.1, seed=bad)


def test_registered_name_loads_configs_saved_before_the_move():
    config = keras.saving.serialize_keras_object(StochasticDepth(0.2, seed=4))
    assert config["registered_name"] == "keras_structinit>StochasticDepth"
    config["module"] = "keras_structinit.models.common"  # where it lived before
    assert keras.saving.deserialize_keras_object(config).seed == 4
    assert ks.models.StochasticDepth is StochasticDepth


def test_keras_round_trip_in_process(tmp_path):
    inputs = keras.Input((5,))
    branch = StochasticDepth(0.3, seed=5, name="drop_path")(keras.layers.Dense(5, name="dense")(inputs))
    model = keras.Model(inputs, keras.layers.Add()([inputs, branch]))
    x = np.random.default_rng(0).random((4, 5)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    layer = loaded.get_layer("drop_path")
    assert isinstance(layer, StochasticDepth) and (layer.rate, layer.seed) == (0.3, 5)


def test_a_reloaded_model_draws_the_masks_the_saved_one_would(tmp_path):
    """Issue 37: the SeedGenerator's state is saved with the layer, so training continued after a
    reload (or a resume from a backup) draws the same masks as a run that never stopped."""
    inputs = keras.Input((4,))
    model = keras.Model(inputs, StochasticDepth(0.5, seed=1)(keras.layers.Dense(4)(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((8, 4)), np.ones((8, 4)), batch_size=4, epochs=2, verbose=0)  # 4 draws
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    x = np.ones((64, 4), "float32")
    drawn = [keras.ops.convert_to_numpy(m.layers[-1](x, training=True)) for m in (model, loaded)]
    np.testing.assert_array_equal(drawn[0], drawn[1])
    fresh = keras.Model(inputs, StochasticDepth(0.5, seed=1)(inputs)).layers[-1]
    assert not np.array_equal(keras.ops.convert_to_numpy(fresh(x, training=True)), drawn[0])
