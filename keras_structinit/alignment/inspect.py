"""The data-aligned paper's section of ``structinit inspect``: with ``data``, the first plain
conv's patch covariance spectrum, the layer's misalignment with it (Maennel et al., Prop. 2)
against a random basis, and its transfer function ``tau_i^2 = v_i^T Sigma_w v_i`` over the
data's eigenvectors (Sec. 2.3, Eq. (2); App. A.8, Fig. 4); and the ``specialization`` section:
with ``data``, how often the neurons of every conv and Dense layer are activated and how often
those the model's last Dense layer reads are (App. F, A.11, Figs. 7 and 10-11) and, with labels,
how class-selective the latter are (:mod:`.specialization`, :mod:`.activations`)."""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_structinit.alignment.activations import activation_targets, layer_activations
from keras_structinit.alignment.apply import conv_targets, layer_inputs, weight_covariance
from keras_structinit.alignment.measures import misalignment, random_basis, transfer_function
from keras_structinit.alignment.patches import patch_covariance
from keras_structinit.alignment.specialization import (
    activation_counts,
    activation_summary,
    class_rates,
    class_selectivity,
    fraction_histogram,
    neuron_fractions,
)
from keras_structinit.engine import walker
from keras_structinit.methods.inspection import FIGURE_FILTERS, Section, images_and_labels, values
from keras_structinit.utils.reporting import format_table

__all__ = ["FirstLayerSection", "SpecializationSection", "first_layer", "specialization"]

#: Bins of [0, 1] of the specialization section's histograms (Figs. 10-11's distributions).
BINS = 10


class FirstLayerSection(Section):
    """``report.first_layer``: a dict, ``None`` when inspected without data or without a plain
    ``Conv2D``."""

    def markdown(self):
        if not self.value:
            return []
        f = self.value
        top = ", ".join(f"{v:.3g}" for v in f["spectrum"][:5])
        measured = (
            f"misalignment with the data's patch covariance {f['misalignment']:.4g} (a random "
            f"basis: {f['random_baseline']:.4g}; Maennel et al., Prop. 2)"
            if f["note"] is None
            else f"no misalignment: {f['note']}"
        )
        tau = ", ".join(f"{v:.3g}" for v in f["transfer"][:5])
        return [
            "## First layer and the data",
            "",
            f"`{f['path']}`: {measured}; the five largest patch eigenvalues {top}.",
            "",
            f"Transfer function tau_i^2 = v_i^T Sigma_w v_i along the data's eigenvectors, largest "
            f"eigenvalue first (Maennel et al., Sec. 2.3, App. A.8): {tau}, ... (mean over all "
            f"{len(f['transfer'])}: {np.mean(f['transfer']):.3g}).",
            "",
        ]

    def figures(self, directory, *, overwrite=False):
        """``first_layer.png``: the first layer's filters above the data's top patch-covariance
        eigenvectors (the random-label paper's Fig. 2 view); ``transfer_function.png``:
        ``tau_i^2`` against the eigenvalue index and against ``sigma_i^2`` (Fig. 4, App. A.8)."""
        if not self.value or "eigenvectors" not in self.arrays:
            return []
        from keras_structinit.utils import viz

        filters, eigenvectors = self.arrays["filters"], self.arrays["eigenvectors"]
        written = [
            viz.plot_filters(
                [filters, eigenvectors],
                [
                    f"{self.value['layer']}: its first {filters.shape[-1]} filters",
                    f"the data's top {eigenvectors.shape[-1]} patch-covariance eigenvectors",
                ],
                os.path.join(directory, "first_layer.png"),
                num_filters=FIGURE_FILTERS,
                rgb=filters.shape[2] == 3,
                overwrite=overwrite,
            )
        ]
        return [
            *written,
            _plot_transfer(self.value, os.path.join(directory, "transfer_function.png"), overwrite),
        ]


