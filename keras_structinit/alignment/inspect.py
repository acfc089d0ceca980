"""The data-aligned paper's section of ``structinit inspect``: with ``data``, the first plain
conv's patch covariance spectrum, the layer's misalignment with it (Maennel et al., Prop. 2)
against a random basis, and its transfer function ``tau_i^2 = v_i^T Sigma_w v_i`` over the
data's eigenvectors (Sec. 2.3, Eq. (2); App. A.8, Fig. 4)."""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_structinit.alignment.apply import conv_targets, layer_inputs, weight_covariance
from keras_structinit.alignment.misalignment import misalignment, random_basis, transfer_function
from keras_structinit.alignment.patches import patch_covariance
from keras_structinit.inspection import FIGURE_FILTERS, Section, values

__all__ = ["FirstLayerSection", "first_layer"]


class FirstLayerSection(Section):
    """``report.first_layer``: a dict, ``None`` when inspected without data."""

    def markdown(self):
        if not self.value:
            return []
        f = self.value
        top = ", ".join(f"{v:.3g}" for v in f["spectrum"][:5])
        measured = (f"misalignment with the data's patch covariance {f['misalignment']:.4g} (a random "
                    f"basis: {f['random_baseline']:.4g}; Maennel et al., Prop. 2)" if f["note"] is None
                    else f"no misalignment: {f['note']}")
        tau = ", ".join(f"{v:.3g}" for v in f["transfer"][:5])
        return ["## First layer and the data", "",
                f"`{f['path']}`: {measured}; the five largest patch eigenvalues {top}.", "",
                f"Transfer function tau_i^2 = v_i^T Sigma_w v_i along the data's eigenvectors, largest "
                f"eigenvalue first (Maennel et al., Sec. 2.3, App. A.8): {tau}, ... (mean over all "
                f"{len(f['transfer'])}: {np.mean(f['transfer']):.3g}).", ""]

    def figures(self, directory, *, overwrite=False):
        """``first_layer.png``: the first layer's filters above the data's top patch-covariance
        eigenvectors (the random-label paper's Fig. 2 view); ``transfer_function.png``:
        ``tau_i^2`` against the eigenvalue index and against ``sigma_i^2`` (Fig. 4, App. A.8)."""
        if not self.value or "eigenvectors" not in self.arrays:
            return []
        from keras_structinit import viz

        filters, eigenvectors = self.arrays["filters"], self.arrays["eigenvectors"]
        written = [viz.plot_filters(
            [filters, eigenvectors],
            [f"{self.value['layer']}: its first {filters.shape[-1]} filters",
             f"the data's top {eigenvectors.shape[-1]} patch-covariance eigenvectors"],
            os.path.join(directory, "first_layer.png"), num_filters=FIGURE_FILTERS, rgb=filters.shape[2] == 3,
            overwrite=overwrite)]
        return [*written, _plot_transfer(self.value, os.path.join(directory, "transfer_function.png"),
                                         overwrite)]


def _plot_transfer(value, path, overwrite):
    """tau_i^2 over the eigenvalue index (1 = largest) and over sigma_i^2 (log scale)."""
    from keras_structinit import viz

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
    fig.suptitle(f"{value['layer']}: the filters' variance along the data's eigenvectors "
                 "(Maennel et al., Fig. 4 / App. A.8)", fontsize=9)
    return viz.save_figure(fig, path, overwrite)


def first_layer(model, *, data, parts):
    """The :class:`FirstLayerSection` of ``model`` against ``data`` (images ``(N, H, W, C)``; ``None``:
    an empty section); ``parts`` unused."""
    if data is None:
        return FirstLayerSection(None)
    images = np.asarray(keras.ops.convert_to_numpy(data), dtype=np.float32)
    if images.ndim != 4:
        raise ValueError(f"`data` must be images (N, H, W, C). Received shape {images.shape}")
    (layer, kernel), = conv_targets(model, 1)
    inputs = layer_inputs(model, layer, images)  # what the conv sees: after any Rescaling or stem before it
    eigvals, eigvecs = patch_covariance(inputs, layer.kernel_size)
    sigma_x = (eigvecs * eigvals) @ eigvecs.T
    sigma_w = weight_covariance(layer)
    row = {"path": kernel.path, "layer": layer.name, "misalignment": None, "random_baseline": None,
           "spectrum": [float(v) for v in eigvals],
           "transfer": [float(v) for v in transfer_function(sigma_x, sigma_w)[1]], "note": None}
    shape = (*layer.kernel_size, kernel.shape[2], -1)  # eigenvectors in a Conv2D kernel's flatten order
    arrays = {"filters": values(kernel)[..., :FIGURE_FILTERS],
              "eigenvectors": eigvecs[:, :FIGURE_FILTERS].reshape(shape)}
    try:
        row["misalignment"] = float(misalignment(sigma_x, sigma_w))
        basis = random_basis(len(eigvals), seed=0)
        row["random_baseline"] = float(misalignment(sigma_x, sigma_w, basis=basis))
    except ValueError as err:  # fewer filters than weights per filter: Sigma_w is singular
        row["note"] = str(err)
    return FirstLayerSection(row, arrays)
