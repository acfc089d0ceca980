"""Fast depthwise convolution: equality with Keras' op, gradients, layers, freezing."""

import warnings

import keras
import numpy as np
import pytest
from conv_helpers import assert_close, to_numpy, value_and_grads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import keras_structinit as ks
from keras_structinit.layers import DepthwiseConv2D, GroupedConv2D, depthwise_conv2d
from keras_structinit.ops import depthwise as dw
from keras_structinit.ops.depthwise import select_implementation
from keras_structinit.recipes import devices
from keras_structinit.utils import backend as ks_backend

BACKEND = keras.backend.backend()


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


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases)
def test_shifted_matches_keras_forward_and_gradients_float32(case):
    b, h, w, c, m, kh, kw, s, padding, seed = case
    kh, kw = min(kh, h), min(kw, w)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, h, w, c)).astype("float32")
    k = rng.standard_normal((kh, kw, c, m)).astype("float32")

    def reference(x, k):
        return keras.ops.depthwise_conv(x, k, strides=s, padding=padding)

    def shifted(x, k):
        return depthwise_conv2d(x, k, strides=(s, s), padding=padding, implementation="shifted")

    ref_y = to_numpy(reference(x, k))
    cot = rng.standard_normal(ref_y.shape).astype("float32")
    want = value_and_grads(reference, x, k, cot)
    got = value_and_grads(shifted, x, k, cot)
    for g, r in zip(got, want, strict=True):
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

    def reference(x, k):
        return keras.ops.depthwise_conv(x, k, padding=padding)

    def shifted(x, k):
        return depthwise_conv2d(x, k, padding=padding, implementation="shifted")

    cot = rng.standard_normal(to_numpy(reference(x, k)).shape).astype("float32")
    for g, r in zip(value_and_grads(shifted, x, k, cot), value_and_grads(reference, x, k, cot), strict=True):
        assert_close(g, r, 1e-5)


@pytest.mark.parametrize(
    "shape, kernel", [((2, 7, 16, 3), (3, 5)), ((3, 9, 5, 2), (4, 3)), ((1, 5, 19, 2), (5, 5))]
)
def test_kernel_gradient_forms_match_direct_sum(shape, kernel):
    # dK[i, j, c] = sum_{b,h,w} x_pad[b, h+i, w+j, c] g[b, h, w, c], by row products and by FFT;
    # odd heights exercise the zero row that row products pad to; x_pad is one column wider than needed.
    b, h, w, c = shape
    kh, kw = kernel
    rng = np.random.default_rng(5)
    x_pad = rng.standard_normal((b, h + kh - 1, w + kw, c)).astype("float32")
    g = rng.standard_normal(shape).astype("float32")
    want = np.einsum(
        "bhwijc,bhwc->ijc",
        np.lib.stride_tricks.sliding_window_view(x_pad[:, :, : w + kw - 1], (kh, kw), axis=(1, 2))[
            :, :h, :w
        ].transpose(0, 1, 2, 4, 5, 3),
        g,
    )
    for form in (dw._kernel_grad_rows, dw._kernel_grad_fft):
        assert_close(to_numpy(form(x_pad, g, kh, kw)), want, 1e-5)


def test_wide_outputs_take_the_fft_kernel_gradient_and_match_keras():
    # Output width 19 > dw._MAX_ROWS_GRAD_WIDTH: the kernel gradient is the FFT's.
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 6, 19, 3)).astype("float32")
    k = rng.standard_normal((3, 5, 3, 1)).astype("float32")
    assert dw._kernel_grad_form((6, 19)) == "fft" and dw._kernel_grad_form((6, 16)) == "rows"

    def reference(x, k):
        return keras.ops.depthwise_conv(x, k, padding="same")

    def shifted(x, k):
        return depthwise_conv2d(x, k, padding="same", implementation="shifted")

    cot = rng.standard_normal(x.shape).astype("float32")
    for g, r in zip(value_and_grads(shifted, x, k, cot), value_and_grads(reference, x, k, cot), strict=True):
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
    fast = DepthwiseConv2D(
        5, depth_multiplier=2, padding="same", activation="relu", implementation=implementation
    )
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
    model.fit(
        rng.standard_normal((32, 8, 8, 3)).astype("float32"),
        rng.integers(0, 3, 32),
        batch_size=8,
        epochs=1,
        verbose=0,
    )
    after = {v.path: to_numpy(v) for v in model.weights}
    for path in frozen:
        np.testing.assert_array_equal(after[path], before[path])
    for path in (
        "block_1_depthwise_conv/bias",
        "stem_conv/kernel",
        "block_2_pointwise_conv/kernel",
        "head/kernel",
    ):
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


