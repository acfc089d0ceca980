"""Joint covariance of an MLP block's two weight matrices (pure NumPy, float64).

Trockman & Kolter (mimetic MLP init, Sec. 2, Fig. 1) study ``y = W2 act(W1 x)`` with
``W1`` ``(p, n)`` and ``W2`` ``(n, p)`` through the empirical covariance of
``[vec W1, vec W2]`` in ``R^{2np}`` over a *population of trained networks* (thousands of seeds
of a tiny ConvNeXt or ViT): :func:`population_covariance`. Within one network they name the
alternative of sampling ``[W1[i], W2[:, i]]`` in ``R^{2n}`` over the hidden units ``i``
(:func:`unit_covariance`), which is what a single model offers: its ``W1`` block and ``W2``
block, and their cross-covariance, whose diagonal ``Cov(W1[i, k], W2[k, i])`` is negative when
``W1`` and ``W2^T`` are anti-correlated (the ViT of Fig. 1b).

Keras stores ``W1^T`` and ``W2^T`` (kernels ``(n, p)`` and ``(p, n)``); the functions here take
the paper's ``W1`` ``(p, n)`` and ``W2`` ``(n, p)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_summary", "population_covariance", "unit_covariance", "unit_samples"]


def _pair(w1, w2, names=("w1", "w2"), batch=False):
    rank = 3 if batch else 2
    form = "(networks, p, n) and (networks, n, p)" if batch else "(p, n) and (n, p)"
    arrays = []
    for value, name in zip((w1, w2), names, strict=True):
        if isinstance(value, (str, bytes)) or value is None:
            raise TypeError(f"`{name}` must be an array. Received: {type(value).__name__}")
        array = np.asarray(value, dtype=np.float64)
        if array.ndim != rank:
            raise ValueError(
                f"`{names[0]}` and `{names[1]}` must be {form}. Received `{name}` of shape {array.shape}"
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(f"`{name}` contains NaN or infinite values.")
        arrays.append(array)
    w1, w2 = arrays
    if w1.shape[-2:] != w2.shape[-2:][::-1] or (batch and len(w1) != len(w2)):
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must be {form} (W2 maps the p hidden units "
            f"back to n). Received shapes {w1.shape} and {w2.shape}"
        )
    return w1, w2


def _covariance(samples):
    """Centered empirical covariance of the rows of ``samples`` ``(N, D)``, divided by ``N``."""
    if len(samples) < 2:
        raise ValueError(f"A covariance needs 2 samples at least. Received {len(samples)}")
    centered = samples - samples.mean(axis=0)
    return centered.T @ centered / len(samples)


def unit_samples(w1, w2):
    """``(p, 2n)``: row ``i`` is ``[W1[i, :], W2[:, i]]``, hidden unit ``i``'s input and output weights."""
    w1, w2 = _pair(w1, w2)
    return np.concatenate([w1, w2.T], axis=1)


def unit_covariance(w1, w2):
    """``(2n, 2n)`` covariance of ``[W1[i, :], W2[:, i]]`` over the ``p`` hidden units ``i`` of one
    network (Sec. 2's within-network form): top-left ``Cov(W1)`` over rows, bottom-right
    ``Cov(W2)`` over columns, off-diagonal blocks their cross-covariance."""
    return _covariance(unit_samples(w1, w2))


def population_covariance(w1s, w2s):
    """Fig. 1: the ``(2np, 2np)`` covariance of ``[vec W1, vec W2]`` over a population of networks.

    Args:
        w1s: ``(networks, p, n)``, each network's ``W1``.
        w2s: ``(networks, n, p)``, each network's ``W2``.

    ``vec`` is row-major (``vec W1[i * n + k] = W1[i, k]``): a stripe in the ``W1`` block along
    rows of equal ``k`` means the weights of one input ``k`` share a random group mean.
    """
    w1s, w2s = _pair(w1s, w2s, ("w1s", "w2s"), batch=True)
    return _covariance(np.concatenate([w1s.reshape(len(w1s), -1), w2s.reshape(len(w2s), -1)], axis=1))


def block_summary(covariance, n):
    """Means of a ``(2n, 2n)`` :func:`unit_covariance`: ``w1_variance`` and ``w2_variance`` (its two
    diagonal blocks' diagonals), ``w1_offdiagonal`` (the ``W1`` block off its diagonal),
    ``cross_covariance`` (the cross block's diagonal, ``Cov(W1[i, k], W2[k, i])``) and
    ``cross_correlation`` (that over the root of the two variances; ``None`` if one is 0)."""
    covariance = np.asarray(covariance, dtype=np.float64)
    if covariance.shape != (2 * n, 2 * n):
        raise ValueError(f"`covariance` must be (2n, 2n) = ({2 * n}, {2 * n}). Received {covariance.shape}")
    diagonal = np.diag(covariance)
    w1_var, w2_var = diagonal[:n].mean(), diagonal[n:].mean()
    w1_block = covariance[:n, :n]
    cross = np.diag(covariance[:n, n:]).mean()
    off = (w1_block.sum() - np.trace(w1_block)) / max(n * (n - 1), 1)
    scale = np.sqrt(w1_var * w2_var)
    return {
        "w1_variance": float(w1_var),
        "w2_variance": float(w2_var),
        "w1_offdiagonal": float(off),
        "cross_covariance": float(cross),
        "cross_correlation": float(cross / scale) if scale > 0 else None,
    }
