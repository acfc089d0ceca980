"""``model.fit`` recipes: CIFAR and ImageNet training, schedules, precision and devices.

Importing this package is light: TensorFlow (for the ``tf.data`` input
pipelines) is imported only when a pipeline is built. The data readers live
in :mod:`keras_structinit.datasets` (``load_cifar_data`` here is
:func:`keras_structinit.datasets.load_cifar`).
"""

from keras_structinit.datasets import load_cifar as load_cifar_data  # documented here too
from keras_structinit.recipes.cifar import fit_cifar
from keras_structinit.recipes.config import (
    CIFAR_DEFAULTS,
    DEFAULT,
    IMAGENET_DEFAULTS,
    RecipeConfig,
    paper_config,
)
from keras_structinit.recipes.data import cifar_dataset
from keras_structinit.recipes.devices import device_setup, resolve_distribution, resolve_precision
from keras_structinit.recipes.distill import fit_distill
from keras_structinit.recipes.imagenet import fit_imagenet
from keras_structinit.recipes.imagenet_data import imagenet_dataset, random_resized_crop
from keras_structinit.recipes.optimizers import TorchSGD
from keras_structinit.recipes.run import CheckedRun, Run
from keras_structinit.recipes.schedules import PiecewiseLinearSchedule, TriangularSchedule, warmup_cosine
from keras_structinit.recipes.training_data import TrainingData, prepare_data

__all__ = [
    "CIFAR_DEFAULTS",
    "CheckedRun",
    "DEFAULT",
    "IMAGENET_DEFAULTS",
    "PiecewiseLinearSchedule",
    "RecipeConfig",
    "Run",
    "TorchSGD",
    "TrainingData",
    "TriangularSchedule",
    "cifar_dataset",
    "device_setup",
    "fit_cifar",
    "fit_distill",
    "fit_imagenet",
    "imagenet_dataset",
    "load_cifar_data",
    "paper_config",
    "prepare_data",
    "random_resized_crop",
    "resolve_distribution",
    "resolve_precision",
    "warmup_cosine",
]
