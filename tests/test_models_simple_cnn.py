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


def test_paper_e3_layout_and_initialization():
    model = ks.models.build_model("simple-cnn-e3")  # Maennel et al., App. E.3
    convs = [model.get_layer(f"conv_{i}") for i in (1, 2, 3)]
    assert all(c.filters == 16 and c.kernel_size == (3, 3) and c.strides == (1, 1) for c in convs)
    pool = model.get_layer("pool")
    assert pool.pool_size == (3, 3) and pool.strides == (2, 2)
    assert model.get_layer("flatten").output.shape[1:] == (15 * 15 * 16,)
    assert model.get_layer("dense").units == 512 and model.get_layer("head").units == 10
    convs_params = 27 * 16 + 16 + 2 * (144 * 16 + 16)
    assert model.count_params() == convs_params + 3600 * 512 + 512 + 512 * 10 + 10
    for layer in (*convs, model.get_layer("dense"), model.get_layer("head")):
        np.testing.assert_array_equal(to_numpy(layer.bias), 0.0)
    # He-normal: std sqrt(2 / fan_in) (Keras corrects the truncation's shrinkage).
    dense = to_numpy(model.get_layer("dense").kernel)
    assert dense.std() == pytest.approx(np.sqrt(2 / 3600), rel=0.02)
    half = ks.models.build_model("simple-cnn-e3", init_scale=0.5)
    assert to_numpy(half.get_layer("dense").kernel).std() == pytest.approx(0.5 * np.sqrt(2 / 3600), rel=0.02)


def test_paper_a2_layout_has_no_pooling_and_simple_cnn_is_unchanged():
    model = ks.models.build_model("simple-cnn-a2", 3, (8, 8, 3), num_filters=4, num_units=8)
    assert not [layer for layer in model.layers if isinstance(layer, keras.layers.MaxPooling2D)]
    assert model.get_layer("flatten").output.shape[1:] == (8 * 8 * 4,)
    np.testing.assert_array_equal(to_numpy(model.get_layer("conv_1").bias), 0.0)
    default = ks.models.build_model("simple-cnn", 3, (8, 8, 3), num_filters=4, num_units=8)
    assert default.get_layer("pool_2").pool_size == (2, 2)
    assert np.abs(to_numpy(default.get_layer("conv_1").bias)).max() > 0  # PyTorch's default bias


def test_pooling_arguments_are_checked():
    with pytest.raises(ValueError, match="`pooling` must be one of"):
        ks.models.simple_cnn(1, 4, 4, pooling="avg")
    with pytest.raises(ValueError, match="init_scale"):
        ks.models.simple_cnn(1, 4, 4, init_scale=0.0)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.simple_cnn(1, 4, 4, input_shape=(2, 2, 3), pooling="last", pool_size=3)
