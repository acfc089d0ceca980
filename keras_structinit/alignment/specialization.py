"""Neuron-activation specialization (pure NumPy, float64).

Maennel et al. (App. F; App. A.11, Fig. 7 and its extended Figs. 10-11) count a neuron as
activated by an input when its activation is non-zero (Fig. 24: a ReLU's output above 0). Each
plot shows two distributions over a hold-out set: of the neurons over the fraction of inputs that
activate them, and of the inputs over the fraction of neurons they activate. Neurons of the upper
layers *specialize* during (random-label) pre-training: each is activated by fewer inputs.

Fig. 24 follows one number per layer over training: the frequency of its activations being
non-zero over a hold-out set, the mean of the neurons' fractions (:func:`activation_summary`).

With labels, the package also splits each neuron's activation frequency by class (the paper
plots none): :func:`class_selectivity` summarizes it per neuron, 0 for a neuron that fires
equally for every class and 1 for one that fires for a single class only.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "activation_counts",
    "activation_summary",
    "class_rates",
    "class_selectivity",
    "fraction_histogram",
    "neuron_fractions",
]


def _active(active):
    if isinstance(active, (str, bytes)) or active is None:
        raise TypeError(f"`active` must be an array (examples, neurons). Received: {type(active).__name__}")
    array = np.asarray(active)
    if array.ndim != 2:
        raise ValueError(f"`active` must be (examples, neurons). Received shape {array.shape}")
    return array.astype(bool) if array.dtype == bool else array > 0


def activation_counts(active, labels=None, num_classes=None):
    """How many examples of each class activate each neuron.

    Args:
        active: ``(examples, neurons)``: booleans, or activations (non-zero above 0, as a ReLU's).
        labels: optional integer class of each example ``(examples,)``; ``None``: one class.
        num_classes: classes counted (default: the largest label + 1).

    Returns:
        ``(counts, sizes)``: int64 ``(classes, neurons)`` and ``(classes,)`` examples per class;
        sum them over batches to count a large set.
    """
    active = _active(active)
    if labels is None:
        return active.sum(axis=0, dtype=np.int64)[None], np.array([len(active)], dtype=np.int64)
    labels = np.asarray(labels)
    if labels.shape != (len(active),) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"`labels` must be integers (examples,) = ({len(active)},). "
            f"Received {labels.dtype} of shape {labels.shape}"
        )
    if len(labels) and labels.min() < 0:
        raise ValueError(f"`labels` must be >= 0. Received a label {labels.min()}")
    classes = int(labels.max(initial=-1)) + 1 if num_classes is None else num_classes
    if len(labels) and labels.max() >= classes:
        raise ValueError(f"`labels` must be below num_classes={classes}. Received a label {labels.max()}")
    counts = np.zeros((classes, active.shape[1]), dtype=np.int64)
    np.add.at(counts, labels, active.astype(np.int64))
    return counts, np.bincount(labels, minlength=classes).astype(np.int64)


def neuron_fractions(counts, sizes):
    """``(neurons,)``: the fraction of all examples that activate each neuron (Figs. 10-11, left)."""
    total = int(np.sum(sizes))
    if total == 0:
        raise ValueError("`sizes` count no example.")
    return np.asarray(counts, dtype=np.float64).sum(axis=0) / total


def class_rates(counts, sizes):
    """``(neurons, classes)``: the fraction of each class's examples that activate each neuron,
    over the classes with examples (a class without any is left out)."""
    counts, sizes = np.asarray(counts, dtype=np.float64), np.asarray(sizes, dtype=np.float64)
    present = sizes > 0
    return (counts[present] / sizes[present, None]).T


def class_selectivity(rates):
    """``(neurons,)`` in [0, 1]: ``(r_max - r_rest) / (r_max + r_rest)`` of each neuron's
    :func:`class_rates`, ``r_rest`` the mean over the other classes (the class selectivity index of
    Morcos et al., 2018); 0 for a neuron that never fires. Needs 2 classes at least."""
    rates = np.asarray(rates, dtype=np.float64)
    if rates.ndim != 2 or rates.shape[1] < 2:
        raise ValueError(
            f"`rates` must be (neurons, classes) with 2 classes at least. Received {rates.shape}"
        )
    top = rates.max(axis=1)
    rest = (rates.sum(axis=1) - top) / (rates.shape[1] - 1)
    total = top + rest
    return np.divide(top - rest, total, out=np.zeros_like(total), where=total > 0)


def fraction_histogram(fractions, bins=10):
    """The share of neurons (or examples) in each of ``bins`` equal bins of [0, 1] (Figs. 10-11)."""
    fractions = np.asarray(fractions, dtype=np.float64)
    if fractions.size == 0:
        raise ValueError("`fractions` is empty.")
    counts, _ = np.histogram(np.clip(fractions, 0.0, 1.0), bins=bins, range=(0.0, 1.0))
    return counts / fractions.size


def activation_summary(neuron_fraction, example_fraction, bins=10):
    """One layer's activation statistics from its neurons' fractions (:func:`neuron_fractions`)
    and its examples' (the fraction of the layer's neurons each example activates):

    ``active``: the fraction of (neuron, example) pairs with the neuron activated, the frequency
    Fig. 24 plots (the mean of either fraction); ``dead_neurons``: the share of neurons no example
    activates; ``neuron_histogram``, ``example_histogram``: :func:`fraction_histogram` of each
    (Figs. 10-11's two columns)."""
    neuron_fraction = np.asarray(neuron_fraction, dtype=np.float64)
    example_fraction = np.asarray(example_fraction, dtype=np.float64)
    neuron_histogram = fraction_histogram(neuron_fraction, bins).tolist()  # refuses an empty layer
    return {
        "active": float(neuron_fraction.mean()),
        "dead_neurons": float(np.mean(neuron_fraction == 0)),
        "neuron_histogram": neuron_histogram,
        "example_histogram": fraction_histogram(example_fraction, bins).tolist(),
    }
