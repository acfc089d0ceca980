"""The covariance paper's section of ``structinit inspect``: each spatial conv's filter covariance,
the closed form nearest it (``sigma`` fitted by :func:`.fit.fit_sigma`, its relative error) and
whether ``sigma`` grows with depth (Fig. 6).

Other methods add to this section (an :class:`~keras_structinit.methods.Inspector` with
``part=True``): a part is called as ``part(model)`` and returns ``{"filters": {id(layer): (kind,
combine)}, "columns": {name: (measure, source)}}``: the layers it measures by other filters than
their kernel (``combine(kernel values) -> filters``, rows of ``kind``), and columns measured on each
layer's filters (``measure(filters)``; ``None`` where the covariance is zero), cited as ``source``.
"""

from __future__ import annotations

import collections
import math
import os
from dataclasses import dataclass, field

import numpy as np

from keras_structinit.covariance.fit import filter_statistics, fit_sigma
from keras_structinit.covariance.schedule import depth_fractions
from keras_structinit.engine import walker
from keras_structinit.methods.inspection import Section, values
from keras_structinit.utils.reporting import format_table

__all__ = ["FIGURE_COVARIANCES", "STRUCTURED_ERROR", "SpatialSection", "spatial"]

#: Fit errors above this say the closed form does not describe a layer: independent weights (a
#: covariance near ``c I``, as PyTorch's or Glorot's init gives) fit no ``sigma`` better than ~0.95,
#: so their ``sigma`` is arbitrary and is left out of :attr:`SpatialSection.sigma_grows_with_depth`.
STRUCTURED_ERROR = 0.5
#: Covariances drawn in ``covariance_blocks.png``.
FIGURE_COVARIANCES = 6


def _rank_correlation(array):
    """Spearman's correlation of ``array`` with its position (depth)."""
    ranks = np.argsort(np.argsort(array)).astype(np.float64)
    depth = np.arange(len(array), dtype=np.float64)
    if ranks.std() == 0:
        return 0.0
    return float(np.corrcoef(ranks, depth)[0, 1])


@dataclass
class SpatialSection(Section):
    """``report.spatial``: a row per spatial conv of ``model`` (its name); ``sources``: ``{column:
    source}`` of the parts' columns."""

    model: str = ""
    sources: dict = field(default_factory=dict)

    def sigma_depth_correlation(self, kind="depthwise"):
        """Spearman's correlation of the fitted ``sigma`` of every ``kind`` layer (``"depthwise"``,
        ``"conv"`` or a part's kind, structured or not) with its depth; ``None`` below 3 layers."""
        sigmas = [
            r["covariance_fit"]["sigma"] for r in self.value if r["covariance_fit"] and r["kind"] == kind
        ]
        return None if len(sigmas) < 3 else _rank_correlation(sigmas)

    @property
    def sigma_grows_with_depth(self):
        """Spearman's correlation of the fitted ``sigma`` with depth is at least 0.5 (Fig. 6), over
        the depthwise convs (the paper's) or, in a model without them, the most numerous kind
        (``k x k`` convs or a part's, e.g. LC blocks), counting only layers the closed form describes
        (``structured``); ``None`` with fewer than 3 such layers."""
        fitted = [r for r in self.value if r["covariance_fit"] and r["covariance_fit"]["structured"]]
        counts = collections.Counter(r["kind"] for r in fitted)
        kind = "depthwise" if counts["depthwise"] else counts.most_common(1)[0][0] if counts else None
        sigmas = [r["covariance_fit"]["sigma"] for r in fitted if r["kind"] == kind]
        return None if len(sigmas) < 3 else _rank_correlation(sigmas) >= 0.5

    def summary(self):
        return {"sigma_grows_with_depth": self.sigma_grows_with_depth}

    def markdown(self):
        if not self.value:
            return []
        nan = float("nan")
        rows = []
        for r in self.value:
            fit = r["covariance_fit"] or {}
            rows.append(
                {
                    **r,
                    "size": "x".join(map(str, r["kernel_size"])),
                    "sigma": fit.get("sigma", nan),
                    "error": fit.get("rel_error", nan),
                    **{c: nan if r[c] is None else r[c] for c in self.sources},
                    "frozen": "trained" if r["trainable"] else "frozen",
                }
            )
        grows = self.sigma_grows_with_depth
        verdict = (
            f"n/a (fewer than 3 layers with a fit error <= {STRUCTURED_ERROR})"
            if grows is None
            else "yes"
            if grows
            else "no"
        )
        columns = (
            ("kernel", "path"),
            ("kind", "kind"),
            ("size", "size"),
            ("depth", "depth_fraction", ".2f"),
            ("sigma", "sigma", ".3f"),
            ("fit error", "error", ".3f"),
            *((c.replace("_", " "), c, ".3f") for c in self.sources),
            ("filters", "frozen"),
        )
        cited = "".join(f", {source}" for source in self.sources.values())
        return [
            "## Spatial convolutions",
            "",
            f"Closed-form covariance fitted by sigma (Trockman et al., Eq. 10-11){cited}. A fit error "
            f"above {STRUCTURED_ERROR} means no closed form describes the layer (independent weights fit "
            f"none better than ~0.95). Sigma grows with depth: {verdict}.",
            "",
            format_table(rows, columns),
            "",
        ]

    def figures(self, directory, *, overwrite=False):
        """``spatial_depth.png``: fitted ``sigma`` and the parts' columns over depth, per conv kind
        (Fig. 6's view); ``covariance_blocks.png``: the filter covariance of up to six convs evenly
        spread over depth, in ``k x k`` blocks (Fig. 5's form), the most common kind and size."""
        from keras_structinit.covariance.plots import plot_covariances
        from keras_structinit.utils import viz

        fitted = [r for r in self.value if r["covariance_fit"]]
        if not fitted:
            return []
        panels = {"fitted sigma": {}, **{c.replace("_", " "): {} for c in self.sources}}
        for kind in dict.fromkeys(r["kind"] for r in fitted):
            rows = [r for r in fitted if r["kind"] == kind]
            depths = [r["depth_fraction"] for r in rows]
            panels["fitted sigma"][kind] = (depths, [r["covariance_fit"]["sigma"] for r in rows])
            for c in self.sources:
                panels[c.replace("_", " ")][kind] = (depths, [r[c] for r in rows])
        written = [
            viz.plot_over_depth(
                panels,
                os.path.join(directory, "spatial_depth.png"),
                overwrite=overwrite,
                title=f"{self.model}: the closed form's sigma nearest each layer's filter covariance",
            )
        ]
        groups = collections.Counter((r["kind"], tuple(r["kernel_size"])) for r in fitted)
        kind, size = groups.most_common(1)[0][0]
        rows = [r for r in fitted if (r["kind"], tuple(r["kernel_size"])) == (kind, size)]
        picks = np.linspace(0, len(rows) - 1, min(FIGURE_COVARIANCES, len(rows)))
        rows = [rows[i] for i in sorted({round(p) for p in picks})]
        written.append(
            plot_covariances(
                [self.arrays["covariances"][r["path"]] for r in rows],
                size,
                [f"{viz.wrap_label(r['layer'], 22)}\nsigma {r['covariance_fit']['sigma']:.2f}" for r in rows],
                os.path.join(directory, "covariance_blocks.png"),
                overwrite=overwrite,
            )
        )
        return written


