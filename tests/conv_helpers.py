"""Helpers of the convolution-layer tests: gradients on every backend, scaled closeness."""

import keras
import numpy as np

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

        # One XLA program per case: op-by-op dispatch compiles every op for every new shape.
        (_, y), (gx, gw) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(x, w)
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
