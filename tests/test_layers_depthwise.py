"""Fast depthwise convolution: equality with Keras' op, gradients, layers, freezing."""

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import keras_structinit as ks
from keras_structinit.layers import DepthwiseConv2D, GroupedConv2D, depthwise_conv2d
from keras_structinit.layers.depthwise import select_implementation

BACKEND = keras.backend.backend()


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(x, "float32")))


def value_and_grads(fn, x, w, cotangent):
    """``fn(x, w)`` and the gradients of ``sum(fn(x, w) * cotangent)`` w.r.t. x and w."""
    if BACKEND == "jax":
        import jax

        def loss(x, w):
            y = fn(x, w)
            return keras.ops.sum(keras.ops.cast(y, "float32") * cotangent), y

        (_, y), (gx, gw) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(x, w)
    elif BACKEND == "tensorflow":
        import tensorflow as tf

        x, w = tf.Variable(x), tf.Variable(w)
        with tf.GradientTape() as tape:
            y = fn(x, w)
            loss = tf.reduce_sum(tf.cast(y, "float32") * cotangent)
        gx, gw = tape.gradient(loss, [x, w])
    else:
        import torch

        x = torch.tensor(np.asarray(x), requires_grad=True)
        w = torch.tensor(np.asarray(w), requires_grad=True)
        y = fn(x, w)
        (y.float() * torch.as_tensor(cotangent)).sum().backward()
        gx, gw = x.grad, w.grad
    return to_numpy(y), to_numpy(gx), to_numpy(gw)


def assert_close(got, want, rtol):
    scale = max(np.abs(want).max(), 1e-6)
    np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=rtol)


conv_cases = st.tuples(
    st.integers(1, 2),  # batch
    st.integers(3, 11),  # height
    st.integers(3, 11),  # width
    st.integers(1, 3),  # channels
    st.integers(1, 3),  # depth multiplier
    st.integers(1, 7),  # kernel height
    st.integers(1, 7),  # kernel width
    st.sampled_from([1, 2]),  # stride
    st.sampled_from(["same", "valid"]),
    st.integers(0, 2**16),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases)
def test_shifted_matches_keras_forward_and_gradients_float32(case):
    b, h, w, c, m, kh, kw, s, padding, seed = case
    kh, kw = min(kh, h), min(kw, w)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, h, w, c)).astype("float32")
    k = rng.standard_normal((kh, kw, c, m)).astype("float32")
    reference = lambda x, k: keras.ops.depthwise_conv(x, k, strides=s, padding=padding)
    shifted = lambda x, k: depthwise_conv2d(x, k, strides=(s, s), padding=padding, implementation="shifted")
    ref_y = to_numpy(reference(x, k))
    cot = rng.standard_normal(ref_y.shape).astype("float32")
    want = value_and_grads(reference, x, k, cot)
    got = value_and_grads(shifted, x, k, cot)
    for g, r in zip(got, want):
        assert g.shape == r.shape
        assert_close(g, r, 1e-5)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases)
def test_shifted_matches_keras_in_bfloat16(case):
    b, h, w, c, m, kh, kw, s, padding, seed = case
    kh, kw = min(kh, h), min(kw, w)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, h, w, c)).astype("float32")
    k = rng.standard_normal((kh, kw, c, m)).astype("float32")
    want = to_numpy(keras.ops.depthwise_conv(x, k, strides=s, padding=padding))
    x16, k16 = keras.ops.cast(x, "bfloat16"), keras.ops.cast(k, "bfloat16")
    y = depthwise_conv2d(x16, k16, strides=(s, s), padding=padding, implementation="shifted")
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    # bfloat16 keeps 8 significant bits: inputs rounded by ~2^-9 each.
    assert_close(to_numpy(y), want, 3e-2)


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_large_kernel_row_loop_matches_keras(padding):
    # 13 x 13 = 169 taps: the row-loop formulation of the shifted sum.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 15, 14, 3)).astype("float32")
    k = rng.standard_normal((13, 13, 3, 1)).astype("float32")
    reference = lambda x, k: keras.ops.depthwise_conv(x, k, padding=padding)
    shifted = lambda x, k: depthwise_conv2d(x, k, padding=padding, implementation="shifted")
    cot = rng.standard_normal(to_numpy(reference(x, k)).shape).astype("float32")
    for g, r in zip(value_and_grads(shifted, x, k, cot), value_and_grads(reference, x, k, cot)):
        assert_close(g, r, 1e-5)


def test_auto_path_and_validation():
    path = select_implementation()
    expected = {"torch": "torch", "jax": "shifted", "tensorflow": "native"}[BACKEND]
    assert path == expected  # TensorFlow outside XLA uses its oneDNN kernel
    assert select_implementation("shifted", dilation_rate=(2, 2)) == "native"
    assert select_implementation("shifted", data_format="channels_first") == "native"
    with pytest.raises(ValueError, match="implementation"):
        select_implementation("fast")
    with pytest.raises(ValueError, match="implementation"):
        DepthwiseConv2D(3, implementation="fast")


