"""Mimetic init of self-attention, in NumPy float64 (no Keras import).

Trockman & Kolter, "Mimetic Initialization of Self-Attention Layers" (ICML 2023), Sec. 3:
in pre-trained ViTs the product of each head's query and key weights is close to a positive
scaled identity, and the product of the value and output-projection weights close to a negative
one. The init sets, for token width ``d`` and head width ``k``:

* per head ``h``: ``W_q,h W_k,h^T ~= alpha_1 Z_1,h + beta_1 I`` (``d x d``, rank ``k``):
  the rank-``k`` truncated SVD ``U S V^T`` of the right-hand side split as
  ``W_q,h = U_k S_k^{1/2}``, ``W_k,h = V_k S_k^{1/2}``;
* all heads together: ``W_v W_proj ~= alpha_2 Z_2 - beta_2 I`` (``W_v``: ``d x H k_v``, the
  heads' value weights side by side; ``W_proj``: ``H k_v x d``), split the same way
  (exact when ``H k_v = d``, the paper's full-rank case);

with ``Z`` of i.i.d. ``N(0, 1/d)`` entries. Defaults: ``alpha_1 = beta_1 = 0.7``,
``alpha_2 = beta_2 = 0.4`` (:data:`DEFAULT_ALPHA`, :data:`DEFAULT_BETA`).

In Keras' ``MultiHeadAttention`` layout the query kernel is ``(d, H, k)`` (``q_h = x W_q[:, h, :]``),
so the paper's ``W_q,h`` is ``query_kernel[:, h, :]``; the output kernel ``(H, k_v, d)``
reshaped to ``(H k_v, d)`` is ``W_proj``.

The paper also initializes the (learnable) position embeddings as sinusoids
(:func:`sincos_position_embedding`); :func:`token_grid` guesses the patch grid from the
number of tokens.

Example:
    >>> wq, wk = query_key_factors(np.random.default_rng(0).standard_normal((3, 192, 192)), 64)
    >>> wq.shape, wk.shape
    ((192, 3, 64), (192, 3, 64))
"""

from __future__ import annotations

import math

import numpy as np

from keras_structinit.utils import validation

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "POSITION_MODES",
    "attention_statistics",
    "query_key_factors",
    "resolve_pair",
    "sincos_position_embedding",
    "token_grid",
    "value_projection_factors",
]

#: ``(alpha_1, alpha_2)``: the noise scales of ``W_q W_k^T`` and ``W_v W_proj`` (Sec. 3's values
#: for ViTs, also those of the authors' released init).
DEFAULT_ALPHA = (0.7, 0.4)
#: ``(beta_1, beta_2)``: the identity scales (``W_q W_k^T``: ``+beta_1 I``; ``W_v W_proj``: ``-beta_2 I``).
DEFAULT_BETA = (0.7, 0.4)
#: What ``position_embedding=`` takes: ``"sinusoidal"`` (the paper) or ``None`` (left as built).
POSITION_MODES = ("sinusoidal", None)


def resolve_pair(value, name, default):
    """``(first, second)`` floats >= 0 from a number (both) or a pair; ``None`` gives ``default``."""
    if value is None:
        return tuple(float(v) for v in default)
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(
                f"`{name}` must be a number >= 0 or a pair (query-key, value-projection) of "
                f"them. Received: {name}={value!r}"
            )
        return tuple(validation.non_negative_float(v, name) for v in value)
    v = validation.non_negative_float(value, name)
    return (v, v)


def _noise(noise, name, rows):
    noise = np.asarray(noise, dtype=np.float64)
    if noise.ndim != 2 + (rows is not None) or noise.shape[-1] != noise.shape[-2] or noise.shape[-1] < 1:
        want = "(heads, d, d)" if rows is not None else "(d, d)"
        raise ValueError(
            f"`{name}` must be standard normal draws of shape {want}. Received: {name} of shape {noise.shape}"
        )
    return noise


def _split(matrix, rank):
    """``(L, R)`` with ``L R^T`` the best rank-``rank`` approximation of ``matrix`` and equal singular
    values on both sides (``L = U_r S_r^{1/2}``, ``R = V_r S_r^{1/2}``); zero columns past its rank."""
    u, s, vt = np.linalg.svd(matrix)
    r = min(rank, s.size)
    root = np.sqrt(s[:r])
    left = np.zeros((matrix.shape[0], rank))
    right = np.zeros((matrix.shape[1], rank))
    left[:, :r] = u[:, :r] * root
    right[:, :r] = vt[:r].T * root
    return left, right


def query_key_factors(noise, key_dim, alpha=DEFAULT_ALPHA[0], beta=DEFAULT_BETA[0]):
    """``(W_q, W_k)``, each ``(d, H, key_dim)``, with ``W_q[:, h] W_k[:, h]^T`` the rank-``key_dim``
    truncation of ``alpha Z_h + beta I``, ``Z_h = noise[h] / sqrt(d)``.

    ``noise``: ``(H, d, d)`` standard normal draws (one matrix per head).
    """
    noise = _noise(noise, "noise", rows="heads")
    key_dim = validation.positive_int(key_dim, "key_dim")
    alpha = validation.non_negative_float(alpha, "alpha")
    beta = validation.non_negative_float(beta, "beta")
    heads, d, _ = noise.shape
    wq, wk = np.zeros((d, heads, key_dim)), np.zeros((d, heads, key_dim))
    for h in range(heads):
        wq[:, h], wk[:, h] = _split(alpha * noise[h] / math.sqrt(d) + beta * np.eye(d), key_dim)
    return wq, wk


