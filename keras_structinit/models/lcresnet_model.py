"""LCResNets (Gavrikov & Keuper): He et al.'s CIFAR ResNets with every spatial conv an LC block."""

from __future__ import annotations

from typing import NamedTuple

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.layers.shortcut import ZeroPadShortcut
from keras_structinit.lc.counting import SHARING, check_depth, lcresnet_convs
from keras_structinit.lc.layers import LCConv2D, SharedKernelBank
from keras_structinit.lc.sharing import bank_size
from keras_structinit.models.common import (
    check_initializer,
    clone_initializer,
    positive_int_arguments,
    torch_default_head,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

BN_EPSILON = 1e-5
SHORTCUTS = ("A", "B")


class _Options(NamedTuple):
    """The settings every LC block, BatchNorm and shortcut of one :func:`lcresnet` shares."""

    kernel_size: int
    expansion: int
    padding: str
    frozen: bool
    initializers: tuple  # (spatial, pointwise)
    bank: object
    bn_momentum: float
    shortcut: str


def _odd_kernel_size(kernel_size):
    if kernel_size % 2 == 0:
        raise ValueError(
            "`kernel_size` must be odd: the CIFAR ResNet pads k // 2 on each side, which keeps the "
            "image size only for odd k (Keras' 'same' would pad unevenly). "
            f"Received: kernel_size={kernel_size}"
        )
    return kernel_size


def _sharing_arguments(sharing, frozen, recycle_fraction):
    """Checks ``sharing`` (frozen kernels only) and returns the checked ``recycle_fraction``."""
    if sharing not in SHARING:
        raise ValueError(f"`sharing` must be one of {SHARING}. Received: sharing={sharing!r}")
    if sharing is not None and not frozen:
        raise ValueError(
            f"Shared spatial kernels are frozen: pass frozen=True. Received: sharing={sharing!r}"
        )
    recycle_fraction = validation.fraction(recycle_fraction, "recycle_fraction", "a number in (0, 1]")
    if recycle_fraction == 0.0:
        raise ValueError("`recycle_fraction` must be a number in (0, 1]. Received: recycle_fraction=0.0")
    return recycle_fraction


def _shared_bank(convs, kernel_size, expansion, sharing, recycle_fraction):
    """The :class:`~keras_structinit.layers.SharedKernelBank` of ``sharing`` (``None``: no bank)."""
    if sharing is None:
        return None
    shapes = [(kernel_size, kernel_size, c_in, f * expansion) for c_in, f, _ in convs]
    fraction = None if sharing == "global" else recycle_fraction
    return SharedKernelBank(bank_size(shapes, fraction), recycle=fraction is not None)


def _batch_norm(name, options):
    return keras.layers.BatchNormalization(momentum=options.bn_momentum, epsilon=BN_EPSILON, name=name)


def _lc_bn(x, filters, strides, prefix, options, suffix=""):
    """``BN(LC(x))``: layers ``{prefix}_conv{suffix}`` and ``{prefix}_bn{suffix}``."""
    x = LCConv2D(
        filters,
        options.kernel_size,
        expansion=options.expansion,
        strides=strides,
        padding=options.padding,
        frozen=options.frozen,
        spatial_initializer=clone_initializer(options.initializers[0]),
        pointwise_initializer=clone_initializer(options.initializers[1]),
        bank=options.bank,
        name=f"{prefix}_conv{suffix}",
    )(x)
    return _batch_norm(f"{prefix}_bn{suffix}", options)(x)


def _shortcut(x, c_in, filters, strides, prefix, options):
    """``s(x)``: the identity, or where the shape changes option A's
    :class:`~keras_structinit.layers.ZeroPadShortcut` or option B's 1x1 strided conv and BN."""
    if strides == 1 and c_in == filters:
        return x
    if options.shortcut == "A":
        return ZeroPadShortcut(filters, strides, name=f"{prefix}_shortcut")(x)
    x = keras.layers.Conv2D(
        filters,
        1,
        strides=strides,
        use_bias=False,
        kernel_initializer=TorchDefaultUniform(),
        name=f"{prefix}_shortcut",
    )(x)
    return _batch_norm(f"{prefix}_shortcut_bn", options)(x)


def _block(x, c_in, filters, strides, prefix, options):
    """The basic block ``x = ReLU(s(x) + BN(LC_2(ReLU(BN(LC_1(x))))))``: layers ``{prefix}_*``."""
    y = _lc_bn(x, filters, strides, prefix, options, "_1")
    y = keras.layers.Activation("relu", name=f"{prefix}_relu_1")(y)
    y = _lc_bn(y, filters, 1, prefix, options, "_2")
    residual = _shortcut(x, c_in, filters, strides, prefix, options)
    x = keras.layers.Add(name=f"{prefix}_add")([residual, y])
    return keras.layers.Activation("relu", name=f"{prefix}_relu")(x)


def _stages(x, block_convs, blocks_per_stage, options):
    """The three stages of ``blocks_per_stage`` blocks each (``stage_{s}_block_{b}_*``, s and b from
    1); ``block_convs``: ``(c_in, filters, strides)`` of each block's two LC convs in order."""
    blocks = iter(block_convs)
    for s in range(1, 4):
        for b in range(1, blocks_per_stage + 1):
            (c_in, filters, strides), _ = next(blocks), next(blocks)
            x = _block(x, c_in, filters, strides, f"stage_{s}_block_{b}", options)
    return x


def lcresnet(
    depth=20,
    width=16,
    expansion=1,
    kernel_size=3,
    frozen=True,
    num_classes=10,
    shortcut="A",
    input_shape=(32, 32, 3),
    sharing=None,
    recycle_fraction=1 / 16,
    spatial_initializer=None,
    pointwise_initializer=None,
    bn_momentum=0.9,
    padding="symmetric",
    name=None,
):
    """Builds LCResNet-``depth``-``width``x``expansion`` as a functional ``keras.Model`` (logits).

    He et al.'s CIFAR ResNet (a stem conv to ``W`` channels, three stages of ``(depth - 2) / 6``
    basic blocks of widths ``W, 2W, 4W``, stride 2 at the start of stages 2 and 3, global average
    pooling, a ``Dense`` head) with every spatial conv, the stem's included, an
    :class:`~keras_structinit.layers.LCConv2D` (``k x k`` conv to ``filters * E`` channels, then
    ``1 x 1`` to ``filters``; no biases) followed by BatchNorm (``momentum=0.9``, PyTorch's 0.1,
    ``epsilon=1e-5``): stem ``x = ReLU(BN(LC(x)))``, block ``x = ReLU(s(x) + BN(LC_2(ReLU(BN(LC_1(x))))))``.
    Layers: ``stem_conv``, ``stem_bn``, ``stem_relu``, ``stage_{s}_block_{b}_conv_1`` / ``_bn_1`` /
    ``_relu_1`` / ``_conv_2`` / ``_bn_2`` / ``_shortcut`` (``_shortcut_bn``) / ``_add`` / ``_relu``
    (s, b from 1), ``pool``, ``head``; with sharing, the bank ``shared_kernel_bank``.

    Args:
        depth: ``6 n + 2`` (8, 14, 20, 32, 44, 56, 110, ...).
        width, expansion: ``W``, the first stage's channels; ``E``, spatial filters per output
            channel of each LC block.
        kernel_size: odd ``k`` (3, 5, 7, 9, ...).
        frozen: frozen random spatial filters (saved with the model).
        num_classes: logits.
        shortcut: ``s`` where the shape changes (else the identity): ``"A"`` (the paper's counts)
            subsampling plus zero channels (:class:`~keras_structinit.layers.ZeroPadShortcut`, no
            parameters) or ``"B"``, a 1x1 strided conv and BatchNorm.
        input_shape: ``(height, width, channels)``, channels last; the spatial sizes may be ``None``.
        sharing, recycle_fraction: ``None`` (a spatial kernel per LC block), ``"global"`` (one bank
            the size of the largest kernel) or ``"recycled"`` (a bank of ``recycle_fraction`` of it,
            the paper's 1/16, repeated); see :mod:`keras_structinit.lc.sharing`. Needs ``frozen``.
        spatial_initializer, pointwise_initializer: of the LC blocks (anything ``keras.initializers.get``
            accepts); ``None``: PyTorch's defaults. Not used for shared spatial kernels.
        bn_momentum: BatchNorm moving-average momentum.
        padding: of the LC blocks' spatial convs: ``"symmetric"`` (the paper's PyTorch ``padding=k // 2``:
            a stride-2 block is centred on the pixels the option-A shortcut keeps) or ``"same"`` (Keras'
            ``(0, 1)`` at stride 2 on even sizes; models built before 2026-11-25).
        name: model name, default ``lcresnet_{depth}_{width}x{expansion}``.

    Example: ``lcresnet(20, 16, expansion=8)`` (LCResNet-20-16x8, frozen random filters);
    ``lcresnet(20, 16, 8, sharing="recycled")`` (one bank of 1/16 of the largest kernel).
    """
    depth = check_depth(depth)
    width, expansion, kernel_size, num_classes = positive_int_arguments(
        width=width, expansion=expansion, kernel_size=kernel_size, num_classes=num_classes
    )
    kernel_size = _odd_kernel_size(kernel_size)
    frozen = validation.boolean(frozen, "frozen")
    shortcut = validation.one_of(shortcut, "shortcut", SHORTCUTS)
    input_shape = validation.input_shape(input_shape, allow_none=True)
    recycle_fraction = _sharing_arguments(sharing, frozen, recycle_fraction)
    bn_momentum = validation.fraction(bn_momentum, "bn_momentum")
    padding = validation.one_of(padding, "padding", ("symmetric", "same"))
    spatial_initializer = check_initializer(spatial_initializer, "spatial_initializer", TorchDefaultUniform())
    pointwise_initializer = check_initializer(
        pointwise_initializer, "pointwise_initializer", TorchDefaultUniform()
    )

    convs = lcresnet_convs(depth, width, input_shape[-1])
    bank = _shared_bank(convs, kernel_size, expansion, sharing, recycle_fraction)
    initializers = (spatial_initializer, pointwise_initializer)
    options = _Options(kernel_size, expansion, padding, frozen, initializers, bank, bn_momentum, shortcut)
    inputs = keras.Input(shape=input_shape, name="image")
    x = keras.layers.Activation("relu", name="stem_relu")(_lc_bn(inputs, width, 1, "stem", options))
    x = _stages(x, convs[1:], (depth - 2) // 6, options)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = torch_default_head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or f"lcresnet_{depth}_{width}x{expansion}")


#: The zoo's name of this builder, LCResNet-D-WxE (Gavrikov & Keuper): depth D = 6n + 2, width W,
#: expansion E (:mod:`keras_structinit.models.zoo`). It takes ``frozen`` itself: its LC blocks
#: freeze their own spatial kernels, kept frozen in the ``.keras`` config.
ZOO = (
    ZooEntry(
        "lcresnet-D-WxE",
        lcresnet,
        pattern=r"lcresnet-(?P<depth>\d+)-(?P<width>\d+)x(?P<expansion>\d+)",
        check=lambda p: (
            p["depth"] >= 8 and (p["depth"] - 2) % 6 == 0 and p["width"] >= 1 and p["expansion"] >= 1
        ),
        why="an LCResNet needs D = 6n + 2 >= 8 and W, E >= 1",
        note=" (D = 6n + 2)",
        freezes_itself=True,
    ),
)