def _plot_transfer(value, path, overwrite):
    """tau_i^2 over the eigenvalue index (1 = largest) and over sigma_i^2 (log scale)."""
    from keras_structinit.utils import viz

    plt = viz.pyplot()
    sigma2, tau2 = np.asarray(value["spectrum"]), np.asarray(value["transfer"])
    fig, (by_index, by_value) = plt.subplots(1, 2, figsize=(9, 3.2))
    by_index.plot(np.arange(1, len(tau2) + 1), tau2, marker="o", ms=3)
    by_index.set_xlabel("eigenvector i of the data's patch covariance (1 = largest eigenvalue)")
    positive = sigma2 > 0
    by_value.plot(sigma2[positive], tau2[positive], marker="o", ms=3, ls="none")
    by_value.set_xscale("log")
    by_value.set_xlabel("sigma_i^2 (eigenvalue)")
    by_index.set_ylabel("tau_i^2 = v_i^T Sigma_w v_i")
    by_value.set_ylabel("tau_i^2")
    for ax in (by_index, by_value):
        ax.grid(alpha=0.3)
    viz.suptitle(
        fig,
        f"{value['layer']}: the filters' variance along the data's eigenvectors "
        "(Maennel et al., Fig. 4 / App. A.8)",
    )
    return viz.save_figure(fig, path, overwrite)


def first_layer(model, *, data, parts):
    """The :class:`FirstLayerSection` of ``model`` against ``data`` (images ``(N, H, W, C)``, or
    ``(images, labels)``: labels unused; ``None``: an empty section); ``parts`` unused."""
    images, _ = images_and_labels(data)
    if images is None:
        return FirstLayerSection(None)
    images = np.asarray(keras.ops.convert_to_numpy(images), dtype=np.float32)
    if images.ndim != 4:
        raise ValueError(f"`data` must be images (N, H, W, C). Received shape {images.shape}")
    try:
        ((layer, kernel),) = conv_targets(model, 1)
    except ValueError:  # no plain Conv2D (an LCResNet, an MLP): nothing to align with the data
        return FirstLayerSection(None)
    inputs = layer_inputs(model, layer, images)  # what the conv sees: after any Rescaling or stem before it
    eigvals, eigvecs = patch_covariance(inputs, layer.kernel_size)
    sigma_x = (eigvecs * eigvals) @ eigvecs.T
    sigma_w = weight_covariance(layer)
    row = {
        "path": kernel.path,
        "layer": layer.name,
        "misalignment": None,
        "random_baseline": None,
        "spectrum": [float(v) for v in eigvals],
        "transfer": [float(v) for v in transfer_function(sigma_x, sigma_w)[1]],
        "note": None,
    }
    shape = (*layer.kernel_size, kernel.shape[2], -1)  # eigenvectors in a Conv2D kernel's flatten order
    arrays = {
        "filters": values(kernel)[..., :FIGURE_FILTERS],
        "eigenvectors": eigvecs[:, :FIGURE_FILTERS].reshape(shape),
    }
    try:
        row["misalignment"] = float(misalignment(sigma_x, sigma_w))
        basis = random_basis(len(eigvals), seed=0)
        row["random_baseline"] = float(misalignment(sigma_x, sigma_w, basis=basis))
    except ValueError as err:  # fewer filters than weights per filter: Sigma_w is singular
        row["note"] = str(err)
    return FirstLayerSection(row, arrays)


