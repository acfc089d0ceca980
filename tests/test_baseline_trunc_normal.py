"""baseline.trunc_normal: the weight-selection paper's baseline as its text reads (Xu et al., Sec. 4)."""

import math

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


# ------------------------------------------------------------------ issue 77.4: NumPy, one draw per kernel


def _truncated_std(std, bound=2.0):
    """The standard deviation of N(0, std^2) truncated to [-bound, bound]: std sqrt(1 - 2 a phi(a) /
    (2 Phi(a) - 1)), a = bound / std."""
    a = bound / std
    phi = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(a / math.sqrt(2))  # 2 Phi(a) - 1
    return std * math.sqrt(1 - 2 * a * phi / mass)


def _wide():
    inputs = keras.Input((256,))
    return keras.Model(inputs, keras.layers.Dense(256, name="wide")(inputs))


@pytest.mark.parametrize("std", [0.02, 1.0, 3.0])
def test_draws_follow_the_truncated_normal_at_plus_minus_2(std):
    """timm's bounds [-2, 2] are absolute: at 0.02 they are +-100 std (a plain normal); at 1.0 they
    cut at +-2 std (normal proposals), at 3.0 at +-0.67 std (uniform proposals)."""
    model = _wide()
    apply_trunc_normal(model, seed=0, std=std)
    values = keras.ops.convert_to_numpy(model.get_layer("wide").kernel).astype(np.float64).ravel()
    n, expected = values.size, _truncated_std(std)
    assert np.abs(values).max() <= 2.0
    assert np.abs(values).max() > (1.99 if std >= 1 else 3.5 * std)  # the range is reached
    # Sample variance: relative std sqrt((kurtosis - 1) / n) <= sqrt(2 / n) for these laws.
    assert abs(values.var() / expected**2 - 1) < 5 * math.sqrt(2 / n), (values.std(), expected)
    assert abs(values.mean()) < 5 * expected / math.sqrt(n)
    if std == 1.0:  # not the untruncated law: 0.88 std
        assert values.std() < 0.9


def test_the_draws_are_numpy_per_path_and_the_same_on_a_rerun():
    """Backend-free: the kernel equals the NumPy draw of its own generator (seed, its place in the
    model), so a rerun, another build (layers named anew), another backend or a subset of layers
    gives the same values."""
    from keras_structinit.baseline.sampling import truncated_normal, variable_rngs

    model = _model()
    apply_trunc_normal(model, seed=7, std=0.05)
    for name in ("stem", "spatial", "head"):
        kernel = model.get_layer(name).kernel
        (rng,) = variable_rngs(7, model, [kernel])
        expected = truncated_normal(rng, tuple(kernel.shape), 0.05).astype("float32")
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(kernel), expected, err_msg=name)
    again = _model()
    apply_trunc_normal(again, layers=["head"], seed=7, std=0.05)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(again.get_layer("head").kernel),
        keras.ops.convert_to_numpy(model.get_layer("head").kernel),
    )
    rerun = _model()
    ks.initialize(rerun, "trunc-normal:0.05", seed=7)
    for va, vb in zip(model.weights, rerun.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(va), keras.ops.convert_to_numpy(vb))


def test_whole_model_forms_trace_nothing(monkeypatch):
    """One NumPy draw per kernel: no keras.random op (traced per kernel shape on JAX) in the forms."""

    def refused(*args, **kwargs):
        raise AssertionError("keras.random called")

    model = _model()
    for name in ("normal", "uniform", "truncated_normal"):
        monkeypatch.setattr(keras.random, name, refused)
    for spec in ("trunc-normal", "torch-default", "torch-default-depthwise"):
        assert ks.initialize(model, spec, seed=1)
