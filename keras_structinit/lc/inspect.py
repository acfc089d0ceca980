"""The LC paper's views in ``structinit inspect``.

* its part of the spatial section (see :mod:`keras_structinit.covariance.inspect`): an LC block is
  measured by its combined filters (its spatial filters times its ``1 x 1`` weights, Def. 3.1), and
  every spatial conv by its filter variance entropy (Sec. 4.2);
* the ``position_variance`` section: each spatial conv's per-position weight variance and the
  model's pooled map per kernel size (Sec. 4.4, Fig. 13; :mod:`.position`).
"""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass

import numpy as np

from keras_structinit.engine import walker
from keras_structinit.lc.diversity import variance_entropy
from keras_structinit.lc.folding import fold_kernels
from keras_structinit.lc.position import centre_border_ratio, pooled_position_variance, position_variance
from keras_structinit.methods.inspection import Section, values
from keras_structinit.utils.reporting import format_table

__all__ = [
    "FIGURE_MAPS",
    "MAX_RATIO",
    "PositionVarianceSection",
    "centre_border",
    "position_variance_section",
    "spatial_part",
]

#: Layers whose maps ``position_variance.png`` draws (evenly spread over depth), besides the pooled ones.
FIGURE_MAPS = 4
#: The largest centre / border variance ratio shown. Above it the border's variance is about 0 (a
#: narrow ``conv-cov`` kernel): the quotient of two numbers that far apart says only that.
MAX_RATIO = 1e6


def _lc_blocks(model):
    """``{id(block): combine}``: an LC block's filters are its spatial ones folded with its 1x1 weights."""
    try:
        found = walker.find(model, "lc_pointwise")
    except ValueError:  # no LC block
        found = []
    return {
        id(layer): (lambda spatial, kernel=kernel: fold_kernels(spatial, values(kernel)))
        for layer, kernel in found
    }


def spatial_part(model):
    """``{"filters": {id(block): ("lc", combine)}, "columns": {"variance_entropy": ...}}`` of ``model``."""
    filters = {key: ("lc", combine) for key, combine in _lc_blocks(model).items()}
    return {
        "filters": filters,
        "columns": {
            "variance_entropy": (variance_entropy, "filter variance entropy (Gavrikov & Keuper, Sec. 4.2)")
        },
    }


def centre_border(variance):
    """``(ratio, None)``, or ``(None, why no ratio is shown)``, of a ``(kh, kw)`` variance map
    (:func:`.position.centre_border_ratio`; none above :data:`MAX_RATIO`)."""
    variance = np.asarray(variance, dtype=np.float64)
    if min(variance.shape) < 3:
        return None, "no border: a side below 3"
    ratio = centre_border_ratio(variance)
    if ratio is None or ratio > MAX_RATIO:
        return None, f"border ~ 0 (the ratio would be above {MAX_RATIO:g})"
    return ratio, None


def _ratio_cell(value):
    return value if isinstance(value, str) else f"{value:.3f}"


def _size(kernel_size):
    return "x".join(map(str, kernel_size))