class SpecializationSection(Section):
    """``report.specialization``: a dict, ``None`` without data or without a conv or Dense layer.

    ``layers``: a row per conv and Dense layer, in model order (Figs. 10-11: every intermediate
    layer): what was counted as its activation (:mod:`.activations`), its neurons, ``active`` (the
    fraction of (neuron, image) pairs above 0: Fig. 24's frequency), ``dead_neurons`` and the two
    histograms. The other keys: the neurons the last Dense layer reads (the outer hidden layer of
    App. F), with labels split by class; ``None`` without a Dense layer."""

    def markdown(self):
        if not self.value:
            return []
        f = self.value
        lines = []
        if f["layer"] is not None:
            lines += [
                "## Specialization of the last hidden neurons",
                "",
                f"The {f['neurons']} neurons that `{f['layer']}` reads, on {f['examples']} images "
                "(a neuron is activated when its value is above 0; Maennel et al., App. F, A.11, "
                f"Figs. 7, 10-11): on average {f['mean_neuron_fraction']:.3f} of the images activate "
                f"a neuron, {f['dead_neurons']:.3f} of the neurons are activated by none, and an image "
                f"activates {f['mean_example_fraction']:.3f} of the neurons.",
            ]
            if f["classes"]:
                lines.append(
                    f"Split by the {f['classes']} classes: mean class selectivity "
                    f"{f['mean_class_selectivity']:.3f} (0: a neuron fires alike for every class, "
                    f"1: for one only); {f['selective_neurons']:.3f} of the neurons above 0.5."
                )
            lines.append("")
        columns = (
            ("layer", "layer"),
            ("kind", "kind"),
            ("activation counted", "measured"),
            ("neurons", "neurons"),
            ("active", "active", ".3f"),
            ("dead neurons", "dead_neurons", ".3f"),
        )
        return [
            *lines,
            "## Activations of every conv and Dense layer",
            "",
            f"On {f['layers'][0]['examples']} images, each layer's neurons (every value of its "
            "activation: for a conv, a channel at a position) and how often they are above 0: `active` "
            "is the fraction of (neuron, image) pairs, the frequency Fig. 24 follows over training "
            "(`callbacks.RecordSpecialization`), `dead neurons` the share no image activates "
            "(Maennel et al., App. F, Figs. 10-11).",
            "",
            format_table(f["layers"], columns),
            "",
        ]

    def figures(self, directory, *, overwrite=False):
        """``specialization.png``: the neurons over the fraction of images activating them and the
        images over the fraction of neurons they activate (Figs. 7, 10-11) for the last Dense
        layer's inputs, with labels the neurons over their class selectivity; below, both
        distributions for every conv and Dense layer, one row of each map per layer."""
        if not self.value:
            return []
        from keras_structinit.utils import viz

        f = self.value
        panels = []
        if f["layer"] is not None:
            panels = [
                ("fraction of images activating a neuron", f["neuron_histogram"], "share of neurons"),
                ("fraction of neurons an image activates", f["example_histogram"], "share of images"),
            ]
            if f["classes"]:
                panels.append(
                    ("class selectivity of a neuron", f["selectivity_histogram"], "share of neurons")
                )
        measured = [row for row in f["layers"] if row["neurons"] is not None]
        plt = viz.pyplot()
        columns = max(len(panels), 2)
        rows = (1 if panels else 0) + (1 if measured else 0)
        height = 3.0 * bool(panels) + (1.2 + 0.22 * len(measured)) * bool(measured)
        fig, axes = plt.subplots(
            rows, columns, figsize=(4.2 * columns, height), squeeze=False, layout="constrained"
        )  # the layer names and colorbars laid out
        edges = np.linspace(0.0, 1.0, BINS + 1)
        if panels:
            for ax, (xlabel, shares, ylabel) in zip(axes[0], panels, strict=False):
                ax.bar(edges[:-1], shares, width=1.0 / BINS, align="edge", edgecolor="k", lw=0.4)
                ax.set_xlim(0, 1)
                ax.set_xlabel(xlabel, fontsize=8)
                ax.set_ylabel(ylabel, fontsize=8)
                ax.set_title(f"inputs of {f['layer']}", fontsize=8)
            for ax in axes[0][len(panels) :]:
                ax.axis("off")
        if measured:
            names = [row["layer"] for row in measured]
            for ax, key, xlabel in zip(
                axes[-1],
                ("neuron_histogram", "example_histogram"),
                (
                    "fraction of images activating a neuron\n(colour: share of neurons)",
                    "fraction of neurons an image activates\n(colour: share of images)",
                ),
                strict=False,
            ):
                image = ax.imshow(
                    np.array([row[key] for row in measured]),
                    aspect="auto",
                    cmap="viridis",
                    vmin=0.0,
                    vmax=1.0,
                    extent=(0.0, 1.0, len(measured) - 0.5, -0.5),
                )
                ax.set_yticks(range(len(names)), names, fontsize=6)
                ax.set_xlabel(xlabel, fontsize=8)
                fig.colorbar(image, ax=ax, fraction=0.04)
            for ax in axes[-1][2:]:
                ax.axis("off")
        viz.suptitle(
            fig,
            f"Neuron activations on {f['layers'][0]['examples']} images, every conv and Dense "
            "layer (Maennel et al., Figs. 7, 10-11)",
        )
        return [viz.save_figure(fig, os.path.join(directory, "specialization.png"), overwrite)]


def _last_dense(model):
    dense = [layer for layer in walker.iter_layers(model) if isinstance(layer, keras.layers.Dense)]
    return dense[-1] if dense else None


#: The keys of the last Dense layer's inputs (``None`` without a Dense layer).
_LAST_DENSE_KEYS = (
    "layer",
    "neurons",
    "examples",
    "mean_neuron_fraction",
    "dead_neurons",
    "mean_example_fraction",
    "neuron_histogram",
    "example_histogram",
    "classes",
    "mean_class_selectivity",
    "selective_neurons",
    "selectivity_histogram",
)


