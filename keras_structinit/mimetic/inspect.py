"""The mimetic paper's section of ``structinit inspect``: for every MLP block the walker knows
(``"mlp_first"``), the mean diagonal and off-diagonal of ``W1 W1^T`` and the mean of ``W1``."""

from __future__ import annotations

from keras_structinit import walker
from keras_structinit.inspection import Section, values
from keras_structinit.reporting import format_table

__all__ = ["MLPSection", "mlp"]


class MLPSection(Section):
    """``report.mlp``: a row per MLP block's first layer."""

    def markdown(self):
        if not self.value:
            return []
        rows = [{"path": r["path"], "diag": r["w1w1t"]["diag_mean"], "off": r["w1w1t"]["offdiag_mean"],
                 "mean": r["w1_mean"]} for r in self.value]
        columns = (("first layer", "path"), ("mean diagonal", "diag", ".4g"),
                   ("mean off-diagonal", "off", ".4g"), ("mean of W1", "mean", ".4g"))
        return ["## MLP blocks", "",
                "W1 W1^T of each block's first layer (Trockman & Kolter, mimetic init).", "",
                format_table(rows, columns), ""]


def mlp(model, *, data, parts):
    """The :class:`MLPSection` of ``model`` (``data`` and ``parts`` unused)."""
    try:
        found = walker.find(model, "mlp_first")
    except ValueError:  # no MLP block the walker knows
        return MLPSection([])
    rows = []
    for layer, kernel in found:
        array = values(kernel)
        w1 = array.reshape(-1, array.shape[-1])  # Keras (in, out): W1 = w1^T, W1 W1^T = w1^T w1
        gram = w1.T @ w1
        p = gram.shape[0]
        off = (gram.sum() - gram.trace()) / max(p * (p - 1), 1)
        rows.append({"path": kernel.path, "layer": layer.name,
                     "w1w1t": {"diag_mean": float(gram.trace() / p), "offdiag_mean": float(off)},
                     "w1_mean": float(array.mean())})
    return MLPSection(rows)
