"""Closed-form covariance of convolutional filters (pure NumPy, float64).

Implements the learning-free filter covariance of Trockman, Willmott & Kolter,
"Understanding the Covariance Structure of Convolutional Filters" (ICLR 2023).
Equation numbers below refer to that paper.

Notation: a filter of size ``k`` has centre ``c = floor(k / 2)`` and *wrapped*
offsets ``delta(a, b) = ((a - b + c) mod k) - c``.

* Eq. 5, an unnormalised Gaussian centred at pixel ``p``::

      G_p[q] = exp(-|delta(q, p)|^2 / (2 sigma))

* Eq. 6, the "dynamic" block matrix ``C`` whose block ``(i, j)`` is ``G_(i,j)``.
* ``Z = G_(c,c)``, static component ``S = ones(k, k) kron Z`` and centre mask
  ``M = Z kron ones(k, k)``.
* Eq. 10, block form::

      Sigma_blk = 1/2 * [M * (C - S) + C * S]

* Eq. 1, vector form used for sampling a row-major flattened filter ``f``::

      Sigma'[k*i + j, k*l + m] = Sigma_blk[k*i + l, k*j + m]

  so block ``(i, j)`` of ``Sigma_blk`` is the covariance of pixel ``(i, j)``
  with every pixel, laid out as a ``k x k`` image.

Written pixel-wise, for pixels ``p`` and ``q`` the construction reads::

    Sigma'[p, q] = 1/2 * [Z[p] * (G_p[q] - Z[q]) + G_p[q] * Z[q]]

which is how it is computed here (regrouped to be exactly symmetric). That form does not depend on the filter being
two-dimensional or square: ``kernel_size`` may be ``(k,)``, ``(kh, kw)`` or
``(kd, kh, kw)``, each axis with its own centre and modulus. Non-square and
1-D/3-D filters are an extension of the paper, which only uses square 2-D ones.

* Eq. 11, the variance schedule over depth::

      sigma(d) = sigma0 + v_sigma * d + 0.5 * a_sigma * d^2,   d = (i - 1) / (D - 1)
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "FilterCovariance",
    "PRESETS",
    "PSD_MODES",
    "block_to_vector",
    "conv_covariance",
    "conv_covariance_blocks",
    "depth_fractions",
    "psd_factor",
    "psd_project",
    "resolve_schedule",
    "variance_schedule",
    "vector_to_block",
]

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

#: How the (slightly indefinite) closed-form covariance is made sampleable.
PSD_MODES = ("abs", "clip")


# ----------------------------------------------------------------------------
# Argument checking
# ----------------------------------------------------------------------------
def normalize_kernel_size(kernel_size, name="kernel_size"):
    """Returns ``kernel_size`` as a tuple of positive ints (an int means 2-D)."""
    if isinstance(kernel_size, Integral) and not isinstance(kernel_size, bool):
        kernel_size = (int(kernel_size), int(kernel_size))
    if not isinstance(kernel_size, (tuple, list)) or not kernel_size:
        raise ValueError(
            f"`{name}` must be a positive int or a non-empty tuple of positive "
            f"ints such as (kh, kw). Received: {name}={kernel_size!r}"
        )
    for k in kernel_size:
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(
                f"`{name}` must contain positive ints. Received: "
                f"{name}={kernel_size!r}"
            )
    return tuple(int(k) for k in kernel_size)


def check_positive_int(value, name):
    """Returns ``value`` as an int, raising ``ValueError`` (naming ``name``) unless it is an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"`{name}` must be a positive int. Received: {name}={value!r}")
    return int(value)


def check_positive(value, name):
    """Returns ``value`` as a float, raising unless it is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(
            f"`{name}` must be a real number > 0. Received: {name}={value!r}"
        )
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(
            f"`{name}` must be a finite number > 0. Received: {name}={value!r}"
        )
    return value


def check_finite(value, name):
    """Returns ``value`` as a float, raising unless it is a finite number."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(
            f"`{name}` must be a real number. Received: {name}={value!r}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(
            f"`{name}` must be a finite number. Received: {name}={value!r}"
        )
    return value


def check_depth_fraction(depth, name="depth"):
    """Returns ``depth`` as a float, raising unless it lies in [0, 1]."""
    depth = check_finite(depth, name)
    if not 0.0 <= depth <= 1.0:
        raise ValueError(
            f"`{name}` is a depth fraction and must lie in [0, 1]. "
            f"Received: {name}={depth!r}"
        )
    return depth


