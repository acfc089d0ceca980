"""The mimetic paper's section of ``structinit inspect``: for every MLP block the walker knows
(``"mlp_first"``), the mean diagonal and off-diagonal of ``W1 W1^T``, the mean of ``W1`` and, with
the block's second layer ``W2`` (named like the first, ending in ``2``), the joint covariance of
``[W1[i, :], W2[:, i]]`` over its hidden units (Trockman & Kolter, Sec. 2, Fig. 1; :mod:`.joint`)."""

from __future__ import annotations

import os

import numpy as np

from keras_structinit import walker
from keras_structinit.inspection import Section, values
from keras_structinit.mimetic.blocks import second_layer_path
from keras_structinit.mimetic.joint import block_summary, unit_covariance
from keras_structinit.reporting import format_table

__all__ = ["MLPSection", "mlp", "mlp_weight_pairs"]


def mlp_weight_pairs(model):
    """``[(first layer, W1, W2 or None), ...]`` of every MLP block the walker knows, ``W1``
    ``(p, n)`` and ``W2`` ``(n, p)`` in the paper's orientation (float64): stack them over a
    population of trained models for :func:`~keras_structinit.mimetic.joint.population_covariance`
    (Fig. 1). ``W2`` is ``None`` where no layer of the second name and shape is found."""
    try:
        found = walker.find(model, "mlp_first")
    except ValueError:  # no MLP block the walker knows
        return []
    kernels = {}
    for layer in walker.iter_layers(model):
        kernel = walker.dense_kernel(layer)
        if kernel is not None:
            kernels[kernel.path] = kernel
    pairs = []
    for layer, kernel in found:
        k1 = values(kernel)
        k1 = k1.reshape(-1, k1.shape[-1])  # Keras (n, p) = W1^T
        second = kernels.get(second_layer_path(kernel.path) or "")
        w2 = None
        if second is not None:
            k2 = values(second)
            k2 = k2.reshape(-1, k2.shape[-1])  # Keras (p, n) = W2^T
            w2 = k2.T if k2.shape == k1.shape[::-1] else None
        pairs.append((layer, kernel, k1.T, w2, None if w2 is None else second.path))
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
            rows.append({"path": r["path"], "diag": r["w1w1t"]["diag_mean"],
                         "off": r["w1w1t"]["offdiag_mean"], "mean": r["w1_mean"],
                         "w1": joint.get("w1_variance", nan), "w2": joint.get("w2_variance", nan),
                         "cross": nan if correlation is None else correlation})
        columns = (("first layer", "path"), ("mean diagonal", "diag", ".4g"),
                   ("mean off-diagonal", "off", ".4g"), ("mean of W1", "mean", ".4g"),
                   ("Var W1", "w1", ".3g"), ("Var W2", "w2", ".3g"), ("corr(W1, W2^T)", "cross", ".3f"))
        return ["## MLP blocks", "",
                "W1 W1^T of each block's first layer (Trockman & Kolter, mimetic init). Var W1, Var W2 and "
                "corr(W1, W2^T): the covariance of [W1[i, :], W2[:, i]] over the hidden units i (the "
                "within-network form of Sec. 2; Fig. 1 takes it over a population of networks): the "
                "mean variance of each matrix and the correlation of W1[i, k] with W2[k, i] (negative: "
                "anti-correlated, as Fig. 1b's ViT).", "",
                format_table(rows, columns), ""]

    def figures(self, directory, *, overwrite=False):
        """``mlp_covariance.png``: the joint covariance of the first block with a second layer,
        ``W1`` rows then ``W2`` columns (Fig. 1's form)."""
        if "mlp_covariance" not in self.arrays:
            return []
        from keras_structinit import viz

        covariance = self.arrays["mlp_covariance"]
        n = covariance.shape[0] // 2
        off = np.abs(covariance - np.diag(np.diag(covariance)))
        limit = float(np.quantile(off, 0.999)) or None  # the variances on the diagonal would drown the rest
        path = next(r["path"] for r in self.value if r["joint"])
        return [viz.plot_heatmaps(
            [covariance], [f"{path}\nW1[i, :] (first {n}) | W2[:, i] (last {n}) over the hidden units i"],
            os.path.join(directory, "mlp_covariance.png"), symmetric=True, limit=limit, label="covariance",
            title="Joint covariance of an MLP block's weights (Trockman & Kolter, Fig. 1's form)",
            overwrite=overwrite)]


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
        rows.append({"path": kernel.path, "layer": layer.name, "second_path": second,
                     "w1w1t": {"diag_mean": float(gram.trace() / p), "offdiag_mean": float(off)},
                     "w1_mean": float(w1.mean()), "joint": joint})
    return MLPSection(rows, arrays)