def spatial(model, *, data, parts):
    """The :class:`SpatialSection` of ``model`` (the walker's ``"all_spatial"`` convs with 2-D
    kernels; ``data`` unused); ``parts`` as the module docstring says."""
    combine, measures, sources = {}, {}, {}
    for part in parts:
        added = part(model)
        combine.update(added.get("filters", {}))
        for column, (measure, source) in added.get("columns", {}).items():
            measures[column], sources[column] = measure, source
    try:
        found = walker.find(model, "all_spatial")
    except ValueError:  # no spatial conv: an empty section
        return SpatialSection([], {"covariances": {}}, model=model.name, sources=sources)
    kinds = [
        "depthwise"
        if walker.depthwise_kernel(layer) is not None
        else combine[id(layer)][0]
        if id(layer) in combine
        else "conv"
        for layer, _ in found
    ]
    depth = {}  # each layer's depth fraction among the layers of its kind
    for kind in set(kinds):
        of_kind = [i for i, k in enumerate(kinds) if k == kind]
        depth.update(zip(of_kind, depth_fractions(len(of_kind)), strict=True))
    rows, covariances = [], {}
    for index, (layer, kernel) in enumerate(found):
        filters = values(kernel)
        if id(layer) in combine:
            filters = combine[id(layer)][1](filters)
        kernel_size = tuple(filters.shape[:-2])
        if len(kernel_size) != 2:
            continue
        count = math.prod(filters.shape[2:])
        cov = filter_statistics(filters)[1] if count > 1 else np.zeros((math.prod(kernel_size),) * 2)
        row = {
            "path": kernel.path,
            "layer": layer.name,
            "kind": kinds[index],
            "kernel_size": list(kernel_size),
            "filters": int(count),
            "depth_fraction": depth[index],
            "trainable": bool(kernel.trainable),
            "covariance_fit": None,
            **dict.fromkeys(measures),
        }
        if np.linalg.norm(cov) > 0:
            sigma, scale, error = fit_sigma(cov, kernel_size)
            row["covariance_fit"] = {
                "sigma": sigma,
                "scale": scale,
                "rel_error": error,
                "structured": error <= STRUCTURED_ERROR,
            }
            row.update({column: measure(filters) for column, measure in measures.items()})
        rows.append(row)
        covariances[kernel.path] = cov
    return SpatialSection(rows, {"covariances": covariances}, model=model.name, sources=sources)
