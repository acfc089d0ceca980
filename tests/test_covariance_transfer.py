"""CovarianceTransfer and apply_covariance_transfer on the active backend."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import covariance as cv
from keras_structinit.covariance import FilterCovariance
from keras_structinit.initializers import CovarianceTransfer

from conftest import (
    assert_covariance_within_sampling_error,
    assert_round_trip_in_fresh_process,
    filters_of,
    to_numpy,
)


def two_layer_bank(k=5):
    """A bank whose layers are closed-form covariances of different widths."""
    covs = [cv.conv_covariance(k, 0.3), cv.conv_covariance(k, 2.0)]
    means = [np.linspace(-0.2, 0.2, k * k), np.zeros(k * k)]
    return FilterCovariance(means, covs, k)


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_samples_follow_interpolated_covariance(depth):
    bank = two_layer_bank()
    init = CovarianceTransfer(bank, depth_fraction=depth, seed=3)
    filters = filters_of(init((5, 5, 20000, 1)))
    _, target = bank.at_depth(depth)
    assert_covariance_within_sampling_error(filters, cv.psd_project(target, "abs"))


def test_use_mean_adds_the_mean_filter():
    bank = two_layer_bank()
    filters = filters_of(
        CovarianceTransfer(bank, depth_fraction=0.0, use_mean=True, seed=1)((5, 5, 20000, 1))
    )
    centred = filters - bank.means[0]
    assert_covariance_within_sampling_error(centred, cv.psd_project(bank.covariances[0], "abs"))


def test_bank_from_path_seeds_and_config(tmp_path):
    path = two_layer_bank().save(tmp_path / "bank.npz")
    init = CovarianceTransfer(path, depth_fraction=0.25, seed=4)
    np.testing.assert_array_equal(to_numpy(init((5, 5, 8, 1))), to_numpy(init((5, 5, 8, 1))))
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(init))
    np.testing.assert_allclose(clone.covariance, init.covariance, rtol=0, atol=0)
    np.testing.assert_array_equal(to_numpy(clone((5, 5, 8, 1))), to_numpy(init((5, 5, 8, 1))))
    layer2 = init.at_depth(1.0, index=2)
    assert layer2.depth_fraction == 1.0 and layer2.get_config()["seed"] == 6


def test_bad_input():
    bank = two_layer_bank()
    with pytest.raises(ValueError, match="resized"):
        CovarianceTransfer(bank)((7, 7, 4, 1))
    with pytest.raises(TypeError, match="bank"):
        CovarianceTransfer(np.eye(25))
    with pytest.raises(ValueError, match="depth"):
        CovarianceTransfer(bank, depth_fraction=2.0)
    with pytest.raises(ValueError, match="psd"):
        CovarianceTransfer(bank, psd="eig")
    with pytest.raises(TypeError, match="use_mean"):
        CovarianceTransfer(bank, use_mean=1)


def test_apply_across_width_depth_and_kernel_size():
    source = ks.models.convmixer(8, 2, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    ks.apply_conv_covariance(source, seed=0)
    bank = FilterCovariance.from_model(source)
    deeper = ks.models.convmixer(16, 4, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    paths = ks.apply_covariance_transfer(deeper, bank=bank, seed=1)
    assert paths == [f"block_{i}_depthwise_conv/kernel" for i in range(1, 5)]
    again = ks.models.convmixer(16, 4, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    ks.apply_covariance_transfer(again, bank=bank, seed=1)
    for path in paths:
        layer = path.split("/")[0]
        np.testing.assert_array_equal(
            to_numpy(deeper.get_layer(layer).kernel), to_numpy(again.get_layer(layer).kernel)
        )
    bigger_kernel = ks.models.convmixer(8, 3, kernel_size=7, num_classes=3, input_shape=(8, 8, 3))
    assert len(ks.apply_covariance_transfer(bigger_kernel, bank=bank, kronecker=True, seed=2)) == 3
    assert tuple(bigger_kernel.get_layer("block_1_depthwise_conv").kernel.shape) == (7, 7, 8, 1)
    with pytest.raises(ValueError, match="no spatial depthwise"):
        ks.apply_covariance_transfer(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]), bank=bank)


@pytest.mark.parametrize("resize", ["crop", "interpolate"])
def test_apply_resizes_by_the_chosen_method(resize):
    # A bank of (almost) deterministic filters: the sampled kernel is its resized mean.
    mean = np.arange(81.0) / 81.0
    bank = FilterCovariance([mean], [1e-16 * np.eye(81)], 9)
    model = ks.models.convmixer(4, 1, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    ks.apply_covariance_transfer(model, bank=bank, use_mean=True, resize=resize, seed=0)
    kernel = to_numpy(model.get_layer("block_1_depthwise_conv").kernel)
    expected = bank.resized(5, method=resize).means[0].reshape(5, 5)
    for channel in range(4):
        np.testing.assert_allclose(kernel[:, :, channel, 0], expected, atol=1e-6)
    with pytest.raises(ValueError, match="resize"):
        ks.apply_covariance_transfer(model, bank=bank, resize="nearest")


def test_apply_samples_from_the_interpolated_layer():
    # Three depthwise layers of 20,000 filters each (depth fractions 0, 0.5, 1),
    # built symbolically: a few MB instead of a ConvMixer-20000's 20000^2 1x1 convs.
    bank = two_layer_bank()
    inputs = keras.Input((5, 5, 1))
    x = keras.layers.DepthwiseConv2D(5, depth_multiplier=20000, padding="same", name="dw_1")(inputs)
    x = keras.layers.DepthwiseConv2D(5, padding="same", name="dw_2")(x)
    model = keras.Model(inputs, keras.layers.DepthwiseConv2D(5, padding="same", name="dw_3")(x))
    ks.apply_covariance_transfer(model, bank=bank, seed=5)
    middle = filters_of(model.get_layer("dw_2").kernel)
    _, target = bank.at_depth(0.5)
    assert_covariance_within_sampling_error(middle, cv.psd_project(target, "abs"))


def test_keras_round_trip_in_fresh_process(tmp_path):
    model = ks.models.convmixer(
        8,
        2,
        kernel_size=5,
        num_classes=3,
        input_shape=(8, 8, 3),
        depthwise_initializer=CovarianceTransfer(two_layer_bank(), seed=0),
    )
    configs = [model.get_layer(f"block_{i}_depthwise_conv").depthwise_initializer for i in (1, 2)]
    assert [c.depth_fraction for c in configs] == [0.0, 1.0]
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        checks="""
        initializer = model.get_layer("block_2_depthwise_conv").depthwise_initializer
        assert type(initializer).__name__ == "CovarianceTransfer", type(initializer)
        """,
    )


def test_reloaded_initializer_reproduces_every_depth_of_the_bank(tmp_path):
    means = [np.linspace(-0.1, 0.1, 9) * i for i in range(4)]
    bank = FilterCovariance(means, [cv.conv_covariance(3, s) for s in (0.2, 0.6, 1.1, 2.5)], 3)
    model = keras.Sequential(
        [
            keras.Input((6, 6, 4)),
            keras.layers.DepthwiseConv2D(3, depthwise_initializer=CovarianceTransfer(bank, seed=1)),
        ]
    )
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras").layers[0].depthwise_initializer
    assert reloaded.depth_fraction == 0.0
    for d in (*bank.depth_fractions, 0.1, 0.5, 0.9):
        for got, want in zip(reloaded.at_depth(d).bank.at_depth(d), bank.at_depth(d), strict=True):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(reloaded.at_depth(d).covariance, bank.at_depth(d)[1])
