"""Misalignment of a weight covariance with a data covariance (pure NumPy, float64).

Maennel et al. (NeurIPS 2020, App. D.4, Prop. 2) call ``Sigma_w`` *aligned*
with ``Sigma_x`` when every eigenvector ``v_i`` of ``Sigma_x`` is also one of
``Sigma_w``, and measure the distance from that with::

    M(Sigma_x, Sigma_w) = sum_i sqrt((v_i^T Sigma_w v_i) (v_i^T Sigma_w^{-1} v_i)) - d

over the ``d`` eigenvectors. By Cauchy-Schwarz each term is ``>= 1``, with
equality iff ``v_i`` is an eigenvector of ``Sigma_w``: ``M >= 0``, ``M = 0``
iff aligned. ``M`` is unchanged by scaling ``Sigma_w`` and by rotating both
matrices with the same orthogonal ``Q``. The paper's control replaces the
``v_i`` by a random orthonormal basis (:func:`random_basis`).

``Sigma_w`` is estimated from a layer's filters by :func:`filter_covariance`,
flattened like the patches (:mod:`.patches`).
"""

from __future__ import annotations

import numpy as np

from keras_structinit.utils import validation

__all__ = [
    "EIGENSPACE_RTOL",
    "eigenspaces",
    "filter_covariance",
    "misalignment",
    "random_basis",
    "transfer_function",
]


