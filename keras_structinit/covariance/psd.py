"""Making an indefinite covariance sampleable (pure NumPy, float64).

The closed-form ``Sigma'`` of Trockman et al. is slightly indefinite for wide
Gaussians, and an interpolated or resized learned covariance can be too. With
``cov = Q diag(lambda) Q^T``, ``psd="abs"`` samples ``Q |Lambda| Q^T`` (what
``numpy.random.multivariate_normal(method="svd")``, the paper's reference
sampler, does) and ``psd="clip"`` samples ``Q max(Lambda, 0) Q^T``.
"""

from __future__ import annotations

import numpy as np

from keras_structinit.utils import validation

__all__ = ["PSD_MODES", "matched_scale", "psd_factor", "psd_project"]

#: How the (slightly indefinite) closed-form covariance is made sampleable.
PSD_MODES = ("abs", "clip")


def _symmetric_eigh(cov):
    cov = np.asarray(cov, dtype=np.float64)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"`cov` must be a square matrix. Received shape {cov.shape}.")
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
    validation.one_of(psd, "psd", PSD_MODES)
    eigvals, eigvecs = _symmetric_eigh(cov)
    eigvals = np.abs(eigvals) if psd == "abs" else np.maximum(eigvals, 0.0)
    return eigvecs * np.sqrt(eigvals)[None, :]


def psd_project(cov, psd="abs"):
    """The PSD covariance actually sampled: ``L @ L.T`` for :func:`psd_factor`."""
    factor = psd_factor(cov, psd)
    return factor @ factor.T


def matched_scale(factor, variance):
    """The ``s`` for which samples ``s L z`` have mean per-pixel variance ``variance``.

    ``L L^T`` is the sampled covariance (:func:`psd_factor`), so a pixel's variance is a
    row's ``sum(L**2)`` and their mean is ``trace(L L^T) / n``: ``s = sqrt(variance * n /
    trace)``. The structure (correlations between pixels) is kept; only the overall
    variance changes.
    """
    factor = np.asarray(factor, dtype=np.float64)
    variance = validation.positive_float(variance, "variance")
    mean_variance = float(np.sum(factor * factor)) / factor.shape[0]
    if not mean_variance > 0.0:
        raise ValueError("`factor` samples nothing: every pixel's variance is 0.")
    return float(np.sqrt(variance / mean_variance))