def _layer_row(measured):
    """A conv or Dense layer's row (see :class:`SpecializationSection`) and its arrays."""
    target = measured.target
    row = {
        "layer": target.layer.name,
        "kind": type(target.layer).__name__,
        "measured": target.what,
        "neurons": None,
        "examples": measured.examples,
        "active": None,
        "dead_neurons": None,
        "neuron_histogram": None,
        "example_histogram": None,
    }
    if measured.counts is None:
        row["measured"] = "not called when the model runs on the images"
        return row, {}
    row.update(
        neurons=int(measured.counts.size),
        **activation_summary(measured.neuron_fractions, measured.example_fractions, BINS),
    )
    return row, {
        f"neuron_fractions/{target.layer.name}": measured.neuron_fractions,
        f"example_fractions/{target.layer.name}": measured.example_fractions,
    }


class _InputCounts:
    """The last Dense layer's inputs, counted batch by batch (by class with labels)."""

    def __init__(self, labels):
        self.labels = labels
        self.classes = None if labels is None else int(labels.max(initial=0)) + 1
        self.counts, self.sizes, self.example_fractions, self.start = 0, 0, [], 0

    def __call__(self, batch):
        active = batch.reshape(len(batch), -1) > 0
        batch_labels = None if self.labels is None else self.labels[self.start : self.start + len(batch)]
        c, n = activation_counts(active, batch_labels, self.classes)
        self.counts, self.sizes, self.start = self.counts + c, self.sizes + n, self.start + len(batch)
        self.example_fractions.append(active.mean(axis=1))


def _last_dense_inputs(layer, counted, labels):
    """The dict of :data:`_LAST_DENSE_KEYS` from ``counted`` (:class:`_InputCounts`) and its arrays."""
    fractions = neuron_fractions(counted.counts, counted.sizes)
    examples = np.concatenate(counted.example_fractions).astype(np.float64)
    row = {
        "layer": layer.name,
        "neurons": int(fractions.size),
        "examples": int(len(examples)),
        "mean_neuron_fraction": float(fractions.mean()),
        "dead_neurons": float(np.mean(fractions == 0)),
        "mean_example_fraction": float(examples.mean()),
        "neuron_histogram": fraction_histogram(fractions, BINS).tolist(),
        "example_histogram": fraction_histogram(examples, BINS).tolist(),
        "classes": None,
        "mean_class_selectivity": None,
        "selective_neurons": None,
        "selectivity_histogram": None,
    }
    arrays = {"neuron_fractions": fractions, "example_fractions": examples}
    rates = class_rates(counted.counts, counted.sizes)
    if labels is not None and rates.shape[1] >= 2:
        selectivity = class_selectivity(rates)
        row.update(
            classes=int(rates.shape[1]),
            mean_class_selectivity=float(selectivity.mean()),
            selective_neurons=float(np.mean(selectivity > 0.5)),
            selectivity_histogram=fraction_histogram(selectivity, BINS).tolist(),
        )
        arrays.update(class_rates=rates, class_selectivity=selectivity)
    return row, arrays


def specialization(model, *, data, parts):
    """The :class:`SpecializationSection` of ``model`` on ``data`` (images, or ``(images, labels)``
    to split the last Dense layer's inputs by class): every conv and Dense layer's activations
    (:mod:`.activations`), and the neurons the model's last ``Dense`` layer reads (the outer
    hidden layer of App. F and Fig. 24), each value of its input one neuron; ``parts`` unused."""
    images, labels = images_and_labels(data)
    if images is None or not activation_targets(model):
        return SpecializationSection(None)
    images = np.asarray(keras.ops.convert_to_numpy(images), dtype=np.float32)
    layer = _last_dense(model)
    counted = _InputCounts(labels)
    # One forward pass per batch: every layer's activation and the last Dense layer's input.
    measured = layer_activations(model, images, input_of=layer, on_input=None if layer is None else counted)
    if layer is None:
        row, arrays = dict.fromkeys(_LAST_DENSE_KEYS), {}
    else:
        row, arrays = _last_dense_inputs(layer, counted, labels)
    row["layers"] = []
    for each in measured:
        layer_row, layer_arrays = _layer_row(each)
        row["layers"].append(layer_row)
        arrays.update(layer_arrays)
    return SpecializationSection(row, arrays)
