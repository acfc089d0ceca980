"""The closed-form covariance nearest a measured one: which ``sigma`` a layer's filters look like.

Given the ``n x n`` covariance ``S`` of a layer's ``k x k`` filters (row-major flattened, as
:func:`~keras_structinit.covariance.bank.FilterCovariance` measures it), find the width
``sigma`` of Eq. 5 and a scale ``a >= 0`` minimizing the Frobenius error

    e(sigma) = min_a || S - a C(sigma) ||_F / || S ||_F,   a* = <S, C> / <C, C>,

where ``C(sigma)`` is the sampled covariance of :class:`ConvCovariance` (Eq. 10 made PSD, the
same :func:`~keras_structinit.covariance.psd.psd_project`). ``e`` is scanned on a log grid of
``sigma`` and refined by golden-section search between the grid neighbours of its minimum.
Trained filters whose covariance widens with depth (the paper's Fig. 5-6) give ``sigma``
growing with depth; ``e`` says how close to the closed form a layer is.
"""

from __future__ import annotations

import math

import numpy as np

from keras_structinit.covariance.closed_form import conv_covariance
from keras_structinit.covariance.psd import PSD_MODES, psd_project
from keras_structinit.utils import validation

__all__ = ["SIGMA_GRID", "filter_statistics", "fit_sigma"]

#: The log grid of ``sigma`` scanned before refining (the presets' widths are 0.08 to ~4).
SIGMA_GRID = tuple(np.geomspace(1e-2, 1e2, 81).tolist())


def filter_statistics(kernel):
    """``(mean, cov)`` of a kernel's ``k x k`` filters: ``kernel`` ``(kh, kw, a, b)`` holds ``a b``
    filters, each flattened row-major to ``n = kh kw`` pixels; ``mean`` is ``(n,)`` and ``cov`` the
    unbiased ``(n, n)`` sample covariance (Eq. 3's empirical form), in float64."""
    values = np.asarray(kernel, dtype=np.float64)
    filters = values.reshape(math.prod(values.shape[:2]), -1)  # column h = filter kernel[..., a_, b_]
    if filters.shape[1] < 2:
        raise ValueError(
            f"`kernel` holds {filters.shape[1]} filter; at least two are needed to estimate a covariance"
        )
    mean = filters.mean(axis=1)
    centred = filters - mean[:, None]
    return mean, centred @ centred.T / (filters.shape[1] - 1)


def _error(cov, norm, kernel_size, sigma, psd):
    closed = psd_project(conv_covariance(kernel_size, sigma), psd)
    inner = float((closed * closed).sum())
    scale = max(float((cov * closed).sum()) / inner, 0.0) if inner > 0 else 0.0
    return float(np.linalg.norm(cov - scale * closed)) / norm, scale


def fit_sigma(cov, kernel_size, psd="abs", tolerance=1e-4):
    """``(sigma, scale, rel_error)`` of the closed form nearest ``cov`` (see the module docstring).

    Args:
        cov: the ``(n, n)`` filter covariance, ``n = prod(kernel_size)``.
        kernel_size: ``k`` or ``(kh, kw)``.
        psd: how the closed form was made sampleable (``"abs"``, ConvCovariance's default).
        tolerance: of the golden-section refinement, relative in ``sigma``.
    """
    kernel_size = validation.kernel_size(kernel_size)
    validation.one_of(psd, "psd", PSD_MODES)
    cov = np.asarray(cov, dtype=np.float64)
    n = math.prod(kernel_size)
    if cov.shape != (n, n) or not np.all(np.isfinite(cov)):
        raise ValueError(
            f"`cov` must be a finite ({n}, {n}) covariance for kernel_size={kernel_size}. "
            f"Received shape {cov.shape}"
        )
    norm = float(np.linalg.norm(cov))
    if norm == 0:
        raise ValueError("`cov` is zero: the filters are all zero, no width to fit")
    errors = [_error(cov, norm, kernel_size, s, psd)[0] for s in SIGMA_GRID]
    best = int(np.argmin(errors))
    lo, hi = math.log(SIGMA_GRID[max(best - 1, 0)]), math.log(SIGMA_GRID[min(best + 1, len(SIGMA_GRID) - 1)])
    ratio = (math.sqrt(5) - 1) / 2
    while hi - lo > tolerance:
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if (
            _error(cov, norm, kernel_size, math.exp(a), psd)[0]
            <= _error(cov, norm, kernel_size, math.exp(b), psd)[0]
        ):
            hi = b
        else:
            lo = a
    sigma = math.exp(0.5 * (lo + hi))
    error, scale = _error(cov, norm, kernel_size, sigma, psd)
    return sigma, scale, error
