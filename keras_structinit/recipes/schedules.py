"""Learning-rate schedules of the papers' recipes, as serializable Keras schedules."""

from __future__ import annotations

import keras
import numpy as np

from keras_structinit.utils import validation


def _check_fraction_knots(fractions, values):
    if not (isinstance(fractions, (list, tuple)) and isinstance(values, (list, tuple))):
        raise TypeError(
            "`fractions` and `values` must be lists of numbers. "
            f"Received: fractions={fractions!r}, values={values!r}"
        )
    if len(fractions) != len(values) or len(fractions) < 2:
        raise ValueError(
            "`fractions` and `values` must have the same length >= 2. "
            f"Received: {len(fractions)} fractions, {len(values)} values"
        )
    f = np.asarray(fractions, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(v))):
        raise ValueError(f"`fractions` and `values` must be finite. Received: {fractions}, {values}")
    if f[0] != 0.0 or f[-1] != 1.0 or np.any(np.diff(f) <= 0):
        raise ValueError(
            "`fractions` must increase strictly from 0.0 to 1.0 (fractions of "
            f"`total_steps`). Received: fractions={list(fractions)}"
        )
    if np.any(v < 0):
        raise ValueError(f"`values` must be >= 0. Received: values={list(values)}")
    return [float(x) for x in f], [float(x) for x in v]


@keras.saving.register_keras_serializable(package="keras_structinit")
class PiecewiseLinearSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Learning rate linear between knots placed at fractions of the run.

    ``lr(step) = interp(step / total_steps, fractions, values)``, constant
    at ``values[-1]`` after ``total_steps``.

    Args:
        total_steps: positive int, optimizer steps of the whole run.
        fractions: knot positions, strictly increasing from 0.0 to 1.0.
        values: learning rates at the knots (>= 0).
    """

    def __init__(self, total_steps, fractions, values, name="piecewise_linear"):
        self.total_steps = validation.positive_int(total_steps, "total_steps")
        self.fractions, self.values = _check_fraction_knots(fractions, values)
        self.name = name

    def __call__(self, step):
        t = keras.ops.cast(step, "float32") / float(self.total_steps)
        t = keras.ops.clip(t, 0.0, 1.0)
        lr = keras.ops.full_like(t, self.values[0])
        knots = list(zip(self.fractions, self.values, strict=True))
        for (f0, v0), (f1, v1) in zip(knots[:-1], knots[1:], strict=True):
            inside = keras.ops.logical_and(t >= f0, t <= f1)
            lr = keras.ops.where(inside, v0 + (t - f0) * ((v1 - v0) / (f1 - f0)), lr)
        return lr

    def get_config(self):
        return {
            "total_steps": self.total_steps,
            "fractions": list(self.fractions),
            "values": list(self.values),
            "name": self.name,
        }


@keras.saving.register_keras_serializable(package="keras_structinit")
class TriangularSchedule(PiecewiseLinearSchedule):
    """The one-cycle ("triangular") schedule of ConvMixer's CIFAR recipe.

    Linear from 0 up to ``peak`` at ``peak_fraction`` of the run, down to
    ``peak / final_divisor`` at ``end_fraction``, then to 0 at
    ``total_steps``. The defaults (0.4, 0.8, 20) are the knots of the
    covariance paper's CIFAR training: interp(t, [0, 2/5, 4/5, 1],
    [0, peak, peak/20, 0]).
    """

    def __init__(
        self,
        peak_learning_rate,
        total_steps,
        peak_fraction=0.4,
        end_fraction=0.8,
        final_divisor=20.0,
        name="triangular",
    ):
        self.peak_learning_rate = validation.positive_float(peak_learning_rate, "peak_learning_rate")
        self.final_divisor = validation.positive_float(final_divisor, "final_divisor")
        self.peak_fraction = validation.fraction(peak_fraction, "peak_fraction")
        self.end_fraction = validation.fraction(end_fraction, "end_fraction")
        if not 0.0 < self.peak_fraction < self.end_fraction:
            raise ValueError(
                "Expected 0 < peak_fraction < end_fraction <= 1. Received: "
                f"peak_fraction={peak_fraction!r}, end_fraction={end_fraction!r}"
            )
        low = self.peak_learning_rate / self.final_divisor
        fractions = [0.0, self.peak_fraction, self.end_fraction, 1.0]
        values = [0.0, self.peak_learning_rate, low, 0.0]
        if self.end_fraction == 1.0:
            fractions, values = fractions[:3], values[:3]
        super().__init__(total_steps, fractions, values, name=name)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "peak_fraction": self.peak_fraction,
            "end_fraction": self.end_fraction,
            "final_divisor": self.final_divisor,
            "name": self.name,
        }


def step_decay(learning_rate, total_steps, fractions=(1 / 3, 2 / 3), divisor=3.0):
    """``learning_rate / divisor^j`` after the ``j``-th of the ``fractions`` of ``total_steps``.

    Keras' ``PiecewiseConstantDecay`` with boundaries ``round(f * total_steps)``;
    the defaults are Maennel et al.'s recipe (divided by 3 at 1/3 and 2/3).

    Example:
        >>> schedule = step_decay(0.002, 3000)   # 0.002, then 0.002/3 after step 1000, 0.002/9 after 2000
    """
    learning_rate = validation.positive_float(learning_rate, "learning_rate")
    total_steps = validation.positive_int(total_steps, "total_steps")
    divisor = validation.positive_float(divisor, "divisor")
    if not isinstance(fractions, (list, tuple)) or not fractions:
        raise TypeError(f"`fractions` must be a non-empty list of numbers in (0, 1). Received: {fractions!r}")
    fractions = [validation.fraction(f, "fractions") for f in fractions]
    increasing = all(a < b for a, b in zip(fractions[:-1], fractions[1:], strict=True))
    if not (increasing and 0.0 < fractions[0] and fractions[-1] < 1.0):
        raise ValueError(f"`fractions` must increase strictly inside (0, 1). Received: fractions={fractions}")
    return keras.optimizers.schedules.PiecewiseConstantDecay(
        [int(round(f * total_steps)) for f in fractions],
        [learning_rate / divisor**j for j in range(len(fractions) + 1)],
    )


def warmup_cosine(peak_learning_rate, total_steps, warmup_steps):
    """Linear warmup 0 -> ``peak`` over ``warmup_steps``, then cosine to 0 (Keras' CosineDecay)."""
    peak_learning_rate = validation.non_negative_float(peak_learning_rate, "peak_learning_rate")
    total_steps = validation.positive_int(total_steps, "total_steps")
    if validation.int_value(warmup_steps, "warmup_steps", minimum=0) >= total_steps:
        raise ValueError(
            f"`warmup_steps` must be an int in [0, total_steps={total_steps}). "
            f"Received: warmup_steps={warmup_steps!r}"
        )
    return keras.optimizers.schedules.CosineDecay(
        0.0 if warmup_steps else float(peak_learning_rate),
        decay_steps=max(int(total_steps) - int(warmup_steps), 1),
        warmup_target=float(peak_learning_rate) if warmup_steps else None,
        warmup_steps=int(warmup_steps),
    )
