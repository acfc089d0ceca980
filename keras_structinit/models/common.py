"""Initializer arguments of the model builders, and helpers shared by the models."""

from __future__ import annotations

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.covariance import depth_fractions
from keras_structinit.engine.initializer_base import check_initializer  # noqa: F401 - re-exported
from keras_structinit.utils import validation


def positive_int_arguments(**arguments):
    """Each keyword argument checked by :func:`~keras_structinit.utils.validation.positive_int`.

    Returns the values as a tuple, in order:
    ``dim, depth = positive_int_arguments(dim=dim, depth=depth)``.
    """
    return tuple(validation.positive_int(value, name) for name, value in arguments.items())


def clone_initializer(initializer):
    """The initializer for one more layer: a new instance from ``initializer``'s config.

    An instance seeded with an int, or unseeded, draws the same values on
    every call, so layers must not share it; the clone of an unseeded one
    draws a new seed, as in Keras' ``MultiHeadAttention``. An instance seeded
    with a ``keras.random.SeedGenerator`` (fresh values per call) and a plain
    function are shared.
    """
    if not isinstance(initializer, keras.Initializer) or isinstance(
        getattr(initializer, "seed", None), keras.random.SeedGenerator
    ):
        return initializer
    return type(initializer).from_config(initializer.get_config())


def initializer_at_depth(initializer, depth_fraction, index):
    """The initializer of the ``index``-th of a model's layers, at ``depth_fraction``.

    An initializer with an ``at_depth(depth_fraction, index)`` method (e.g.
    ``ConvCovariance``) is specialized to the layer's depth fraction
    ``i / (D - 1)``; any other is cloned (:func:`clone_initializer`).
    """
    if hasattr(initializer, "at_depth"):
        return initializer.at_depth(depth_fraction, index)
    return clone_initializer(initializer)


def scaled_he_normal(init_scale):
    """He-normal (truncated, fan-in) times ``init_scale``: ``VarianceScaling(2 * init_scale^2)``."""
    return keras.initializers.VarianceScaling(
        scale=2.0 * init_scale**2, mode="fan_in", distribution="truncated_normal"
    )


def torch_default_head(x, num_classes):
    """The logits layer ``head``: ``Dense(num_classes)`` with PyTorch's default init."""
    return keras.layers.Dense(
        num_classes,
        kernel_initializer=TorchDefaultUniform(),
        bias_initializer=TorchDefaultUniform(fan_in=x.shape[-1]),
        name="head",
    )(x)


def trunc_normal(std=0.02):
    """The official ConvNeXt/timm-ViT weight init, ``trunc_normal_(w, std=0.02)``.

    timm's ``trunc_normal_`` truncates at ``[-2, 2]`` in absolute value, i.e.
    at +-100 standard deviations for ``std = 0.02``: its draws are exactly
    ``N(0, std^2)`` in practice. ``keras.initializers.TruncatedNormal`` would
    truncate at +-2 std and shrink the realized std to ``0.88 * std``, so the
    plain normal is the faithful Keras equivalent. A new unseeded instance
    per call (clone it per layer, see :func:`clone_initializer`).
    """
    return keras.initializers.RandomNormal(mean=0.0, stddev=std)


def drop_path_rates(num_blocks, max_rate):
    """Stochastic-depth rates ``r_i = max_rate * i / (N - 1)``, ``i = 0 .. N-1``.

    Linearly increasing over all blocks of a model, from 0 for the first block
    to ``max_rate`` for the last (``[0.0]`` when ``N == 1``), as in ConvNeXt.
    """
    return [max_rate * fraction for fraction in depth_fractions(num_blocks)]


def check_min_size(input_shape, divisor, what):
    """``ValueError`` unless the spatial sizes (if known) are at least ``divisor``."""
    if any(size is not None and size < divisor for size in input_shape[:2]):
        raise ValueError(
            f"`input_shape` must be at least {divisor} x {divisor} for {what}. "
            f"Received: input_shape={tuple(input_shape)!r}"
        )
