"""``MeanShift``: a base initializer plus the mimetic mean shift of an MLP's first layer."""

from __future__ import annotations

import math

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.engine.initializer_base import SeededInitializer, resolve_dtype
from keras_structinit.mimetic.shift import resolve_shift, shift_shape
from keras_structinit.utils import validation

__all__ = ["MeanShift", "check_base"]


def check_base(base, seed=None):
    """``base`` as a ``keras.Initializer``: ``None`` gives ``TorchDefaultUniform(seed=seed)``.

    Accepts an ``Initializer`` instance, a name (``"he_normal"``) or a config
    dict (as ``keras.initializers.get``); anything else is a ``TypeError``, an
    unknown name or config a ``ValueError``.
    """
    if base is None:
        return TorchDefaultUniform(seed=seed)
    expected = "None or a keras.Initializer (an instance, its name or its config dict)"
    if not isinstance(base, (keras.Initializer, str, dict)):
        raise TypeError(f"`base` must be {expected}. Received: base={base!r} of type {type(base).__name__}")
    if isinstance(base, keras.Initializer):
        return base
    try:
        return keras.initializers.get(base)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`base` must be {expected} ({error}). Received: base={base!r}") from None


@keras.saving.register_keras_serializable(package="keras_structinit")
class MeanShift(SeededInitializer):
    """A base initializer's kernel plus a mean shift (mimetic init of an MLP's first layer).

    With ``K`` drawn by ``base`` (Keras layout ``(in, out)``, or ``(*k, in, out)``):

    * ``mode="constant"`` (Eq. 2): ``K + b``, every entry shifted by ``b``;
    * ``mode="per_input"`` (Eq. 1): ``K + b_n 1^T``, ``b_n ~ N(b, variance)``
      drawn per call, one value per input: row ``j`` of a Dense kernel (and
      of a 1x1 conv's ``(1, 1, in, out)``, along ``in``) is shifted by
      ``b_n[j]``. ``variance`` is a variance (the paper's ``sigma``).

    The default base is the paper's baseline, PyTorch's default
    ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]``
    (:class:`~keras_structinit.initializers.TorchDefaultUniform`): ``b`` acts
    relative to the base's scale. Use it for the first Dense (or 1x1 conv) of
    each MLP block only, never for the second layer, attention or the head.

    Args:
        base: ``None`` (``TorchDefaultUniform`` seeded with ``seed``) or a
            Keras initializer (instance, name or config); saved inside this
            initializer's config.
        b: the constant shift, or the mean of ``b_n``; default
            :data:`~keras_structinit.mimetic.DEFAULT_B` in constant mode
            (0.2, chosen from the CPU-suite sweep, see there), 0 in per-input mode (Eq. 1).
        mode: ``"constant"`` or ``"per_input"``.
        variance: per-input mode only: the variance of ``b_n`` (default
            ``DEFAULT_B ** 2``).
        seed: ``None``, an int (same values on each call) or a
            ``keras.random.SeedGenerator`` (fresh values on each call). It
            seeds the default base and ``b_n`` (drawn from a seed derived from
            an int one). One instance given to several layers (a builder's
            ``mlp_initializer``) draws the same values in each unless its
            seed is ``None`` or a ``SeedGenerator``.

    Example:
        >>> layer = keras.layers.Dense(1024, kernel_initializer=MeanShift(b=0.05, seed=0))
        >>> model = ks.models.convnext_isotropic(256, 8, mlp_initializer=MeanShift())
    """

    def __init__(self, base=None, b=None, mode="constant", variance=None, seed=None):
        super().__init__(seed=seed)
        self.b, self.variance = resolve_shift(b, mode, variance)
        self.mode = mode
        self.base = check_base(base, self.seed)
        self._init_base = None if base is None else self.base  # the default base is not saved

    def __call__(self, shape, dtype=None):
        dtype = resolve_dtype(dtype)
        size = shift_shape(shape, self.mode)
        compute_dtype = "float64" if dtype == "float64" else "float32"
        kernel = keras.ops.cast(self.base(tuple(shape), dtype=dtype), compute_dtype)
        if self.mode == "constant":
            kernel = kernel + self.b
        else:
            seed = (
                self.seed
                if isinstance(self.seed, keras.random.SeedGenerator)
                else validation.derive_seed(self.seed)
            )
            shift = keras.random.normal(
                size, mean=self.b, stddev=math.sqrt(self.variance), dtype=compute_dtype, seed=seed
            )
            kernel = kernel + shift
        return keras.ops.cast(kernel, dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            base=None if self._init_base is None else keras.saving.serialize_keras_object(self._init_base),
            b=self.b,
            mode=self.mode,
            variance=None if self.mode == "constant" else self.variance,
        )
        return config
