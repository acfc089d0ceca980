"""SimpleCNN (Maennel et al., "What Do Neural Networks Learn When Trained With Random Labels?", 2020)."""

from __future__ import annotations

import keras

from keras_structinit import validation
from keras_structinit.initializers.torch_default import TorchDefaultUniform
from keras_structinit.models.common import (
    check_initializer,
    check_min_size,
    clone_initializer,
    positive_int_arguments,
    torch_default_head,
)


def simple_cnn(
    num_conv_layers,
    num_filters,
    num_units,
    num_classes=10,
    input_shape=(32, 32, 3),
    kernel_size=3,
    kernel_initializer=None,
    dense_initializer=None,
    name=None,
):
    """Builds the SimpleCNN as a functional ``keras.Model`` (logits).

    ``num_conv_layers`` times ``x = MaxPool_2x2(ReLU(Conv_k(x)))`` with
    ``num_filters`` filters (``kernel_size`` x ``kernel_size``, 'same' padding,
    bias), then ``Flatten``, ``ReLU(Dense(num_units))`` and a ``Dense`` logits
    head.

    The exact architecture of the paper's Appendix A.2 could not be
    retrieved; the layer types above (3 x 3 'same' convs with ReLU, a 2 x 2
    max-pool after every conv, one hidden dense layer of ``num_units``) are an
    assumption matching the paper's parameterization by the number of conv
    layers, filters and dense units.

    Layers: ``conv_{i}``, ``pool_{i}`` (i from 1), ``flatten``, ``dense``,
    ``head``. Weights follow PyTorch's defaults
    (:class:`~keras_structinit.initializers.TorchDefaultUniform`).

    Args:
        num_conv_layers: conv + pool stages; the image must survive
            ``num_conv_layers`` halvings.
        num_filters: filters of every conv.
        num_units: width of the hidden dense layer.
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last.
        kernel_size: conv filter size.
        kernel_initializer: conv kernels (anything ``keras.initializers.get``
            accepts); ``None``: PyTorch's default uniform. Biases keep
            PyTorch's default.
        dense_initializer: the hidden ``dense`` kernel (not the head's);
            ``None``: PyTorch's default uniform.
        name: model name, default ``simple_cnn``.

    Example:

    ```python
    model = simple_cnn(2, 256, 64, kernel_initializer="he_normal")
    ```
    """
    num_conv_layers, num_filters, num_units, num_classes, kernel_size = positive_int_arguments(
        num_conv_layers=num_conv_layers,
        num_filters=num_filters,
        num_units=num_units,
        num_classes=num_classes,
        kernel_size=kernel_size,
    )
    input_shape = validation.input_shape(input_shape)
    check_min_size(input_shape, 2**num_conv_layers, f"num_conv_layers={num_conv_layers} poolings")
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", TorchDefaultUniform())
    dense_initializer = check_initializer(dense_initializer, "dense_initializer", TorchDefaultUniform())

    inputs = keras.Input(shape=input_shape, name="image")
    x = inputs
    for i in range(1, num_conv_layers + 1):
        fan_in = kernel_size * kernel_size * x.shape[-1]
        x = keras.layers.Conv2D(
            num_filters,
            kernel_size,
            padding="same",
            activation="relu",
            kernel_initializer=clone_initializer(kernel_initializer),
            bias_initializer=TorchDefaultUniform(fan_in=fan_in),
            name=f"conv_{i}",
        )(x)
        x = keras.layers.MaxPooling2D(2, name=f"pool_{i}")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(
        num_units,
        activation="relu",
        kernel_initializer=dense_initializer,
        bias_initializer=TorchDefaultUniform(fan_in=x.shape[-1]),
        name="dense",
    )(x)
    outputs = torch_default_head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or "simple_cnn")
