"""CIFAR-10/100 with ``model.fit``: the covariance paper's training recipe.

Defaults follow ConvMixer's CIFAR-10 recipe used by the covariance-init
paper: batch 512, AdamW with learning rate 0.01 and weight decay 0.01, the
triangular one-cycle schedule (:class:`TriangularSchedule`), random crop
with 4-pixel zero padding, horizontal flip and RandAugment with 2 ops at
magnitude 12/30 (torchvision's ``RandAugment(2, 12)`` scale mapped to
Keras' ``factor`` in [0, 1]).
"""

from __future__ import annotations

import numpy as np

from keras_structinit import validation
from keras_structinit.datasets import load_labeled_images
from keras_structinit.recipes.data import cifar_dataset, input_normalization
from keras_structinit.recipes.optimizers import OPTIMIZERS
from keras_structinit.recipes.schedules import TriangularSchedule, step_decay, warmup_cosine
from keras_structinit.recipes.training import check_fit_arguments, check_training_options, fit_classifier

CIFAR_DEFAULTS = {
    "batch_size": 512,
    "learning_rate": 0.01,
    "weight_decay": 0.01,
    "label_smoothing": 0.0,
    "rand_augment": (2, 0.4),
    "pad": 4,
    "schedule": "triangular",
    "optimizer": "adamw",
    "normalization": "channel",
    "flip": True,
}
SCHEDULES = ("triangular", "cosine", "step")


