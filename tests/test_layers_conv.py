"""The package's Conv2D: patch convolutions (kernel size == strides) as a matrix product, equal to Keras'."""

import keras
import numpy as np
import pytest
from conv_helpers import assert_close, to_numpy, value_and_grads

import keras_structinit as ks
from keras_structinit.layers import Conv2D, patch_conv2d

from conftest import run_in_fresh_process

BACKEND = keras.backend.backend()

# (batch, height, width, channels, filters, patch): 1 x 1, square and rectangular
# patches, sizes that leave rows / columns outside the last whole patch.
CASES = [
    (2, 5, 7, 3, 4, (1, 1)),
    (2, 8, 8, 3, 5, (2, 2)),
    (1, 9, 11, 2, 3, (2, 2)),
    (2, 12, 10, 3, 4, (4, 2)),
    (1, 7, 7, 1, 2, (3, 3)),
]


def stock_conv(x, k):
    return keras.ops.conv(x, k, strides=tuple(k.shape[:2]), padding="valid")


@pytest.mark.parametrize("case", CASES)
def test_patch_conv_matches_keras_forward_and_gradients(case):
    batch, h, w, c, f, patch = case
    rng = np.random.default_rng(sum(case[:5]))
    x = rng.standard_normal((batch, h, w, c)).astype("float32")
    k = rng.standard_normal((*patch, c, f)).astype("float32")
    out_shape = (batch, h // patch[0], w // patch[1], f)
    cotangent = rng.standard_normal(out_shape).astype("float32")
    got = value_and_grads(patch_conv2d, x, k, cotangent)
    want = value_and_grads(stock_conv, x, k, cotangent)
    assert got[0].shape == out_shape
    for g, s in zip(got, want, strict=True):
        assert_close(g, s, 1e-5)
    # Pixels outside the last whole patch get no gradient.
    if h % patch[0]:
        assert np.all(got[1][:, h // patch[0] * patch[0] :] == 0)


TILING = [(1, 1, "same"), (1, 1, "valid"), (2, 2, "valid"), ((3, 2), (3, 2), "valid")]
OTHER = [(3, 1, "same"), (2, 2, "same"), (1, 2, "valid"), (3, 2, "valid")]


@pytest.mark.parametrize("implementation", ["auto", "matmul", "native"])
@pytest.mark.parametrize("kernel_size, strides, padding", TILING + OTHER)
def test_layer_matches_stock_layer(implementation, kernel_size, strides, padding):
    x = np.random.default_rng(1).standard_normal((3, 9, 8, 4)).astype("float32")
    stock = keras.layers.Conv2D(5, kernel_size, strides=strides, padding=padding, activation="relu")
    tiles = (kernel_size, strides, padding) in TILING
    if implementation == "matmul" and not tiles:
        with pytest.raises(ValueError, match="implementation='matmul' needs strides == kernel_size"):
            Conv2D(5, kernel_size, strides=strides, padding=padding, implementation=implementation)
        return
    fast = Conv2D(
        5, kernel_size, strides=strides, padding=padding, activation="relu", implementation=implementation
    )
    assert fast._tiles == tiles
    stock.build(x.shape)
    fast.build(x.shape)
    assert [v.shape for v in fast.weights] == [v.shape for v in stock.weights]
    fast.set_weights(stock.get_weights())
    assert fast.strides == stock.strides
    assert_close(to_numpy(fast(x)), to_numpy(stock(x)), 1e-5)


def test_arguments_are_checked():
    for kwargs in ({"dilation_rate": 2}, {"groups": 2}, {"data_format": "channels_first"}):
        assert not Conv2D(4, 1, **kwargs)._tiles
        with pytest.raises(ValueError, match=f"{next(iter(kwargs))}="):
            Conv2D(4, 1, implementation="matmul", **kwargs)
    with pytest.raises(ValueError, match="implementation"):
        Conv2D(4, 1, implementation="fft")


@pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow's CPU conv has no channels_first kernel")
def test_channels_first_auto_uses_the_stock_op():
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 6)).astype("float32")
    stock = keras.layers.Conv2D(4, 2, strides=2, data_format="channels_first")
    fast = Conv2D(4, 2, strides=2, data_format="channels_first")
    assert not fast._tiles
    stock.build(x.shape)
    fast.build(x.shape)
    fast.set_weights(stock.get_weights())
    assert_close(to_numpy(fast(x)), to_numpy(stock(x)), 1e-5)


def test_convmixer_uses_patch_convs_and_shares_weight_files_with_stock_layers(tmp_path):
    model = ks.models.convmixer(8, 2, kernel_size=3, num_classes=3, input_shape=(9, 9, 3))
    assert type(model.get_layer("stem_conv")) is Conv2D
    assert type(model.get_layer("block_2_pointwise_conv")) is Conv2D

    def to_stock(layer):
        if isinstance(layer, Conv2D):
            config = layer.get_config()
            config.pop("implementation")
            return keras.layers.Conv2D.from_config(config)
        return layer.__class__.from_config(layer.get_config())

    stock = keras.models.clone_model(model, clone_function=to_stock)
    assert type(stock.get_layer("stem_conv")) is keras.layers.Conv2D
    model.save_weights(tmp_path / "fast.weights.h5")
    stock.load_weights(tmp_path / "fast.weights.h5")
    x = np.random.default_rng(3).standard_normal((2, 9, 9, 3)).astype("float32")
    assert_close(to_numpy(stock(x, training=False)), to_numpy(model(x, training=False)), 1e-5)
    # ... and the other way: a checkpoint of stock layers loads into the package's.
    stock.get_layer("stem_conv").kernel.assign(np.ones((2, 2, 3, 8), "float32"))
    stock.save_weights(tmp_path / "stock.weights.h5")
    model.load_weights(tmp_path / "stock.weights.h5")
    assert_close(to_numpy(model(x, training=False)), to_numpy(stock(x, training=False)), 1e-5)


def test_keras_round_trip_in_a_fresh_process(tmp_path):
    layer_in = keras.Input((6, 6, 2))
    y = Conv2D(3, 2, strides=2, implementation="matmul", name="patch")(layer_in)
    model = keras.Model(layer_in, Conv2D(4, 1, name="mix")(y))
    x = np.random.default_rng(4).standard_normal((2, 6, 6, 2)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", to_numpy(model(x)))
    model.save(tmp_path / "m.keras")
    run_in_fresh_process(
        f"""
        import keras, numpy as np
        import keras_structinit  # registers the layers
        model = keras.saving.load_model({str(tmp_path / "m.keras")!r})
        layer = model.get_layer("patch")
        assert type(layer) is keras_structinit.layers.Conv2D and layer.implementation == "matmul", layer
        got = keras.ops.convert_to_numpy(model(np.load({str(tmp_path / "x.npy")!r})))
        np.testing.assert_allclose(got, np.load({str(tmp_path / "y.npy")!r}), rtol=0, atol=1e-6)
    """,
        tmp_path,
    )


@pytest.mark.skipif(BACKEND != "tensorflow", reason="only TensorFlow traces graphs with unknown sizes")
@pytest.mark.parametrize("jit_compile", [True, False])
def test_unknown_sizes_in_tf_function(jit_compile):
    import tensorflow as tf

    rng = np.random.default_rng(5)
    k = rng.standard_normal((2, 3, 2, 4)).astype("float32")

    @tf.function(jit_compile=jit_compile, input_signature=[tf.TensorSpec((None, None, None, 2))])
    def fn(x):
        return patch_conv2d(x, k)

    for shape in ((3, 8, 9, 2), (1, 7, 12, 2)):
        x = rng.standard_normal(shape).astype("float32")
        assert_close(to_numpy(fn(x)), to_numpy(stock_conv(x, k)), 1e-5)