def check_psd_mode(psd):
    if psd not in PSD_MODES:
        raise ValueError(
            f"`psd` must be one of {PSD_MODES}. Received: psd={psd!r}"
        )
    return psd


# ----------------------------------------------------------------------------
# Eq. 5-10: the covariance itself
# ----------------------------------------------------------------------------
def _wrapped_offsets(k):
    """``delta(a, b) = ((a - b + c) mod k) - c`` as a (k, k) table [a, b]."""
    c = k // 2
    idx = np.arange(k)
    return np.mod(idx[:, None] - idx[None, :] + c, k) - c


def conv_covariance(kernel_size, sigma):
    """Vector-form filter covariance ``Sigma'`` (Eq. 1, 5, 6, 10).

    Args:
        kernel_size: int ``k`` (a ``k x k`` filter) or a tuple of per-axis
            sizes, e.g. ``(kh, kw)``.
        sigma: the Gaussian width ``sigma > 0`` of Eq. 5.

    Returns:
        float64 array of shape ``(n, n)``, ``n = prod(kernel_size)``, indexed by
        the row-major flattening of the filter.
    """
    kernel_size = normalize_kernel_size(kernel_size)
    sigma = check_positive(sigma, "sigma")
    n = math.prod(kernel_size)
    # Squared wrapped distance between every pair of pixels, summed over axes:
    # dist2[p, q] = |delta(q, p)|^2 with p, q row-major pixel indices.
    dist2 = np.zeros((n, n), dtype=np.float64)
    for axis, k in enumerate(kernel_size):
        coord = np.indices(kernel_size)[axis].reshape(-1)
        delta = _wrapped_offsets(k)  # [a, b] -> delta(a, b)
        dist2 += delta[coord[None, :], coord[:, None]].astype(np.float64) ** 2
    gauss = np.exp(-dist2 / (2.0 * sigma))  # gauss[p, q] = G_p[q]   (Eq. 5)
    centre = np.ravel_multi_index(tuple(k // 2 for k in kernel_size), kernel_size)
    z = gauss[centre]  # Z = G_c, flattened
    # Eq. 10 pixel-wise, 1/2 [Z[p] (G_p[q] - Z[q]) + G_p[q] Z[q]], regrouped as
    # 1/2 [G_p[q] (Z[p] + Z[q]) - Z[p] Z[q]] so that it is exactly symmetric.
    z_sum = z[:, None] + z[None, :]
    return 0.5 * (gauss * z_sum - np.outer(z, z))


def vector_to_block(cov, kernel_size):
    """``Sigma'`` (Eq. 1 layout) -> ``Sigma_blk`` (Eq. 10 layout), 2-D only.

    Block ``(i, j)`` of the result is the covariance of pixel ``(i, j)`` with
    all pixels, arranged as a ``kh x kw`` image; the result has shape
    ``(kh * kh, kw * kw)``.
    """
    kh, kw = _two_d(kernel_size)
    cov = np.asarray(cov)
    if cov.shape != (kh * kw, kh * kw):
        raise ValueError(
            f"`cov` must have shape {(kh * kw, kh * kw)} for kernel_size "
            f"{(kh, kw)}. Received shape {cov.shape}."
        )
    # cov[i, j, l, m] -> blk[i, l, j, m]
    return cov.reshape(kh, kw, kh, kw).transpose(0, 2, 1, 3).reshape(kh * kh, kw * kw)


def block_to_vector(blk, kernel_size):
    """Inverse of :func:`vector_to_block`: ``Sigma_blk`` -> ``Sigma'``."""
    kh, kw = _two_d(kernel_size)
    blk = np.asarray(blk)
    if blk.shape != (kh * kh, kw * kw):
        raise ValueError(
            f"`blk` must have shape {(kh * kh, kw * kw)} for kernel_size "
            f"{(kh, kw)}. Received shape {blk.shape}."
        )
    return blk.reshape(kh, kh, kw, kw).transpose(0, 2, 1, 3).reshape(kh * kw, kh * kw)


def conv_covariance_blocks(kernel_size, sigma):
    """Block-form covariance ``Sigma_blk`` of Eq. 10 (2-D filters)."""
    kernel_size = _two_d(kernel_size)
    return vector_to_block(conv_covariance(kernel_size, sigma), kernel_size)


def _two_d(kernel_size):
    kernel_size = normalize_kernel_size(kernel_size)
    if len(kernel_size) != 2:
        raise ValueError(
            "The block form is defined for 2-D filters: `kernel_size` must be "
            f"an int or (kh, kw). Received: kernel_size={kernel_size!r}"
        )
    return kernel_size


# ----------------------------------------------------------------------------
# Making the covariance sampleable
# ----------------------------------------------------------------------------
def _symmetric_eigh(cov):
    cov = np.asarray(cov, dtype=np.float64)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(
            f"`cov` must be a square matrix. Received shape {cov.shape}."
        )
    if not np.all(np.isfinite(cov)):
        raise ValueError("`cov` contains NaN or infinite values.")
    return np.linalg.eigh(0.5 * (cov + cov.T))


def psd_factor(cov, psd="abs"):
    """Factor ``L`` with ``L @ L.T`` the PSD-handled covariance.

    With ``cov = Q diag(lambda) Q^T`` (float64 ``eigh``):

    * ``psd="abs"``: ``L = Q diag(sqrt(|lambda|))``, i.e. the covariance
      ``Q |Lambda| Q^T`` that ``numpy.random.multivariate_normal(method="svd")``
      samples (what the paper's reference code used);
    * ``psd="clip"``: ``L = Q diag(sqrt(max(lambda, 0)))``.

    A sample is then ``f = L @ z`` with ``z ~ N(0, I)``.
    """
    check_psd_mode(psd)
    eigvals, eigvecs = _symmetric_eigh(cov)
    eigvals = np.abs(eigvals) if psd == "abs" else np.maximum(eigvals, 0.0)
    return eigvecs * np.sqrt(eigvals)[None, :]


def psd_project(cov, psd="abs"):
    """The PSD covariance actually sampled: ``L @ L.T`` for :func:`psd_factor`."""
    factor = psd_factor(cov, psd)
    return factor @ factor.T


# ----------------------------------------------------------------------------
# Eq. 11: variance schedule over depth
# ----------------------------------------------------------------------------
def variance_schedule(depth_fraction, sigma0, v_sigma, a_sigma):
    """``sigma(d) = sigma0 + v_sigma * d + 0.5 * a_sigma * d^2`` (Eq. 11).

    ``depth_fraction`` is ``d = (i - 1) / (D - 1)`` for the i-th of ``D``
    layers (0 when ``D == 1``) and must lie in [0, 1]. The result must be > 0.
    """
    d = check_depth_fraction(depth_fraction, "depth_fraction")
    sigma0 = check_finite(sigma0, "sigma0")
    v_sigma = check_finite(v_sigma, "v_sigma")
    a_sigma = check_finite(a_sigma, "a_sigma")
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
    if preset is None:
        base = (None, None, None)
    elif isinstance(preset, str) and preset in PRESETS:
        base = PRESETS[preset]
    else:
        raise ValueError(
            f"`preset` must be one of {sorted(PRESETS)} or None. "
            f"Received: preset={preset!r}"
        )
    values = []
    for name, explicit, default in zip(
        ("sigma0", "v_sigma", "a_sigma"), (sigma0, v_sigma, a_sigma), base
    ):
        value = default if explicit is None else explicit
        if value is None:
            raise ValueError(
                f"`{name}` must be given when `preset` is None."
            )
        values.append(check_finite(value, name))
    if not values[0] > 0.0:
        raise ValueError(
            f"`sigma0` must be > 0. Received: sigma0={values[0]!r}"
        )
    return tuple(values)


def depth_fractions(num_layers):
    """``d_i = i / (D - 1)`` for ``i = 0 .. D-1`` (``[0.0]`` when ``D == 1``)."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, Integral) or num_layers < 1:
        raise ValueError(
            f"`num_layers` must be a positive int. Received: {num_layers!r}"
        )
    if num_layers == 1:
        return [0.0]
    return [i / (num_layers - 1) for i in range(num_layers)]


# The bank of learned filter covariances (covariance transfer) lives in its own
# module, since it reads Keras models; it is part of this namespace's API.
from keras_structinit.covariance_transfer import FilterCovariance  # noqa: E402
