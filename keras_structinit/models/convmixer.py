"""ConvMixer (Trockman & Kolter, "Patches Are All You Need?", TMLR 2023)."""

from __future__ import annotations

import keras

from keras_structinit.covariance import check_positive_int, depth_fractions
from keras_structinit.initializers.torch_default import TorchDefaultUniform
from keras_structinit.layers.depthwise import DepthwiseConv2D

# Shared with the other models (they used to live here; still importable from here).
from keras_structinit.models.common import depthwise_initializer_at, torch_conv_kwargs


def convmixer(
    dim,
    depth,
    kernel_size=9,
    patch_size=2,
    num_classes=10,
    input_shape=(32, 32, 3),
    depthwise_initializer=None,
    bn_momentum=0.9,
    name=None,
):
    """Builds ConvMixer-``dim``/``depth`` as a functional ``keras.Model``.

    Patch embedding ``Conv2D(dim, patch_size, strides=patch_size)`` + GELU + BN,
    then ``depth`` blocks of ``x = x + BN(GELU(DepthwiseConv(x)))`` ('same'
    padding) followed by ``x = BN(GELU(Conv1x1(x)))``, global average pooling
    and a ``Dense`` logits head (no softmax).

    Layers are named ``stem_*``, ``block_{i}_depthwise_*``,
    ``block_{i}_pointwise_*`` (i from 1) and ``head``. Weights follow
    PyTorch's defaults (:class:`TorchDefaultUniform`), as in the papers'
    PyTorch ConvMixer; BatchNorm uses ``momentum=0.9`` (PyTorch's 0.1) and
    ``epsilon=1e-5``. The depthwise convs are the package's fast
    :class:`~keras_structinit.layers.DepthwiseConv2D`.

    Args:
        dim: channel width ``H``.
        depth: number of blocks ``D``.
        kernel_size: depthwise filter size.
        patch_size: stem patch size (stride).
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last.
        depthwise_initializer: initializer of the depthwise kernels; default
            PyTorch's uniform. A
            :class:`~keras_structinit.initializers.ConvCovariance` is
            specialized per layer to its depth fraction (see
            :func:`depthwise_initializer_at`).
        bn_momentum: BatchNorm moving-average momentum (Keras convention).
        name: model name, default ``convmixer_{dim}_{depth}``.
    """
    dim = check_positive_int(dim, "dim")
    depth = check_positive_int(depth, "depth")
    kernel_size = check_positive_int(kernel_size, "kernel_size")
    patch_size = check_positive_int(patch_size, "patch_size")
    num_classes = check_positive_int(num_classes, "num_classes")
    if not (isinstance(input_shape, (tuple, list)) and len(input_shape) == 3):
        raise ValueError(
            f"`input_shape` must be (height, width, channels). Received: {input_shape!r}"
        )

    def gelu_bn(x, prefix):
        x = keras.layers.Activation("gelu", name=f"{prefix}_act")(x)
        return keras.layers.BatchNormalization(
            momentum=bn_momentum, epsilon=1e-5, name=f"{prefix}_bn"
        )(x)

    inputs = keras.Input(shape=tuple(input_shape), name="image")
    x = keras.layers.Conv2D(
        dim,
        patch_size,
        strides=patch_size,
        name="stem_conv",
        **torch_conv_kwargs(patch_size * patch_size * input_shape[-1]),
    )(inputs)
    x = gelu_bn(x, "stem")
    fractions = depth_fractions(depth)
    for i in range(1, depth + 1):
        residual = x
        x = DepthwiseConv2D(
            kernel_size,
            padding="same",
            depthwise_initializer=depthwise_initializer_at(
                depthwise_initializer, fractions[i - 1], i - 1
            ),
            bias_initializer=TorchDefaultUniform(fan_in=kernel_size * kernel_size),
            name=f"block_{i}_depthwise_conv",
        )(x)
        x = gelu_bn(x, f"block_{i}_depthwise")
        x = keras.layers.Add(name=f"block_{i}_residual")([x, residual])
        x = keras.layers.Conv2D(
            dim, 1, name=f"block_{i}_pointwise_conv", **torch_conv_kwargs(dim)
        )(x)
        x = gelu_bn(x, f"block_{i}_pointwise")
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = keras.layers.Dense(
        num_classes,
        name="head",
        kernel_initializer=TorchDefaultUniform(),
        bias_initializer=TorchDefaultUniform(fan_in=dim),
    )(x)
    return keras.Model(inputs, outputs, name=name or f"convmixer_{dim}_{depth}")
