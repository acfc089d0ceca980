"""Held-out splits and random subsets of labelled arrays.

* :func:`stratified_split`: the indices of a validation hold-out of each class;
* ``_split``, ``_random_subset``, ``_check_train_size``: what the CIFAR loaders
  (:mod:`.cifar`) split, subsample and bound their training images with.

NumPy only.
"""

from __future__ import annotations

import numpy as np

from keras_structinit.utils import validation


def stratified_split(y, validation_split, seed=0):
    """Indices ``(train, val)`` holding out ``round(split * count)`` per class.

    Validation samples are drawn per class (classes in sorted order) with
    ``numpy.random.default_rng(seed)``; both index arrays are sorted, so the
    two subsets keep the source order.
    """
    validation_split = validation.rate(validation_split, "validation_split")
    y = np.asarray(y).reshape(-1)
    if validation_split == 0.0:
        return np.arange(len(y)), np.empty((0,), dtype=np.int64)
    rng = np.random.default_rng(seed)
    held_out = []
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        count = round(validation_split * len(members))
        held_out.append(rng.choice(members, size=count, replace=False))
    val = np.sort(np.concatenate(held_out)).astype(np.int64)
    mask = np.ones(len(y), dtype=bool)
    mask[val] = False
    return np.flatnonzero(mask), val


def _random_subset(count, size, seed):
    """Indices of ``size`` of ``count`` items (all when fewer) in random order, from ``default_rng(seed)``."""
    return np.random.default_rng(seed).permutation(count)[:size]


def _check_train_size(train_size, available, validation_split, train_offset=0):
    """``ValueError`` when ``train_offset + train_size`` asks for more images than the ``available`` ones."""
    held = f" after holding out {validation_split:g} for validation" if validation_split else ""
    if train_offset and train_offset + (train_size or 1) > available:
        raise ValueError(
            f"`train_offset` + `train_size` must be at most the {available} training images the data "
            f"holds{held}. Received: train_offset={train_offset}, train_size={train_size}"
        )
    if train_size is not None and train_size > available:
        raise ValueError(
            f"`train_size` must be at most the {available} training images the data holds{held}. "
            f"Received: train_size={train_size}"
        )


def _split(x, y, validation_split, seed):
    train, val = stratified_split(y, validation_split, seed)
    return (x[train], y[train]), (x[val], y[val])
