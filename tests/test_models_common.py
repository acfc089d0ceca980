"""Shared model helpers: initializer arguments, drop-path rates, trunc-normal, argument checks."""

import keras
import numpy as np
import pytest

from keras_structinit.initializers import ConvCovariance, TorchDefaultUniform
from keras_structinit.models.common import (
    check_initializer,
    check_min_size,
    clone_initializer,
    drop_path_rates,
    initializer_at_depth,
    positive_int_arguments,
    trunc_normal,
)

from conftest import to_numpy


def test_drop_path_rates_are_linear():
    np.testing.assert_allclose(drop_path_rates(5, 0.2), [0.0, 0.05, 0.1, 0.15, 0.2])
    assert drop_path_rates(1, 0.3) == [0.0]


def test_positive_int_arguments_name_the_argument():
    assert positive_int_arguments(dim=8, depth=2) == (8, 2)
    with pytest.raises(ValueError, match="`depth`"):
        positive_int_arguments(dim=8, depth=0)
    with pytest.raises(TypeError, match="`dim`"):
        positive_int_arguments(dim="8", depth=2)


def test_check_min_size_names_input_shape():
    check_min_size((None, 8, 3), 8, "three poolings")
    with pytest.raises(ValueError, match="`input_shape` must be at least 16 x 16 for four poolings"):
        check_min_size((32, 8, 3), 16, "four poolings")


def test_check_initializer_accepts_what_keras_accepts():
    default = TorchDefaultUniform()
    assert check_initializer(None, "kernel_initializer", default) is default
    he_normal = check_initializer("he_normal", "kernel_initializer", default)
    assert isinstance(he_normal, keras.initializers.HeNormal)
    config = {"class_name": "Constant", "config": {"value": 0.5}}
    assert check_initializer(config, "kernel_initializer", default).value == 0.5
    ones = keras.initializers.Ones()
    assert check_initializer(ones, "kernel_initializer", default) is ones
    zeros = check_initializer(keras.initializers.Zeros, "kernel_initializer", default)  # a class
    assert isinstance(zeros, keras.initializers.Zeros)


def test_check_initializer_errors_name_the_argument():
    for bad in (0.5, 3, ["he_normal"]):
        with pytest.raises(TypeError, match="`mlp_initializer` must be None or a Keras initializer"):
            check_initializer(bad, "mlp_initializer", None)
    for bad in ("no_such_initializer", {"class_name": "NoSuch", "config": {}}):
        with pytest.raises(ValueError, match="`mlp_initializer`"):
            check_initializer(bad, "mlp_initializer", None)


def test_clone_initializer_gives_each_layer_its_own_draw():
    unseeded = keras.initializers.RandomNormal()
    np.testing.assert_array_equal(to_numpy(unseeded((64,))), to_numpy(unseeded((64,))))  # Keras repeats
    clone = clone_initializer(unseeded)
    assert type(clone) is type(unseeded) and clone is not unseeded
    assert not np.allclose(to_numpy(clone((64,))), to_numpy(unseeded((64,))))
    # Seeded with an int: the clone repeats the values, as in Keras.
    seeded = keras.initializers.RandomNormal(seed=3)
    np.testing.assert_array_equal(to_numpy(clone_initializer(seeded)((64,))), to_numpy(seeded((64,))))
    # A SeedGenerator already draws fresh values per call; functions have no config: both shared.
    generated = keras.initializers.RandomNormal(seed=keras.random.SeedGenerator(1))
    assert clone_initializer(generated) is generated
    assert clone_initializer(keras.ops.ones) is keras.ops.ones


def test_initializer_at_depth_specializes_or_clones():
    covariance = ConvCovariance(seed=3)
    specialized = initializer_at_depth(covariance, 0.5, 2)
    assert specialized.get_config()["depth_fraction"] == 0.5 and specialized.get_config()["seed"] == 5
    uniform = TorchDefaultUniform(depthwise=True)
    clone = initializer_at_depth(uniform, 0.5, 2)
    assert clone is not uniform and clone.depthwise


def test_trunc_normal_matches_official_scale():
    # timm's trunc_normal_(std=.02) truncates at +-2 absolute: a plain N(0, 0.02^2).
    values = to_numpy(trunc_normal()((256, 256)))
    assert np.std(values) == pytest.approx(0.02, rel=0.03)
    assert np.abs(values.mean()) < 1e-3
    # Fresh instances draw fresh values (unseeded Keras initializers repeat).
    assert not np.array_equal(values, to_numpy(trunc_normal()((256, 256))))
    assert isinstance(trunc_normal(), keras.initializers.RandomNormal)
