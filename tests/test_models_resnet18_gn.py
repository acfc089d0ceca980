"""Pre-activation ResNet-18 with GroupNorm: parameter counts, structure, round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks

from conftest import assert_round_trip_in_process, to_numpy


def resnet18_gn_params(classes=10, channels=3, cifar_stem=True):
    """Conv kernels (no biases), GroupNorm gamma/beta and the head, written out."""
    k = 3 if cifar_stem else 7
    total = k * k * channels * 64  # stem conv
    cin = 64
    for width in (64, 128, 256, 512):
        for b in range(2):
            block_in = cin if b == 0 else width
            total += 2 * block_in + 9 * block_in * width  # norm_1, conv_1
            total += 2 * width + 9 * width * width  # norm_2, conv_2
            if block_in != width:
                total += block_in * width  # 1x1 projection shortcut
        cin = width
    return total + 2 * 512 + 512 * classes + classes  # final norm, head


def test_parameter_counts():
    zeros = {"kernel_initializer": "zeros"}  # counts do not need values; JAX compiles no sampler per shape
    model = ks.models.resnet18_gn(**zeros)
    assert model.count_params() == resnet18_gn_params() == 11_172_170
    model = ks.models.resnet18_gn(num_classes=1000, input_shape=(224, 224, 3), cifar_stem=False, **zeros)
    assert model.count_params() == resnet18_gn_params(1000, cifar_stem=False)


def test_structure_and_forward_shape():
    model = ks.models.resnet18_gn(num_classes=7, groups=16)
    assert model.name == "resnet18_gn"
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 7)
    stem = model.get_layer("stem_conv")
    assert stem.kernel_size == (3, 3) and stem.strides == (1, 1) and not stem.use_bias
    assert "stem_pool" not in {layer.name for layer in model.layers}
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.GroupNormalization)]
    assert len(norms) == 17 and all(n.groups == 16 for n in norms)
    assert not any(isinstance(layer, keras.layers.BatchNormalization) for layer in model.layers)
    for s, width, size in ((1, 64, 32), (2, 128, 16), (3, 256, 8), (4, 512, 4)):
        conv = model.get_layer(f"stage_{s}_block_1_conv_1")
        assert conv.filters == width and conv.strides == ((1, 1) if s == 1 else (2, 2))
        assert model.get_layer(f"stage_{s}_block_2_residual").output.shape[1:] == (size, size, width)
        names = {layer.name for layer in model.layers}
        assert (f"stage_{s}_block_1_shortcut" in names) == (s > 1)
        assert f"stage_{s}_block_2_shortcut" not in names
    assert model.get_layer("final_norm").groups == 16


def test_imagenet_stem():
    model = ks.models.resnet18_gn(num_classes=5, input_shape=(64, 64, 3), cifar_stem=False)
    stem = model.get_layer("stem_conv")
    assert stem.kernel_size == (7, 7) and stem.strides == (2, 2)
    assert model.get_layer("stem_pool").output.shape[1:] == (16, 16, 64)
    assert model.get_layer("stage_4_block_2_residual").output.shape[1:] == (2, 2, 512)
    out = model(np.zeros((1, 64, 64, 3), "float32"))
    assert tuple(out.shape) == (1, 5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="groups"):
        ks.models.resnet18_gn(groups=5)
    with pytest.raises(ValueError, match="groups"):
        ks.models.resnet18_gn(groups=0)
    with pytest.raises(TypeError, match="cifar_stem"):
        ks.models.resnet18_gn(cifar_stem="yes")
    with pytest.raises(TypeError, match="kernel_initializer"):
        ks.models.resnet18_gn(kernel_initializer=0)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.resnet18_gn(input_shape=(32, 3))


def test_kernel_initializer_reaches_every_conv():
    model = ks.models.resnet18_gn(num_classes=3, input_shape=(16, 16, 3), groups=8, kernel_initializer="ones")
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    assert len(convs) == 1 + 8 * 2 + 3  # stem, two per block, three projection shortcuts
    for conv in convs:
        np.testing.assert_array_equal(to_numpy(conv.kernel), 1.0, err_msg=conv.name)
    head = to_numpy(model.get_layer("head").kernel)
    assert 0 < np.abs(head).max() <= 1 / np.sqrt(512)


def test_keras_round_trip_with_a_non_default_initializer(tmp_path):
    model = ks.models.resnet18_gn(
        num_classes=4, input_shape=(16, 16, 3), groups=8, kernel_initializer="he_normal"
    )
    x = np.random.default_rng(1).random((2, 16, 16, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path, atol=1e-5)
    initializer = loaded.get_layer("stage_2_block_1_shortcut").kernel_initializer
    assert isinstance(initializer, keras.initializers.HeNormal)


def test_keras_round_trip_in_process(tmp_path):
    model = ks.models.resnet18_gn(num_classes=4, input_shape=(16, 16, 3), groups=8)
    x = np.random.default_rng(0).random((2, 16, 16, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path, atol=1e-5)
    assert loaded.get_layer("stage_3_block_1_norm_1").groups == 8
