"""The mimetic paper's section of ``structinit inspect``: for every MLP block found by structure
(:func:`~keras_structinit.mimetic.apply.find_mlp_blocks`), its two kernels paired, the mean
diagonal and off-diagonal of ``W1 W1^T``, the mean of ``W1`` and, with the block's second layer
``W2``, the joint covariance of
``[W1[i, :], W2[:, i]]`` over its hidden units (Trockman & Kolter, Sec. 2, Fig. 1; :mod:`.joint`);
and for every attention layer found by structure (``MultiHeadAttention``, KerasHub's blocks, Swin's
fused qkv), per head, the mean diagonal and off-diagonal of ``W_q,h W_k,h^T`` and ``W_v,h W_o,h``
(the mimetic self-attention paper's figures, Trockman & Kolter, ICML 2023)."""

from __future__ import annotations

import os

import numpy as np

from keras_structinit.methods.inspection import Section, values
from keras_structinit.mimetic.joint import block_summary, unit_covariance
from keras_structinit.utils.reporting import format_table

__all__ = ["AttentionSection", "MLPSection", "attention", "attention_products", "mlp", "mlp_weight_pairs"]


def mlp_weight_pairs(model):
    """``[(first layer, W1 kernel, W1, W2 or None, W2's path or None), ...]`` of every MLP block found
    by structure (:func:`~keras_structinit.mimetic.apply.find_mlp_blocks`: the two kernels
    paired), ``W1`` ``(p, n)`` and ``W2`` ``(n, p)`` in the paper's orientation (float64): stack them
    over a population of trained models for
    :func:`~keras_structinit.mimetic.joint.population_covariance` (Fig. 1). ``[]`` for a model
    without MLP blocks."""
    from keras_structinit.mimetic.apply import find_mlp_blocks

    try:
        blocks = find_mlp_blocks(model)
    except ValueError:  # no MLP block
        return []
    pairs = []
    for block in blocks:
        k1 = values(block.first_kernel)
        k1 = k1.reshape(-1, k1.shape[-1])  # Keras (n, p) = W1^T
        k2 = values(block.second_kernel)
        k2 = k2.reshape(-1, k2.shape[-1])  # Keras (p, n) = W2^T
        w2 = k2.T if k2.shape == k1.shape[::-1] else None
        pairs.append(
            (block.first, block.first_kernel, k1.T, w2, None if w2 is None else block.second_kernel.path)
        )
    return pairs


class MLPSection(Section):
    """``report.mlp``: a row per MLP block's first layer; ``joint`` (``None`` without a second
    layer) summarizes the block's :func:`~keras_structinit.mimetic.joint.unit_covariance`."""

    def markdown(self):
        if not self.value:
            return []
        nan = float("nan")
        rows = []
        for r in self.value:
            joint = r["joint"] or {}
            correlation = joint.get("cross_correlation")
            rows.append(
                {
                    "path": r["path"],
                    "second": r["second_path"] or "-",
                    "diag": r["w1w1t"]["diag_mean"],
                    "off": r["w1w1t"]["offdiag_mean"],
                    "mean": r["w1_mean"],
                    "w1": joint.get("w1_variance", nan),
                    "w2": joint.get("w2_variance", nan),
                    "cross": nan if correlation is None else correlation,
                }
            )
        columns = (
            ("first layer", "path"),
            ("second layer", "second"),
            ("mean diagonal", "diag", ".4g"),
            ("mean off-diagonal", "off", ".4g"),
            ("mean of W1", "mean", ".4g"),
            ("Var W1", "w1", ".3g"),
            ("Var W2", "w2", ".3g"),
            ("corr(W1, W2^T)", "cross", ".3f"),
        )
        return [
            "## MLP blocks",
            "",
            f"{len(self.value)} MLP blocks found by structure (a widening layer, an activation and a "
            "narrowing one), each first layer paired with its second. "
            "W1 W1^T of each block's first layer (Trockman & Kolter, mimetic init). Var W1, Var W2 and "
            "corr(W1, W2^T): the covariance of [W1[i, :], W2[:, i]] over the hidden units i (the "
            "within-network form of Sec. 2; Fig. 1 takes it over a population of networks): the "
            "mean variance of each matrix and the correlation of W1[i, k] with W2[k, i] (negative: "
            "anti-correlated, as Fig. 1b's ViT).",
            "",
            format_table(rows, columns),
            "",
        ]

    def figures(self, directory, *, overwrite=False):
        """``mlp_covariance.png``: the joint covariance of the first block with a second layer,
        ``W1`` rows then ``W2`` columns (Fig. 1's form)."""
        if "mlp_covariance" not in self.arrays:
            return []
        from keras_structinit.utils import viz

        covariance = self.arrays["mlp_covariance"]
        n = covariance.shape[0] // 2
        off = np.abs(covariance - np.diag(np.diag(covariance)))
        limit = float(np.quantile(off, 0.999)) or None  # the variances on the diagonal would drown the rest
        path = next(r["path"] for r in self.value if r["joint"])
        return [
            viz.plot_heatmaps(
                [covariance],
                [f"{path}\nW1[i, :] (first {n}) | W2[:, i] (last {n}) over the hidden units i"],
                os.path.join(directory, "mlp_covariance.png"),
                symmetric=True,
                limit=limit,
                label="covariance",
                title="Joint covariance of an MLP block's weights (Trockman & Kolter, Fig. 1's form)",
                overwrite=overwrite,
            )
        ]