def value_projection_factors(noise, heads, value_dim, alpha=DEFAULT_ALPHA[1], beta=DEFAULT_BETA[1]):
    """``(W_v, W_proj)`` of shapes ``(d, H, value_dim)`` and ``(H, value_dim, d)`` with
    ``W_v.reshape(d, -1) @ W_proj.reshape(-1, d)`` the rank-``H value_dim`` truncation of
    ``alpha Z - beta I``, ``Z = noise / sqrt(d)`` (the matrix itself when ``H value_dim >= d``).

    ``noise``: ``(d, d)`` standard normal draws.
    """
    noise = _noise(noise, "noise", rows=None)
    heads = validation.positive_int(heads, "heads")
    value_dim = validation.positive_int(value_dim, "value_dim")
    alpha = validation.non_negative_float(alpha, "alpha")
    beta = validation.non_negative_float(beta, "beta")
    d = noise.shape[0]
    wv, wo = _split(alpha * noise / math.sqrt(d) - beta * np.eye(d), heads * value_dim)
    return wv.reshape(d, heads, value_dim), wo.T.reshape(heads, value_dim, d)


def attention_statistics(query, key, value, output):
    """What the init sets, measured on Keras kernels (any values, e.g. a trained model's), float64.

    ``query``/``key``: ``(d, H, k)``; ``value``: ``(d, H, k_v)``; ``output``: ``(H, k_v, d)``.
    Returns a dict: ``qk_diag`` and ``qk_offdiag`` (per head: the mean diagonal entry of
    ``W_q,h W_k,h^T`` and the mean absolute off-diagonal one), ``vo_diag`` and ``vo_offdiag``
    (the same for ``W_v W_proj`` over all heads) and ``vo_head_diag`` (per head: the mean diagonal
    of head ``h``'s share ``W_v,h W_proj,h``).
    """
    q, k, v, o = (np.asarray(a, dtype=np.float64) for a in (query, key, value, output))
    if q.ndim != 3 or q.shape != k.shape or v.ndim != 3 or o.shape != (v.shape[1], v.shape[2], v.shape[0]):
        raise ValueError(
            "`query`, `key`, `value`, `output` must be MultiHeadAttention kernels (d, H, k), "
            f"(d, H, k), (d, H, k_v), (H, k_v, d). Received shapes {q.shape}, {k.shape}, "
            f"{v.shape}, {o.shape}"
        )

    def diag_off(m):
        n = m.shape[0]
        off = (np.abs(m).sum() - np.abs(np.diag(m)).sum()) / max(n * (n - 1), 1)
        return float(np.trace(m) / n), float(off)

    qk = [diag_off(q[:, h] @ k[:, h].T) for h in range(q.shape[1])]
    vo = diag_off(v.reshape(v.shape[0], -1) @ o.reshape(-1, o.shape[-1]))
    return {
        "qk_diag": [a for a, _ in qk],
        "qk_offdiag": [b for _, b in qk],
        "vo_diag": vo[0],
        "vo_offdiag": vo[1],
        "vo_head_diag": [float(np.trace(v[:, h] @ o[h]) / v.shape[0]) for h in range(v.shape[1])],
    }


def token_grid(tokens):
    """``(class_tokens, rows, cols)`` of a ViT sequence of ``tokens``: a square grid of patches,
    after one class token when ``tokens - 1`` is a square; else ``(0, 1, tokens)`` (a 1-D sequence)."""
    tokens = validation.positive_int(tokens, "tokens")
    for extra in (0, 1):
        side = math.isqrt(tokens - extra)
        if side > 0 and side * side == tokens - extra:
            return extra, side, side
    return 0, 1, tokens


def sincos_position_embedding(rows, cols, dim, class_tokens=0, temperature=10000.0):
    """2-D sine-cosine position embeddings ``(class_tokens + rows * cols, dim)``, float64.

    Patch ``(y, x)`` (row-major) gets ``[sin(x w), cos(x w), sin(y w), cos(y w)]`` with the
    ``dim // 4`` frequencies ``w_i = temperature^(-i / (dim // 4 - 1))`` (the 2-D form of MoCo v3 and
    "simple ViT"); channels past ``4 (dim // 4)`` and the class tokens' rows are zero.
    """
    rows, cols = validation.positive_int(rows, "rows"), validation.positive_int(cols, "cols")
    dim = validation.positive_int(dim, "dim")
    class_tokens = validation.int_value(class_tokens, "class_tokens", minimum=0)
    temperature = validation.positive_float(temperature, "temperature")
    quarter = dim // 4
    table = np.zeros((class_tokens + rows * cols, dim))
    if quarter == 0:
        return table
    omega = temperature ** (-np.arange(quarter) / max(quarter - 1, 1))
    y, x = np.meshgrid(np.arange(rows, dtype=np.float64), np.arange(cols, dtype=np.float64), indexing="ij")
    xw, yw = x.reshape(-1, 1) * omega, y.reshape(-1, 1) * omega
    waves = [np.sin(xw), np.cos(xw), np.sin(yw), np.cos(yw)]
    table[class_tokens:, : 4 * quarter] = np.concatenate(waves, axis=1)
    return table
