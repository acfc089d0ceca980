"""Filter covariances drawn in block form (Fig. 5 of Trockman et al.; needs the ``viz`` extra)."""

from __future__ import annotations

import numpy as np

from keras_structinit.covariance.closed_form import vector_to_block
from keras_structinit.utils import viz

__all__ = ["plot_covariances"]


def plot_covariances(covariances, kernel_size, titles, path, title=None, overwrite=False):
    """Block-form covariances side by side, as in Fig. 5 of Trockman et al.

    Each panel is one ``(kh kw) x (kh kw)`` covariance drawn as ``kh x kw``
    blocks: block ``(i, j)`` shows the covariance of pixel ``(i, j)`` with
    every pixel of the filter, laid out as a ``kh x kw`` image; thin lines
    separate blocks. One shared, symmetric colour scale with a colorbar.

    Args:
        covariances: list of vector-form ``Sigma'`` matrices.
        kernel_size: ``(kh, kw)`` or int.
        titles: one title per matrix.
        path: output image path.
        title: a line above the panels (default: how to read them).
        overwrite: replace an existing file at ``path`` (otherwise a ``ValueError``).
    """
    plt = viz.pyplot()
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    fig, axes = plt.subplots(1, len(covariances), figsize=(3.2 * len(covariances) + 0.8, 3.8), squeeze=False)
    blocks = [vector_to_block(cov, (kh, kw)) for cov in covariances]
    limit = max(np.abs(b).max() for b in blocks)
    for ax, block, panel_title in zip(axes[0], blocks, titles, strict=True):
        image = ax.imshow(block, cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        for b in range(1, kh):
            ax.axhline(b * kh - 0.5, color="k", lw=0.3)
        for b in range(1, kw):
            ax.axvline(b * kw - 0.5, color="k", lw=0.3)
        ax.set_title(panel_title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=list(axes[0]), shrink=0.8, label="covariance")
    fig.suptitle(
        title
        or f"{kh * kw}x{kh * kw} filter covariance drawn as {kh}x{kw} blocks: "
        f"block (i, j) = covariance of pixel (i, j) with every pixel",
        fontsize=9,
    )
    return viz.save_figure(fig, path, overwrite)
