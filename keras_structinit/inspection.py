"""What an init did, or what training made of it: the papers' views of a model's weights.

``keras_structinit.inspect(model, *, data=None)`` measures, on any built Keras model:

* every spatial conv (depthwise, ``k x k``, or an LC block, whose filters are its spatial
  filters combined by its ``1 x 1`` weights, Gavrikov & Keuper Def. 3.1; the walker's
  ``"all_spatial"``): the filters' covariance, the nearest closed form of the covariance paper
  fitted by ``sigma`` (:func:`~keras_structinit.covariance.fit.fit_sigma`, its relative error),
  whether ``sigma`` grows with depth (Fig. 6), and the filter variance entropy of the LC paper
  (:func:`~keras_structinit.lc.variance_entropy`, Sec. 4.2);
* every MLP block the walker knows (``"mlp_first"``): the mean diagonal and off-diagonal of
  ``W1 W1^T`` and the mean of ``W1`` (the mimetic paper's statistic);
* with ``data``, the first plain conv: the data's patch covariance spectrum and the layer's
  misalignment with it (Maennel et al., Prop. 2) against a random basis;
* every layer: each variable's shape, trainable flag, norm, mean and std, and the
  initializer its config names.

A model without a spatial conv or an MLP block simply has no such section. The report is
:class:`InspectionReport` (``to_dict``, ``to_json``, ``to_markdown``, ``figures``).
"""

from __future__ import annotations

import collections
import json
import math
import os
import textwrap
from dataclasses import dataclass, field

import keras
import numpy as np

from keras_structinit import walker
from keras_structinit.alignment import misalignment, patch_covariance, random_basis
from keras_structinit.alignment.apply import conv_targets, weight_covariance
from keras_structinit.covariance.fit import filter_statistics, fit_sigma
from keras_structinit.covariance.schedule import depth_fractions
from keras_structinit.io_utils import write_text
from keras_structinit.lc import fold_kernels, variance_entropy
from keras_structinit.reporting import format_table

__all__ = ["InspectionReport", "inspect"]

#: Fit errors above this say the closed form does not describe a layer: independent weights (a
#: covariance near ``c I``, as PyTorch's or Glorot's init gives) fit no ``sigma`` better than ~0.95,
#: so their ``sigma`` is arbitrary and is left out of :attr:`InspectionReport.sigma_grows_with_depth`.
STRUCTURED_ERROR = 0.5
#: Filters (and data eigenvectors) drawn in ``first_layer.png``; covariances in ``covariance_blocks.png``.
FIGURE_FILTERS = 16
FIGURE_COVARIANCES = 6


def _numpy(variable):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32")), dtype=np.float64)


def _initializer_of(layer):
    config = layer.get_config() if hasattr(layer, "get_config") else {}
    named = config.get("kernel_initializer") or config.get("depthwise_initializer") or config.get(
        "spatial_initializer")
    if isinstance(named, dict):
        return named.get("class_name")
    return named if isinstance(named, str) else None


def _layers(model):
    rows = []
    for layer in [*walker.iter_layers(model), model]:
        for variable in walker.own_variables(layer):
            values = _numpy(variable)
            rows.append({"path": variable.path, "layer": layer.name, "kind": type(layer).__name__,
                         "shape": list(variable.shape), "trainable": bool(variable.trainable),
                         "norm": float(np.linalg.norm(values)), "mean": float(values.mean()),
                         "std": float(values.std()), "initializer": _initializer_of(layer)})
    return rows


def _rank_correlation(values):
    """Spearman's correlation of ``values`` with their position (depth)."""
    ranks = np.argsort(np.argsort(values)).astype(np.float64)
    depth = np.arange(len(values), dtype=np.float64)
    if ranks.std() == 0:
        return 0.0
    return float(np.corrcoef(ranks, depth)[0, 1])


