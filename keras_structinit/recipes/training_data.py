"""The data of a training run, loaded and checked before any model is built.

:func:`prepare_data` is what ``structinit train`` (through :class:`~keras_structinit.recipes.Run`),
``structinit init`` and ``structinit inspect`` read their images with.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

from keras_structinit import datasets
from keras_structinit.recipes import native
from keras_structinit.recipes.config import RECIPES
from keras_structinit.recipes.imagenet_data import imagenet_source
from keras_structinit.recipes.training import channel_normalizer
from keras_structinit.utils import validation

__all__ = [
    "ALIGN_IMAGES",
    "TrainingData",
    "alignment_images",
    "prepare_data",
    "scaled_images",
    "scaled_labeled_images",
]

#: Training images whose patches data-aligned init measures (a seeded random subset).
ALIGN_IMAGES = 10_000


class TrainingData(NamedTuple):
    """What a run trains and evaluates on.

    ``train`` and ``validation`` are ``(x, y)`` arrays for the CIFAR recipes (an ImageFolder
    path or ``tfds:NAME`` and ``None`` for ImageNet); ``eval`` is ``(x, y)`` arrays or an
    ImageNet source, or ``None``. ``num_classes`` is the data's, never the recipe's name's.
    ``digest``: the SHA-256 of the data (:func:`~keras_structinit.datasets.arrays_digest` of the
    arrays; an ImageNet source's :func:`~keras_structinit.datasets.source_digest`, ``None`` for
    ``tfds:NAME``), which a run records to refuse a resume on other data.
    """

    train: object
    validation: object
    eval: object
    num_classes: int
    description: str
    source: str | None = None
    eval_source: str | None = None
    digest: str | None = None

    @property
    def image_shape(self):
        """``(H, W, C)`` of the CIFAR recipes' images; ``None`` for ImageNet sources."""
        return tuple(self.train[0].shape[1:]) if isinstance(self.train, tuple) else None


def prepare_data(
    recipe, data, *, seed=0, train_size=None, train_offset=0, validation_split=0.1, eval_data=None, names=None
):
    """Loads and checks a run's data: a :class:`TrainingData`.

    ``names`` (``{"data": ..., "eval_data": ...}``) is how messages call the two arguments
    (``"--data"`` on the command line). ``ValueError`` for data that is empty, corrupt, of one
    class, or smaller than ``train_size``, and for evaluation labels beyond the data's classes;
    ``FileNotFoundError`` for a missing path; ``RuntimeError`` for ``keras.datasets`` offline.
    """
    validation.one_of(recipe, "recipe", RECIPES)
    names = {"data": "data", "eval_data": "eval_data", **(names or {})}
    name, eval_name = names["data"], names["eval_data"]
    if recipe == "imagenet":
        if isinstance(data, str) and data.startswith("tfds:"):
            num_classes = imagenet_source(data, "train", 8, False, seed, name=name)[1]
        else:
            num_classes = native.count_classes(data, name)
        digest = datasets.source_digest(data)
        if digest is not None:
            digest = hashlib.sha256(f"{digest} {datasets.source_digest(eval_data)}".encode()).hexdigest()
        return TrainingData(
            data,
            None,
            eval_data,
            num_classes,
            f"ImageNet-style data from {data} ({num_classes} classes)",
            str(data),
            None if eval_data is None else str(eval_data),
            digest,
        )
    (x, y), (x_val, y_val) = datasets.load_cifar(
        data,
        recipe,
        validation_split=validation_split,
        seed=seed,
        train_size=train_size,
        train_offset=train_offset,
        name=name,
    )
    evaluation = None if eval_data is None else datasets.load_labeled_images(eval_data, eval_name)
    # The data's classes (keras.datasets' CIFAR-10/100: 10/100); a recipe's name does not set them.
    num_classes = (
        100
        if data is None and recipe == "cifar100"
        else (10 if data is None else int(max(y.max(initial=0), y_val.max(initial=0))) + 1)
    )
    if len(np.unique(y)) < 2:
        raise ValueError(
            f"{validation.quoted(name)} must hold images of 2 classes at least to train a classifier. "
            f"Received: 1 class in {data!r}"
        )
    if evaluation is not None and evaluation[1].max(initial=0) >= num_classes:
        raise ValueError(
            f"`{eval_name}` has labels up to {int(evaluation[1].max())}, beyond the "
            f"{num_classes} classes of {validation.quoted(name)}"
        )
    description = (
        f"{len(x)} training / {len(x_val)} held-out validation images "
        f"{x.shape[1]}x{x.shape[2]}, {num_classes} classes, from "
        f"{data or 'keras.datasets.' + recipe}"
        + (f"; {len(evaluation[0])} evaluation images from {eval_data}" if evaluation else "")
    )
    digest = datasets.arrays_digest(x, y, x_val, y_val, *(evaluation or (None, None)))
    return TrainingData(
        (x, y),
        (x_val, y_val) if len(x_val) else None,
        evaluation,
        num_classes,
        description,
        None if data is None else str(data),
        None if eval_data is None else str(eval_data),
        digest,
    )


def _pick(length, seed, count):
    """The sorted indices of a seeded random ``count`` of ``length`` examples."""
    return np.sort(np.random.default_rng(seed).choice(length, min(count, length), replace=False))


def _scaled(x, pick, normalization):
    """``x[pick]`` normalized with the statistics of all of ``x`` (see :func:`alignment_images`)."""
    if normalization == "raw":
        return x[pick].astype("float32")
    return channel_normalizer(x, normalization)(x[pick])


def alignment_images(x, normalization, seed, count=ALIGN_IMAGES):
    """A seeded random ``count`` of the uint8 images ``x``, normalized as :func:`fit_cifar` does
    (``"channel"``, ``"symmetric"``), or as float32 0-255 (``"raw"``)."""
    return _scaled(x, _pick(len(x), seed, count), normalization)


def scaled_images(data, scaling, seed, name="data"):
    """:func:`alignment_images` of the images in ``data`` (an .npz, an ImageFolder folder or .zip)."""
    return alignment_images(datasets.load_labeled_images(data, name=name)[0], scaling, seed)


def scaled_labeled_images(data, scaling, seed, name="data"):
    """``(images, labels)``: :func:`scaled_images` and the labels of the same images."""
    x, y = datasets.load_labeled_images(data, name=name)
    pick = _pick(len(x), seed, ALIGN_IMAGES)
    return _scaled(x, pick, scaling), np.asarray(y)[pick]