def fit_cifar(
    model,
    data,
    epochs,
    batch_size=CIFAR_DEFAULTS["batch_size"],
    learning_rate=CIFAR_DEFAULTS["learning_rate"],
    weight_decay=CIFAR_DEFAULTS["weight_decay"],
    label_smoothing=CIFAR_DEFAULTS["label_smoothing"],
    rand_augment=CIFAR_DEFAULTS["rand_augment"],
    pad=CIFAR_DEFAULTS["pad"],
    schedule=CIFAR_DEFAULTS["schedule"],
    warmup_epochs=None,
    optimizer=CIFAR_DEFAULTS["optimizer"],
    validation_data=None,
    eval_data=None,
    precision=None,
    distribution=None,
    ema=False,
    seed=0,
    callbacks=(),
    verbose="auto",
    steps_per_epoch=None,
    jit_compile=None,
    num_classes=None,
    wrap=None,
    normalization=CIFAR_DEFAULTS["normalization"],
    flip=CIFAR_DEFAULTS["flip"],
):
    """Trains a classifier on CIFAR images with ``model.fit``; returns the ``History``.

    Args:
        model: a ``keras.Model`` producing logits, or a zero-argument builder
            (required with ``distribution``; it is called under the chosen
            precision and distribution).
        data: training ``(x, y)``: uint8 ``(N, H, W, 3)`` images and integer
            labels (see :func:`keras_structinit.datasets.load_cifar` to read
            and split files).
        epochs: passes over ``data``.
        batch_size: global batch size.
        learning_rate: peak AdamW learning rate.
        weight_decay: AdamW (decoupled) weight decay.
        label_smoothing: of the categorical cross-entropy.
        rand_augment: ``(num_ops, magnitude in [0, 1])`` for
            ``keras.layers.RandAugment`` or ``None``.
        pad: zero padding before the random crop (0 disables crop).
        schedule: "triangular" (:class:`TriangularSchedule`), "cosine"
            (linear warmup, then cosine decay to 0) or "step" (divided by 3
            at 1/3 and 2/3 of the run, :func:`step_decay`).
        warmup_epochs: length of the cosine schedule's warmup, in epochs
            (may be fractional; default 5% of the run). The weight-selection
            paper warms up for 50 of 300 epochs.
        optimizer: "adamw" (``weight_decay`` decoupled) or "sgd": SGD with
            Nesterov momentum 0.9 and ``weight_decay`` as PyTorch's L2
            (:class:`~keras_structinit.recipes.TorchSGD`; the LC-blocks
            paper's recipe: learning rate 0.01, weight decay 0.01, cosine);
            "sgd_momentum": the same without Nesterov.
        validation_data: ``(x, y)`` evaluated after every epoch.
        eval_data: an external evaluation set (``(x, y)``, an .npz or an
            ImageFolder directory/.zip); its accuracy is printed at the end and
            stored in ``history.eval_results``.
        precision: None/"float32", "mixed_bfloat16", "mixed_float16" or "auto".
        distribution: None, "data_parallel" (JAX), "mirrored"/"tpu"
            (TensorFlow), "auto", or an instance.
        ema: False, True (momentum 0.9999) or the EMA momentum of the weights.
        seed: seed of the shuffling and augmentation.
        steps_per_epoch: default ``len(x) // batch_size``.
        num_classes: width of the one-hot labels; default ``max(y) + 1``.
        wrap: ``None`` or ``(model, loss) -> (model to fit, loss)``, e.g. a
            distiller around the model (:func:`fit_distill` passes one).
        normalization: "channel" (the per-channel mean/std of ``data``) or
            "symmetric" (``x / 127.5 - 1``, in [-1, 1]).
        flip: random horizontal flips of the training images.

    The normalization's mean/std are stored in ``history.normalization``;
    ``validation_data`` and ``eval_data`` are normalized the same way.
    Maennel et al.'s recipe (App. A.3): ``optimizer="sgd_momentum",
    weight_decay=0, schedule="step", learning_rate=0.002, batch_size=256,
    rand_augment=None, pad=0, flip=False, normalization="symmetric"``.
    """
    if not (isinstance(data, tuple) and len(data) == 2):
        raise TypeError("`data` must be a tuple (x, y) of uint8 images and integer labels; "
                        "use `keras_structinit.datasets.load_cifar(path)` to read files.")
    check_fit_arguments(model, epochs, precision, distribution, ema)
    check_training_options(
        batch_size, learning_rate, weight_decay, label_smoothing, steps_per_epoch, callbacks
    )
    validation.int_value(pad, "pad", minimum=0)
    x, y = load_labeled_images(data, name="data")
    if len(x) == 0:
        raise ValueError("`data` must hold at least one image. Received: 0 images")
    validation.one_of(schedule, "schedule", SCHEDULES)
    validation.one_of(optimizer, "optimizer", OPTIMIZERS)
    validation.boolean(flip, "flip")
    if warmup_epochs is not None:
        if schedule != "cosine":
            raise ValueError(f"`warmup_epochs` applies to schedule='cosine'. Received: schedule={schedule!r}")
        warmup_epochs = validation.finite_float(warmup_epochs, "warmup_epochs")
        if not 0 <= warmup_epochs < epochs:
            raise ValueError(f"`warmup_epochs` must be in [0, epochs={epochs}). Received: {warmup_epochs}")
    if num_classes is None:
        num_classes = int(y.max()) + 1
    else:
        num_classes = validation.int_value(num_classes, "num_classes", minimum=2)
    mean, std = input_normalization(x, normalization)

    def as_dataset(xs, ys, training):
        return cifar_dataset(xs, _one_hot(ys, num_classes), batch_size, mean, std, training,
                             pad=pad, flip=flip, rand_augment=rand_augment, seed=seed)

    train = as_dataset(x, y, True)
    steps = steps_per_epoch or max(len(x) // batch_size, 1)
    if schedule == "triangular":
        def make_schedule(total):
            return TriangularSchedule(learning_rate, total)
    elif schedule == "step":
        def make_schedule(total):
            return step_decay(learning_rate, total)
    else:
        def make_schedule(total):
            warmup = total // 20 if warmup_epochs is None else int(round(warmup_epochs * steps))
            return warmup_cosine(learning_rate, total, min(warmup, total - 1))
    import keras

    history = fit_classifier(
        model, train.repeat(), epochs, steps, make_schedule,
        loss=keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=label_smoothing),
        weight_decay=weight_decay,
        validation_data=None if validation_data is None else as_dataset(
            *load_labeled_images(validation_data, name="validation_data"), False),
        eval_data=None if eval_data is None else as_dataset(
            *load_labeled_images(eval_data, name="eval_data"), False),
        precision=precision, distribution=distribution, ema=ema,
        callbacks=callbacks, verbose=verbose, jit_compile=jit_compile, wrap=wrap, optimizer=optimizer,
    )
    history.normalization = {"mean": list(mean), "std": list(std)}
    return history


def _one_hot(y, num_classes):
    if y.max(initial=0) >= num_classes or y.min(initial=0) < 0:
        raise ValueError(
            f"Labels must lie in [0, num_classes={num_classes}). "
            f"Received labels in [{y.min()}, {y.max()}]"
        )
    return np.eye(num_classes, dtype=np.float32)[y]