def _spatial(model):
    covariances = {}
    try:
        found = walker.find(model, "all_spatial")
    except ValueError:  # no spatial conv: no such section
        return [], covariances
    try:
        pointwise = {id(layer): kernel for layer, kernel in walker.find(model, "lc_pointwise")}
    except ValueError:  # no LC block
        pointwise = {}
    kinds = ["depthwise" if walker.depthwise_kernel(layer) is not None else "lc" if id(layer) in pointwise
             else "conv" for layer, _ in found]
    depth = {}  # each layer's depth fraction among the layers of its kind
    for kind in set(kinds):
        of_kind = [i for i, k in enumerate(kinds) if k == kind]
        depth.update(zip(of_kind, depth_fractions(len(of_kind)), strict=True))
    rows = []
    for index, (layer, kernel) in enumerate(found):
        values = _numpy(kernel)
        if id(layer) in pointwise:  # an LC block's filters are its spatial ones combined (Def. 3.1)
            values = fold_kernels(values, _numpy(pointwise[id(layer)]))
        kind = kinds[index]
        kernel_size = tuple(values.shape[:-2])
        if len(kernel_size) != 2:
            continue
        filters = math.prod(values.shape[2:])
        cov = filter_statistics(values)[1] if filters > 1 else np.zeros((math.prod(kernel_size),) * 2)
        row = {"path": kernel.path, "layer": layer.name, "kind": kind,
               "kernel_size": list(kernel_size), "filters": int(filters),
               "depth_fraction": depth[index],
               "trainable": bool(kernel.trainable), "covariance_fit": None, "variance_entropy": None}
        if np.linalg.norm(cov) > 0:
            sigma, scale, error = fit_sigma(cov, kernel_size)
            row["covariance_fit"] = {"sigma": sigma, "scale": scale, "rel_error": error,
                                     "structured": error <= STRUCTURED_ERROR}
            row["variance_entropy"] = variance_entropy(values)
        rows.append(row)
        covariances[kernel.path] = cov
    return rows, covariances


def _mlp(model):
    try:
        found = walker.find(model, "mlp_first")
    except ValueError:  # no MLP block the walker knows
        return []
    rows = []
    for layer, kernel in found:
        values = _numpy(kernel)
        w1 = values.reshape(-1, values.shape[-1])  # Keras (in, out): W1 = w1^T, W1 W1^T = w1^T w1
        gram = w1.T @ w1
        p = gram.shape[0]
        off = (gram.sum() - np.trace(gram)) / max(p * (p - 1), 1)
        rows.append({"path": kernel.path, "layer": layer.name,
                     "w1w1t": {"diag_mean": float(np.trace(gram) / p), "offdiag_mean": float(off)},
                     "w1_mean": float(values.mean())})
    return rows


def _first_layer(model, data):
    images = np.asarray(keras.ops.convert_to_numpy(data), dtype=np.float32)
    if images.ndim != 4:
        raise ValueError(f"`data` must be images (N, H, W, C). Received shape {images.shape}")
    (layer, kernel), = conv_targets(model, 1)
    eigvals, eigvecs = patch_covariance(images, layer.kernel_size)
    sigma_x = (eigvecs * eigvals) @ eigvecs.T
    sigma_w = weight_covariance(layer)
    row = {"path": kernel.path, "layer": layer.name, "misalignment": None, "random_baseline": None,
           "spectrum": [float(v) for v in eigvals], "note": None}
    shape = (*layer.kernel_size, images.shape[-1], -1)  # eigenvectors in a Conv2D kernel's flatten order
    arrays = {"filters": _numpy(kernel)[..., :FIGURE_FILTERS],
              "eigenvectors": eigvecs[:, :FIGURE_FILTERS].reshape(shape)}
    try:
        row["misalignment"] = float(misalignment(sigma_x, sigma_w))
        basis = random_basis(len(eigvals), seed=0)
        row["random_baseline"] = float(misalignment(sigma_x, sigma_w, basis=basis))
    except ValueError as err:  # fewer filters than weights per filter: Sigma_w is singular
        row["note"] = str(err)
    return row, arrays