@dataclass
class PositionVarianceSection(Section):
    """``report.position_variance``: ``{"layers": [...], "pooled": [...]}`` (empty lists in a model
    without spatial convs). A layer row holds its ``(kh, kw)`` ``variance`` map (each kernel
    divided by its weights' standard deviation), ``centre_border`` (:func:`centre_border`: ``None``
    where no ratio is shown) and ``centre_border_note`` (why not, else ``None``); ``pooled`` holds
    one map per kernel size over all its layers, as Fig. 13 pools a model."""

    def markdown(self):
        if not self.value or not self.value["layers"]:
            return []
        rows = [
            {
                **r,
                "size": _size(r["kernel_size"]),
                "ratio": r["centre_border_note"] if r["centre_border"] is None else r["centre_border"],
            }
            for r in self.value["layers"]
        ]
        columns = (
            ("kernel", "path"),
            ("kind", "kind"),
            ("size", "size"),
            ("centre / border variance", "ratio", _ratio_cell),
        )
        lines = [
            "## Weight variance per kernel position",
            "",
            "Variance of the weights at each kernel position over all filters (input and output "
            "channels), each kernel divided by its weights' standard deviation (Gavrikov & Keuper, "
            "Sec. 4.4, Fig. 13): i.i.d. init gives 1 everywhere; trained large kernels keep their "
            "variance in the centre. LC blocks are measured by their combined filters.",
            "",
            format_table(rows, columns),
            "",
        ]
        for pooled in self.value["pooled"]:
            grid = np.asarray(pooled["variance"])
            header = "| " + " | ".join(f"col {c}" for c in range(grid.shape[1])) + " |"
            lines += [
                f"Pooled over the {pooled['layers']} {_size(pooled['kernel_size'])} layer(s):",
                "",
                header,
                "|" + "---|" * grid.shape[1],
                *("| " + " | ".join(f"{v:.3f}" for v in row) + " |" for row in grid),
                "",
            ]
        return lines

    def figures(self, directory, *, overwrite=False):
        """``position_variance.png``: the pooled map of each kernel size, then the maps of up to
        :data:`FIGURE_MAPS` layers evenly spread over depth (Fig. 13's heatmaps)."""
        if not self.value or not self.value["layers"]:
            return []
        from keras_structinit.utils import viz

        layers = self.value["layers"]
        picks = sorted({round(p) for p in np.linspace(0, len(layers) - 1, min(FIGURE_MAPS, len(layers)))})
        maps = [p["variance"] for p in self.value["pooled"]] + [layers[i]["variance"] for i in picks]
        titles = [f"all {p['layers']} {_size(p['kernel_size'])} layers" for p in self.value["pooled"]] + [
            f"{layers[i]['layer']}\n({layers[i]['kind']})" for i in picks
        ]  # wrapped at words
        return [
            viz.plot_heatmaps(
                maps,
                titles,
                os.path.join(directory, "position_variance.png"),
                label="variance (normalized)",
                title="Weight variance per kernel position over all filters (Gavrikov & Keuper, Fig. 13)",
                overwrite=overwrite,
            )
        ]


def position_variance_section(model, *, data, parts):
    """The :class:`PositionVarianceSection` of ``model``: the walker's ``"all_spatial"`` convs with
    2-D kernels (LC blocks by their combined filters); ``data`` and ``parts`` unused."""
    try:
        found = walker.find(model, "all_spatial")
    except ValueError:  # no spatial conv
        return PositionVarianceSection({"layers": [], "pooled": []})
    combine = _lc_blocks(model)
    rows, by_size = [], collections.defaultdict(list)
    for layer, kernel in found:
        filters = values(kernel)
        kind = "depthwise" if walker.depthwise_kernel(layer) is not None else "conv"
        if id(layer) in combine:
            filters, kind = combine[id(layer)](filters), "lc"
        if filters.ndim != 4 or filters.shape[0] * filters.shape[1] < 2 or not filters.std() > 0:
            continue  # a 1-D/3-D conv, a 1x1 kernel or all-equal weights: no map
        variance = position_variance(filters)
        size = tuple(filters.shape[:2])
        by_size[size].append(filters)
        ratio, note = centre_border(variance)
        rows.append(
            {
                "path": kernel.path,
                "layer": layer.name,
                "kind": kind,
                "kernel_size": list(size),
                "variance": variance.tolist(),
                "centre_border": ratio,
                "centre_border_note": note,
            }
        )
    pooled = [
        {
            "kernel_size": list(size),
            "layers": len(kernels),
            "variance": pooled_position_variance(kernels).tolist(),
        }
        for size, kernels in by_size.items()
    ]
    return PositionVarianceSection({"layers": rows, "pooled": pooled})