def _matrix(value, name, dim=None):
    value = np.asarray(value, dtype=np.float64)
    expected = "a square matrix" if dim is None else f"a ({dim}, {dim}) matrix"
    if value.ndim != 2 or value.shape[0] != value.shape[1] or (dim is not None and value.shape[0] != dim):
        raise ValueError(f"`{name}` must be {expected}. Received shape {value.shape}")
    if not np.all(np.isfinite(value)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    if np.abs(value - value.T).max() > 1e-8 * max(1.0, np.abs(value).max()):
        raise ValueError(f"`{name}` must be symmetric (a covariance).")
    return 0.5 * (value + value.T)


def check_orthonormal(basis, name, dim=None):
    """``basis`` as a float64 ``(d, k)`` array with orthonormal columns (``ValueError`` otherwise)."""
    basis = np.asarray(basis, dtype=np.float64)
    if basis.ndim != 2 or basis.shape[1] > basis.shape[0] or basis.shape[1] == 0:
        raise ValueError(
            f"`{name}` must be a (d, k) matrix with 1 <= k <= d orthonormal columns. "
            f"Received shape {basis.shape}"
        )
    if dim is not None and basis.shape[0] != dim:
        raise ValueError(
            f"`{name}` must have {dim} rows, the dimension of the covariances. Received shape {basis.shape}"
        )
    if not np.all(np.isfinite(basis)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    error = np.abs(basis.T @ basis - np.eye(basis.shape[1])).max()
    if error > 1e-6:
        raise ValueError(f"The columns of `{name}` must be orthonormal (|B^T B - I| = {error:.2g}).")
    return basis


def random_basis(dim, seed=None):
    """A Haar-random ``(dim, dim)`` orthogonal matrix (QR of a Gaussian, signs fixed)."""
    dim = validation.positive_int(dim, "dim")
    seed = validation.optional(validation.random_seed, seed, "seed")
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


def filter_covariance(kernel, centered=False):
    """``Sigma_w`` of a kernel's filters, each ``kernel[..., o]`` flattened row-major.

    With ``W = kernel.reshape(d, m)`` (``m`` filters of ``d`` weights, the
    patch order for a ``Conv2D`` kernel ``(kh, kw, C, m)``)::

        Sigma_w = W W^T / m                       (centered=False: zero-mean weights)
        Sigma_w = (W - w_bar)(W - w_bar)^T / m    (centered=True)

    The default is App. D.3's form: the maximum-likelihood covariance of ``N(0, Sigma)``,
    ``(1/n) sum_i w_i w_i^T``, the model the misalignment score is built on. App. A.6 only
    says "the covariance of the filters in the first layer", which reads as the centered
    sample covariance: ``centered=True`` gives it (the two differ by the filters' mean,
    ``w_bar w_bar^T``, small for a zero-mean init). Fewer filters than ``d`` give a singular
    ``Sigma_w`` (rank ``<= m``).
    """
    kernel = np.asarray(kernel, dtype=np.float64)
    validation.boolean(centered, "centered")
    if kernel.ndim < 2:
        raise ValueError(f"`kernel` must have rank >= 2 (..., filters). Received shape {kernel.shape}")
    filters = kernel.reshape(-1, kernel.shape[-1])
    if centered:
        filters = filters - filters.mean(axis=1, keepdims=True)
    return filters @ filters.T / filters.shape[1]


#: Eigenvalues of ``Sigma_x`` closer than this, relative to the largest, span one eigenspace.
EIGENSPACE_RTOL = 1e-10


def eigenspaces(eigvals, rtol=EIGENSPACE_RTOL):
    """For ascending ``eigvals``, the index of each one's eigenspace (0, 0, 1, ...): a value
    within ``rtol * max|eigvals|`` of the previous one belongs to the same space."""
    eigvals = np.asarray(eigvals, dtype=np.float64)
    tol = rtol * max(float(np.abs(eigvals).max(initial=0.0)), np.finfo(np.float64).tiny)
    return np.r_[0, np.cumsum(np.diff(eigvals) > tol)]


def misalignment(sigma_x, sigma_w, basis=None):
    """``M(Sigma_x, Sigma_w)`` of Prop. 2: 0 iff aligned, larger the less aligned.

    Item 7 of Prop. 2: ``M + d = sum_i sqrt(tr(Sigma_w|V_i) tr(Sigma_w^{-1}|V_i))`` over the
    eigenspaces ``V_i`` of ``Sigma_x`` (eigenvalues equal within :data:`EIGENSPACE_RTOL`
    share one), so a repeated eigenvalue's space counts as a whole, whichever basis of it
    ``eigh`` returns: ``M(I, diag(1, 2)) = sqrt(4.5) - 2 = 0.1213``.

    Args:
        sigma_x: ``(d, d)`` symmetric data covariance. May be ``None`` when ``basis`` is given.
        sigma_w: ``(d, d)`` symmetric positive definite weight covariance.
        basis: optional ``(d, k)`` orthonormal columns used instead of the
            eigenvectors of ``sigma_x`` (e.g. :func:`random_basis`, the
            paper's control), each its own one-dimensional space; then the sum
            has ``k`` terms, minus ``k``.

    Returns:
        ``M >= 0`` as a float (rounding may leave ``-1e-15``-sized values).

    Raises:
        ValueError: shapes disagree, a matrix is not symmetric, or
            ``sigma_w`` is singular (its rank is given: ``m`` filters span
            at most ``m`` dimensions).

    Example:
        >>> misalignment(np.diag([3.0, 1.0]), np.diag([1.0, 5.0]))
        0.0
    """
    sigma_w = _matrix(sigma_w, "sigma_w")
    dim = sigma_w.shape[0]
    spaces = None
    if basis is None:
        if sigma_x is None:
            raise ValueError("`sigma_x` may be None only when `basis` is given.")
        x_vals, basis = np.linalg.eigh(_matrix(sigma_x, "sigma_x", dim))
        spaces = eigenspaces(x_vals)
    else:
        if sigma_x is not None:
            _matrix(sigma_x, "sigma_x", dim)
        basis = check_orthonormal(basis, "basis", dim)
    w_vals, w_vecs = np.linalg.eigh(sigma_w)
    largest = np.abs(w_vals).max()
    if w_vals.min() <= dim * np.finfo(np.float64).eps * largest:
        rank = int(np.sum(w_vals > dim * np.finfo(np.float64).eps * largest))
        raise ValueError(
            f"`sigma_w` must be positive definite; it is singular or indefinite (rank {rank} of {dim}, "
            f"smallest eigenvalue {w_vals.min():.3g}). A layer with fewer filters than weights per "
            "filter has a singular filter covariance."
        )
    coords = w_vecs.T @ basis  # coordinates of each v_i in Sigma_w's eigenbasis
    forward = np.sum(coords**2 * w_vals[:, None], axis=0)  # v_i^T Sigma_w v_i
    inverse = np.sum(coords**2 / w_vals[:, None], axis=0)  # v_i^T Sigma_w^{-1} v_i
    # tr(B|V) over an eigenspace V is the sum of v^T B v over an orthonormal basis of V.
    starts = np.flatnonzero(np.r_[True, np.diff(spaces)]) if spaces is not None else np.arange(len(forward))
    forward, inverse = np.add.reduceat(forward, starts), np.add.reduceat(inverse, starts)
    return float(np.sum(np.sqrt(forward * inverse)) - basis.shape[1])


def transfer_function(sigma_x, sigma_w):
    """The transfer function ``tau_i^2 = v_i^T Sigma_w v_i`` over the data's eigenvectors ``v_i``
    (Maennel et al., Sec. 2.3, Eq. (2); App. A.8 plots the pairs ``(sigma_i^2, tau_i^2)`` as ``f``).

    Eigenvectors come in decreasing order of their eigenvalue ``sigma_i^2``. Within an eigenspace
    of ``Sigma_x`` (eigenvalues equal within :data:`EIGENSPACE_RTOL`) ``v_i`` is not unique, so each
    of its ``tau_i^2`` is the space's mean, ``tr(Sigma_w|V) / dim V``: the same for any basis of it,
    and ``v_i^T Sigma_w v_i`` itself where the eigenvalues are distinct. ``Sigma_w = I`` gives 1
    for every ``i``; the ``tau_i^2`` sum to ``tr(Sigma_w)``. ``Sigma_w`` may be singular.

    Args:
        sigma_x: ``(d, d)`` symmetric data (patch) covariance.
        sigma_w: ``(d, d)`` symmetric weight covariance (:func:`filter_covariance`).

    Returns:
        ``(sigma2, tau2)``: float64 arrays ``(d,)``, ``sigma2`` decreasing.

    Example:
        >>> transfer_function(np.diag([1.0, 4.0]), np.diag([2.0, 3.0]))[1]
        array([3., 2.])
    """
    sigma_w = _matrix(sigma_w, "sigma_w")
    x_vals, x_vecs = np.linalg.eigh(_matrix(sigma_x, "sigma_x", sigma_w.shape[0]))
    tau2 = np.einsum("di,de,ei->i", x_vecs, sigma_w, x_vecs)
    spaces = eigenspaces(x_vals)
    sizes = np.bincount(spaces)
    tau2 = (np.bincount(spaces, weights=tau2) / sizes)[spaces]  # each eigenspace's mean
    return x_vals[::-1].copy(), tau2[::-1].copy()