@dataclass
class InspectionReport:
    """What :func:`inspect` measured (see the module docstring)."""

    model: str
    layers: list = field(default_factory=list)
    spatial: list = field(default_factory=list)
    mlp: list = field(default_factory=list)
    first_layer: dict | None = None
    arrays: dict = field(default_factory=dict, repr=False)  # for figures(): not in to_dict()

    def sigma_depth_correlation(self, kind="depthwise"):
        """Spearman's correlation of the fitted ``sigma`` of every ``kind`` layer (``"depthwise"``,
        ``"conv"`` or ``"lc"``, structured or not) with its depth; ``None`` below 3 layers."""
        sigmas = [r["covariance_fit"]["sigma"] for r in self.spatial
                  if r["covariance_fit"] and r["kind"] == kind]
        return None if len(sigmas) < 3 else _rank_correlation(sigmas)

    @property
    def sigma_grows_with_depth(self):
        """Spearman's correlation of the fitted ``sigma`` with depth is at least 0.5 (Fig. 6), over
        the depthwise convs (the paper's) or, in a model without them, the most numerous kind
        (``k x k`` convs or LC blocks), counting only layers the closed form describes
        (``structured``); ``None`` with fewer than 3 such layers."""
        fitted = [r for r in self.spatial if r["covariance_fit"] and r["covariance_fit"]["structured"]]
        counts = collections.Counter(r["kind"] for r in fitted)
        kind = "depthwise" if counts["depthwise"] else counts.most_common(1)[0][0] if counts else None
        sigmas = [r["covariance_fit"]["sigma"] for r in fitted if r["kind"] == kind]
        return None if len(sigmas) < 3 else _rank_correlation(sigmas) >= 0.5

    def to_dict(self):
        return {"model": self.model, "layers": self.layers, "spatial": self.spatial,
                "sigma_grows_with_depth": self.sigma_grows_with_depth, "mlp": self.mlp,
                "first_layer": self.first_layer}

    def to_json(self, path=None):
        """The report as JSON text; written (atomically) to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        if path is not None:
            write_text(path, text)
        return text

    def figures(self, directory, *, overwrite=False):
        """Writes the report's PNGs to ``directory`` (needs the ``viz`` extra); returns their paths.

        * ``spatial_depth.png``: fitted ``sigma`` and variance entropy over depth, per conv kind
          (the covariance paper's Fig. 6 view);
        * ``covariance_blocks.png``: the filter covariance of up to six convs evenly spread over
          depth, in ``k x k`` blocks (its Fig. 5 form), the most common kind and size;
        * ``first_layer.png`` (inspected with data): the first layer's filters above the data's
          top patch-covariance eigenvectors (the random-label paper's Fig. 2 view).
        """
        from keras_structinit import viz

        os.makedirs(directory, exist_ok=True)
        written = []
        fitted = [r for r in self.spatial if r["covariance_fit"]]
        if fitted:
            panels = {"fitted sigma": {}, "variance entropy": {}}
            for kind in dict.fromkeys(r["kind"] for r in fitted):
                rows = [r for r in fitted if r["kind"] == kind]
                if rows:
                    depths = [r["depth_fraction"] for r in rows]
                    panels["fitted sigma"][kind] = (depths, [r["covariance_fit"]["sigma"] for r in rows])
                    panels["variance entropy"][kind] = (depths, [r["variance_entropy"] for r in rows])
            written.append(viz.plot_over_depth(
                panels, os.path.join(directory, "spatial_depth.png"), overwrite=overwrite,
                title=f"{self.model}: the closed form's sigma nearest each layer's filter covariance"))
            groups = collections.Counter((r["kind"], tuple(r["kernel_size"])) for r in fitted)
            kind, size = groups.most_common(1)[0][0]
            rows = [r for r in fitted if (r["kind"], tuple(r["kernel_size"])) == (kind, size)]
            picks = np.linspace(0, len(rows) - 1, min(FIGURE_COVARIANCES, len(rows)))
            rows = [rows[i] for i in sorted({round(p) for p in picks})]
            written.append(viz.plot_covariances(
                [self.arrays["covariances"][r["path"]] for r in rows], size,
                ["\n".join([*textwrap.wrap(r["layer"], 22), f"sigma {r['covariance_fit']['sigma']:.2f}"])
                 for r in rows],
                os.path.join(directory, "covariance_blocks.png"), overwrite=overwrite))
        if self.first_layer and "eigenvectors" in self.arrays:
            filters, eigenvectors = self.arrays["filters"], self.arrays["eigenvectors"]
            rgb = filters.shape[2] == 3
            written.append(viz.plot_filters(
                [filters, eigenvectors],
                [f"{self.first_layer['layer']}: its first {filters.shape[-1]} filters",
                 f"the data's top {eigenvectors.shape[-1]} patch-covariance eigenvectors"],
                os.path.join(directory, "first_layer.png"), num_filters=FIGURE_FILTERS, rgb=rgb,
                overwrite=overwrite))
        return written

    def to_markdown(self, figures=()):
        """The report as Markdown; ``figures``: image paths (relative to the file) shown first."""
        lines = [f"# Inspection of {self.model}", ""]
        for figure in figures:
            lines += [f"![{os.path.splitext(os.path.basename(figure))[0]}]({figure})", ""]
        if self.spatial:
            lines += self._spatial_markdown()
        if self.mlp:
            rows = [{"path": r["path"], "diag": r["w1w1t"]["diag_mean"], "off": r["w1w1t"]["offdiag_mean"],
                     "mean": r["w1_mean"]} for r in self.mlp]
            columns = (("first layer", "path"), ("mean diagonal", "diag", ".4g"),
                       ("mean off-diagonal", "off", ".4g"), ("mean of W1", "mean", ".4g"))
            lines += ["## MLP blocks", "",
                      "W1 W1^T of each block's first layer (Trockman & Kolter, mimetic init).", "",
                      format_table(rows, columns), ""]
        if self.first_layer:
            f = self.first_layer
            top = ", ".join(f"{v:.3g}" for v in f["spectrum"][:5])
            measured = (f"misalignment with the data's patch covariance {f['misalignment']:.4g} (a random "
                        f"basis: {f['random_baseline']:.4g}; Maennel et al., Prop. 2)" if f["note"] is None
                        else f"no misalignment: {f['note']}")
            lines += ["## First layer and the data", "",
                      f"`{f['path']}`: {measured}; the five largest patch eigenvalues {top}.", ""]
        columns = (("variable", "path"), ("layer kind", "kind"), ("trainable", "trainable"),
                   ("norm", "norm", ".4g"), ("mean", "mean", ".4g"), ("std", "std", ".4g"),
                   ("initializer", "initializer"))
        lines += ["## Every layer", "", format_table(self.layers, columns)]
        return "\n".join(lines) + "\n"

    def _spatial_markdown(self):
        nan = float("nan")
        rows = []
        for r in self.spatial:
            fit = r["covariance_fit"] or {}
            rows.append({**r, "size": "x".join(map(str, r["kernel_size"])), "sigma": fit.get("sigma", nan),
                         "error": fit.get("rel_error", nan),
                         "entropy": nan if r["variance_entropy"] is None else r["variance_entropy"],
                         "frozen": "trained" if r["trainable"] else "frozen"})
        grows = self.sigma_grows_with_depth
        verdict = (f"n/a (fewer than 3 layers with a fit error <= {STRUCTURED_ERROR})" if grows is None
                   else "yes" if grows else "no")
        columns = (("kernel", "path"), ("kind", "kind"), ("size", "size"), ("depth", "depth_fraction", ".2f"),
                   ("sigma", "sigma", ".3f"), ("fit error", "error", ".3f"),
                   ("variance entropy", "entropy", ".3f"), ("filters", "frozen"))
        return ["## Spatial convolutions", "",
                "Closed-form covariance fitted by sigma (Trockman et al., Eq. 10-11), filter variance "
                f"entropy (Gavrikov & Keuper, Sec. 4.2). A fit error above {STRUCTURED_ERROR} means no "
                f"closed form describes the layer (independent weights fit none better than ~0.95). "
                f"Sigma grows with depth: {verdict}.", "",
                format_table(rows, columns), ""]


def inspect(model, *, data=None):
    """The :class:`InspectionReport` of a built ``model`` (see the module docstring).

    Args:
        model: a built ``keras.Model`` (the package's, keras.applications, KerasHub or your own).
        data: optional images ``(N, H, W, C)``, scaled as the model's input is, for the first
            layer's alignment with the data.

    Example:
        >>> report = keras_structinit.inspect(model)
        >>> print(report.to_markdown())
    """
    walker.check_model(model)
    spatial, covariances = _spatial(model)
    report = InspectionReport(model=model.name, layers=_layers(model), spatial=spatial, mlp=_mlp(model),
                              arrays={"covariances": covariances})
    if data is not None:
        if not hasattr(data, "shape"):
            raise TypeError(f"`data` must be an image array (N, H, W, C). Received: {type(data).__name__}")
        report.first_layer, arrays = _first_layer(model, data)
        report.arrays.update(arrays)
    return report
