"""VGG16 (Simonyan & Zisserman 2015, configuration D) without the FC-4096 layers."""

from __future__ import annotations

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.models.common import (
    check_initializer,
    check_min_size,
    clone_initializer,
    scaled_he_normal,
    torch_default_head,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

# Filters per conv, one tuple per block (a 2 x 2 max-pool ends each block).
BLOCKS = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))


def vgg16(
    num_classes=10,
    input_shape=(32, 32, 3),
    kernel_initializer=None,
    name=None,
    *,
    bias_initializer=None,
    init_scale=None,
):
    """Builds VGG16-D without its two FC-4096 layers (logits), as in Maennel et al.

    13 ``ReLU(Conv2D(f, 3, 'same'))`` with biases in five blocks
    ``64-64-M-128-128-M-256x3-M-512x3-M-512x3-M`` (``M``: 2 x 2 max-pool), then
    ``Flatten`` and ``Dense(num_classes)``; for 32 x 32 inputs the head sees
    ``1 x 1 x 512`` features (App. A.2).

    Layers: ``block_{b}_conv_{j}``, ``block_{b}_pool`` (b, j from 1),
    ``flatten``, ``head``. ``block_{b}_conv_{j}`` is keras.applications.VGG16's
    ``block{b}_conv{j}`` (same kernel and bias shapes), so its weights map one
    to one.

    Initialization: with ``init_scale=None``, PyTorch's defaults
    (:class:`~keras_structinit.initializers.TorchDefaultUniform`, kernels and
    biases); with a number, the paper's (App. A.3): every kernel (the 13 convs
    and the head) He-normal times ``init_scale`` (:func:`scaled_he_normal`; the
    paper uses e.g. 0.526 and 0.612) and every bias 0.

    Args:
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last, at least
            32 x 32.
        kernel_initializer: the 13 conv kernels (anything
            ``keras.initializers.get`` accepts); ``None``: as ``init_scale`` says.
        name: model name, default ``vgg16``.
        bias_initializer: the 13 conv biases; ``None``: as ``init_scale`` says.
        init_scale: ``None`` (PyTorch's defaults) or a positive number (the
            paper's He-normal times ``init_scale``, zero biases).

    Example:

    ```python
    model = vgg16(num_classes=10, init_scale=0.526)   # Maennel et al.'s Experiment 1 init
    ```
    """
    num_classes = validation.positive_int(num_classes, "num_classes")
    input_shape = validation.input_shape(input_shape)
    check_min_size(input_shape, 2 ** len(BLOCKS), "five 2x2 max-pools")
    init_scale = validation.optional(validation.positive_float, init_scale, "init_scale")
    paper_init = init_scale is not None
    default = scaled_he_normal(init_scale) if paper_init else TorchDefaultUniform()
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", default)
    bias_initializer = check_initializer(bias_initializer, "bias_initializer", None)

    def bias(fan_in):
        if bias_initializer is not None:
            return clone_initializer(bias_initializer)
        return "zeros" if paper_init else TorchDefaultUniform(fan_in=fan_in)

    inputs = keras.Input(shape=input_shape, name="image")
    x = inputs
    for b, filters in enumerate(BLOCKS, start=1):
        for j, f in enumerate(filters, start=1):
            x = keras.layers.Conv2D(
                f,
                3,
                padding="same",
                activation="relu",
                kernel_initializer=clone_initializer(kernel_initializer),
                bias_initializer=bias(9 * x.shape[-1]),
                name=f"block_{b}_conv_{j}",
            )(x)
        x = keras.layers.MaxPooling2D(2, name=f"block_{b}_pool")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    if paper_init:
        outputs = keras.layers.Dense(
            num_classes, kernel_initializer=clone_initializer(default), bias_initializer="zeros", name="head"
        )(x)
    else:
        outputs = torch_default_head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or "vgg16")


#: The zoo's name of this builder (:mod:`keras_structinit.models.zoo`).
ZOO = (ZooEntry("vgg16", vgg16),)
