"""SimpleCNN (Maennel et al., "What Do Neural Networks Learn When Trained With Random Labels?", 2020)."""

from __future__ import annotations

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.models.common import (
    check_initializer,
    check_min_size,
    clone_initializer,
    positive_int_arguments,
    scaled_he_normal,
    torch_default_head,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

#: Where :func:`simple_cnn` max-pools: after every conv, once after the last, or nowhere.
POOLINGS = ("every", "last", "none")

#: The paper's layouts (registry names ``simple-cnn-a2`` and ``simple-cnn-e3``).
PAPER_LAYOUTS = {
    # App. A.2: stride-1 convs without pooling, one hidden Dense, the head. The
    # counts are this package's choice (the paper varies them).
    "a2": {"num_conv_layers": 2, "num_filters": 256, "num_units": 64, "pooling": "none", "init_scale": 1.0},
    # App. E.3: three 3x3 convs of 16 filters, one 3x3 max-pool with stride 2, Dense 512, the head.
    "e3": {
        "num_conv_layers": 3,
        "num_filters": 16,
        "num_units": 512,
        "pooling": "last",
        "pool_size": 3,
        "pool_strides": 2,
        "init_scale": 1.0,
    },
}


def _check_pooled_size(input_shape, pooling, pool_size, num_conv_layers):
    if pooling == "every":
        check_min_size(input_shape, pool_size**num_conv_layers, f"num_conv_layers={num_conv_layers} poolings")
    elif pooling == "last":
        check_min_size(input_shape, pool_size, f"a {pool_size}x{pool_size} max-pool")


def _bias(fan_in, paper_init):
    """The paper's zero bias, or PyTorch's default uniform for ``fan_in``."""
    return "zeros" if paper_init else TorchDefaultUniform(fan_in=fan_in)


def _convs(x, num_conv_layers, num_filters, kernel_size, kernel_initializer, paper_init, pool):
    """``num_conv_layers`` times ``x = ReLU(Conv_k(x))`` (``conv_{i}``) and the max-pools ``pool``
    (``(pooling, pool_size, pool_strides)``) says: ``pool_{i}`` after each, or ``pool`` after the last."""
    pooling, pool_size, pool_strides = pool
    for i in range(1, num_conv_layers + 1):
        x = keras.layers.Conv2D(
            num_filters,
            kernel_size,
            padding="same",
            activation="relu",
            kernel_initializer=clone_initializer(kernel_initializer),
            bias_initializer=_bias(kernel_size * kernel_size * x.shape[-1], paper_init),
            name=f"conv_{i}",
        )(x)
        if pooling == "every":
            x = keras.layers.MaxPooling2D(pool_size, pool_strides, name=f"pool_{i}")(x)
    if pooling == "last":
        x = keras.layers.MaxPooling2D(pool_size, pool_strides, name="pool")(x)
    return x


def _dense_and_head(x, num_units, num_classes, dense_initializer, default, paper_init):
    """``Flatten``, ``ReLU(Dense(num_units))`` and the logits ``Dense``: layers ``flatten``,
    ``dense``, ``head`` (the head's kernel a clone of ``default`` with the paper's init)."""
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(
        num_units,
        activation="relu",
        kernel_initializer=dense_initializer,
        bias_initializer=_bias(x.shape[-1], paper_init),
        name="dense",
    )(x)
    if not paper_init:
        return torch_default_head(x, num_classes)
    return keras.layers.Dense(
        num_classes, kernel_initializer=clone_initializer(default), bias_initializer="zeros", name="head"
    )(x)


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
    *,
    pooling="every",
    pool_size=2,
    pool_strides=None,
    init_scale=None,
):
    """Builds the SimpleCNN as a functional ``keras.Model`` (logits).

    ``num_conv_layers`` times ``x = ReLU(Conv_k(x))`` with ``num_filters`` filters (``kernel_size``
    x ``kernel_size``, stride 1, 'same' padding, bias), max-pooling as ``pooling`` says, then
    ``Flatten``, ``ReLU(Dense(num_units))`` and a ``Dense`` logits head.

    * ``pooling="every"`` (default): a ``pool_size`` max-pool after every
      conv, this package's original layout (``simple-cnn``);
    * ``pooling="last"``: one max-pool after the last conv; with
      ``pool_size=3, pool_strides=2`` and 3 convs of 16 filters, 512 units,
      the paper's App. E.3 network (``simple-cnn-e3``);
    * ``pooling="none"``: the paper's App. A.2 layout (``simple-cnn-a2``).

    Initialization: with ``init_scale=None``, PyTorch's defaults
    (:class:`~keras_structinit.initializers.TorchDefaultUniform`, weights and biases); with a
    number, the paper's: every kernel (convs, dense, head) He-normal times ``init_scale``
    (:func:`scaled_he_normal`) and every bias 0. 'same' padding is this package's choice (the
    paper does not say).

    Layers: ``conv_{i}`` (i from 1), ``pool_{i}`` (``"every"``) or ``pool``
    (``"last"``), ``flatten``, ``dense``, ``head``.

    Args:
        num_conv_layers: conv layers (with ``pooling="every"`` the image must
            survive that many poolings).
        num_filters: filters of every conv.
        num_units: width of the hidden dense layer.
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last.
        kernel_size: conv filter size.
        kernel_initializer: conv kernels (anything ``keras.initializers.get``
            accepts); ``None``: as ``init_scale`` says.
        dense_initializer: the hidden ``dense`` kernel (not the head's);
            ``None``: as ``init_scale`` says.
        name: model name, default ``simple_cnn``.
        pooling: ``"every"``, ``"last"`` or ``"none"``.
        pool_size, pool_strides: of the max-pools (``pool_strides=None``: ``pool_size``).
        init_scale: ``None`` (PyTorch's defaults) or a positive number (the
            paper's He-normal times ``init_scale``, zero biases).

    Example: ``simple_cnn(3, 16, 512, pooling="last", pool_size=3, pool_strides=2, init_scale=1.0)``.
    """
    num_conv_layers, num_filters, num_units = positive_int_arguments(
        num_conv_layers=num_conv_layers, num_filters=num_filters, num_units=num_units
    )
    num_classes, kernel_size, pool_size = positive_int_arguments(
        num_classes=num_classes, kernel_size=kernel_size, pool_size=pool_size
    )
    pool_strides = validation.optional(validation.positive_int, pool_strides, "pool_strides") or pool_size
    validation.one_of(pooling, "pooling", POOLINGS)
    init_scale = validation.optional(validation.positive_float, init_scale, "init_scale")
    input_shape = validation.input_shape(input_shape)
    _check_pooled_size(input_shape, pooling, pool_size, num_conv_layers)
    paper_init = init_scale is not None
    default = scaled_he_normal(init_scale) if paper_init else TorchDefaultUniform()
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", default)
    dense_initializer = check_initializer(dense_initializer, "dense_initializer", clone_initializer(default))

    inputs = keras.Input(shape=input_shape, name="image")
    pool = (pooling, pool_size, pool_strides)
    x = _convs(inputs, num_conv_layers, num_filters, kernel_size, kernel_initializer, paper_init, pool)
    outputs = _dense_and_head(x, num_units, num_classes, dense_initializer, default, paper_init)
    return keras.Model(inputs, outputs, name=name or "simple_cnn")


#: Defaults of ``simple-cnn``: an assumption, not taken from the paper (two conv layers of 256
#: filters, 64 dense units); override them with keyword arguments.
DEFAULTS = {"num_conv_layers": 2, "num_filters": 256, "num_units": 64}

#: The zoo's names of this builder (:mod:`keras_structinit.models.zoo`); ``simple-cnn-a2`` and
#: ``simple-cnn-e3``: Maennel et al.'s layouts with their init (He-normal x init_scale, zero biases).
ZOO = (
    ZooEntry("simple-cnn", simple_cnn, params=DEFAULTS),
    ZooEntry("simple-cnn-a2", simple_cnn, params=PAPER_LAYOUTS["a2"]),
    ZooEntry("simple-cnn-e3", simple_cnn, params=PAPER_LAYOUTS["e3"]),
)
