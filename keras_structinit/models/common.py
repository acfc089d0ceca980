"""Argument checks, initializer helpers and small layers shared by the models."""

from __future__ import annotations

from numbers import Integral, Real

import keras
from keras import ops

from keras_structinit.initializers.torch_default import TorchDefaultUniform


def positive_ints(values, name):
    """A non-empty sequence of positive ints as a tuple (``ValueError`` naming ``name``)."""
    if not isinstance(values, (tuple, list)) or not values or not all(
        isinstance(v, Integral) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise ValueError(
            f"`{name}` must be a non-empty sequence of positive ints. Received: {name}={values!r}"
        )
    return tuple(int(v) for v in values)


def check_rate(value, name):
    """A probability in ``[0, 1)`` as a float (``ValueError`` naming ``name``)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 <= value < 1.0:
        raise ValueError(f"`{name}` must be a float in [0, 1). Received: {name}={value!r}")
    return float(value)


def check_input_shape(input_shape, allow_none=False):
    """``(height, width, channels)`` as a tuple of positive ints.

    With ``allow_none`` the two spatial sizes may be ``None`` (fully
    convolutional models with global pooling).
    """

    def ok(v, none_ok):
        if v is None:
            return none_ok
        return isinstance(v, Integral) and not isinstance(v, bool) and v >= 1

    if not (
        isinstance(input_shape, (tuple, list))
        and len(input_shape) == 3
        and ok(input_shape[0], allow_none)
        and ok(input_shape[1], allow_none)
        and ok(input_shape[2], False)
    ):
        raise ValueError(
            "`input_shape` must be (height, width, channels) of positive ints. "
            f"Received: input_shape={input_shape!r}"
        )
    return tuple(None if v is None else int(v) for v in input_shape)


def check_min_size(input_shape, divisor, what):
    """``ValueError`` unless the spatial sizes (if known) are at least ``divisor``."""
    for size in input_shape[:2]:
        if size is not None and size // divisor < 1:
            raise ValueError(
                f"`input_shape` {tuple(input_shape)!r} is too small for {what} "
                f"(spatial size must be >= {divisor})."
            )


def torch_conv_kwargs(fan_in):
    """Kernel and bias initializers reproducing PyTorch's defaults."""
    return {
        "kernel_initializer": TorchDefaultUniform(),
        "bias_initializer": TorchDefaultUniform(fan_in=fan_in),
    }


def depthwise_initializer_at(initializer, depth_fraction, index):
    """The depthwise initializer of the ``index``-th of a model's depthwise layers.

    ``None`` gives PyTorch's default uniform. An initializer with an
    ``at_depth(depth, index)`` method (e.g. ``ConvCovariance``) is specialized
    to the layer's depth fraction ``(i - 1) / (D - 1)``; any other Keras
    initializer (instance, name or config) is used as given.
    """
    if initializer is None:
        return TorchDefaultUniform(depthwise=True)
    if hasattr(initializer, "at_depth"):
        return initializer.at_depth(depth_fraction, index)
    return keras.initializers.get(initializer)


def trunc_normal(std=0.02):
    """The official ConvNeXt/timm-ViT weight init, ``trunc_normal_(w, std=0.02)``.

    timm's ``trunc_normal_`` truncates at ``[-2, 2]`` in absolute value, i.e.
    at +-100 standard deviations for ``std = 0.02``: its draws are exactly
    ``N(0, std^2)`` in practice. ``keras.initializers.TruncatedNormal`` would
    truncate at +-2 std and shrink the realized std to ``0.88 * std``, so the
    plain normal is the faithful Keras equivalent. A new instance per call:
    unseeded Keras initializers repeat their values when reused.
    """
    return keras.initializers.RandomNormal(mean=0.0, stddev=std)


def trunc_normal_kwargs(std=0.02):
    """``kernel_initializer`` :func:`trunc_normal` and zero ``bias_initializer``."""
    return {"kernel_initializer": trunc_normal(std), "bias_initializer": "zeros"}


def drop_path_rates(num_blocks, max_rate):
    """Stochastic-depth rates ``r_i = max_rate * i / (N - 1)``, ``i = 0 .. N-1``.

    Linearly increasing over all blocks of a model, from 0 for the first block
    to ``max_rate`` for the last (``[0.0]`` when ``N == 1``), as in ConvNeXt.
    """
    if num_blocks == 1:
        return [0.0]
    return [max_rate * i / (num_blocks - 1) for i in range(num_blocks)]


@keras.saving.register_keras_serializable(package="keras_structinit")
class LayerScale(keras.layers.Layer):
    """Learnable per-channel scale ``y = gamma * x`` (CaiT/ConvNeXt layer scale).

    ``gamma`` has shape ``(channels,)`` (the last axis) and starts at
    ``init_value``.
    """

    def __init__(self, init_value=1e-6, **kwargs):
        super().__init__(**kwargs)
        if isinstance(init_value, bool) or not isinstance(init_value, Real):
            raise ValueError(
                f"`init_value` must be a float. Received: init_value={init_value!r}"
            )
        self.init_value = float(init_value)

    def build(self, input_shape):
        self.gamma = self.add_weight(
            name="gamma",
            shape=(input_shape[-1],),
            initializer=keras.initializers.Constant(self.init_value),
        )

    def call(self, inputs):
        return inputs * ops.cast(self.gamma, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "init_value": self.init_value}


@keras.saving.register_keras_serializable(package="keras_structinit")
class StochasticDepth(keras.layers.Layer):
    """Drop path (Huang et al. 2016): drops a residual branch per sample.

    In training, ``y_b = x_b * m_b / (1 - rate)`` with ``m_b ~ Bernoulli(1 - rate)``
    drawn once per sample ``b`` (whole sample kept or zeroed); at inference
    ``y = x``. Placed on the residual branch before the addition.

    Args:
        rate: drop probability in ``[0, 1)``.
        seed: ``None`` or an int seeding the layer's ``SeedGenerator``.
    """

    def __init__(self, rate=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = check_rate(rate, "rate")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, Integral)):
            raise ValueError(f"`seed` must be None or an int. Received: seed={seed!r}")
        self.seed = None if seed is None else int(seed)
        self.seed_generator = keras.random.SeedGenerator(self.seed)

    def call(self, inputs, training=False):
        if not training or self.rate == 0.0:
            return inputs
        noise_shape = (None,) + (1,) * (len(inputs.shape) - 1)
        return keras.random.dropout(
            inputs, self.rate, noise_shape=noise_shape, seed=self.seed_generator
        )

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
