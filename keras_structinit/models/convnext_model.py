"""ConvNeXt (Liu et al., "A ConvNet for the 2020s", CVPR 2022), hierarchical and isotropic."""

from __future__ import annotations

import keras

from keras_structinit.covariance import depth_fractions
from keras_structinit.layers.depthwise import DepthwiseConv2D
from keras_structinit.layers.layer_scale import LayerScale
from keras_structinit.layers.stochastic_depth import StochasticDepth
from keras_structinit.mimetic.layers import ScalarBiasDense
from keras_structinit.models.common import (
    check_initializer,
    check_min_size,
    clone_initializer,
    drop_path_rates,
    initializer_at_depth,
    positive_int_arguments,
    trunc_normal,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

LN_EPSILON = 1e-6

# (depths, dims) of the named configurations (timm's atto..nano, the paper's T).
CONFIGS = {
    "atto": ((2, 2, 6, 2), (40, 80, 160, 320)),
    "femto": ((2, 2, 6, 2), (48, 96, 192, 384)),
    "pico": ((2, 2, 6, 2), (64, 128, 256, 512)),
    "nano": ((2, 2, 8, 2), (80, 160, 320, 640)),
    "tiny": ((3, 3, 9, 3), (96, 192, 384, 768)),
}


def convnext_block(
    x,
    kernel_size,
    layer_scale_init,
    drop_rate,
    prefix,
    depthwise_initializer,
    mlp_initializer,
    dense_initializer,
    mlp_scalar_bias=False,
):
    """``x + DropPath(gamma * W2 GELU(W1 LN(DWConv_k(x))))`` at constant width ``d``.

    Layers ``{prefix}_depthwise_conv`` (k x k, 'same'), ``_norm`` (LN, eps 1e-6),
    ``_pointwise_1`` (``W1``: Dense 4d, GELU), ``_pointwise_2`` (``W2``:
    Dense d), ``_layer_scale`` (if ``layer_scale_init``), ``_drop_path`` (if
    ``drop_rate > 0``) and ``_residual``; biases start at zero, and each
    kernel at a clone of its initializer (see
    :func:`~keras_structinit.models.common.clone_initializer`). With ``mlp_scalar_bias`` the first
    layer is a :class:`~keras_structinit.layers.ScalarBiasDense` (the mimetic paper's scalar-bias
    baseline, its scalar starting at 0).
    """
    dim = x.shape[-1]
    residual = x
    x = DepthwiseConv2D(
        kernel_size,
        padding="same",
        depthwise_initializer=clone_initializer(depthwise_initializer),
        bias_initializer="zeros",
        name=f"{prefix}_depthwise_conv",
    )(x)
    x = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"{prefix}_norm")(x)
    first = ScalarBiasDense if mlp_scalar_bias else keras.layers.Dense
    x = first(
        4 * dim,
        activation="gelu",
        kernel_initializer=clone_initializer(mlp_initializer),
        bias_initializer="zeros",
        name=f"{prefix}_pointwise_1",
    )(x)
    x = keras.layers.Dense(
        dim,
        kernel_initializer=clone_initializer(dense_initializer),
        bias_initializer="zeros",
        name=f"{prefix}_pointwise_2",
    )(x)
    if layer_scale_init:
        x = LayerScale(layer_scale_init, name=f"{prefix}_layer_scale")(x)
    if drop_rate > 0:
        x = StochasticDepth(drop_rate, name=f"{prefix}_drop_path")(x)
    return keras.layers.Add(name=f"{prefix}_residual")([residual, x])


def _layer_scale_init(value):
    value = validation.optional(validation.finite_float, value, "layer_scale_init")
    if value is not None and value < 0:
        raise ValueError(
            f"`layer_scale_init` must be None or a float >= 0. Received: layer_scale_init={value!r}"
        )
    return value or None


def _conv(x, filters, size, kernel_initializer, name):
    """``Conv2D(filters, size, stride size)``, zero bias: the stem and the downsampling convs."""
    return keras.layers.Conv2D(
        filters,
        size,
        strides=size,
        kernel_initializer=clone_initializer(kernel_initializer),
        bias_initializer="zeros",
        name=name,
    )(x)


def _norm(x, name):
    return keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=name)(x)


