"""ConvNeXt (Liu et al., "A ConvNet for the 2020s", CVPR 2022), hierarchical and isotropic."""

from __future__ import annotations

from numbers import Real

import keras

from keras_structinit.covariance import check_positive_int, depth_fractions
from keras_structinit.layers.depthwise import DepthwiseConv2D
from keras_structinit.models.common import (
    LayerScale,
    StochasticDepth,
    check_input_shape,
    check_min_size,
    check_rate,
    depthwise_initializer_at,
    drop_path_rates,
    positive_ints,
    trunc_normal,
    trunc_normal_kwargs,
)

LN_EPSILON = 1e-6

# (depths, dims) of the named configurations (timm's atto..nano, the paper's T).
CONFIGS = {
    "atto": ((2, 2, 6, 2), (40, 80, 160, 320)),
    "femto": ((2, 2, 6, 2), (48, 96, 192, 384)),
    "pico": ((2, 2, 6, 2), (64, 128, 256, 512)),
    "nano": ((2, 2, 8, 2), (80, 160, 320, 640)),
    "tiny": ((3, 3, 9, 3), (96, 192, 384, 768)),
}


def _layer_scale_init(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, Real) or value < 0):
        raise ValueError(
            "`layer_scale_init` must be None or a float >= 0. "
            f"Received: layer_scale_init={value!r}"
        )
    return float(value) if value else None


def _depthwise_init(initializer, fraction, index):
    """Official trunc-normal(0.02) by default, else as in ConvMixer (per-depth)."""
    if initializer is None:
        return trunc_normal()
    return depthwise_initializer_at(initializer, fraction, index)


def convnext_block(x, kernel_size, layer_scale_init, drop_rate, prefix, depthwise_initializer):
    """``x + DropPath(gamma * W2 GELU(W1 LN(DWConv_k(x))))`` at constant width.

    Layers ``{prefix}_depthwise_conv`` (k x k, 'same'), ``_norm`` (LN, eps 1e-6),
    ``_pointwise_1`` (Dense 4d, GELU), ``_pointwise_2`` (Dense d),
    ``_layer_scale`` (if ``layer_scale_init``), ``_drop_path`` (if
    ``drop_rate > 0``) and ``_residual``.
    """
    dim = x.shape[-1]
    residual = x
    x = DepthwiseConv2D(
        kernel_size,
        padding="same",
        depthwise_initializer=depthwise_initializer,
        bias_initializer="zeros",
        name=f"{prefix}_depthwise_conv",
    )(x)
    x = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"{prefix}_norm")(x)
    x = keras.layers.Dense(
        4 * dim, activation="gelu", name=f"{prefix}_pointwise_1", **trunc_normal_kwargs()
    )(x)
    x = keras.layers.Dense(dim, name=f"{prefix}_pointwise_2", **trunc_normal_kwargs())(x)
    if layer_scale_init:
        x = LayerScale(layer_scale_init, name=f"{prefix}_layer_scale")(x)
    if drop_rate > 0:
        x = StochasticDepth(drop_rate, name=f"{prefix}_drop_path")(x)
    return keras.layers.Add(name=f"{prefix}_residual")([residual, x])


def _stem(inputs, dim, patch_size):
    x = keras.layers.Conv2D(
        dim, patch_size, strides=patch_size, name="stem_conv", **trunc_normal_kwargs()
    )(inputs)
    return keras.layers.LayerNormalization(epsilon=LN_EPSILON, name="stem_norm")(x)


def _head(x, num_classes):
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    x = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name="head_norm")(x)
    return keras.layers.Dense(num_classes, name="head", **trunc_normal_kwargs())(x)


