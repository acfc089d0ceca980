"""Per-position weight variance of spatial filters (pure NumPy, float64).

Gavrikov & Keuper ("Rethinking 1x1 Convolutions", Sec. 4.4, Fig. 13) show where in a ``k x k``
kernel trained filters keep their variance: each layer's kernel is divided by the standard
deviation of all its weights, and the variance of the weights at each kernel position is taken
over every filter (all input and output channels; in Fig. 13 also over every layer of the model).
I.i.d. random init gives a flat map of ones; trained large kernels put their variance in the
centre and little at the border, which linear combinations of i.i.d. random filters cannot
reproduce (Fig. 13, bottom row).
"""

from __future__ import annotations

import numpy as np

__all__ = ["centre_border_ratio", "pooled_position_variance", "position_variance"]


def _filters(kernel, name="kernel"):
    """``kernel`` ``(kh, kw, ...)`` as float64 ``(kh, kw, n)``: its ``n`` filters."""
    if isinstance(kernel, (str, bytes)) or kernel is None:
        raise TypeError(
            f"`{name}` must be an array (kh, kw, ...) of filters. Received: {type(kernel).__name__}"
        )
    array = np.asarray(kernel, dtype=np.float64)
    if array.ndim < 3:
        raise ValueError(
            f"`{name}` must have rank >= 3: (kh, kw, c_in, c_out) or (kh, kw, n). "
            f"Received shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    return array.reshape(*array.shape[:2], -1)


def _normalized(filters):
    """``filters`` divided by the standard deviation of all their weights (Fig. 13 caption)."""
    std = filters.std()
    return filters / std if std > 0 else filters


def position_variance(kernel, normalize=True):
    """The ``(kh, kw)`` map of the variance of the weights at each kernel position, over all of a
    layer's filters (Fig. 13 for one layer).

    Args:
        kernel: ``(kh, kw, c_in, c_out)`` (a ``Conv2D`` kernel; depthwise ``(kh, kw, C, 1)``) or
            ``(kh, kw, n)``: every trailing axis is pooled.
        normalize: first divide the kernel by the standard deviation of all its weights, as
            Fig. 13 does, so the map averages 1 for zero-mean weights and layers compare.

    Returns:
        A float64 ``(kh, kw)`` array (population variance, ``ddof=0``).
    """
    filters = _filters(kernel)
    return (_normalized(filters) if normalize else filters).var(axis=-1)


def pooled_position_variance(kernels, normalize=True):
    """Fig. 13's map of a model: each kernel normalized by its own standard deviation, then the
    variance at each position over the filters of all ``kernels`` together (one ``(kh, kw)``).

    Raises:
        ValueError: ``kernels`` is empty or their ``(kh, kw)`` differ.
    """
    if isinstance(kernels, np.ndarray) or not hasattr(kernels, "__iter__"):
        raise TypeError(
            f"`kernels` must be a list of kernels (kh, kw, ...). Received: {type(kernels).__name__}"
        )
    filters = [_filters(k, "kernels[i]") for k in kernels]
    if not filters:
        raise ValueError("`kernels` must hold one kernel at least. Received: []")
    sizes = {f.shape[:2] for f in filters}
    if len(sizes) > 1:
        raise ValueError(f"`kernels` must share one kernel size (kh, kw). Received sizes {sorted(sizes)}")
    pooled = np.concatenate([_normalized(f) if normalize else f for f in filters], axis=-1)
    return pooled.var(axis=-1)


def centre_border_ratio(variance):
    """Mean of a ``(kh, kw)`` map over its central position(s) divided by its mean over the outer
    ring: 1 for a flat map, above 1 when the variance sits in the centre (Fig. 13, large ``k``).

    The centre is the one position (odd sizes) or the middle two along an even axis; ``None``
    where there is no ring apart from the centre (a side below 3) or the ring's variance is 0.
    """
    variance = np.asarray(variance, dtype=np.float64)
    if variance.ndim != 2:
        raise ValueError(f"`variance` must be a (kh, kw) map. Received shape {variance.shape}")
    kh, kw = variance.shape
    if min(kh, kw) < 3:
        return None
    ring = np.ones_like(variance, dtype=bool)
    ring[1:-1, 1:-1] = False
    rows = slice((kh - 1) // 2, kh // 2 + 1)
    cols = slice((kw - 1) // 2, kw // 2 + 1)
    border = variance[ring].mean()
    return None if border == 0 else float(variance[rows, cols].mean() / border)
