"""Filters built from covariance eigenvectors (pure NumPy, float64).

Maennel et al. (NeurIPS 2020, App. E.3) initialize a first layer with the
filters ``tau_i e_i``, ``e_i`` the ``n`` leading eigenvectors of the patch
covariance and ``tau_i = f(sigma_i)`` a function of the eigenvalues
(``f = 1``, flat, in their Table 2); their Table 4 instead samples filters
from ``N(0, sum_i tau_i^2 e_i e_i^T)``. Here ``sigma_i`` is the eigenvalue
``lambda_i`` (a variance) and ``f`` is given as:

* ``None``: ``tau_i = 1`` (flat);
* a number ``p``: ``tau_i = max(lambda_i, 0) ** p`` (``0.5``: the standard
  deviation along ``e_i``);
* a sequence of ``n`` numbers: the ``tau_i`` themselves;
* a callable: ``tau_i = f(lambda_i)``, evaluated once.

More filters than components (the paper uses exactly as many): filter ``o``
is ``+-tau_(o mod n) e_(o mod n)``, the first ``n`` with sign ``+`` and the
repeats with random signs (:func:`cycled_filters`).
"""

from __future__ import annotations

import numbers

import numpy as np

from keras_structinit.alignment.measures import check_orthonormal
from keras_structinit.utils import validation

__all__ = ["MODES", "check_components", "component_scales", "cycled_filters"]

#: How :class:`~keras_structinit.initializers.DataAligned` makes filters.
MODES = ("eigvecs", "sample")


def check_components(eigvals, eigvecs, n_components):
    """The first ``n_components`` ``(eigvals, eigvecs)`` columns, checked, float64.

    ``eigvecs`` is ``(d, k)`` with orthonormal columns, ``eigvals`` ``(k,)``;
    ``n_components <= k <= d``. The order is kept as given (descending from
    :func:`~keras_structinit.alignment.patch_covariance`; reversed for the
    smallest components).
    """
    n_components = validation.positive_int(n_components, "n_components")
    eigvals = np.asarray(eigvals, dtype=np.float64)
    if eigvals.ndim != 1 or not np.all(np.isfinite(eigvals)):
        raise ValueError(f"`eigvals` must be a 1-D array of finite numbers. Received shape {eigvals.shape}")
    eigvecs = check_orthonormal(eigvecs, "eigvecs")
    if eigvecs.shape[1] != len(eigvals):
        raise ValueError(
            f"`eigvals` ({len(eigvals)}) and the columns of `eigvecs` {eigvecs.shape} must correspond "
            "one to one."
        )
    if n_components > eigvecs.shape[1]:
        raise ValueError(
            f"`n_components` must be at most the number of components given ({eigvecs.shape[1]}; the patch "
            f"dimension is {eigvecs.shape[0]}). Received: n_components={n_components}"
        )
    return eigvals[:n_components].copy(), np.ascontiguousarray(eigvecs[:, :n_components])


def component_scales(eigvals, f=None):
    """``tau_i = f(lambda_i)`` for the given ``eigvals`` (see the module docstring for ``f``)."""
    eigvals = np.asarray(eigvals, dtype=np.float64)
    if f is None:
        taus = np.ones_like(eigvals)
    elif isinstance(f, numbers.Real) and not isinstance(f, bool):
        with np.errstate(divide="ignore"):  # 0 ** -p: refused below as non-finite
            taus = np.maximum(eigvals, 0.0) ** validation.finite_float(f, "f")
    elif callable(f):
        taus = np.array([f(float(v)) for v in eigvals], dtype=np.float64)
    elif isinstance(f, (list, tuple, np.ndarray)):
        taus = np.asarray(f, dtype=np.float64)
        if taus.shape != eigvals.shape:
            raise ValueError(
                f"`f` given as scales must hold one per component ({len(eigvals)}). Received {taus.shape[0]}"
            )
    else:
        raise TypeError(
            "`f` must be None, a number p (tau = lambda ** p), a list of scales or a callable. "
            f"Received: f={f!r} of type {type(f).__name__}"
        )
    if not np.all(np.isfinite(taus)):
        raise ValueError(f"`f` gave non-finite scales: {taus}")
    return taus


def cycled_filters(eigvecs, taus, num_filters):
    """``(d, num_filters)``: column ``o`` is ``tau_(o mod n) e_(o mod n)`` (signs applied by the caller)."""
    index = np.arange(num_filters) % eigvecs.shape[1]
    return eigvecs[:, index] * taus[index]
