"""SimpleCNN of Maennel et al., "What Do Neural Networks Learn When Trained With Random Labels?" (NeurIPS 2020)."""

from __future__ import annotations

import keras

from keras_structinit.covariance import check_positive_int
from keras_structinit.models.common import (
    check_input_shape,
    check_min_size,
    torch_conv_kwargs,
)


def simple_cnn(
    num_conv_layers,
    num_filters,
    num_units,
    num_classes=10,
    input_shape=(32, 32, 3),
    kernel_size=3,
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
        name: model name, default ``simple_cnn``.
    """
    num_conv_layers = check_positive_int(num_conv_layers, "num_conv_layers")
    num_filters = check_positive_int(num_filters, "num_filters")
    num_units = check_positive_int(num_units, "num_units")
    num_classes = check_positive_int(num_classes, "num_classes")
    kernel_size = check_positive_int(kernel_size, "kernel_size")
    input_shape = check_input_shape(input_shape)
    check_min_size(input_shape, 2**num_conv_layers, f"num_conv_layers={num_conv_layers} poolings")

    inputs = keras.Input(shape=input_shape, name="image")
    x = inputs
    channels = input_shape[-1]
    for i in range(1, num_conv_layers + 1):
        x = keras.layers.Conv2D(
            num_filters,
            kernel_size,
            padding="same",
            activation="relu",
            name=f"conv_{i}",
            **torch_conv_kwargs(kernel_size * kernel_size * channels),
        )(x)
        x = keras.layers.MaxPooling2D(2, name=f"pool_{i}")(x)
        channels = num_filters
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(
        num_units, activation="relu", name="dense", **torch_conv_kwargs(x.shape[-1])
    )(x)
    outputs = keras.layers.Dense(num_classes, name="head", **torch_conv_kwargs(num_units))(x)
    return keras.Model(inputs, outputs, name=name or "simple_cnn")
