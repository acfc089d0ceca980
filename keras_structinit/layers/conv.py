"""2-D convolution whose kernel tiles the input (kernel size == strides) as one matrix product.

A 2-D convolution whose kernel ``K`` ``(p, q, C, F)`` tiles the input
(strides ``(p, q)``, 'valid' padding, dilation 1, one group): the patch
embeddings of ConvMixer/ViT and every 1 x 1 convolution. Each output pixel
sees one disjoint ``p x q`` patch, so, channels last::

    y[b, h, w, f] = sum_{i, j, c} x[b, p*h + i, q*w + j, c] * K[i, j, c, f]
                  = (patches(x) @ reshape(K, (p*q*C, F)))[b, h, w, f]          (1)

with ``patches(x)[b, h, w, (i, j, c)] = x[b, p*h + i, q*w + j, c]``, a
reshape and a transpose (none at all for 1 x 1). Rows and columns past the
last whole patch are dropped, as 'valid' padding does.

Why: XLA's CPU backend runs these convolutions far below its matrix-multiply
rate. ConvMixer-128's 1 x 1 conv (``(128, 16, 16, 128)``, 128 filters) takes,
forward / forward + both gradients, 23.6 / 62.5 ms as ``keras.ops.conv`` and
6.2 / 28.6 ms as Eq. (1) on JAX; on PyTorch 25.7 / 43.3 against 11.4 / 28.7 ms;
TensorFlow is about on par either way (2-core CPU;
``benchmarks/results/archive/convmixer_breakdown.md``). Gradients are autodiff's of
the matrix product: no custom rule.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.layers.padding import SymmetricPadding
from keras_structinit.utils import validation

IMPLEMENTATIONS = ("auto", "native", "matmul")


def patch_conv2d(inputs, kernel):
    """Eq. (1): the stride-``(p, q)`` 'valid' convolution of channels-last ``inputs`` by ``kernel``.

    Args:
        inputs: ``(B, H, W, C)``.
        kernel: ``(p, q, C, F)``; the strides are ``(p, q)``.

    Returns:
        ``(B, H // p, W // q, F)``, equal to
        ``keras.ops.conv(inputs, kernel, strides=(p, q), padding="valid")``.

    Example:

    ```python
    y = patch_conv2d(images, kernel)  # kernel (2, 2, 3, 128): 2 x 2 patch embedding
    ```
    """
    validation.shape_rank(kernel.shape, 4, "kernel.shape", "(p, q, channels, filters)")
    validation.shape_rank(inputs.shape, 4, "inputs.shape", "(batch, height, width, channels), channels last")
    p, q, channels, filters = kernel.shape
    if (p, q) == (1, 1):
        return ops.matmul(inputs, ops.reshape(kernel, (channels, filters)))
    _, height, width, _ = ops.shape(inputs)  # ints; scalar tensors for sizes TF does not know
    rows, cols = height // p, width // q
    x = inputs[:, : rows * p, : cols * q, :]
    x = ops.reshape(x, (-1, rows, p, cols, q, channels))
    x = ops.reshape(ops.transpose(x, (0, 1, 3, 2, 4, 5)), (-1, rows, cols, p * q * channels))
    return ops.matmul(x, ops.reshape(kernel, (p * q * channels, filters)))


def tiles_input(kernel_size, strides, padding, dilation_rate, groups):
    """Whether a conv's kernel tiles its input, the case :func:`patch_conv2d` computes."""
    kernel_size, strides = tuple(kernel_size), tuple(strides)
    return (
        strides == kernel_size
        and (padding == "valid" or kernel_size == (1, 1))
        and tuple(dilation_rate) == (1, 1)
        and groups == 1
    )


@keras.saving.register_keras_serializable(package="keras_structinit")
class Conv2D(SymmetricPadding, keras.layers.Conv2D):
    """``keras.layers.Conv2D``, computed by :func:`patch_conv2d` where the kernel tiles the input.

    Same arguments, weights (names, shapes, layout; weight files load either
    way) and outputs as the stock layer, and ``padding="symmetric"``:
    PyTorch's ``padding=k // 2`` at any stride
    (:mod:`keras_structinit.ops.padding`). Convolutions with ``strides ==
    kernel_size``, 'valid' padding (any padding for 1 x 1), no dilation, one
    group and channels last (patch embeddings, 1 x 1 convs) run as one matrix
    product; every other convolution is the stock op. ``implementation``:
    ``"auto"`` (as just said), ``"matmul"`` (the product; an error where it
    does not apply) or ``"native"`` (always the stock op; for benchmarks and
    tests).

    Example:

    ```python
    stem = Conv2D(256, 2, strides=2)     # 2 x 2 patches: one matrix product
    mix = Conv2D(256, 1)                 # pointwise: one matrix product
    conv = Conv2D(64, 3, padding="same") # the stock op
    ```
    """

    def __init__(self, *args, implementation="auto", **kwargs):
        implementation = validation.one_of(implementation, "implementation", IMPLEMENTATIONS)
        super().__init__(*args, **kwargs)
        self.implementation = implementation
        self._tiles = self.data_format == "channels_last" and tiles_input(
            self.kernel_size, self.strides, self.padding, self.dilation_rate, self.groups
        )
        if implementation == "matmul" and not self._tiles:
            raise ValueError(
                "Conv2D's implementation='matmul' needs strides == kernel_size, padding='valid' "
                "(or a 1 x 1 kernel), dilation_rate=1, groups=1 and data_format='channels_last'; "
                f"received kernel_size={self.kernel_size}, strides={self.strides}, padding={self.padding!r}, "
                f"dilation_rate={self.dilation_rate}, groups={self.groups}, data_format={self.data_format!r}."
            )

    def convolution_op(self, inputs, kernel):
        if self._tiles and self.implementation != "native":
            return patch_conv2d(inputs, kernel)
        return super().convolution_op(inputs, kernel)

    def get_config(self):
        return {**super().get_config(), "implementation": self.implementation}
