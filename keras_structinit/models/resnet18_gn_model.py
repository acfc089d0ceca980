"""ResNet-18 v2 (He et al., "Identity Mappings in Deep Residual Networks", 2016) with GroupNorm."""

from __future__ import annotations

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.layers.conv import Conv2D
from keras_structinit.layers.pooling import MaxPooling2D
from keras_structinit.models.common import (
    check_initializer,
    clone_initializer,
    positive_int_arguments,
    torch_default_head,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

WIDTHS = (64, 128, 256, 512)
DEPTHS = (2, 2, 2, 2)
GN_EPSILON = 1e-5


def _conv(filters, kernel_size, strides, kernel_initializer, name):
    return Conv2D(
        filters,
        kernel_size,
        strides=strides,
        padding="symmetric",
        use_bias=False,
        kernel_initializer=clone_initializer(kernel_initializer),
        name=name,
    )


def preact_basic_block(x, filters, strides, groups, prefix, kernel_initializer):
    """Pre-activation basic block ``y = s(x) + C_2(R(N_2(C_1(R(N_1(x))))))``.

    ``N``: GroupNorm, ``R``: ReLU, ``C``: 3 x 3 conv without bias (``C_1`` with
    ``strides``); the shortcut ``s`` is the identity, or a 1 x 1 strided conv
    of the pre-activation ``R(N_1(x))`` when the shape changes. Layers
    ``{prefix}_norm_1``, ``_relu_1``, ``_conv_1``, ``_norm_2``, ``_relu_2``,
    ``_conv_2``, ``_shortcut`` (projection only), ``_residual``; each conv
    kernel gets a clone of ``kernel_initializer``.
    """
    preact = keras.layers.GroupNormalization(groups, epsilon=GN_EPSILON, name=f"{prefix}_norm_1")(x)
    preact = keras.layers.Activation("relu", name=f"{prefix}_relu_1")(preact)
    if strides != 1 or x.shape[-1] != filters:
        shortcut = _conv(filters, 1, strides, kernel_initializer, f"{prefix}_shortcut")(preact)
    else:
        shortcut = x
    y = _conv(filters, 3, strides, kernel_initializer, f"{prefix}_conv_1")(preact)
    y = keras.layers.GroupNormalization(groups, epsilon=GN_EPSILON, name=f"{prefix}_norm_2")(y)
    y = keras.layers.Activation("relu", name=f"{prefix}_relu_2")(y)
    y = _conv(filters, 3, 1, kernel_initializer, f"{prefix}_conv_2")(y)
    return keras.layers.Add(name=f"{prefix}_residual")([shortcut, y])


def resnet18_gn(
    num_classes=10,
    input_shape=(32, 32, 3),
    groups=32,
    cifar_stem=True,
    kernel_initializer=None,
    name=None,
    widths=WIDTHS,
):
    """Builds a pre-activation ResNet-18 with GroupNorm as a functional ``keras.Model``.

    Stem, then four stages of two :func:`preact_basic_block` s with widths
    64, 128, 256, 512 (the first block of stages 2-4 has stride 2), then
    ``ReLU(GN(x))``, global average pooling and a ``Dense`` logits head.

    * CIFAR stem (``cifar_stem=True``): ``Conv2D(64, 3, stride 1)``, no pooling.
    * ImageNet stem: ``Conv2D(64, 7, stride 2)`` and ``MaxPool(3, stride 2)``.

    The stem has no norm/activation: the first block's pre-activation
    provides it (as in keras.applications' ResNetV2). Convs have no bias;
    convs and the stem's max-pool pad as PyTorch's ``padding=k // 2``
    (``padding="symmetric"``: ``(1, 1)`` at stride 2 where Keras' ``"same"`` pads
    ``(0, 1)``; :mod:`keras_structinit.ops.padding`). GroupNorm: ``groups`` groups,
    ``eps = 1e-5``. Weights follow
    PyTorch's defaults (:class:`~keras_structinit.initializers.TorchDefaultUniform`).

    Layers: ``stem_conv`` (``stem_pool``), ``stage_{s}_block_{b}_*`` (s, b
    from 1), ``final_norm``, ``final_relu``, ``pool``, ``head``.

    Args:
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last; the spatial
            sizes may be ``None``.
        groups: GroupNorm groups; must divide 64.
        cifar_stem: CIFAR (3 x 3) or ImageNet (7 x 7 + max-pool) stem.
        kernel_initializer: every conv kernel: stem, blocks and shortcuts
            (anything ``keras.initializers.get`` accepts); ``None``: PyTorch's
            default uniform. The head keeps PyTorch's default.
        name: model name, default ``resnet18_gn``.
        widths: the four stages' widths (the stem has the first); default
            64, 128, 256, 512. Narrower ResNets are weight-selection students.

    Example:

    ```python
    model = resnet18_gn(num_classes=100, groups=16, kernel_initializer="he_normal")
    ```
    """
    num_classes, groups = positive_int_arguments(num_classes=num_classes, groups=groups)
    input_shape = validation.input_shape(input_shape, allow_none=True)
    widths = validation.positive_ints(widths, "widths")
    if len(widths) != len(DEPTHS):
        raise ValueError(f"`widths` must hold {len(DEPTHS)} stage widths. Received: widths={widths}")
    if any(w % groups for w in widths):
        raise ValueError(f"`groups` must divide every width {widths}. Received: groups={groups}")
    cifar_stem = validation.boolean(cifar_stem, "cifar_stem")
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", TorchDefaultUniform())

    inputs = keras.Input(shape=input_shape, name="image")
    if cifar_stem:
        x = _conv(widths[0], 3, 1, kernel_initializer, "stem_conv")(inputs)
    else:
        x = _conv(widths[0], 7, 2, kernel_initializer, "stem_conv")(inputs)
        x = MaxPooling2D(3, strides=2, padding="symmetric", name="stem_pool")(x)
    for s, (depth, width) in enumerate(zip(DEPTHS, widths, strict=True), start=1):
        for b in range(1, depth + 1):
            strides = 2 if (s > 1 and b == 1) else 1
            x = preact_basic_block(x, width, strides, groups, f"stage_{s}_block_{b}", kernel_initializer)
    x = keras.layers.GroupNormalization(groups, epsilon=GN_EPSILON, name="final_norm")(x)
    x = keras.layers.Activation("relu", name="final_relu")(x)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = torch_default_head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or "resnet18_gn")


#: The zoo's name of this builder (:mod:`keras_structinit.models.zoo`).
ZOO = (ZooEntry("resnet18-gn", resnet18_gn),)
