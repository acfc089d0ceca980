"""ConvMixer (Trockman & Kolter, "Patches Are All You Need?", TMLR 2023)."""

from __future__ import annotations

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.covariance import depth_fractions
from keras_structinit.layers.conv import Conv2D
from keras_structinit.layers.depthwise import DepthwiseConv2D
from keras_structinit.models.common import (
    check_initializer,
    clone_initializer,
    initializer_at_depth,
    positive_int_arguments,
    torch_default_head,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation


def _gelu_bn(x, prefix, bn_momentum):
    """``BN(GELU(x))``: layers ``{prefix}_act`` and ``{prefix}_bn`` (``epsilon=1e-5``)."""
    x = keras.layers.Activation("gelu", name=f"{prefix}_act")(x)
    return keras.layers.BatchNormalization(momentum=bn_momentum, epsilon=1e-5, name=f"{prefix}_bn")(x)


def _stem(inputs, dim, patch_size, kernel_initializer, bn_momentum):
    """The patch embedding ``z_0 = BN(GELU(Conv_p(x)))``: layers ``stem_*``."""
    x = Conv2D(
        dim,
        patch_size,
        strides=patch_size,
        kernel_initializer=clone_initializer(kernel_initializer),
        bias_initializer=TorchDefaultUniform(fan_in=patch_size * patch_size * inputs.shape[-1]),
        name="stem_conv",
    )(inputs)
    return _gelu_bn(x, "stem", bn_momentum)


def _block(x, i, dim, kernel_size, kernel_initializer, depthwise_initializer, bn_momentum):
    """Block ``i``: ``z' = z + BN(GELU(DWConv_k(z)))``, ``z = BN(GELU(Conv_1x1(z')))``.

    Layers ``block_{i}_depthwise_*``, ``block_{i}_residual``, ``block_{i}_pointwise_*``;
    ``depthwise_initializer`` is the block's own (already specialized to its depth).
    """
    residual = x
    x = DepthwiseConv2D(
        kernel_size,
        padding="same",
        depthwise_initializer=depthwise_initializer,
        bias_initializer=TorchDefaultUniform(fan_in=kernel_size * kernel_size),
        name=f"block_{i}_depthwise_conv",
    )(x)
    x = _gelu_bn(x, f"block_{i}_depthwise", bn_momentum)
    x = keras.layers.Add(name=f"block_{i}_residual")([x, residual])
    x = Conv2D(
        dim,
        1,
        kernel_initializer=clone_initializer(kernel_initializer),
        bias_initializer=TorchDefaultUniform(fan_in=dim),
        name=f"block_{i}_pointwise_conv",
    )(x)
    return _gelu_bn(x, f"block_{i}_pointwise", bn_momentum)


def convmixer(
    dim,
    depth,
    kernel_size=9,
    patch_size=2,
    num_classes=10,
    input_shape=(32, 32, 3),
    kernel_initializer=None,
    depthwise_initializer=None,
    bn_momentum=0.9,
    name=None,
):
    """Builds ConvMixer-``dim``/``depth`` as a functional ``keras.Model`` (logits).

    Patch embedding ``z_0 = BN(GELU(Conv_p(x)))`` (``dim`` filters, stride
    ``p``), then ``depth`` blocks

        z' = z + BN(GELU(DWConv_k(z))),    z = BN(GELU(Conv_1x1(z')))

    ('same' padding), global average pooling and a ``Dense`` logits head.

    Layers are named ``stem_*``, ``block_{i}_depthwise_*``,
    ``block_{i}_pointwise_*`` (i from 1) and ``head``. Weights follow
    PyTorch's defaults (:class:`~keras_structinit.initializers.TorchDefaultUniform`),
    as in the papers' PyTorch ConvMixer; BatchNorm uses ``momentum=0.9``
    (PyTorch's 0.1) and ``epsilon=1e-5``. The depthwise convs are the
    package's fast :class:`~keras_structinit.layers.DepthwiseConv2D`, the
    stem and 1 x 1 convs the package's :class:`~keras_structinit.layers.Conv2D`
    (one matrix product each; weights as the stock layer's).

    Args:
        dim: channel width ``H``.
        depth: number of blocks ``D``.
        kernel_size: depthwise filter size.
        patch_size: stem patch size (stride).
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last; the spatial
            sizes may be ``None``.
        kernel_initializer: initializer of the stem and 1 x 1 conv kernels
            (anything ``keras.initializers.get`` accepts); ``None``: PyTorch's
            default uniform. Biases keep PyTorch's default.
        depthwise_initializer: initializer of the depthwise kernels; ``None``:
            PyTorch's default uniform. One with ``at_depth`` (e.g.
            :class:`~keras_structinit.initializers.ConvCovariance`) is
            specialized to each block's depth fraction ``(i - 1) / (D - 1)``.
        bn_momentum: BatchNorm moving-average momentum (Keras convention).
        name: model name, default ``convmixer_{dim}_{depth}``.

    Example:

    ```python
    model = convmixer(256, 8, depthwise_initializer=ConvCovariance(preset="cifar-p2"))
    ```
    """
    dim, depth, kernel_size, patch_size, num_classes = positive_int_arguments(
        dim=dim, depth=depth, kernel_size=kernel_size, patch_size=patch_size, num_classes=num_classes
    )
    input_shape = validation.input_shape(input_shape, allow_none=True)
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", TorchDefaultUniform())
    depthwise_initializer = check_initializer(
        depthwise_initializer, "depthwise_initializer", TorchDefaultUniform(depthwise=True)
    )
    bn_momentum = validation.fraction(bn_momentum, "bn_momentum")

    inputs = keras.Input(shape=input_shape, name="image")
    x = _stem(inputs, dim, patch_size, kernel_initializer, bn_momentum)
    for i, depth_fraction in enumerate(depth_fractions(depth), start=1):
        block_depthwise = initializer_at_depth(depthwise_initializer, depth_fraction, i - 1)
        x = _block(x, i, dim, kernel_size, kernel_initializer, block_depthwise, bn_momentum)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = torch_default_head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or f"convmixer_{dim}_{depth}")


#: The zoo's names of this builder (:mod:`keras_structinit.models.zoo`); frozen filters are frozen
#: after the build (``freeze_spatial``).
ZOO = (
    ZooEntry(
        "convmixer-H/D",
        convmixer,
        pattern=r"convmixer-(?P<dim>\d+)/(?P<depth>\d+)",
        check=lambda p: p["dim"] >= 1 and p["depth"] >= 1,
        why="H and D must be >= 1",
    ),
)