def mlp(model, *, data, parts):
    """The :class:`MLPSection` of ``model`` (``data`` and ``parts`` unused)."""
    rows, arrays = [], {}
    for layer, kernel, w1, w2, second in mlp_weight_pairs(model):
        gram = w1 @ w1.T  # (p, p)
        p = gram.shape[0]
        off = (gram.sum() - gram.trace()) / max(p * (p - 1), 1)
        joint = None
        if w2 is not None and w1.shape[0] > 1:
            covariance = unit_covariance(w1, w2)
            joint = block_summary(covariance, w1.shape[1])
            arrays.setdefault("mlp_covariance", covariance)
        rows.append(
            {
                "path": kernel.path,
                "layer": layer.name,
                "second_path": second,
                "w1w1t": {"diag_mean": float(gram.trace() / p), "offdiag_mean": float(off)},
                "w1_mean": float(w1.mean()),
                "joint": joint,
            }
        )
    return MLPSection(rows, arrays)


# ------------------------------------------------------------------ self-attention


def _diag_off(product):
    """``{"diag", "offdiag", "abs_offdiag"}``: the mean diagonal entry of ``product`` (its leading
    diagonal where it is not square), the mean entry off it and the mean absolute one."""
    diagonal = np.diagonal(product)
    count = product.size - diagonal.size
    total, absolute = product.sum() - diagonal.sum(), np.abs(product).sum() - np.abs(diagonal).sum()
    return {
        "diag": float(diagonal.mean()),
        "offdiag": float(total / max(count, 1)),
        "abs_offdiag": float(absolute / max(count, 1)),
    }


def attention_products(model):
    """``[(layer, projections, [(W_q,h W_k,h^T, W_v,h W_o,h) per head], W_v W_o), ...]`` of every
    attention layer found by structure (:func:`~keras_structinit.mimetic.apply.find_attention_layers`),
    float64, in the paper's orientation (``d x d``: ``W_q,h = query_kernel[:, h, :]``, ``W_o,h =
    output_kernel[h]``); ``[]`` for a model without one."""
    from keras_structinit.mimetic import structure
    from keras_structinit.mimetic.apply import find_attention_layers

    try:
        found = find_attention_layers(model)
    except ValueError:  # no attention layer
        return []
    out = []
    for layer, _ in found:
        projections = structure.attention_projections(layer)
        q, k, v, o = (np.asarray(a, dtype=np.float64) for a in projections.kernels())
        heads = [(q[:, h] @ k[:, h].T, v[:, h] @ o[h]) for h in range(q.shape[1])]
        out.append((layer, projections, heads, v.reshape(v.shape[0], -1) @ o.reshape(-1, o.shape[-1])))
    return out


class AttentionSection(Section):
    """``report.attention``: a row per attention layer (``path``: its query or fused qkv kernel,
    ``layout``, ``cross_attention``, ``vo``: all heads' ``W_v W_o``) with its ``heads``, each the mean
    diagonal (``qk_diag``, ``vo_diag``), off-diagonal (``..._offdiag``) and absolute off-diagonal
    (``..._abs_offdiag``) of ``W_q,h W_k,h^T`` and of the head's share ``W_v,h W_o,h``."""

    def markdown(self):
        if not self.value:
            return []
        rows = []
        for r in self.value:
            for h in r["heads"]:
                rows.append({"layer": r["layer"], "head": str(h["head"]), **h})
            rows.append({"layer": r["layer"], "head": "all", **{f"vo_{k}": v for k, v in r["vo"].items()}})
        nan = float("nan")
        rows = [{key: row.get(key, nan) for key in ROW_KEYS} for row in rows]
        columns = (
            ("layer", "layer"),
            ("head", "head"),
            ("qk diagonal", "qk_diag", ".4g"),
            ("qk off-diagonal", "qk_offdiag", ".4g"),
            ("qk |off-diagonal|", "qk_abs_offdiag", ".4g"),
            ("vo diagonal", "vo_diag", ".4g"),
            ("vo off-diagonal", "vo_offdiag", ".4g"),
            ("vo |off-diagonal|", "vo_abs_offdiag", ".4g"),
        )
        cross = sum(r["cross_attention"] for r in self.value)
        return [
            "## Attention",
            "",
            f"{len(self.value)} attention layers found by structure"
            + (f" ({cross} cross-attention: key/value from another input)" if cross else "")
            + ". Per head h, the mean diagonal and off-diagonal entries of qk = W_q,h W_k,h^T and "
            "vo = W_v,h W_o,h (the head's share; `all`: W_v W_o over the heads), as in the mimetic "
            "self-attention init's figures (Trockman & Kolter, ICML 2023): after "
            "`--init mimetic-attention` qk's diagonal is positive and vo's (all heads) negative, "
            "several times the off-diagonal magnitude.",
            "",
            format_table(rows, columns),
            "",
        ]


ROW_KEYS = (
    "layer",
    "head",
    "qk_diag",
    "qk_offdiag",
    "qk_abs_offdiag",
    "vo_diag",
    "vo_offdiag",
    "vo_abs_offdiag",
)


def attention(model, *, data, parts):
    """The :class:`AttentionSection` of ``model`` (``data`` and ``parts`` unused)."""
    from keras_structinit.mimetic import structure

    rows = []
    for layer, projections, heads, vo in attention_products(model):
        per_head = []
        for h, (qk, vo_h) in enumerate(heads):
            stats = {f"qk_{k}": v for k, v in _diag_off(qk).items()}
            stats.update({f"vo_{k}": v for k, v in _diag_off(vo_h).items()})
            per_head.append({"head": h, **stats})
        rows.append(
            {
                "path": projections.query_kernel.path,
                "layer": layer.name,
                "layout": projections.layout,
                "cross_attention": bool(structure.is_cross_attention(layer)),
                "heads": per_head,
                "vo": _diag_off(vo),
            }
        )
    return AttentionSection(rows)