def _stages(x, depths, dims, kernel_size, layer_scale_init, drop_path, initializers, mlp_scalar_bias):
    """The stages after the stem: stage ``s`` (from 1) is ``depths[s-1]`` :func:`convnext_block` s at
    width ``dims[s-1]``, preceded for ``s > 1`` by ``Conv2D(dims[s-1], 2, stride 2)(LN(x))``.

    ``initializers``: the kernel (downsampling), depthwise, MLP and dense initializers; the
    depthwise one is specialized to each block's depth fraction, and the drop-path rate grows
    linearly from 0 to ``drop_path``, both over all blocks.
    """
    kernel_initializer, depthwise_initializer, mlp_initializer, dense_initializer = initializers
    num_blocks = sum(depths)
    rates = drop_path_rates(num_blocks, drop_path)
    fractions = depth_fractions(num_blocks)
    index = 0
    for s, (depth, dim) in enumerate(zip(depths, dims, strict=True), start=1):
        if s > 1:
            x = _norm(x, f"stage_{s}_downsample_norm")
            x = _conv(x, dim, 2, kernel_initializer, f"stage_{s}_downsample_conv")
        for b in range(1, depth + 1):
            x = convnext_block(
                x,
                kernel_size,
                layer_scale_init,
                rates[index],
                f"stage_{s}_block_{b}" if len(depths) > 1 else f"block_{b}",
                initializer_at_depth(depthwise_initializer, fractions[index], index),
                mlp_initializer,
                dense_initializer,
                mlp_scalar_bias=mlp_scalar_bias,
            )
            index += 1
    return x


def _head(x, num_classes):
    """``Dense(LN(GlobalAvgPool(x)))``: layers ``pool``, ``head_norm``, ``head`` (the official init)."""
    x = _norm(keras.layers.GlobalAveragePooling2D(name="pool")(x), "head_norm")
    return keras.layers.Dense(
        num_classes, kernel_initializer=trunc_normal(), bias_initializer="zeros", name="head"
    )(x)


def convnext(
    depths,
    dims,
    kernel_size=7,
    patch_size=4,
    num_classes=1000,
    input_shape=(224, 224, 3),
    layer_scale_init=1e-6,
    drop_path=0.0,
    kernel_initializer=None,
    depthwise_initializer=None,
    mlp_initializer=None,
    dense_initializer=None,
    mlp_scalar_bias=False,
    name=None,
):
    """Builds a ConvNeXt as a functional ``keras.Model`` (logits).

    Stem ``LN(Conv2D(dims[0], p, stride p))``; stage ``s`` (from 1) is ``depths[s-1]``
    :func:`convnext_block` s at width ``dims[s-1]``, preceded for ``s > 1`` by the downsampling
    ``Conv2D(dims[s-1], 2, stride 2)(LN(x))``; head ``Dense(LN(GlobalAvgPool(x)))``. All LNs use
    ``eps = 1e-6``; the stochastic-depth rate grows linearly over all blocks from 0 to
    ``drop_path``. One stage is the isotropic ConvNeXt (:func:`convnext_isotropic`). Layers:
    ``stem_conv``, ``stem_norm``, ``stage_{s}_downsample_norm``, ``stage_{s}_downsample_conv``,
    ``stage_{s}_block_{b}_*`` (``block_{b}_*`` with one stage; see :func:`convnext_block`),
    ``pool``, ``head_norm``, ``head``.

    Initialization as in the official code: conv, depthwise and dense kernels ``N(0, 0.02^2)``
    (see :func:`~keras_structinit.models.common.trunc_normal`), zero biases, LN ``gamma = 1,
    beta = 0``, layer scale ``gamma = layer_scale_init``. The ``*_initializer`` arguments
    (anything ``keras.initializers.get`` accepts; ``None``: the official init) replace it per
    kind of kernel; the head keeps it. The depthwise convs are the package's fast
    :class:`~keras_structinit.layers.DepthwiseConv2D`.

    Args:
        depths, dims: blocks and width per stage (as many widths as stages).
        kernel_size: depthwise filter size.
        patch_size: stem patch size and stride (4 for ImageNet; 1, 2 or 4 for CIFAR-size inputs).
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last; the spatial sizes may be ``None``.
        layer_scale_init: initial layer-scale value; ``None`` or ``0`` leaves layer scale out.
        drop_path: stochastic-depth rate of the last block.
        kernel_initializer: stem and downsampling conv kernels.
        depthwise_initializer: depthwise kernels; one with ``at_depth`` (e.g. ``ConvCovariance``)
            is specialized to each block's depth fraction over all blocks.
        mlp_initializer: ``W1`` (``*_pointwise_1``), the first Dense of each block's MLP, e.g.
            the mimetic :class:`~keras_structinit.initializers.MeanShift`.
        dense_initializer: ``W2`` (``*_pointwise_2``), the second Dense.
        mlp_scalar_bias: ``W1`` is a :class:`~keras_structinit.layers.ScalarBiasDense` (the mimetic
            paper's learnable scalar-bias baseline, Fig. 4; the scalar starts at 0).
        name: model name, default ``convnext``.

    Example: ``convnext((3, 3, 9, 3), (96, 192, 384, 768), mlp_initializer="he_normal")``.
    """
    depths = validation.positive_ints(depths, "depths")
    dims = validation.positive_ints(dims, "dims")
    if len(dims) != len(depths):
        raise ValueError(f"`dims` must have one width per stage ({len(depths)}). Received: dims={dims!r}")
    kernel_size, patch_size, num_classes = positive_int_arguments(
        kernel_size=kernel_size, patch_size=patch_size, num_classes=num_classes
    )
    input_shape = validation.input_shape(input_shape, allow_none=True)
    check_min_size(input_shape, patch_size * 2 ** (len(depths) - 1), "the patch size and downsampling")
    layer_scale_init = _layer_scale_init(layer_scale_init)
    drop_path = validation.rate(drop_path, "drop_path")
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", trunc_normal())
    depthwise_initializer = check_initializer(depthwise_initializer, "depthwise_initializer", trunc_normal())
    mlp_initializer = check_initializer(mlp_initializer, "mlp_initializer", trunc_normal())
    dense_initializer = check_initializer(dense_initializer, "dense_initializer", trunc_normal())
    mlp_scalar_bias = validation.boolean(mlp_scalar_bias, "mlp_scalar_bias")

    inputs = keras.Input(shape=input_shape, name="image")
    x = _norm(_conv(inputs, dims[0], patch_size, kernel_initializer, "stem_conv"), "stem_norm")
    initializers = (kernel_initializer, depthwise_initializer, mlp_initializer, dense_initializer)
    x = _stages(x, depths, dims, kernel_size, layer_scale_init, drop_path, initializers, mlp_scalar_bias)
    outputs = _head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or "convnext")


