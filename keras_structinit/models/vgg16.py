"""VGG16 (Simonyan & Zisserman 2015, configuration D) without the FC-4096 layers."""

from __future__ import annotations

import keras

from keras_structinit.covariance import check_positive_int
from keras_structinit.models.common import (
    check_input_shape,
    check_min_size,
    torch_conv_kwargs,
)

# Filters per conv, one tuple per block (a 2 x 2 max-pool ends each block).
BLOCKS = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))


def vgg16(num_classes=10, input_shape=(32, 32, 3), name=None):
    """Builds VGG16-D without its two FC-4096 layers (logits), as in Maennel et al.

    13 ``ReLU(Conv2D(f, 3, 'same'))`` with biases in five blocks
    ``64-64-M-128-128-M-256x3-M-512x3-M-512x3-M`` (``M``: 2 x 2 max-pool), then
    ``Flatten`` and ``Dense(num_classes)``; for 32 x 32 inputs the head sees
    ``1 x 1 x 512`` features.

    Layers: ``block_{b}_conv_{j}``, ``block_{b}_pool`` (b, j from 1),
    ``flatten``, ``head``. ``block_{b}_conv_{j}`` is keras.applications.VGG16's
    ``block{b}_conv{j}`` (same kernel and bias shapes), so its weights map one
    to one. Weights follow PyTorch's defaults
    (:class:`~keras_structinit.initializers.TorchDefaultUniform`).

    Args:
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last, at least
            32 x 32.
        name: model name, default ``vgg16``.
    """
    num_classes = check_positive_int(num_classes, "num_classes")
    input_shape = check_input_shape(input_shape)
    check_min_size(input_shape, 2 ** len(BLOCKS), "five 2x2 max-pools")

    inputs = keras.Input(shape=input_shape, name="image")
    x = inputs
    channels = input_shape[-1]
    for b, filters in enumerate(BLOCKS, start=1):
        for j, f in enumerate(filters, start=1):
            x = keras.layers.Conv2D(
                f,
                3,
                padding="same",
                activation="relu",
                name=f"block_{b}_conv_{j}",
                **torch_conv_kwargs(9 * channels),
            )(x)
            channels = f
        x = keras.layers.MaxPooling2D(2, name=f"block_{b}_pool")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    outputs = keras.layers.Dense(num_classes, name="head", **torch_conv_kwargs(x.shape[-1]))(x)
    return keras.Model(inputs, outputs, name=name or "vgg16")
