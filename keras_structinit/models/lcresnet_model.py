"""LCResNets (Gavrikov & Keuper): He et al.'s CIFAR ResNets with every spatial conv an LC block."""

from __future__ import annotations

import keras

from keras_structinit import validation
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

BN_EPSILON = 1e-5
SHORTCUTS = ("A", "B")


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

    He et al.'s CIFAR ResNet: a stem conv to ``W`` channels, three stages of
    ``(depth - 2) / 6`` basic blocks with widths ``W, 2W, 4W`` (stride 2 at the
    start of stages 2 and 3), global average pooling and a ``Dense`` head.
    Every spatial conv, the stem's included, is an :class:`~keras_structinit.layers.LCConv2D`
    (``k x k`` conv to ``filters * E`` channels, then ``1 x 1`` to ``filters``;
    no biases), followed by BatchNorm (``momentum=0.9``, PyTorch's 0.1,
    ``epsilon=1e-5``)::

        stem:  x = ReLU(BN(LC(x)))
        block: x = ReLU(s(x) + BN(LC_2(ReLU(BN(LC_1(x))))))

    The shortcut ``s`` is the identity, or where the shape changes: option
    ``"A"`` (the paper's counts) subsampling plus zero channels
    (:class:`~keras_structinit.layers.ZeroPadShortcut`, no parameters);
    option ``"B"`` a 1x1 strided conv and BatchNorm.

    Layers: ``stem_conv``, ``stem_bn``, ``stem_relu``,
    ``stage_{s}_block_{b}_conv_1`` / ``_bn_1`` / ``_relu_1`` / ``_conv_2`` /
    ``_bn_2`` / ``_shortcut`` (``_shortcut_bn``) / ``_add`` / ``_relu`` (s, b
    from 1), ``pool``, ``head``; with sharing, the bank ``shared_kernel_bank``.

    Args:
        depth: ``6 n + 2`` (8, 14, 20, 32, 44, 56, 110, ...).
        width: ``W``, the first stage's channels.
        expansion: ``E``, spatial filters per output channel of each LC block.
        kernel_size: odd ``k`` (3, 5, 7, 9, ...).
        frozen: frozen random spatial filters (saved with the model).
        num_classes: logits.
        shortcut: ``"A"`` or ``"B"``.
        input_shape: ``(height, width, channels)``, channels last; the spatial
            sizes may be ``None``.
        sharing: ``None`` (a spatial kernel per LC block), ``"global"`` (one
            bank the size of the largest kernel) or ``"recycled"`` (a bank of
            ``recycle_fraction`` of it, repeated); see
            :mod:`keras_structinit.lc.sharing`. Needs ``frozen=True``.
        recycle_fraction: the recycled bank's part of the largest kernel (the
            paper's 1/16).
        spatial_initializer, pointwise_initializer: of the LC blocks (anything
            ``keras.initializers.get`` accepts); ``None``: PyTorch's defaults.
            Not used for shared spatial kernels.
        bn_momentum: BatchNorm moving-average momentum.
        padding: of the LC blocks' spatial convs: ``"symmetric"`` (the paper's
            PyTorch ``padding=k // 2``: a stride-2 block is centred on the
            pixels the option-A shortcut keeps) or ``"same"`` (Keras' ``(0, 1)`` at
            stride 2 on even sizes; models built before 2026-11-25).
        name: model name, default ``lcresnet_{depth}_{width}x{expansion}``.

    Example:

    ```python
    model = lcresnet(20, 16, expansion=8)                   # LCResNet-20-16x8, frozen random filters
    shared = lcresnet(20, 16, 8, sharing="recycled")         # one bank of 1/16 of the largest kernel
    ```
    """
    depth = check_depth(depth)
    width, expansion, kernel_size, num_classes = positive_int_arguments(
        width=width, expansion=expansion, kernel_size=kernel_size, num_classes=num_classes
    )
    if kernel_size % 2 == 0:
        raise ValueError(
            "`kernel_size` must be odd: the CIFAR ResNet pads k // 2 on each side, which keeps the "
            "image size only for odd k (Keras' 'same' would pad unevenly). "
            f"Received: kernel_size={kernel_size}"
        )
    frozen = validation.boolean(frozen, "frozen")
    shortcut = validation.one_of(shortcut, "shortcut", SHORTCUTS)
    input_shape = validation.input_shape(input_shape, allow_none=True)
    if sharing not in SHARING:
        raise ValueError(f"`sharing` must be one of {SHARING}. Received: sharing={sharing!r}")
    if sharing is not None and not frozen:
        raise ValueError(
            f"Shared spatial kernels are frozen: pass frozen=True. Received: sharing={sharing!r}"
        )
    recycle_fraction = validation.fraction(recycle_fraction, "recycle_fraction", "a number in (0, 1]")
    if recycle_fraction == 0.0:
        raise ValueError("`recycle_fraction` must be a number in (0, 1]. Received: recycle_fraction=0.0")
    bn_momentum = validation.fraction(bn_momentum, "bn_momentum")
    padding = validation.one_of(padding, "padding", ("symmetric", "same"))
    spatial_initializer = check_initializer(spatial_initializer, "spatial_initializer", TorchDefaultUniform())
    pointwise_initializer = check_initializer(
        pointwise_initializer, "pointwise_initializer", TorchDefaultUniform()
    )

    convs = lcresnet_convs(depth, width, input_shape[-1])
    bank = None
    if sharing is not None:
        shapes = [(kernel_size, kernel_size, c_in, f * expansion) for c_in, f, _ in convs]
        fraction = None if sharing == "global" else recycle_fraction
        bank = SharedKernelBank(bank_size(shapes, fraction), recycle=fraction is not None)

    def batch_norm(name):
        return keras.layers.BatchNormalization(momentum=bn_momentum, epsilon=BN_EPSILON, name=name)

    def lc_bn(x, filters, strides, prefix, suffix=""):
        x = LCConv2D(
            filters,
            kernel_size,
            expansion=expansion,
            strides=strides,
            padding=padding,
            frozen=frozen,
            spatial_initializer=clone_initializer(spatial_initializer),
            pointwise_initializer=clone_initializer(pointwise_initializer),
            bank=bank,
            name=f"{prefix}_conv{suffix}",
        )(x)
        return batch_norm(f"{prefix}_bn{suffix}")(x)

    inputs = keras.Input(shape=input_shape, name="image")
    x = keras.layers.Activation("relu", name="stem_relu")(lc_bn(inputs, width, 1, "stem"))
    blocks = iter(convs[1:])
    for s in range(1, 4):
        for b in range(1, (depth - 2) // 6 + 1):
            prefix = f"stage_{s}_block_{b}"
            (c_in, filters, strides), _ = next(blocks), next(blocks)
            y = lc_bn(x, filters, strides, prefix, "_1")
            y = keras.layers.Activation("relu", name=f"{prefix}_relu_1")(y)
            y = lc_bn(y, filters, 1, prefix, "_2")
            if strides == 1 and c_in == filters:
                residual = x
            elif shortcut == "A":
                residual = ZeroPadShortcut(filters, strides, name=f"{prefix}_shortcut")(x)
            else:
                residual = keras.layers.Conv2D(
                    filters,
                    1,
                    strides=strides,
                    use_bias=False,
                    kernel_initializer=TorchDefaultUniform(),
                    name=f"{prefix}_shortcut",
                )(x)
                residual = batch_norm(f"{prefix}_shortcut_bn")(residual)
            x = keras.layers.Add(name=f"{prefix}_add")([residual, y])
            x = keras.layers.Activation("relu", name=f"{prefix}_relu")(x)
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