def _named(variant):
    depths, dims = CONFIGS[variant]

    def builder(num_classes=1000, input_shape=(224, 224, 3), **kwargs):
        kwargs["name"] = kwargs.get("name") or f"convnext_{variant}"
        return convnext(depths, dims, num_classes=num_classes, input_shape=input_shape, **kwargs)

    builder.__name__ = builder.__qualname__ = f"convnext_{variant}"
    builder.__doc__ = (
        f"ConvNeXt-{variant.capitalize()}: ``convnext(depths={depths}, dims={dims}, ...)``.\n\n"
        "Other keyword arguments as in :func:`convnext`."
    )
    return builder


# The named builders, by variant.
NAMED = {variant: _named(variant) for variant in CONFIGS}
convnext_atto = NAMED["atto"]
convnext_femto = NAMED["femto"]
convnext_pico = NAMED["pico"]
convnext_nano = NAMED["nano"]
convnext_tiny = NAMED["tiny"]


def convnext_isotropic(
    dim,
    depth,
    kernel_size=7,
    patch_size=2,
    num_classes=10,
    input_shape=(32, 32, 3),
    layer_scale_init=None,
    **kwargs,
):
    """Builds the isotropic ConvNeXt-``dim``/``depth`` (no downsampling), logits.

    ``convnext((depth,), (dim,), ...)``: stem ``LN(Conv2D(dim, p, stride p))``,
    ``depth`` :func:`convnext_block` s at constant width ``dim`` (layers
    ``block_{i}_*``, i from 1), head ``Dense(LN(GlobalAvgPool(x)))``: the
    ConvMixer-like "ConvNeXt-256/8" used on CIFAR. Layer scale is off by
    default, as in the official isotropic models.

    Args:
        dim: channel width.
        depth: number of blocks.
        kernel_size, patch_size, num_classes, input_shape, layer_scale_init:
            as in :func:`convnext`, with CIFAR defaults.
        **kwargs: the other arguments of :func:`convnext` (``drop_path``,
            ``kernel_initializer``, ``depthwise_initializer``,
            ``mlp_initializer``, ``dense_initializer``, ``mlp_scalar_bias``), and ``name``, default
            ``convnext_isotropic_{dim}_{depth}``.

    Example:

    ```python
    model = convnext_isotropic(256, 8, depthwise_initializer=ConvCovariance(preset="cifar-p2"))
    ```
    """
    dim, depth = positive_int_arguments(dim=dim, depth=depth)
    kwargs["name"] = kwargs.get("name") or f"convnext_isotropic_{dim}_{depth}"
    return convnext(
        (depth,),
        (dim,),
        kernel_size=kernel_size,
        patch_size=patch_size,
        num_classes=num_classes,
        input_shape=input_shape,
        layer_scale_init=layer_scale_init,
        **kwargs,
    )


#: The zoo's names of these builders (:mod:`keras_structinit.models.zoo`); frozen filters are frozen
#: after the build (``freeze_spatial``).
ZOO = (
    ZooEntry(
        "convnext-iso-H/D",
        convnext_isotropic,
        pattern=r"convnext-iso-(?P<dim>\d+)/(?P<depth>\d+)",
        check=lambda p: p["dim"] >= 1 and p["depth"] >= 1,
        why="H and D must be >= 1",
    ),
    *(ZooEntry(f"convnext-{v}", b, shown=f"convnext-{'|'.join(NAMED)}") for v, b in NAMED.items()),
)
