"""Filter variance entropy: how diverse a conv layer's ``k x k`` filters are (pure NumPy).

Gavrikov & Keuper (CNN Filter DB, CVPR 2022) measure a layer's filter diversity by a
principal component analysis of its ``n = c_in * c_out`` filters, each a vector of ``k^2``
weights: with ``r_i`` the share of the variance along component ``i``,

    H = - sum_i r_i log10 r_i                                                     (1)

``H = 0`` when every filter is a multiple of one pattern; ``H = log10(k^2)`` (0.954 for 3x3)
when the variance is spread evenly, as in freshly initialized random filters. The LC paper
(Gavrikov & Keuper, "Rethinking 1x1 Convolutions", Sec. 4.2, Fig. 6) divides ``H`` by the
*randomness threshold* ``t(n)`` that CNN Filter DB fitted for 3x3 filters, a logistic curve
in ``log2 n``: values above 1 read as random filters; its App. E reports ``H`` itself, to
compare kernel sizes.
"""

from __future__ import annotations

import math

import numpy as np

from keras_structinit.utils import validation

__all__ = ["randomness_threshold", "variance_entropy"]

# The logistic t(n) = L / (1 + exp(-K (log2 n - X0))) + B of CNN Filter DB's randomness threshold
# (their published fit for 3x3 filters).
_THRESHOLD = {"L": 1.2618047, "X0": 2.30436435, "K": 0.88767525, "B": -0.31050834}


def randomness_threshold(num_filters):
    """``t(n)``, the variance entropy of ``n`` random 3x3 filters (CNN Filter DB's fit)."""
    n = validation.positive_int(num_filters, "num_filters")
    c = _THRESHOLD
    return c["L"] / (1.0 + math.exp(-c["K"] * (math.log2(n) - c["X0"]))) + c["B"]


def variance_entropy(kernel, normalized=False):
    """Eq. (1) for a conv ``kernel`` in Keras' layout ``(kh, kw, c_in, c_out)``.

    Args:
        kernel: an array (NumPy, or anything ``np.asarray`` reads; convert a Keras variable
            with ``keras.ops.convert_to_numpy`` first), ``kh * kw > 1``.
        normalized: divide by :func:`randomness_threshold` of the ``c_in * c_out`` filters
            (the LC paper's Fig. 6; the fit is for 3x3 filters only).

    Returns:
        ``H`` as a float (0 for filters that are all equal).
    """
    validation.boolean(normalized, "normalized")
    try:
        weights = np.asarray(kernel, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"`kernel` must be a numeric array (kh, kw, c_in, c_out). "
            f"Received: kernel of type {type(kernel).__name__}"
        ) from None
    if weights.ndim != 4 or weights.shape[0] * weights.shape[1] < 2 or 0 in weights.shape:
        raise ValueError(
            "`kernel` must be a conv kernel (kh, kw, c_in, c_out) with kh * kw > 1. "
            f"Received: kernel of shape {weights.shape}"
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("`kernel` must be finite; it holds NaN or infinite values")
    filters = weights.reshape(-1, weights.shape[2] * weights.shape[3]).T  # (n, kh * kw)
    centred = filters - filters.mean(axis=0)
    variances = np.linalg.svd(centred, compute_uv=False) ** 2
    total = variances.sum()
    if total == 0:
        return 0.0
    shares = variances[variances > 0] / total
    entropy = float(-(shares * np.log10(shares)).sum())
    return entropy / randomness_threshold(len(filters)) if normalized else entropy
