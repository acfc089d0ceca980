"""baseline.trunc_normal: the weight-selection paper's baseline as its text reads (Xu et al., Sec. 4)."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.baseline.trunc_normal import apply_trunc_normal


def _model():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(64, 3, name="stem")(inputs)
    x = keras.layers.DepthwiseConv2D(3, name="spatial")(x)
    x = keras.layers.LayerNormalization(name="norm")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(10, name="head")(x))


def test_kernels_are_normal_with_the_given_std_and_biases_zero():
    model = _model()
    gamma = keras.ops.convert_to_numpy(model.get_layer("norm").gamma).copy()
    paths = apply_trunc_normal(model, seed=0, std=0.05)
    assert paths == ["stem/kernel", "stem/bias", "spatial/kernel", "spatial/bias", "head/kernel", "head/bias"]
    for name in ("stem", "spatial", "head"):
        layer = model.get_layer(name)
        kernel = keras.ops.convert_to_numpy(layer.kernel).ravel()
        # The sample variance of n normal draws has relative std sqrt(2 / n); 5 of it bounds a wrong std.
        assert abs(kernel.var() / 0.05**2 - 1) < 5 * np.sqrt(2 / kernel.size), name
        assert abs(kernel.mean()) < 5 * 0.05 / np.sqrt(kernel.size), name
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.bias), 0.0)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(model.get_layer("norm").gamma), gamma)


def test_the_init_form_is_seeded_and_restricted_by_layers():
    a, b = _model(), _model()
    ks.initialize(a, "trunc-normal", seed=3)
    ks.initialize(b, "trunc-normal:0.02", seed=3)
    for va, vb in zip(a.weights, b.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(va), keras.ops.convert_to_numpy(vb))
    head = keras.ops.convert_to_numpy(a.get_layer("head").kernel).copy()
    assert apply_trunc_normal(a, layers=["stem"], seed=4) == ["stem/kernel", "stem/bias"]
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(a.get_layer("head").kernel), head)


def test_bad_arguments():
    model = _model()
    with pytest.raises(ValueError, match="`std`"):
        apply_trunc_normal(model, std=0.0)
    with pytest.raises(TypeError, match="`std`"):
        apply_trunc_normal(model, std="0.02")
    with pytest.raises(ValueError, match="no conv or Dense weights"):
        apply_trunc_normal(model, layers=["norm"])
    with pytest.raises(ValueError, match="trunc-normal.*standard deviation > 0"):
        ks.initialize(model, "trunc-normal:-1")
