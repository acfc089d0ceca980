"""Folding an LC block into one convolution (pure NumPy, float64).

An LC block is a ``k x k`` convolution ``c_in -> M`` (``M = filters * E``)
followed by a ``1 x 1`` convolution ``M -> filters`` with nothing in between.
Both are linear, so the block is the single ``k x k`` convolution whose
kernel combines the spatial filters with the pointwise weights (Definition 3.1
of Gavrikov & Keuper)::

    K[i, j, c, f] = sum_m S[i, j, c, m] * P[m, f]                  (1)

with ``S`` the spatial kernel ``(k, k, c_in, M)`` (Keras layout) and ``P`` the
pointwise weights ``(M, filters)``. A pointwise bias is the folded conv's bias.

Example:
    >>> K = fold_kernels(np.ones((3, 3, 2, 8)), np.ones((1, 1, 8, 4)))
    >>> K.shape, K[0, 0, 0, 0]
    ((3, 3, 2, 4), 8.0)
"""

from __future__ import annotations

import numpy as np

__all__ = ["fold_kernels"]


def fold_kernels(spatial, pointwise):
    """Eq. (1): the ``(kh, kw, c_in, filters)`` kernel of the equivalent single conv.

    Args:
        spatial: ``(kh, kw, c_in, M)`` spatial kernel.
        pointwise: ``(M, filters)`` weights, or a ``(1, 1, M, filters)`` 1x1 kernel.

    Returns:
        float64 array ``(kh, kw, c_in, filters)``.
    """
    spatial = np.asarray(spatial, dtype=np.float64)
    pointwise = np.asarray(pointwise, dtype=np.float64)
    if pointwise.ndim == 4 and pointwise.shape[:2] == (1, 1):
        pointwise = pointwise[0, 0]
    if spatial.ndim != 4 or pointwise.ndim != 2 or spatial.shape[-1] != pointwise.shape[0]:
        raise ValueError(
            "`spatial` must be (kh, kw, c_in, M) and `pointwise` (M, filters) or (1, 1, M, filters). "
            f"Received: spatial shape {spatial.shape}, pointwise shape {pointwise.shape}"
        )
    return np.einsum("hwcm,mf->hwcf", spatial, pointwise)
