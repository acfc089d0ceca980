"""VGG16 without FC-4096: parameter count, keras.applications weight mapping, round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks

from conftest import assert_round_trip_in_process, to_numpy

CONFIG_D = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def conv_params(channels=3):
    total = 0
    for f in CONFIG_D:
        if f != "M":
            total += 3 * 3 * channels * f + f  # kernel + bias
            channels = f
    return total


def test_parameter_count():
    assert conv_params() == 14_714_688
    zeros = {"kernel_initializer": "zeros"}  # counts do not need values; JAX compiles no sampler per shape
    model = ks.models.vgg16(**zeros)
    assert model.count_params() == conv_params() + 512 * 10 + 10
    # 64 x 64 inputs: 2 x 2 x 512 features reach the head.
    model = ks.models.vgg16(num_classes=3, input_shape=(64, 64, 1), **zeros)
    assert model.count_params() == conv_params(channels=1) + 2048 * 3 + 3


def test_structure_and_forward_shape():
    model = ks.models.vgg16(num_classes=7)
    assert model.name == "vgg16"
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 7)
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    assert len(convs) == 13
    assert [layer.name for layer in convs[:3]] == ["block_1_conv_1", "block_1_conv_2", "block_2_conv_1"]
    assert all(c.padding == "same" and c.use_bias and c.kernel_size == (3, 3) for c in convs)
    pools = [layer for layer in model.layers if isinstance(layer, keras.layers.MaxPooling2D)]
    assert [p.name for p in pools] == [f"block_{b}_pool" for b in range(1, 6)]
    assert model.get_layer("block_5_conv_3").filters == 512
    assert model.get_layer("flatten").output.shape[1:] == (512,)


def test_weights_map_to_keras_applications_vgg16():
    reference = keras.applications.VGG16(weights=None, include_top=False, input_shape=(32, 32, 3))
    assert reference.count_params() == conv_params()
    model = ks.models.vgg16()
    for layer in reference.layers:
        if isinstance(layer, keras.layers.Conv2D):
            b, j = layer.name[len("block") :].split("_conv")
            model.get_layer(f"block_{b}_conv_{j}").set_weights(layer.get_weights())
    x = np.random.default_rng(0).random((2, 32, 32, 3)).astype("float32")
    features = keras.Model(model.input, model.get_layer("block_5_pool").output)
    np.testing.assert_allclose(to_numpy(features(x)), to_numpy(reference(x)), rtol=1e-4, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_classes"):
        ks.models.vgg16(num_classes=0)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.vgg16(input_shape=(16, 16, 3))  # five halvings
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.vgg16(input_shape=(32, 32))
    with pytest.raises(TypeError, match="kernel_initializer"):
        ks.models.vgg16(kernel_initializer=1.0)


def test_kernel_initializer_reaches_every_conv():
    model = ks.models.vgg16(num_classes=3, kernel_initializer=keras.initializers.Constant(0.5))
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    assert len(convs) == 13
    for conv in convs:
        np.testing.assert_array_equal(to_numpy(conv.kernel), 0.5)
    assert not np.any(to_numpy(model.get_layer("head").kernel) == 0.5)


def test_the_papers_init_scaled_he_normal_and_zero_biases():
    """App. A.3: every kernel He-normal times init_scale, every bias 0 (was PyTorch's uniform)."""
    model = ks.models.vgg16(num_classes=10, init_scale=0.526)
    layers = [layer for layer in model.layers if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense))]
    assert len(layers) == 14
    for layer in layers:
        kernel = to_numpy(layer.kernel)
        fan_in = int(np.prod(kernel.shape[:-1]))
        expected = 0.526 * np.sqrt(2.0 / fan_in)
        tolerance = 5 * expected / np.sqrt(2 * kernel.size)  # ~5 standard errors of a sample std
        assert abs(kernel.std() - expected) < tolerance + 1e-3 * expected, layer.name
        assert abs(kernel.mean()) < 5 * expected / np.sqrt(kernel.size), layer.name
        np.testing.assert_array_equal(to_numpy(layer.bias), 0.0)
    default = ks.models.vgg16(num_classes=10)
    assert np.any(to_numpy(default.get_layer("block_1_conv_1").bias) != 0)  # PyTorch's uniform by default
    ones = ks.models.vgg16(num_classes=10, init_scale=0.612, bias_initializer="ones")
    np.testing.assert_array_equal(to_numpy(ones.get_layer("block_5_conv_3").bias), 1.0)
    with pytest.raises(ValueError, match="init_scale"):
        ks.models.vgg16(init_scale=0.0)
    with pytest.raises(TypeError, match="bias_initializer"):
        ks.models.vgg16(bias_initializer=2)


def test_keras_round_trip_in_process(tmp_path):
    model = ks.models.vgg16(num_classes=4, kernel_initializer="he_normal")
    x = np.random.default_rng(1).random((2, 32, 32, 3)).astype("float32")
    assert_round_trip_in_process(model, x, tmp_path)