@pytest.mark.parametrize("device", ["gpu", "tpu"])
def test_auto_path_on_accelerators_follows_the_gpu_measurements(monkeypatch, device):
    # benchmarks/results/gpu/depthwise_speed.md (one H100): under JAX the shifted sum beats
    # XLA's grouped convolution in every mode from k = 9 on, not at k = 3 or 7; TPUs are not measured.
    monkeypatch.setattr(dw, "accelerator", lambda: device)
    shifted_on_gpu = BACKEND == "jax" and device == "gpu"
    large = "shifted" if shifted_on_gpu else {"torch": "torch"}.get(BACKEND, "native")
    small = {"torch": "torch"}.get(BACKEND, "native")

    def path(kernel_size, dtype="float32"):
        return select_implementation(kernel_size=kernel_size, dtype=dtype)

    assert path((9, 9)) == large
    assert path((dw.GPU_SHIFTED_MIN_KERNEL,) * 2) == large
    assert path((7, 7)) == path((3, 3)) == small
    assert path((9, 3)) == small  # the smaller side decides
    assert path((9, 9), "bfloat16") == path((9, 9), "float16") == small  # not measured: native
    assert select_implementation() == small  # no kernel size or dtype: the native op
    assert select_implementation("native", kernel_size=(9, 9), dtype="float32") == small


@pytest.mark.skipif(BACKEND != "torch", reason="the PyTorch path")
@pytest.mark.parametrize("contiguous", [False, True])
@pytest.mark.parametrize("strides, padding", [(1, "same"), (2, "same"), (1, "valid")])
def test_torch_path_computes_the_same_on_a_view_or_a_contiguous_copy(contiguous, strides, padding):
    # A GPU convolves a contiguous NCHW copy (cuDNN's channels-last depthwise kernel is slow).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 11, 12, 6)).astype("float32")
    k = rng.standard_normal((5, 5, 6, 2)).astype("float32")
    got = dw._torch_depthwise_conv2d(x, k, (strides, strides), padding, contiguous=contiguous)
    expected = keras.ops.depthwise_conv(x, k, strides=strides, padding=padding)
    assert_close(to_numpy(got), to_numpy(expected), 1e-5)


def test_device_detection():
    assert ks_backend.accelerator() in ("cpu", "gpu", "tpu")
    assert devices.accelerator is ks_backend.accelerator
    assert not ks_backend.in_tf_xla_context()
    if BACKEND == "tensorflow":
        import tensorflow as tf

        @tf.function(jit_compile=True)
        def inside_xla():
            assert ks_backend.in_tf_xla_context()
            assert select_implementation() == ("shifted" if ks_backend.accelerator() == "cpu" else "native")
            return tf.constant(0)

        inside_xla()


# --- Unknown batch and spatial sizes (partial batches, tf.data, variable image sizes) ---

CHANNELS = 3


def _conv_branches(fast, implementation="auto"):
    """A depthwise and a grouped conv per (strides, padding): the package's layers
    when ``fast``, the stock Keras layers otherwise (same names and weights)."""
    layers = []
    for strides in (1, 2):
        for padding in ("same", "valid"):
            common = {"kernel_size": 3, "strides": strides, "padding": padding, "activation": "tanh"}
            suffix = f"s{strides}_{padding}"
            if fast:
                common["implementation"] = implementation
            depthwise_cls = DepthwiseConv2D if fast else keras.layers.DepthwiseConv2D
            grouped_cls = GroupedConv2D if fast else keras.layers.Conv2D
            layers.append(depthwise_cls(depth_multiplier=2, name=f"dw_{suffix}", **common))
            layers.append(grouped_cls(2 * CHANNELS, groups=CHANNELS, name=f"grouped_{suffix}", **common))
    return layers


def _branch_models(fast, implementation="auto"):
    """``(convs, trainer)``: a model returning every branch's output for inputs of
    any height and width, and one sharing its layers with a pooled output to fit."""
    inputs = keras.Input((None, None, CHANNELS))
    outputs = [layer(inputs) for layer in _conv_branches(fast, implementation)]
    pooled = keras.layers.Concatenate()([keras.layers.GlobalAveragePooling2D()(y) for y in outputs])
    return keras.Model(inputs, outputs), keras.Model(inputs, pooled)