def convnext(
    depths,
    dims,
    kernel_size=7,
    patch_size=4,
    num_classes=1000,
    input_shape=(224, 224, 3),
    layer_scale_init=1e-6,
    drop_path=0.0,
    depthwise_initializer=None,
    name=None,
):
    """Builds a hierarchical ConvNeXt as a functional ``keras.Model`` (logits).

    Stem ``LN(Conv2D(dims[0], p, stride p))``; stage ``s`` (from 1) is
    ``depths[s-1]`` :func:`convnext_block` s at width ``dims[s-1]``, preceded
    for ``s > 1`` by the downsampling ``Conv2D(dims[s-1], 2, stride 2)(LN(x))``;
    head ``Dense(LN(GlobalAvgPool(x)))``. All LNs use ``eps = 1e-6``; the
    stochastic-depth rate grows linearly over all blocks from 0 to
    ``drop_path``.

    Layers: ``stem_conv``, ``stem_norm``, ``stage_{s}_downsample_norm``,
    ``stage_{s}_downsample_conv``, ``stage_{s}_block_{b}_*`` (see
    :func:`convnext_block`), ``pool``, ``head_norm``, ``head``.

    Initialization as in the official code: conv, depthwise and dense kernels
    ``N(0, 0.02^2)`` (see :func:`~keras_structinit.models.common.trunc_normal`),
    zero biases, LN ``gamma = 1, beta = 0``, layer scale ``gamma =
    layer_scale_init``. The depthwise convs are the package's fast
    :class:`~keras_structinit.layers.DepthwiseConv2D`.

    Args:
        depths: blocks per stage.
        dims: width per stage (same length as ``depths``).
        kernel_size: depthwise filter size.
        patch_size: stem patch size and stride (4 for ImageNet; 1, 2 or 4 for
            CIFAR-size inputs).
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last; the spatial
            sizes may be ``None``.
        layer_scale_init: initial layer-scale value; ``None`` or ``0`` leaves
            layer scale out.
        drop_path: stochastic-depth rate of the last block.
        depthwise_initializer: ``None`` (official init) or an initializer of
            the depthwise kernels, specialized per block to its depth fraction
            over all blocks when it has ``at_depth`` (e.g. ``ConvCovariance``).
        name: model name, default ``convnext``.
    """
    depths = positive_ints(depths, "depths")
    dims = positive_ints(dims, "dims")
    if len(dims) != len(depths):
        raise ValueError(
            f"`dims` must have one width per stage ({len(depths)}). Received: dims={dims!r}"
        )
    kernel_size = check_positive_int(kernel_size, "kernel_size")
    patch_size = check_positive_int(patch_size, "patch_size")
    num_classes = check_positive_int(num_classes, "num_classes")
    input_shape = check_input_shape(input_shape, allow_none=True)
    check_min_size(input_shape, patch_size * 2 ** (len(depths) - 1), "the patch size and downsampling")
    layer_scale_init = _layer_scale_init(layer_scale_init)
    drop_path = check_rate(drop_path, "drop_path")

    num_blocks = sum(depths)
    rates = drop_path_rates(num_blocks, drop_path)
    fractions = depth_fractions(num_blocks)
    inputs = keras.Input(shape=input_shape, name="image")
    x = _stem(inputs, dims[0], patch_size)
    index = 0
    for s, (depth, dim) in enumerate(zip(depths, dims), start=1):
        if s > 1:
            x = keras.layers.LayerNormalization(
                epsilon=LN_EPSILON, name=f"stage_{s}_downsample_norm"
            )(x)
            x = keras.layers.Conv2D(
                dim, 2, strides=2, name=f"stage_{s}_downsample_conv", **trunc_normal_kwargs()
            )(x)
        for b in range(1, depth + 1):
            x = convnext_block(
                x,
                kernel_size,
                layer_scale_init,
                rates[index],
                f"stage_{s}_block_{b}",
                _depthwise_init(depthwise_initializer, fractions[index], index),
            )
            index += 1
    outputs = _head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or "convnext")


def _named(variant):
    depths, dims = CONFIGS[variant]

    def builder(num_classes=1000, input_shape=(224, 224, 3), **kwargs):
        kwargs.setdefault("name", f"convnext_{variant}")
        return convnext(depths, dims, num_classes=num_classes, input_shape=input_shape, **kwargs)

    builder.__name__ = builder.__qualname__ = f"convnext_{variant}"
    builder.__doc__ = (
        f"ConvNeXt-{variant.capitalize()}: ``convnext(depths={depths}, dims={dims}, ...)``.\n\n"
        "Other keyword arguments as in :func:`convnext`."
    )
    return builder


convnext_atto = _named("atto")
convnext_femto = _named("femto")
convnext_pico = _named("pico")
convnext_nano = _named("nano")
convnext_tiny = _named("tiny")


def convnext_isotropic(
    dim,
    depth,
    kernel_size=7,
    patch_size=2,
    num_classes=10,
    input_shape=(32, 32, 3),
    layer_scale_init=None,
    drop_path=0.0,
    depthwise_initializer=None,
    name=None,
):
    """Builds the isotropic ConvNeXt-``dim``/``depth`` (no downsampling), logits.

    Stem ``LN(Conv2D(dim, p, stride p))``, ``depth`` :func:`convnext_block` s
    at constant width ``dim`` (layers ``block_{i}_*``, i from 1), head
    ``Dense(LN(GlobalAvgPool(x)))`` (``pool``, ``head_norm``, ``head``): the
    ConvMixer-like "ConvNeXt-256/8" used on CIFAR. Layer scale is off by
    default, as in the official isotropic models (``layer_scale_init=0``);
    initialization and the other arguments as in :func:`convnext`.
    """
    dim = check_positive_int(dim, "dim")
    depth = check_positive_int(depth, "depth")
    kernel_size = check_positive_int(kernel_size, "kernel_size")
    patch_size = check_positive_int(patch_size, "patch_size")
    num_classes = check_positive_int(num_classes, "num_classes")
    input_shape = check_input_shape(input_shape, allow_none=True)
    check_min_size(input_shape, patch_size, "the patch size")
    layer_scale_init = _layer_scale_init(layer_scale_init)
    drop_path = check_rate(drop_path, "drop_path")

    rates = drop_path_rates(depth, drop_path)
    fractions = depth_fractions(depth)
    inputs = keras.Input(shape=input_shape, name="image")
    x = _stem(inputs, dim, patch_size)
    for i in range(1, depth + 1):
        x = convnext_block(
            x,
            kernel_size,
            layer_scale_init,
            rates[i - 1],
            f"block_{i}",
            _depthwise_init(depthwise_initializer, fractions[i - 1], i - 1),
        )
    outputs = _head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or f"convnext_isotropic_{dim}_{depth}")
