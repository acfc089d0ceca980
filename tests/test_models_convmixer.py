"""ConvMixer structure, initializers and a .keras round trip in a fresh process."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.initializers import ConvCovariance

from conftest import assert_round_trip_in_fresh_process, assert_round_trip_in_process, to_numpy


def test_structure_and_output_shape():
    model = ks.models.convmixer(16, 3, kernel_size=5, patch_size=4, num_classes=7)
    assert model.name == "convmixer_16_3"
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 7)
    assert model.get_layer("stem_conv").strides == (4, 4)
    for i in range(1, 4):
        dw = model.get_layer(f"block_{i}_depthwise_conv")
        assert tuple(dw.kernel.shape) == (5, 5, 16, 1) and dw.padding == "same"
        assert model.get_layer(f"block_{i}_pointwise_bn").momentum == 0.9
    # Hand count: stem 3*4*4*16+16, per block dw 25*16+16, pw 16*16+16, 3 BNs of
    # 4*16 each incl. moving stats; head 16*7+7.
    stem = 3 * 16 * 16 + 16 + 4 * 16
    block = (25 * 16 + 16) + (16 * 16 + 16) + 2 * 4 * 16
    assert model.count_params() == stem + 3 * block + 16 * 7 + 7


def test_default_initializers_are_pytorch_uniform():
    model = ks.models.convmixer(64, 1, kernel_size=9, num_classes=10)
    dw = keras.ops.convert_to_numpy(model.get_layer("block_1_depthwise_conv").kernel)
    pw = keras.ops.convert_to_numpy(model.get_layer("block_1_pointwise_conv").kernel)
    assert np.abs(dw).max() <= 1 / 9 and np.abs(dw).max() > 0.9 / 9  # fan_in = 81
    assert np.abs(pw).max() <= 1 / 8 and np.abs(pw).max() > 0.9 / 8  # fan_in = 64
    assert np.std(dw) == pytest.approx(1 / 9 / np.sqrt(3), rel=0.05)


def test_conv_covariance_initializer_follows_depth():
    model = ks.models.convmixer(
        8, 3, kernel_size=5, num_classes=2, depthwise_initializer=ConvCovariance(seed=3)
    )
    configs = [
        model.get_layer(f"block_{i}_depthwise_conv").get_config()["depthwise_initializer"]["config"]
        for i in (1, 2, 3)
    ]
    assert [c["depth_fraction"] for c in configs] == [0.0, 0.5, 1.0]
    assert [c["seed"] for c in configs] == [3, 4, 5]


def test_kernel_initializer_reaches_the_stem_and_pointwise_convs_only():
    model = ks.models.convmixer(
        8, 2, kernel_size=3, num_classes=3, kernel_initializer=keras.initializers.Constant(0.5)
    )
    for name in ("stem_conv", "block_1_pointwise_conv", "block_2_pointwise_conv"):
        np.testing.assert_array_equal(to_numpy(model.get_layer(name).kernel), 0.5)
    for name in ("block_1_depthwise_conv", "head"):
        assert not np.any(to_numpy(model.get_layer(name).kernel) == 0.5)
    # Biases keep PyTorch's default (bound 1/sqrt(fan_in)).
    assert 0 < np.abs(to_numpy(model.get_layer("block_1_pointwise_conv").bias)).max() <= 1 / np.sqrt(8)


def test_initializers_by_name_are_fresh_per_layer():
    model = ks.models.convmixer(
        8, 2, kernel_size=3, kernel_initializer="he_normal", depthwise_initializer="he_normal"
    )
    first, second = (to_numpy(model.get_layer(f"block_{i}_pointwise_conv").kernel) for i in (1, 2))
    assert np.std(first) == pytest.approx(np.sqrt(2 / 8), rel=0.3) and not np.allclose(first, second)
    first, second = (to_numpy(model.get_layer(f"block_{i}_depthwise_conv").kernel) for i in (1, 2))
    assert not np.allclose(first, second)


def test_bad_arguments():
    with pytest.raises(ValueError, match="dim"):
        ks.models.convmixer(0, 2)
    with pytest.raises(TypeError, match="depth"):
        ks.models.convmixer(8, 2.5)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.convmixer(8, 2, input_shape=(32, 32))
    with pytest.raises(TypeError, match="kernel_initializer"):
        ks.models.convmixer(8, 2, kernel_initializer=0.5)
    with pytest.raises(ValueError, match="depthwise_initializer"):
        ks.models.convmixer(8, 2, depthwise_initializer="no_such_initializer")
    with pytest.raises(ValueError, match="bn_momentum"):
        ks.models.convmixer(8, 2, bn_momentum=1.5)


def test_keras_round_trip_with_a_non_default_initializer(tmp_path):
    model = ks.models.convmixer(
        8, 2, kernel_size=3, num_classes=4, input_shape=(16, 16, 3), kernel_initializer="orthogonal"
    )
    x = np.random.default_rng(2).random((3, 16, 16, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("stem_conv").kernel_initializer, keras.initializers.Orthogonal)


def test_keras_round_trip_in_fresh_process(tmp_path):
    model = ks.models.convmixer(
        8,
        2,
        kernel_size=5,
        num_classes=4,
        input_shape=(16, 16, 3),
        depthwise_initializer=ConvCovariance(preset="cifar-p1", seed=1),
    )
    ks.apply_conv_covariance(model, seed=2)
    x = np.random.default_rng(0).random((3, 16, 16, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        """
        from keras_structinit.initializers import ConvCovariance
        init = model.get_layer("block_2_depthwise_conv").depthwise_initializer
        assert isinstance(init, ConvCovariance), type(init)
        assert init.preset == "cifar-p1" and init.depth_fraction == 1.0
    """,
    )
