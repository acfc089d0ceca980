"""Frozen depthwise kernels (issue 51): the path chosen for them, and the same numbers on every path."""

import keras
import numpy as np
import pytest
from conv_helpers import assert_close, to_numpy, value_and_grads

import keras_structinit as ks
from keras_structinit.layers import DepthwiseConv2D
from keras_structinit.ops import depthwise as dw
from keras_structinit.ops.depthwise import AUTO_PATHS, depthwise_conv2d, select_implementation

BACKEND = keras.backend.backend()
NATIVE = "torch" if BACKEND == "torch" else "native"


def _input_grad(fn, x, w, cotangent):
    """``fn(x, w)`` and the gradient of ``sum(fn(x, w) * cotangent)`` w.r.t. ``x`` only: ``w`` is a
    constant (PyTorch: a tensor that does not require grad), as a frozen kernel is in training."""
    if BACKEND == "jax":
        import jax

        def loss(x):
            y = fn(x, w)
            return keras.ops.sum(y * cotangent), y

        (_, y), gx = jax.jit(jax.value_and_grad(loss, has_aux=True))(x)
    elif BACKEND == "tensorflow":
        import tensorflow as tf

        x = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = fn(x, tf.constant(w))
            loss = tf.reduce_sum(y * cotangent)
        gx = tape.gradient(loss, x)
    else:
        import torch

        x = torch.tensor(np.asarray(x), requires_grad=True)
        y = fn(x, torch.tensor(np.asarray(w)))
        (y * torch.as_tensor(cotangent)).sum().backward()
        gx = x.grad
    return to_numpy(y), to_numpy(gx)


@pytest.mark.parametrize("kernel_size", [3, 9])
@pytest.mark.parametrize("frozen", [False, True])
def test_every_path_gives_the_same_outputs_and_input_gradients(kernel_size, frozen):
    rng = np.random.default_rng(kernel_size)
    x = rng.standard_normal((2, 10, 10, 4)).astype("float32")
    w = (rng.standard_normal((kernel_size, kernel_size, 4, 1)) / kernel_size).astype("float32")
    cotangent = rng.standard_normal((2, 10, 10, 4)).astype("float32")
    results = {}
    for implementation in ("native", "shifted"):

        def conv(x, w, implementation=implementation):
            return depthwise_conv2d(x, w, padding="same", implementation=implementation)

        if frozen:
            results[implementation] = _input_grad(conv, x, w, cotangent)
        else:
            results[implementation] = value_and_grads(conv, x, w, cotangent)
    reference = value_and_grads(lambda x, w: keras.ops.depthwise_conv(x, w, padding="same"), x, w, cotangent)
    for got in results.values():
        for value, want in zip(got, reference, strict=False):  # frozen: output and input gradient
            assert_close(value, want, 1e-5)


def test_auto_choice_is_the_documented_one_and_one_for_both_kernel_states():
    """Issue 61 point 5: frozen kernels' fastest path was the thawed ones' everywhere measured, so
    the table has one column and the choice takes no kernel state."""
    where = "cpu"  # this machine; accelerators below
    documented = {"jax": "shifted", "tensorflow": "native", "torch": "torch"}[BACKEND]
    assert AUTO_PATHS[(BACKEND, where)] == documented
    assert all(isinstance(path, str) for path in AUTO_PATHS.values())
    assert select_implementation(kernel_size=(9, 9), dtype="float32") == documented
    assert select_implementation("shifted") == "shifted"
    assert select_implementation("native") == NATIVE
    with pytest.raises(TypeError, match="kernel_trainable"):
        select_implementation(kernel_trainable=False)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's XLA context")
def test_auto_choice_for_frozen_kernels_under_tf_xla():
    import tensorflow as tf

    seen = {}

    def traced():
        seen["path"] = select_implementation(kernel_size=(9, 9), dtype="float32")
        return tf.constant(0.0)

    tf.function(traced, jit_compile=True).get_concrete_function()
    assert seen["path"] == AUTO_PATHS[("tensorflow", "cpu-xla")] == "shifted"


def test_auto_choice_for_frozen_kernels_on_a_gpu(monkeypatch):
    monkeypatch.setattr(dw, "accelerator", lambda: "gpu")
    large = "shifted" if BACKEND == "jax" else NATIVE
    assert select_implementation(kernel_size=(9, 9), dtype="float32") == large
    assert select_implementation(kernel_size=(7, 7), dtype="float32") == NATIVE


def _train_step(model):
    model.compile(
        optimizer=keras.optimizers.AdamW(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(0)
    model.train_on_batch(rng.standard_normal((4, 8, 8, 3)).astype("float32"), rng.integers(0, 3, 4))


def test_the_layer_picks_its_path_once_per_call_whether_its_kernel_trains_or_not(monkeypatch):
    """Issue 61 point 5: one decision per call (it was made twice: by the layer, for ``last_path``,
    then again by ``depthwise_conv2d``), the same for a kernel frozen after build."""
    calls = []
    choose = dw.select_implementation

    def counted(*args, **kwargs):
        calls.append(args)
        return choose(*args, **kwargs)

    monkeypatch.setattr("keras_structinit.layers.depthwise.select_implementation", counted)
    monkeypatch.setattr(dw, "select_implementation", counted)
    keras.utils.set_random_seed(0)
    model = ks.models.convmixer(8, 1, kernel_size=3, num_classes=3, input_shape=(8, 8, 3))
    layer = model.get_layer("block_1_depthwise_conv")
    assert isinstance(layer, DepthwiseConv2D) and layer.built
    documented = AUTO_PATHS[(BACKEND, "cpu")]
    calls.clear()
    model(np.zeros((1, 8, 8, 3), "float32"))
    assert len(calls) == 1 and layer.last_path == (NATIVE if documented == "native" else documented)
    ks.freeze_spatial(model)  # after build, before compile
    _train_step(model)
    assert layer.last_path == (NATIVE if documented == "native" else documented)
    assert not layer._kernel_variable.trainable
