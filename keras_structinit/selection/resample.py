"""Resizing a position embedding's token grid (pure NumPy; no Keras import).

An extension of weight selection, not part of the paper: a student whose
image size or patch size gives a different number of tokens than the
teacher's can still take the teacher's position embedding, resized. The
embedding ``E`` of shape ``(..., p + g_t^2, d)`` holds ``p`` prefix tokens
(the class token, kept as they are) followed by a ``g_t x g_t`` grid in
row-major order; the grid is resized to ``g_s x g_s`` by bilinear
interpolation with half-pixel centres and no antialiasing (what
``keras.ops.image.resize(..., "bilinear", antialias=False)`` computes):

    out[i, j] = sum_{a, b} w_a(i) w_b(j) grid[a, b],
    source coordinate of i: (i + 1/2) g_t / g_s - 1/2, clamped to [0, g_t - 1].
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["grid_layout", "interpolation_matrix", "resize_tokens"]


def interpolation_matrix(source, target):
    """The ``(target, source)`` matrix of 1-D linear interpolation with half-pixel centres.

    Row ``i`` holds the weights of output sample ``i``: at most two nonzero
    entries summing to 1; ``source == target`` gives the identity.
    """
    coords = np.clip((np.arange(target, dtype=np.float64) + 0.5) * source / target - 0.5, 0.0, source - 1)
    low = np.floor(coords).astype(np.int64)
    high = np.minimum(low + 1, source - 1)
    frac = coords - low
    matrix = np.zeros((target, source), np.float64)
    np.add.at(matrix, (np.arange(target), low), 1.0 - frac)
    np.add.at(matrix, (np.arange(target), high), frac)
    return matrix


def grid_layout(teacher_tokens, student_tokens, what="the position embedding"):
    """``(prefix, g_t, g_s)``: prefix tokens and square grid sides shared by both token counts.

    One prefix token (a class token) is tried first, then none.
    ``ValueError`` when neither count splits into the same prefix and a
    square grid.
    """
    for prefix in (1, 0):
        sides = [math.isqrt(n - prefix) if n > prefix else 0 for n in (teacher_tokens, student_tokens)]
        if all(
            side > 0 and side * side == n - prefix
            for side, n in zip(sides, (teacher_tokens, student_tokens), strict=True)
        ):
            return prefix, sides[0], sides[1]
    raise ValueError(
        f"Cannot resize {what}: {teacher_tokens} teacher tokens and {student_tokens} student tokens are not "
        "one shared number of prefix tokens (0 or 1) followed by a square grid of patches."
    )


def resize_tokens(embedding, student_tokens, axis=-2, what="the position embedding"):
    """``embedding`` with its token ``axis`` resized to ``student_tokens`` (see the module docstring).

    Example:

    >>> e = np.random.default_rng(0).normal(size=(1, 1 + 8 * 8, 192))
    >>> resize_tokens(e, 1 + 4 * 4).shape
    (1, 17, 192)
    """
    embedding = np.asarray(embedding)
    axis = axis % embedding.ndim
    prefix, g_t, g_s = grid_layout(embedding.shape[axis], student_tokens, what)
    moved = np.moveaxis(embedding, axis, 0)
    rest = moved.shape[1:]
    grid = moved[prefix:].reshape(g_t, g_t, -1).astype(np.float64)
    m = interpolation_matrix(g_t, g_s)
    resized = np.einsum("ia,jb,abc->ijc", m, m, grid).reshape(g_s * g_s, *rest)
    out = np.concatenate([moved[:prefix].astype(np.float64), resized], axis=0)
    return np.moveaxis(out, 0, axis).astype(embedding.dtype)
