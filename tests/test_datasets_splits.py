"""Tests of keras_structinit.datasets.splits: the stratified validation hold-out, through
``stratified_split`` and the loaders that use it (NumPy only, any backend)."""

import numpy as np
import pytest
from test_datasets_folders import _make_tree

from keras_structinit import datasets


@pytest.mark.parametrize("split", [0.1, 0.25, 0.5, 0.9])
def test_validation_split(tmp_path, split):
    counts = (10, 7, 3, 20)
    y = np.repeat(np.arange(len(counts)), counts)
    # Each image stores its own index in a pixel, to trace it through the split.
    ids = np.arange(len(y))
    x = np.zeros((len(y), 32, 32, 3), np.uint8)
    x[:, 0, 0, 0] = ids
    path = tmp_path / "data.npz"
    np.savez(path, x=x, y=y)

    def split_ids(seed):
        (xt, yt), (xv, yv) = datasets.load_cifar10(path, validation_split=split, seed=seed)
        tid, vid = xt[:, 0, 0, 0].astype(int), xv[:, 0, 0, 0].astype(int)
        np.testing.assert_array_equal(yt, y[tid])
        np.testing.assert_array_equal(yv, y[vid])
        return tid, vid

    train, val = split_ids(0)
    for k, n in enumerate(counts):
        assert np.sum(y[val] == k) == round(split * n)
        assert np.sum(y[train] == k) == n - round(split * n)
    assert not set(train) & set(val)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, val])), ids)
    assert np.all(np.diff(train) > 0) and np.all(np.diff(val) > 0)  # source order
    again_train, again_val = split_ids(0)
    np.testing.assert_array_equal(again_val, val)
    np.testing.assert_array_equal(again_train, train)
    others = [split_ids(seed)[1] for seed in (1, 2, 3)]
    assert any(not np.array_equal(other, val) for other in others)


def test_stratified_split_zero():
    train, val = datasets.stratified_split(np.array([0, 1, 1]), 0.0)
    np.testing.assert_array_equal(train, [0, 1, 2])
    assert val.shape == (0,)


@pytest.mark.parametrize(
    "split, error",
    [
        (1.0, ValueError),
        (-0.1, ValueError),
        (float("nan"), ValueError),
        (1.5, ValueError),
        ("a", TypeError),
        (None, TypeError),
        (True, TypeError),
    ],
)
def test_bad_validation_split(tmp_path, split, error):
    root = tmp_path / "images"
    _make_tree(root)
    with pytest.raises(error, match="validation_split"):
        datasets.load_cifar10(root, validation_split=split)
