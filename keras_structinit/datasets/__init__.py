"""Labelled image datasets as NumPy arrays: every reader of the package.

* :func:`load_labeled_images` reads ``(x, y)`` from an ``.npz``, an image
  folder or a ``.zip`` of one, or checks a tuple of arrays (:mod:`.folders`).
* :func:`load_cifar` (CIFAR-10/100, any source, for the recipes) and
  :func:`load_cifar10` (strictly 32x32 CIFAR-10) add the Keras cache
  (``keras.datasets``) and a stratified validation hold-out
  (:func:`stratified_split`, :mod:`.splits`); both in :mod:`.cifar`.
* :func:`load_demo_data` is CIFAR-10 when available, else
  :func:`procedural_images` (:mod:`.procedural`), a labelled texture set that
  needs no download.
* :func:`read_image_folder` decodes any ``<class>/<image>`` tree (directory or
  zip) into ``(x, y, class_names)`` (:mod:`.folders`).

Everything here is NumPy (plus Pillow for decoding images); no backend is
imported, and ``keras`` only when the Keras cache is used. The names below are
defined in the modules named above: patch them there (a test replacing
``cifar10_reachable`` sets it on :mod:`.cifar`, where :func:`load_demo_data`
reads it).
"""

from keras_structinit.datasets.cifar import (
    CIFAR_DATASETS,
    cifar10_cache_available,
    cifar10_class_names,
    cifar10_reachable,
    load_cifar,
    load_cifar10,
    load_demo_data,
)
from keras_structinit.datasets.folders import (
    IMAGE_EXTENSIONS,
    MAX_CLASSES,
    MAX_IMAGE_PIXELS,
    _import_pil,  # noqa: F401 - the ImageNet stream (recipes/native.py) decodes with it
    arrays_digest,
    list_image_folder,  # noqa: F401 - not in __all__; the ImageNet recipe lists its files with it
    load_labeled_images,
    read_image_folder,
    rgb_image,
    source_digest,
)
from keras_structinit.datasets.procedural import (
    PROCEDURAL_CLASS_NAMES,
    PROCEDURAL_DESCRIPTION,
    PROCEDURAL_MAX_TRAIN_SIZE,
    procedural_images,
)
from keras_structinit.datasets.splits import stratified_split

__all__ = [
    "CIFAR_DATASETS",
    "IMAGE_EXTENSIONS",
    "MAX_CLASSES",
    "MAX_IMAGE_PIXELS",
    "PROCEDURAL_CLASS_NAMES",
    "PROCEDURAL_DESCRIPTION",
    "PROCEDURAL_MAX_TRAIN_SIZE",
    "arrays_digest",
    "cifar10_cache_available",
    "cifar10_reachable",
    "cifar10_class_names",
    "load_cifar",
    "load_cifar10",
    "load_demo_data",
    "load_labeled_images",
    "procedural_images",
    "read_image_folder",
    "rgb_image",
    "source_digest",
    "stratified_split",
]
