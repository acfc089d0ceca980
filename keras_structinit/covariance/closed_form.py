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

which is how it is computed here (regrouped to be exactly symmetric). That form
does not depend on the filter being two-dimensional or square: ``kernel_size``
may be ``(k,)``, ``(kh, kw)`` or ``(kd, kh, kw)``, each axis with its own
centre and modulus. Non-square and 1-D/3-D filters are an extension of the
paper, which only uses square 2-D ones.

The variance schedule over depth (Eq. 11) is in :mod:`.schedule`, the PSD
handling that makes ``Sigma'`` sampleable in :mod:`.psd`.
"""

from __future__ import annotations

import math

import numpy as np

from keras_structinit.utils import validation

__all__ = ["block_to_vector", "conv_covariance", "conv_covariance_blocks", "two_d", "vector_to_block"]


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
    kernel_size = validation.kernel_size(kernel_size)
    sigma = validation.positive_float(sigma, "sigma")
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


def _swap_middle_axes(matrix, name, kernel_size, grouped_by_pixel):
    """``m[i, j, l, m] -> m[i, l, j, m]`` for a matrix of one ``(kh, kw)`` filter.

    The same transpose maps the vector layout to the block layout and back;
    only the expected input shape differs.
    """
    kh, kw = two_d(kernel_size)
    matrix = np.asarray(matrix)
    expected = (kh * kw, kh * kw) if grouped_by_pixel else (kh * kh, kw * kw)
    if matrix.shape != expected:
        raise ValueError(
            f"`{name}` must have shape {expected} for kernel_size {(kh, kw)}. Received shape {matrix.shape}."
        )
    first, second = (kw, kh) if grouped_by_pixel else (kh, kw)
    out_shape = (kh * kh, kw * kw) if grouped_by_pixel else (kh * kw, kh * kw)
    return matrix.reshape(kh, first, second, kw).transpose(0, 2, 1, 3).reshape(out_shape)


def vector_to_block(cov, kernel_size):
    """``Sigma'`` (Eq. 1 layout) -> ``Sigma_blk`` (Eq. 10 layout), 2-D only.

    Block ``(i, j)`` of the result is the covariance of pixel ``(i, j)`` with
    all pixels, arranged as a ``kh x kw`` image; the result has shape
    ``(kh * kh, kw * kw)``: ``cov[i, j, l, m] -> blk[i, l, j, m]``.
    """
    return _swap_middle_axes(cov, "cov", kernel_size, grouped_by_pixel=True)


def block_to_vector(blk, kernel_size):
    """Inverse of :func:`vector_to_block`: ``Sigma_blk`` -> ``Sigma'``."""
    return _swap_middle_axes(blk, "blk", kernel_size, grouped_by_pixel=False)


def conv_covariance_blocks(kernel_size, sigma):
    """Block-form covariance ``Sigma_blk`` of Eq. 10 (2-D filters)."""
    kernel_size = two_d(kernel_size)
    return vector_to_block(conv_covariance(kernel_size, sigma), kernel_size)


def two_d(kernel_size):
    """``kernel_size`` as ``(kh, kw)``; ``ValueError`` for 1-D or 3-D sizes."""
    kernel_size = validation.kernel_size(kernel_size)
    if len(kernel_size) != 2:
        raise ValueError(
            "The block form is defined for 2-D filters: `kernel_size` must be "
            f"an int or (kh, kw). Received: kernel_size={kernel_size!r}"
        )
    return kernel_size
