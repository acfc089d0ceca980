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
            return depthwise_conv2d(x, w, padding="same", implementation=implementation,
                                    kernel_trainable=not frozen)

        if frozen:
            results[implementation] = _input_grad(conv, x, w, cotangent)
        else:
            results[implementation] = value_and_grads(conv, x, w, cotangent)
    reference = value_and_grads(lambda x, w: keras.ops.depthwise_conv(x, w, padding="same"), x, w, cotangent)
    for got in results.values():
        for value, want in zip(got, reference, strict=False):  # frozen: output and input gradient
            assert_close(value, want, 1e-5)


def test_auto_choice_for_frozen_kernels_is_the_documented_one():
    where = "cpu"  # this machine; accelerators below
    thawed, frozen = AUTO_PATHS[(BACKEND, where)]
    documented = {"jax": "shifted", "tensorflow": "native", "torch": "torch"}[BACKEND]
    assert frozen == documented
    assert select_implementation(kernel_size=(9, 9), dtype="float32", kernel_trainable=False) == frozen
    assert select_implementation(kernel_size=(9, 9), dtype="float32", kernel_trainable=True) == thawed
    # forced paths do not depend on it
    assert select_implementation("shifted", kernel_trainable=False) == "shifted"
    assert select_implementation("native", kernel_trainable=False) == NATIVE
    with pytest.raises(TypeError, match="kernel_trainable"):
        select_implementation(kernel_trainable="no")


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's XLA context")
def test_auto_choice_for_frozen_kernels_under_tf_xla():
    import tensorflow as tf

    seen = {}

    def traced():
        seen["frozen"] = select_implementation(kernel_size=(9, 9), dtype="float32", kernel_trainable=False)
        return tf.constant(0.0)

    tf.function(traced, jit_compile=True).get_concrete_function()
    assert seen["frozen"] == AUTO_PATHS[("tensorflow", "cpu-xla")][1] == "shifted"


def test_auto_choice_for_frozen_kernels_on_a_gpu(monkeypatch):
    monkeypatch.setattr(dw, "accelerator", lambda: "gpu")
    large = "shifted" if BACKEND == "jax" else NATIVE
    assert select_implementation(kernel_size=(9, 9), dtype="float32", kernel_trainable=False) == large
    assert select_implementation(kernel_size=(7, 7), dtype="float32", kernel_trainable=False) == NATIVE


def _train_step(model):
    model.compile(optimizer=keras.optimizers.AdamW(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    model.train_on_batch(rng.standard_normal((4, 8, 8, 3)).astype("float32"), rng.integers(0, 3, 4))


def test_the_layer_decides_at_call_time_so_freezing_after_build_is_picked_up(monkeypatch):
    # A rule whose frozen path differs from the thawed one, to see which one each trace took.
    key = (BACKEND, "cpu")
    thawed = AUTO_PATHS[key][0]
    other = "shifted" if thawed != "shifted" else "native"
    monkeypatch.setitem(AUTO_PATHS, key, (thawed, other))
    keras.utils.set_random_seed(0)
    model = ks.models.convmixer(8, 1, kernel_size=3, num_classes=3, input_shape=(8, 8, 3))
    layer = model.get_layer("block_1_depthwise_conv")
    assert isinstance(layer, DepthwiseConv2D) and layer.built
    model(np.zeros((1, 8, 8, 3), "float32"))
    assert layer.kernel_is_trainable and layer.last_path == (NATIVE if thawed == "native" else thawed)
    ks.freeze_spatial(model)  # after build, before compile
    assert not layer.kernel_is_trainable
    _train_step(model)
    assert layer.last_path == (NATIVE if other == "native" else other)
    # the layer's own flag too
    layer.trainable = False
    assert not layer.kernel_is_trainable


def test_frozen_model_as_built_takes_the_documented_path():
    keras.utils.set_random_seed(0)
    model = ks.models.convmixer(8, 1, kernel_size=3, num_classes=3, input_shape=(8, 8, 3))
    ks.freeze_spatial(model)
    _train_step(model)
    frozen = AUTO_PATHS[(BACKEND, "cpu")][1]
    assert model.get_layer("block_1_depthwise_conv").last_path == (NATIVE if frozen == "native" else frozen)
