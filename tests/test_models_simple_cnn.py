"""SimpleCNN (Maennel et al. 2020): structure, parameter count, round trip."""

import keras
import numpy as np
import pytest

import keras_structinit as ks

from conftest import assert_round_trip_in_process, to_numpy


def simple_cnn_params(layers, filters, units, classes=10, size=32, channels=3, k=3):
    total, cin = 0, channels
    for _ in range(layers):
        total += k * k * cin * filters + filters
        cin = filters
    flat = (size // 2**layers) ** 2 * filters
    return total + flat * units + units + units * classes + classes


def test_structure_count_and_forward_shape():
    model = ks.models.simple_cnn(3, 16, 32, num_classes=5)
    assert model.name == "simple_cnn"
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 5)
    assert model.count_params() == simple_cnn_params(3, 16, 32, classes=5)
    for i in (1, 2, 3):
        conv = model.get_layer(f"conv_{i}")
        assert conv.filters == 16 and conv.kernel_size == (3, 3) and conv.padding == "same"
        assert conv.activation is keras.activations.relu
        assert model.get_layer(f"pool_{i}").pool_size == (2, 2)
    assert model.get_layer("flatten").output.shape[1:] == (4 * 4 * 16,)
    assert model.get_layer("dense").units == 32
    assert model.get_layer("head").units == 5


def test_pytorch_default_initialization():
    model = ks.models.simple_cnn(1, 64, 16)
    kernel = to_numpy(model.get_layer("conv_1").kernel)
    bound = 1 / np.sqrt(27)
    assert 0.9 * bound < np.abs(kernel).max() <= bound


def test_bad_arguments():
    for error, name, args in (
        (ValueError, "num_conv_layers", (0, 8, 8)),
        (TypeError, "num_filters", (1, 2.0, 8)),
        (ValueError, "num_units", (1, 8, -1)),
    ):
        with pytest.raises(error, match=name):
            ks.models.simple_cnn(*args)
    with pytest.raises(TypeError, match="dense_initializer"):
        ks.models.simple_cnn(1, 8, 8, dense_initializer=2)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.simple_cnn(6, 8, 8)  # 32 / 2^6 < 1


def test_kernel_and_dense_initializers():
    model = ks.models.simple_cnn(
        2, 8, 16, kernel_initializer="ones", dense_initializer=keras.initializers.Constant(0.5)
    )
    for name in ("conv_1", "conv_2"):
        np.testing.assert_array_equal(to_numpy(model.get_layer(name).kernel), 1.0)
    np.testing.assert_array_equal(to_numpy(model.get_layer("dense").kernel), 0.5)
    head = to_numpy(model.get_layer("head").kernel)
    assert 0 < np.abs(head).max() <= 1 / 4  # PyTorch's default, fan_in 16
    # Biases keep PyTorch's default: bound 1/sqrt(3*3*3) for conv_1.
    assert 0 < np.abs(to_numpy(model.get_layer("conv_1").bias)).max() <= 1 / np.sqrt(27)


def test_keras_round_trip_with_a_non_default_initializer(tmp_path):
    model = ks.models.simple_cnn(
        2, 8, 16, num_classes=3, input_shape=(16, 16, 1), kernel_initializer="he_uniform"
    )
    x = np.random.default_rng(1).random((2, 16, 16, 1)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("conv_2").kernel_initializer, keras.initializers.HeUniform)


def test_keras_round_trip_in_process(tmp_path):
    model = ks.models.simple_cnn(2, 8, 16, num_classes=3, input_shape=(16, 16, 1))
    x = np.random.default_rng(0).random((2, 16, 16, 1)).astype("float32")
    assert_round_trip_in_process(model, x, tmp_path)