def _fit_one_epoch(trainer, x, y, jit_compile):
    trainer.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse", jit_compile=jit_compile)
    trainer.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)


def _assert_all_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert_close(to_numpy(g), to_numpy(w), 1e-5)


def _compile_cases():
    """``(jit_compile, implementation)``: both compile modes, on the shifted path (which the
    layer's "auto" takes with XLA on a CPU) where the backend's compiler allows. Keras resolves
    ``jit_compile="auto"`` to one of the two (here: XLA on JAX; not on TensorFlow with CPUs only,
    nor on torch), so it is no third case."""
    for jit_compile in (True, False):
        if BACKEND == "torch" and jit_compile is True:
            # torch.compile of a whole model takes minutes on a 2-core CPU; the
            # layer's torch path is torch's own conv2d, which needs no dynamic-shape fix.
            yield pytest.param(
                jit_compile, "auto", marks=pytest.mark.skip(reason="torch.compile: minutes per model on CPU")
            )
        else:
            yield jit_compile, "shifted"


@pytest.fixture(scope="module")
def stock_run():
    """The run of the stock layers that every compile mode of the package's layers must
    reproduce, computed once: inputs, initial weights, the weights after one epoch (batches of
    4, 4 and 2), and the predictions on the 10 inputs and on 3 images of another size (which
    the tests predict in batches of 4, 4, 2 and of 3)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((10, 9, 8, CHANNELS)).astype("float32")
    convs, trainer = _branch_models(False)
    initial = [(w + 0.1 * rng.standard_normal(w.shape)).astype("float32") for w in convs.get_weights()]
    convs.set_weights(initial)
    y = rng.standard_normal((10, trainer.output_shape[-1])).astype("float32")
    _fit_one_epoch(trainer, x, y, "auto")
    batches = [(x, 4), (x[:3, :7, :6], 3)]
    return {
        "x": x,
        "y": y,
        "initial": initial,
        "trained": [to_numpy(w) for w in convs.get_weights()],
        "batches": batches,
        "predictions": [[to_numpy(p) for p in convs(images)] for images, _ in batches],
    }


@pytest.mark.parametrize("jit_compile, implementation", list(_compile_cases()))
def test_unknown_batch_and_image_sizes_match_stock_layers(stock_run, jit_compile, implementation):
    fast_convs, fast_trainer = _branch_models(True, implementation)
    fast_convs.set_weights(stock_run["initial"])
    _fit_one_epoch(fast_trainer, stock_run["x"], stock_run["y"], jit_compile)  # batches of 4, 4 and 2
    trained = fast_convs.get_weights()
    assert not any(np.array_equal(a, b) for a, b in zip(trained, stock_run["initial"], strict=True))
    _assert_all_close(trained, stock_run["trained"])

    fast_convs.compile(jit_compile=jit_compile)
    for (images, batch_size), expected in zip(stock_run["batches"], stock_run["predictions"], strict=True):
        _assert_all_close(fast_convs.predict(images, batch_size=batch_size, verbose=0), expected)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="only TensorFlow traces graphs with unknown sizes")
@pytest.mark.parametrize("jit_compile", [True, False])
@pytest.mark.parametrize("kernel_size, strides", [((3, 3), 1), ((3, 3), 2), ((4, 2), 2), ((13, 13), 1)])
def test_shifted_with_unknown_sizes_in_tf_function(kernel_size, strides, jit_compile):
    import tensorflow as tf

    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 15, 14, 2)).astype("float32")
    k = rng.standard_normal(kernel_size + (2, 2)).astype("float32")
    signature = [tf.TensorSpec((None, None, None, 2)), tf.TensorSpec(k.shape)]

    def value_and_grads(implementation, padding):
        @tf.function(jit_compile=jit_compile, input_signature=signature)
        def fn(x, k):
            with tf.GradientTape() as tape:
                tape.watch([x, k])
                y = depthwise_conv2d(x, k, (strides, strides), padding, implementation=implementation)
                loss = tf.reduce_sum(tf.sin(y))
            return (y, *tape.gradient(loss, [x, k]))

        return fn

    for padding in ("same", "valid"):
        shifted, native = value_and_grads("shifted", padding), value_and_grads("native", padding)
        for images in (x, x[:2, :14, :13]):
            _assert_all_close(shifted(images, k), native(images, k))


@pytest.mark.skipif(BACKEND != "tensorflow", reason="only TensorFlow traces graphs with unknown sizes")
@pytest.mark.parametrize("jit_compile", [True, False])
@pytest.mark.parametrize("kernel_size", [(3, 3), (5, 4)])
def test_row_product_kernel_gradient_with_unknown_batch_in_tf_function(kernel_size, jit_compile):
    # Known height and width, unknown batch: the kernel gradient takes the row products.
    import tensorflow as tf

    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 9, 8, 2)).astype("float32")
    k = rng.standard_normal(kernel_size + (2, 1)).astype("float32")
    signature = [tf.TensorSpec((None, 9, 8, 2)), tf.TensorSpec(k.shape)]

    def grads(implementation):
        @tf.function(jit_compile=jit_compile, input_signature=signature)
        def fn(x, k):
            with tf.GradientTape() as tape:
                tape.watch([x, k])
                y = depthwise_conv2d(x, k, padding="same", implementation=implementation)
                loss = tf.reduce_sum(tf.sin(y))
            return tape.gradient(loss, [x, k])

        return fn

    shifted, native = grads("shifted"), grads("native")
    for images in (x, x[:2]):
        _assert_all_close(shifted(images, k), native(images, k))


# --- Frozen kernels saved with the layer ---


def test_kernel_trainable_argument_and_config():
    with pytest.raises(TypeError, match="kernel_trainable"):
        DepthwiseConv2D(3, kernel_trainable=0)
    with pytest.raises(TypeError, match="kernel_trainable"):
        GroupedConv2D(4, 3, groups=4, kernel_trainable="no")
    layer = DepthwiseConv2D(3, kernel_trainable=False)
    assert layer.get_config()["kernel_trainable"] is False  # not built: the argument
    layer.build((None, 8, 8, 4))
    assert not layer.kernel.trainable and layer.bias.trainable
    grouped = GroupedConv2D(4, 3, groups=4)
    grouped.build((None, 8, 8, 4))
    assert grouped.get_config()["kernel_trainable"] is True
    grouped.kernel.trainable = False  # as freeze_spatial does: the config follows the variable
    assert grouped.get_config()["kernel_trainable"] is False
    rebuilt = GroupedConv2D.from_config(grouped.get_config())
    rebuilt.build((None, 8, 8, 4))
    assert not rebuilt.kernel.trainable and rebuilt.bias.trainable


@pytest.mark.parametrize("layer_cls", [DepthwiseConv2D, GroupedConv2D])
def test_frozen_kernel_survives_keras_round_trip_with_optimizer_state(layer_cls, tmp_path):
    keras.utils.set_random_seed(1)
    inputs = keras.Input((8, 8, 4))
    if layer_cls is DepthwiseConv2D:
        conv = DepthwiseConv2D(3, padding="same", name="conv")
    else:
        conv = GroupedConv2D(4, 3, groups=4, padding="same", name="conv")
    x = keras.layers.GlobalAveragePooling2D()(conv(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(x))
    model.get_layer("conv").kernel.trainable = False
    model.compile(optimizer=keras.optimizers.AdamW(0.01), loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 8, 8, 4)).astype("float32"), rng.standard_normal((8, 2)).astype("float32")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    model.save(tmp_path / "frozen.keras")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(tmp_path / "frozen.keras")
    skipped = [str(w.message) for w in caught if "Skipping variable loading" in str(w.message)]
    assert not skipped, skipped
    kernel = loaded.get_layer("conv").kernel
    assert not kernel.trainable
    assert {v.path for v in loaded.trainable_variables} == {v.path for v in model.trainable_variables}
    saved_state = [to_numpy(v) for v in model.optimizer.variables]
    loaded_state = [to_numpy(v) for v in loaded.optimizer.variables]
    assert len(loaded_state) == len(saved_state)
    for got, want in zip(loaded_state, saved_state, strict=True):
        np.testing.assert_array_equal(got, want)

    before = {v.path: to_numpy(v) for v in loaded.weights}
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0)
    after = {v.path: to_numpy(v) for v in loaded.weights}
    np.testing.assert_array_equal(after[kernel.path], before[kernel.path])
    for path in ("conv/bias", "head/kernel", "head/bias"):
        assert not np.array_equal(after[path], before[path]), path
