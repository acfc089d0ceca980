"""Plots of filters, values over depth and learning curves (needs the ``viz`` extra).

Each function writes one image to ``path`` atomically and refuses to replace an
existing file unless ``overwrite=True`` (:func:`save_figure`, which the methods' own plots use too).
"""

from __future__ import annotations

import math
import re

import numpy as np

from keras_structinit.utils.io_utils import atomic_path, check_output


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend; an ``ImportError`` naming the extra without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - exercised without the extra
        raise ImportError("Plotting needs matplotlib: pip install 'keras-structinit[viz]'") from e
    return plt


#: Where :func:`wrap_label` may break a line: at a space, or after ``_`` or ``/`` that follow a
#: character (between the words of a layer name or a variable path).
_PIECES = re.compile(r"[^\s_/]+[_/]+(?=\S)|\S+|\s+")


def wrap_label(text, width):
    """``text`` in lines of at most ``width`` characters, broken only at spaces and after ``_`` or
    ``/`` (a layer name breaks between its words); a word longer than ``width`` keeps a line of its
    own, whole. Lines ``text`` already has stay apart."""
    lines = []
    for line in str(text).split("\n"):
        current = ""
        for piece in _PIECES.findall(line):
            if current and len(current) + len(piece.rstrip()) > width:
                lines.append(current.rstrip())
                current = piece.lstrip()
            else:
                current += piece
        lines.append(current.rstrip())
    return "\n".join(lines)


def _characters(inches, fontsize):
    """About how many characters of ``fontsize`` points fit in ``inches`` (DejaVu Sans)."""
    return max(12, int(inches * 72 / (0.6 * fontsize)))


def set_title(ax, text, fontsize):
    """``ax``'s title, wrapped at word boundaries (:func:`wrap_label`) to the axes' width."""
    fig = ax.get_figure()
    width = fig.get_figwidth() * ax.get_position().width
    ax.set_title(wrap_label(text, _characters(width, fontsize)), fontsize=fontsize)


def suptitle(fig, text, fontsize=9):
    """``fig``'s title, wrapped at word boundaries (:func:`wrap_label`) to the figure's width."""
    fig.suptitle(wrap_label(text, _characters(fig.get_figwidth(), fontsize)), fontsize=fontsize)


def save_figure(fig, path, overwrite):
    """Writes ``fig`` to ``path`` atomically (refused where a file exists, unless ``overwrite``) and
    closes it; returns ``path``."""
    plt = pyplot()
    try:
        check_output(path, "path", overwrite=overwrite)
    except ValueError:
        plt.close(fig)
        raise
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return str(path)


METRIC_LABELS = {
    "loss": "training loss",
    "accuracy": "training accuracy",
    "val_loss": "validation loss",
    "val_accuracy": "validation accuracy",
}


def _filter_grid(filters, cols, rows):
    """``filters`` ``(kh, kw, n)`` or ``(kh, kw, 3, n)`` (colour) tiled ``rows x cols``, one pixel
    apart, each scaled by its largest magnitude to [-1, 1]; NaN between tiles."""
    kh, kw = filters.shape[:2]
    channels = filters.shape[2:-1]
    grid = np.full((rows * (kh + 1), cols * (kw + 1), *channels), np.nan, dtype=np.float32)
    for n in range(filters.shape[-1]):
        r, c = divmod(n, cols)
        f = filters[..., n]
        tile = (slice(r * (kh + 1), r * (kh + 1) + kh), slice(c * (kw + 1), c * (kw + 1) + kw))
        grid[tile] = f / (np.abs(f).max() + 1e-12)
    return grid


