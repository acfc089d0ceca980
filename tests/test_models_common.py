"""Shared model helpers: stochastic depth, layer scale, argument checks."""

import keras
import numpy as np
import pytest

from keras_structinit.models import LayerScale, StochasticDepth
from keras_structinit.models.common import (
    check_input_shape,
    check_rate,
    drop_path_rates,
    trunc_normal,
)

from conftest import to_numpy


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


def test_stochastic_depth_config_and_bad_rate():
    layer = StochasticDepth(0.25, seed=7, name="dp")
    clone = StochasticDepth.from_config(layer.get_config())
    assert (clone.rate, clone.seed, clone.name) == (0.25, 7, "dp")
    for bad in (1.0, -0.1, "0.1", True):
        with pytest.raises(ValueError, match="rate"):
            StochasticDepth(bad)


def test_layer_scale_multiplies_channels():
    layer = LayerScale(1e-3)
    x = np.ones((2, 3, 5), "float32")
    y = to_numpy(layer(x))
    assert tuple(layer.gamma.shape) == (5,)
    np.testing.assert_allclose(y, 1e-3, rtol=1e-6)
    layer.gamma.assign(np.arange(5, dtype="float32"))
    np.testing.assert_allclose(to_numpy(layer(x))[0, 0], np.arange(5))
    assert LayerScale.from_config(layer.get_config()).init_value == 1e-3
    with pytest.raises(ValueError, match="init_value"):
        LayerScale("big")


def test_drop_path_rates_are_linear():
    np.testing.assert_allclose(drop_path_rates(5, 0.2), [0.0, 0.05, 0.1, 0.15, 0.2])
    assert drop_path_rates(1, 0.3) == [0.0]


def test_argument_checks_name_the_argument():
    with pytest.raises(ValueError, match="`p`"):
        check_rate(1.5, "p")
    assert check_input_shape([32, 32, 3]) == (32, 32, 3)
    assert check_input_shape((None, None, 3), allow_none=True) == (None, None, 3)
    for bad in ((None, 32, 3), (32, 32), (32, 0, 3), "32x32x3"):
        with pytest.raises(ValueError, match="input_shape"):
            check_input_shape(bad)


def test_trunc_normal_matches_official_scale():
    # timm's trunc_normal_(std=.02) truncates at +-2 absolute: a plain N(0, 0.02^2).
    values = to_numpy(trunc_normal()((256, 256)))
    assert np.std(values) == pytest.approx(0.02, rel=0.03)
    assert np.abs(values.mean()) < 1e-3
    # Fresh instances draw fresh values (unseeded Keras initializers repeat).
    assert not np.array_equal(values, to_numpy(trunc_normal()((256, 256))))
    assert isinstance(trunc_normal(), keras.initializers.RandomNormal)
