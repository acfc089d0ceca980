"""Neuron-activation specialization (Maennel et al., App. F, A.11, Figs. 7 and 10-11)."""

import numpy as np
import pytest

from keras_structinit.alignment.specialization import (
    activation_counts,
    activation_summary,
    class_rates,
    class_selectivity,
    fraction_histogram,
    neuron_fractions,
)

from conftest import once_per_suite

pytestmark = once_per_suite("pure NumPy, the same on every backend")


def synthetic():
    """Three classes, 60 examples: neuron 0 fires for class 1 only, neuron 1 for every example,
    neuron 2 never, neuron 3 for half of each class."""
    labels = np.repeat(np.arange(3), 20)
    activations = np.zeros((60, 4))
    activations[labels == 1, 0] = 2.5
    activations[:, 1] = 0.1
    activations[::2, 3] = 1.0
    activations[1::2, 3] = -1.0  # a negative value is not an activation
    return activations, labels


def test_a_neuron_that_fires_for_one_class_only_is_fully_selective():
    activations, labels = synthetic()
    counts, sizes = activation_counts(activations, labels)
    np.testing.assert_array_equal(sizes, [20, 20, 20])
    np.testing.assert_array_equal(counts[:, 0], [0, 20, 0])
    np.testing.assert_allclose(neuron_fractions(counts, sizes), [1 / 3, 1.0, 0.0, 0.5])
    rates = class_rates(counts, sizes)
    np.testing.assert_allclose(rates[0], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(class_selectivity(rates), [1.0, 0.0, 0.0, 0.0])


def test_counts_add_over_batches_and_ignore_empty_classes():
    activations, labels = synthetic()
    whole = activation_counts(activations, labels, num_classes=5)
    halves = [
        activation_counts(activations[s], labels[s], num_classes=5) for s in (slice(0, 30), slice(30, 60))
    ]
    np.testing.assert_array_equal(whole[0], halves[0][0] + halves[1][0])
    assert class_rates(*whole).shape == (4, 3)  # classes 3 and 4 have no example
    counts, sizes = activation_counts(activations > 0)  # no labels: one class
    assert counts.shape == (1, 4) and sizes.tolist() == [60]


def test_partial_selectivity_and_histograms():
    # rates 0.8 for one class, 0.2 for the two others: (0.8 - 0.2) / (0.8 + 0.2) = 0.6
    assert class_selectivity([[0.8, 0.2, 0.2]])[0] == pytest.approx(0.6)
    np.testing.assert_allclose(fraction_histogram([0.0, 0.05, 0.5, 1.0], bins=2), [0.5, 0.5])
    np.testing.assert_allclose(fraction_histogram([0.0, 0.31, 1.0], bins=10).sum(), 1.0)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="`active` must be \\(examples, neurons\\)"):
        activation_counts(np.ones(3))
    with pytest.raises(TypeError, match="`active`"):
        activation_counts(None)
    with pytest.raises(ValueError, match="`labels` must be integers"):
        activation_counts(np.ones((3, 2)), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="below num_classes=2"):
        activation_counts(np.ones((3, 2)), np.array([0, 1, 2]), num_classes=2)
    with pytest.raises(ValueError, match="2 classes at least"):
        class_selectivity(np.ones((3, 1)))


def test_a_layers_summary_is_the_mean_the_dead_share_and_both_histograms():
    """Fig. 24's frequency is the mean over (neuron, example) pairs: the mean of either fraction."""
    activations, _ = synthetic()
    active = activations > 0
    neuron, example = active.mean(axis=0), active.mean(axis=1)
    summary = activation_summary(neuron, example, bins=4)
    assert summary["active"] == pytest.approx(active.mean()) == pytest.approx(example.mean())
    assert summary["dead_neurons"] == pytest.approx(0.25)  # neuron 2 never fires
    assert summary["neuron_histogram"] == pytest.approx([0.25, 0.25, 0.25, 0.25])  # 0, 1/3, 1/2, 1
    assert summary["example_histogram"] == fraction_histogram(example, 4).tolist()
    with pytest.raises(ValueError, match="empty"):
        activation_summary([], example)