@pytest.mark.parametrize("implementation", ["auto", "shifted", "native"])
def test_layer_matches_stock_layer(implementation):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 12, 12, 6)).astype("float32")
    stock = keras.layers.DepthwiseConv2D(5, depth_multiplier=2, padding="same", activation="relu")
    fast = DepthwiseConv2D(5, depth_multiplier=2, padding="same", activation="relu", implementation=implementation)
    stock.build(x.shape)
    fast.build(x.shape)
    assert [v.path.split("/")[-1] for v in fast.weights] == [v.path.split("/")[-1] for v in stock.weights]
    fast.set_weights([w + 0.1 for w in stock.get_weights()])
    stock.set_weights(fast.get_weights())
    assert_close(to_numpy(fast(x)), to_numpy(stock(x)), 1e-5)


@pytest.mark.parametrize("multiplier", [1, 2])
def test_grouped_conv_matches_stock_conv(multiplier):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 10, 10, 4)).astype("float32")
    stock = keras.layers.Conv2D(4 * multiplier, 7, groups=4, padding="same")
    fast = GroupedConv2D(4 * multiplier, 7, groups=4, padding="same", implementation="shifted")
    stock.build(x.shape)
    fast.build(x.shape)
    fast.set_weights(stock.get_weights())
    assert_close(to_numpy(fast(x)), to_numpy(stock(x)), 1e-5)
    # groups != channels: the stock computation
    plain = GroupedConv2D(4, 3, groups=2)
    plain.build(x.shape)
    ref = keras.layers.Conv2D(4, 3, groups=2)
    ref.build(x.shape)
    ref.set_weights(plain.get_weights())
    assert_close(to_numpy(plain(x)), to_numpy(ref(x)), 1e-6)


def _tiny_convmixer(layer_cls):
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 2, strides=2, name="stem")(inputs)
    x = layer_cls(3, padding="same", name="dw")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(x))


def test_weights_interchange_with_stock_layers(tmp_path):
    x = np.random.default_rng(2).standard_normal((3, 8, 8, 3)).astype("float32")
    stock, fast = _tiny_convmixer(keras.layers.DepthwiseConv2D), _tiny_convmixer(DepthwiseConv2D)
    stock.save_weights(tmp_path / "stock.weights.h5")
    fast.load_weights(tmp_path / "stock.weights.h5")
    assert_close(to_numpy(fast(x)), to_numpy(stock(x)), 1e-5)
    fast2 = _tiny_convmixer(DepthwiseConv2D)
    fast2.save_weights(tmp_path / "fast.weights.h5")
    stock.load_weights(tmp_path / "fast.weights.h5")
    assert_close(to_numpy(stock(x)), to_numpy(fast2(x)), 1e-5)


def test_keras_round_trip(tmp_path):
    model = ks.models.convmixer(8, 2, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    assert isinstance(model.get_layer("block_1_depthwise_conv"), DepthwiseConv2D)
    x = np.random.default_rng(3).standard_normal((2, 8, 8, 3)).astype("float32")
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert type(loaded.get_layer("block_1_depthwise_conv")) is DepthwiseConv2D
    assert_close(to_numpy(loaded(x, training=False)), to_numpy(model(x, training=False)), 1e-6)


def test_frozen_kernels_stay_bit_identical_during_fit():
    keras.utils.set_random_seed(0)
    model = ks.models.convmixer(8, 2, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    frozen = ks.freeze_spatial(model)
    assert frozen == ["block_1_depthwise_conv/kernel", "block_2_depthwise_conv/kernel"]
    before = {v.path: to_numpy(v) for v in model.weights}
    model.compile(
        optimizer=keras.optimizers.AdamW(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(0)
    model.fit(rng.standard_normal((32, 8, 8, 3)).astype("float32"), rng.integers(0, 3, 32),
              batch_size=8, epochs=1, verbose=0)
    after = {v.path: to_numpy(v) for v in model.weights}
    for path in frozen:
        np.testing.assert_array_equal(after[path], before[path])
    for path in ("block_1_depthwise_conv/bias", "stem_conv/kernel", "block_2_pointwise_conv/kernel", "head/kernel"):
        assert not np.array_equal(after[path], before[path]), path
    with pytest.raises(ValueError, match="re-compile"):
        ks.freeze_spatial(model)


def test_freeze_spatial_include_bias():
    model = ks.models.convmixer(4, 1, kernel_size=3, num_classes=2, input_shape=(8, 8, 3))
    paths = ks.freeze_spatial(model, include_bias=True)
    assert paths == ["block_1_depthwise_conv/kernel", "block_1_depthwise_conv/bias"]
    trainable = {v.path for v in model.trainable_variables}
    assert not trainable & set(paths)
    assert "stem_conv/kernel" in trainable