def plot_filters(kernels, titles, path, num_filters=32, title=None, overwrite=False, rgb=False):
    """The first ``num_filters`` filters of each kernel ``(kh, kw, a, b)``, each scaled to [-1, 1]
    (the colorbar's scale).

    ``rgb=False`` draws every 2-D slice ``kernel[:, :, i, j]``; ``rgb=True`` draws each of the ``b``
    filters of a kernel with ``a = 3`` input channels as one colour image (0 maps to grey), as the
    random-label paper shows first-layer filters and the data's eigenvectors (Maennel et al., Fig. 2).
    """
    plt = pyplot()
    cols = 8
    rows = math.ceil(num_filters / cols)
    fig, axes = plt.subplots(
        len(kernels), 1, figsize=(cols * 0.9, len(kernels) * (rows * 0.9 + 0.4)), squeeze=False
    )
    image = None
    for ax, kernel, panel_title in zip(axes[:, 0], kernels, titles, strict=True):
        kernel = np.asarray(kernel, dtype=np.float32)
        kh, kw = kernel.shape[:2]
        if rgb:
            if kernel.ndim != 4 or kernel.shape[2] != 3:
                raise ValueError(f"`rgb=True` needs kernels (kh, kw, 3, b). Received shape {kernel.shape}")
            grid = _filter_grid(kernel[..., :num_filters], cols, rows)
            ax.imshow(np.nan_to_num((grid + 1) / 2, nan=1.0), interpolation="nearest")
        else:
            grid = _filter_grid(kernel.reshape(kh, kw, -1)[..., :num_filters], cols, rows)
            image = ax.imshow(grid, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
        set_title(ax, panel_title, 9)
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes[:, 0].tolist(), shrink=0.8, label="weight / max |weight| of its filter")
    if title:
        suptitle(fig, title)
    return save_figure(fig, path, overwrite)


def plot_over_depth(panels, path, title=None, overwrite=False):
    """One panel per quantity, one line per series, against relative depth in [0, 1].

    ``panels``: ``{y label: {series label: (depths, values)}}``, e.g. the fitted ``sigma`` and the
    variance entropy of the depthwise and the ``k x k`` convs (the covariance paper's Fig. 6 view).
    """
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.2), squeeze=False)
    for ax, (label, series) in zip(axes[0], panels.items(), strict=True):
        for name, (depths, values) in series.items():
            ax.plot(depths, values, marker="o", label=name)
        ax.set_xlabel("depth (0 = first layer of its kind, 1 = last)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=8)
    if title:
        suptitle(fig, title)
    return save_figure(fig, path, overwrite)


def plot_heatmaps(
    maps, titles, path, *, title=None, label=None, symmetric=False, limit=None, cmap=None, overwrite=False
):
    """2-D arrays side by side, one shared colour scale and a colorbar (``label``).

    ``symmetric``: a diverging scale centred on 0 (covariances); otherwise from 0 to the largest
    value (variances). ``limit``: the scale's end instead of the largest magnitude (larger values
    saturate). Maps up to 9 x 9 show their values in the cells.
    """
    plt = pyplot()
    maps = [np.asarray(m, dtype=np.float64) for m in maps]
    fig, axes = plt.subplots(
        1, len(maps), figsize=(3.0 * len(maps) + 0.8, 3.4), squeeze=False, layout="constrained"
    )  # wrapped titles and the colorbar laid out
    peak = limit or max(float(np.nanmax(np.abs(m))) for m in maps) or 1.0
    low, high = (-peak, peak) if symmetric else (0.0, peak)
    cmap = cmap or ("RdBu_r" if symmetric else "viridis")
    for ax, array, panel_title in zip(axes[0], maps, titles, strict=True):
        image = ax.imshow(array, cmap=cmap, vmin=low, vmax=high, interpolation="nearest")
        if max(array.shape) <= 9:
            for (r, c), v in np.ndenumerate(array):
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=6, color="w")
        set_title(ax, panel_title, 8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=list(axes[0]), shrink=0.8, label=label)
    if title:
        suptitle(fig, title)
    return save_figure(fig, path, overwrite)


def plot_learning_curves(histories, path, metrics=("val_accuracy", "loss"), title=None, overwrite=False):
    """One panel per metric, one line per run (``{name: history_dict}``), epochs counted from 1.

    ``title``: a line above the panels, e.g. which data the runs used.
    """
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for name, history in histories.items():
            values = history.get(metric)
            if values:
                ax.plot(range(1, len(values) + 1), values, marker="o", label=name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        suptitle(fig, title)
    return save_figure(fig, path, overwrite)
