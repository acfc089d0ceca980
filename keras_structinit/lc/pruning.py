"""Global unstructured magnitude pruning (pure NumPy).

Of ``n`` weights pooled from several tensors, the ``k = round(rho * n)`` with
the smallest ``|w|`` are set to zero (ties broken by position, so exactly
``k`` are selected whatever the values); the paper prunes the 1x1 weights of
LC blocks with ``rho = 0.7``, without fine-tuning.

Example:
    >>> masks = magnitude_masks([np.array([0.3, -0.1]), np.array([[0.2, -0.4]])], 0.5)
    >>> [m.tolist() for m in masks]
    [[True, False], [[False, True]]]
"""

from __future__ import annotations

import numpy as np

from keras_structinit.utils import validation

__all__ = ["magnitude_masks", "pruned_count"]


def pruned_count(n, ratio):
    """``k = round(ratio * n)``: how many of ``n`` weights a ``ratio`` prunes."""
    n = validation.int_value(n, "n", minimum=0)
    ratio = validation.rate(ratio, "ratio")
    return int(round(ratio * n))


def magnitude_masks(arrays, ratio):
    """Keep-masks (``True`` = kept) pruning exactly :func:`pruned_count` weights globally.

    Args:
        arrays: list of arrays, pooled as one vector.
        ratio: fraction in ``[0, 1)`` to prune.

    Returns:
        List of boolean arrays shaped like ``arrays``.
    """
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError(f"`arrays` must be a non-empty list of arrays. Received: arrays={arrays!r}")
    arrays = [np.asarray(a) for a in arrays]
    magnitudes = np.concatenate([np.abs(a.astype(np.float64)).reshape(-1) for a in arrays])
    k = pruned_count(magnitudes.size, ratio)
    keep = np.ones(magnitudes.size, dtype=bool)
    if k:
        keep[np.argsort(magnitudes, kind="stable")[:k]] = False
    masks, start = [], 0
    for a in arrays:
        masks.append(keep[start : start + a.size].reshape(a.shape))
        start += a.size
    return masks
