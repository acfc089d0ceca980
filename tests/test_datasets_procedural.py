"""Tests of keras_structinit.datasets.procedural: the embedded procedural image set (NumPy only, any
backend)."""

import time

import numpy as np
import pytest

from keras_structinit import datasets


def test_procedural_images_basics():
    start = time.perf_counter()
    x, y = datasets.procedural_images(10000, seed=3)
    elapsed = time.perf_counter() - start
    assert x.shape == (10000, 32, 32, 3) and x.dtype == np.uint8
    assert y.shape == (10000,) and y.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(y), [1000] * 10)
    assert elapsed < 10  # about 0.7 s on 2 busy cores; generous for CI
    x2, y2 = datasets.procedural_images(10000, seed=3)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    x3, _ = datasets.procedural_images(10000, seed=4)
    assert not np.array_equal(x, x3)


@pytest.mark.parametrize("size, classes, n", [(16, 12, 25), (48, 3, 7), (1, 1, 1)])
def test_procedural_images_shapes(size, classes, n):
    x, y = datasets.procedural_images(n, image_size=size, num_classes=classes, seed=0)
    assert x.shape == (n, size, size, 3) and y.shape == (n,)
    counts = np.bincount(y, minlength=classes)
    assert counts.max() - counts.min() <= 1 and y.max() < classes


def test_procedural_images_not_separable_by_colour():
    x, y = datasets.procedural_images(4000, seed=0)
    x = x.astype(np.float64)
    for stat in (x.mean(axis=(1, 2, 3)), x.std(axis=(1, 2, 3)), x.mean(axis=(1, 2))[:, 0]):
        class_means = np.array([stat[y == k].mean() for k in range(10)])
        within = np.mean([stat[y == k].std() for k in range(10)])
        assert class_means.std() < 0.25 * within, (class_means, within)


def test_procedural_images_have_spatial_structure():
    # Each class differs from the others in its mean power spectrum.
    x, y = datasets.procedural_images(2000, seed=0)
    gray = x.astype(np.float64).mean(axis=-1)
    gray -= gray.mean(axis=(1, 2), keepdims=True)
    power = np.abs(np.fft.fft2(gray)) ** 2
    spectra = np.stack([power[y == k].mean(axis=0).ravel() for k in range(10)])
    spectra /= np.linalg.norm(spectra, axis=1, keepdims=True)
    similarity = spectra @ spectra.T
    off_diagonal = similarity[~np.eye(10, dtype=bool)]
    assert off_diagonal.max() < 0.95


@pytest.mark.parametrize(
    "kwargs, name, error",
    [
        ({"num_samples": 0}, "num_samples", ValueError),
        ({"num_samples": 2.0}, "num_samples", TypeError),
        ({"num_samples": True}, "num_samples", TypeError),
        ({"num_samples": 4, "image_size": 0}, "image_size", ValueError),
        ({"num_samples": 4, "image_size": "32"}, "image_size", TypeError),
        ({"num_samples": 4, "num_classes": 0}, "num_classes", ValueError),
        ({"num_samples": 4, "num_classes": 13}, "num_classes", ValueError),
    ],
)
def test_procedural_images_bad_arguments(kwargs, name, error):
    with pytest.raises(error, match=name):
        datasets.procedural_images(**kwargs)
