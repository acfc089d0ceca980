"""The variance schedule over depth (Eq. 11 of Trockman et al., ICLR 2023).

The Gaussian width ``sigma`` of the closed-form covariance grows with the
layer's depth fraction ``d = (i - 1) / (D - 1)`` (the i-th of ``D`` layers)::

    sigma(d) = sigma0 + v_sigma * d + 0.5 * a_sigma * d^2

Pure NumPy; the presets are the paper's fitted coefficients.
"""

from __future__ import annotations

from keras_structinit.utils import validation

__all__ = ["PRESETS", "depth_fractions", "resolve_schedule", "variance_schedule"]

#: Variance-schedule presets ``(sigma0, v_sigma, a_sigma)`` of Eq. 11.
PRESETS = {
    # Paper, appendix B: CIFAR-10 ConvMixers with 2x2 patches.
    "cifar-p2": (0.08, 0.37, 2.9),
    # The paper's published PyTorch snippet (1x1 patches).
    "cifar-p1": (0.16, 0.32, 2.88),
    # ImageNet ConvMixers with frozen and with trained ("thawed") filters.
    "imagenet-frozen": (0.15, 0.5, 0.25),
    "imagenet-thawed": (0.15, 0.25, 1.0),
}


def variance_schedule(depth_fraction, sigma0, v_sigma, a_sigma):
    """``sigma(d) = sigma0 + v_sigma * d + 0.5 * a_sigma * d^2`` (Eq. 11).

    ``depth_fraction`` is ``d = (i - 1) / (D - 1)`` for the i-th of ``D``
    layers (0 when ``D == 1``) and must lie in [0, 1]. The result must be > 0.
    """
    d = validation.fraction(depth_fraction, "depth_fraction", "a depth fraction in [0, 1]")
    sigma0 = validation.finite_float(sigma0, "sigma0")
    v_sigma = validation.finite_float(v_sigma, "v_sigma")
    a_sigma = validation.finite_float(a_sigma, "a_sigma")
    sigma = sigma0 + v_sigma * d + 0.5 * a_sigma * d * d
    if not sigma > 0.0:
        raise ValueError(
            f"The variance schedule gives sigma={sigma!r} <= 0 at depth "
            f"fraction {d} (sigma0={sigma0}, v_sigma={v_sigma}, "
            f"a_sigma={a_sigma}); sigma must be > 0."
        )
    return float(sigma)


def resolve_schedule(preset="cifar-p2", sigma0=None, v_sigma=None, a_sigma=None):
    """``(sigma0, v_sigma, a_sigma)`` from a preset, explicit values winning.

    ``preset=None`` requires all three values to be given.
    """
    base = (
        (None, None, None) if preset is None else PRESETS[validation.one_of(preset, "preset", tuple(PRESETS))]
    )
    values = []
    for name, explicit, default in zip(
        ("sigma0", "v_sigma", "a_sigma"), (sigma0, v_sigma, a_sigma), base, strict=True
    ):
        value = default if explicit is None else explicit
        if value is None:
            raise ValueError(f"`{name}` must be given when `preset` is None.")
        values.append(validation.finite_float(value, name))
    validation.positive_float(values[0], "sigma0")
    return tuple(values)


def depth_fractions(num_layers):
    """``d_i = i / (D - 1)`` for ``i = 0 .. D-1`` (``[0.0]`` when ``D == 1``)."""
    num_layers = validation.positive_int(num_layers, "num_layers")
    if num_layers == 1:
        return [0.0]
    return [i / (num_layers - 1) for i in range(num_layers)]
