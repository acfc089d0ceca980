"""CIFAR-10/100 with ``model.fit``: the covariance paper's training recipe.

Defaults follow ConvMixer's CIFAR-10 recipe used by the covariance-init
paper: batch 512, AdamW with learning rate 0.01 and weight decay 0.01, the
triangular one-cycle schedule (:class:`TriangularSchedule`), random crop
with 4-pixel zero padding, horizontal flip and torchvision's ``RandAugment(2, 12)``
(``"torchvision:n2-m12"``: the ConvMixer CIFAR README's 92.5% command, not its ``train.py``
default of 1 op at magnitude 8; neither paper states N and M). The input stream is the native one
(:mod:`~keras_structinit.recipes.native`) or ``tf.data`` (``pipeline``).
"""

from __future__ import annotations

import numpy as np

from keras_structinit import validation
from keras_structinit.datasets import load_labeled_images
from keras_structinit.recipes import augment, native
from keras_structinit.recipes.config import RecipeConfig
from keras_structinit.recipes.data import cifar_dataset, input_normalization, random_labels
from keras_structinit.recipes.native import choose_pipeline
from keras_structinit.recipes.optimizers import OPTIMIZERS
from keras_structinit.recipes.schedules import TriangularSchedule, step_decay, warmup_cosine
from keras_structinit.recipes.training import (
    check_fit_arguments,
    check_training_options,
    check_whole_batches,
    fit_classifier,
    resume_epoch,
)

SCHEDULES = ("triangular", "cosine", "step")


def fit_cifar(
    model,
    data,
    epochs=None,
    *,
    config=None,
    validation_data=None,
    eval_data=None,
    callbacks=(),
    verbose="auto",
    num_classes=None,
    wrap=None,
    backup_dir=None,
    resume=False,
    **options,
):
    """Trains a classifier on CIFAR images with ``model.fit``; returns the ``History``.

    Args:
        model: a ``keras.Model`` producing logits (or probabilities: a softmax or sigmoid head is
            read and the loss takes probabilities, see
            :func:`~keras_structinit.recipes.training.head_loss`), or a zero-argument builder
            (required with ``distribution``; it is called under the chosen
            precision and distribution).
        data: training ``(x, y)``: uint8 ``(N, H, W, 3)`` images and integer
            labels (see :func:`keras_structinit.datasets.load_cifar` to read
            and split files).
        epochs: passes over ``data`` (or ``config.epochs``).
        config: a :class:`~keras_structinit.recipes.RecipeConfig` of a CIFAR recipe;
            ``options`` (its fields as keywords: ``batch_size``, ``learning_rate``,
            ``optimizer``, ``schedule``, ``warmup_epochs``, ``rand_augment``, ``seed``, ...)
            replace its fields. Fields not given take :data:`~keras_structinit.recipes.CIFAR_DEFAULTS`.
        validation_data: ``(x, y)`` evaluated after every epoch.
        eval_data: an external evaluation set (``(x, y)``, an .npz or an
            ImageFolder directory/.zip); its accuracy is printed at the end and
            stored in ``history.eval_results``.
        callbacks, verbose: as in ``model.fit``.
        num_classes: width of the one-hot labels; default ``max(y) + 1``.
        wrap: ``None`` or ``(model, loss) -> (model to fit, loss)``, e.g. a
            distiller around the model (:func:`fit_distill` passes one).
        backup_dir, resume: a folder where the run is backed up after every epoch
            (:class:`~keras_structinit.recipes.backup.RunBackup`); a new run needs one that holds
            no backup, and ``resume=True`` goes on after the newest whole backup there, the input
            stream at the resumed epoch's first batch, so a resumed run sees the batches an
            uninterrupted one would. The folder stays after the run (see
            :func:`~keras_structinit.recipes.training.resume_epoch`).

    The normalization's mean/std are stored in ``history.normalization``;
    ``validation_data`` and ``eval_data`` are normalized the same way.
    Weight selection's CIFAR recipe (Xu et al., Table 13) adds ``mixup_alpha=0.8,
    cutmix_alpha=1.0, random_erasing=0.25``; the random-label setting of Maennel
    et al. (App. A.1) is ``random_labels=1.0`` (with ``random_classes=5``: labels of 5 random classes,
    a 5-way head; held-out labels random too).
    Maennel et al.'s recipe (App. A.3): ``optimizer="sgd_momentum",
    weight_decay=0, schedule="step", learning_rate=0.002, batch_size=256,
    rand_augment=None, pad=0, flip=False, normalization="symmetric"``.
    """
    if epochs is not None:
        options["epochs"] = epochs
    config = RecipeConfig.build("cifar", config, **options)
    o = config.filled()
    epochs, batch_size, learning_rate = o.epochs, o.batch_size, o.learning_rate
    schedule = o.schedule
    if not (isinstance(data, tuple) and len(data) == 2):
        raise TypeError(
            "`data` must be a tuple (x, y) of uint8 images and integer labels; "
            "use `keras_structinit.datasets.load_cifar(path)` to read files."
        )
    check_fit_arguments(model, epochs, o.precision, o.distribution, o.ema)
    check_training_options(
        batch_size, learning_rate, o.weight_decay, o.label_smoothing, o.steps_per_epoch, callbacks
    )
    validation.int_value(o.pad, "pad", minimum=0)
    x, y = load_labeled_images(data, name="data")
    if len(x) == 0:
        raise ValueError("`data` must hold at least one image. Received: 0 images")
    validation.one_of(schedule, "schedule", SCHEDULES)
    validation.one_of(o.optimizer, "optimizer", OPTIMIZERS)
    validation.boolean(o.flip, "flip")
    warmup_epochs = o.warmup_epochs
    if warmup_epochs is not None:  # only with schedule="cosine" (RecipeConfig)
        warmup_epochs = validation.finite_float(warmup_epochs, "warmup_epochs")
        if not 0 <= warmup_epochs < epochs:
            raise ValueError(f"`warmup_epochs` must be in [0, epochs={epochs}). Received: {warmup_epochs}")
    if o.random_classes is not None:  # App. A.1 step 3: the upstream head has these many outputs
        num_classes = o.random_classes
    elif num_classes is None:
        num_classes = int(y.max()) + 1
    else:
        num_classes = validation.int_value(num_classes, "num_classes", minimum=2)
    mean, std = input_normalization(x, o.normalization)

    steps = o.steps_per_epoch or max(len(x) // batch_size, 1)

    pipeline = choose_pipeline(o.pipeline, o.distribution, rand_augment=o.rand_augment)
    start_epoch = resume_epoch(backup_dir, resume, steps)

    def as_dataset(xs, ys, training):
        if pipeline == "native":
            return native.ArrayStream(
                xs,
                _one_hot(ys, num_classes),
                batch_size,
                mean,
                std,
                augmentation=augment.Augmentation(
                    o.pad, o.flip, o.rand_augment, o.random_erasing, o.mixup_alpha, o.cutmix_alpha
                )
                if training
                else None,
                seed=o.seed,
                start_batch=start_epoch * steps if training else 0,
            )
        return cifar_dataset(
            xs,
            _one_hot(ys, num_classes),
            batch_size,
            mean,
            std,
            training,
            pad=o.pad,
            flip=o.flip,
            rand_augment=o.rand_augment,
            seed=o.seed,
            mixup_alpha=o.mixup_alpha,
            cutmix_alpha=o.cutmix_alpha,
            random_erasing=o.random_erasing,
            start_batch=start_epoch * steps if training else 0,
            drop_remainder=None if training else o.distribution == "multi_worker",
        )

    validation_set = (
        None if validation_data is None else load_labeled_images(validation_data, name="validation_data")
    )
    eval_set = None if eval_data is None else load_labeled_images(eval_data, name="eval_data")
    check_whole_batches(
        batch_size,
        o.distribution,
        data=len(x),
        validation_data=None if validation_set is None else len(validation_set[0]),
        eval_data=None if eval_set is None else len(eval_set[0]),
    )
    if o.random_labels:  # the training labels; validation and evaluation keep the true ones ...
        y = random_labels(y, o.random_labels, num_classes, seed=o.seed)
    if o.random_classes is not None:  # ... unless the head has other classes than the data

        def relabelled(part, seed):
            return None if part is None else (part[0], random_labels(part[1], 1.0, num_classes, seed=seed))

        validation_set, eval_set = relabelled(validation_set, o.seed + 1), relabelled(eval_set, o.seed + 2)
    train = as_dataset(x, y, True)
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
        model,
        train,
        epochs,
        steps,
        make_schedule,
        loss=keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=o.label_smoothing),
        weight_decay=o.weight_decay,
        validation_data=None if validation_set is None else as_dataset(*validation_set, False),
        eval_data=None if eval_set is None else as_dataset(*eval_set, False),
        precision=o.precision,
        distribution=o.distribution,
        ema=o.ema,
        callbacks=callbacks,
        verbose=verbose,
        jit_compile=o.jit_compile,
        wrap=wrap,
        optimizer=o.optimizer,
        backup_dir=backup_dir,
        no_weight_decay=o.no_weight_decay,
    )
    history.normalization = {"mean": list(mean), "std": list(std)}
    history.config = config
    return history


def _one_hot(y, num_classes):
    if y.max(initial=0) >= num_classes or y.min(initial=0) < 0:
        raise ValueError(
            f"Labels must lie in [0, num_classes={num_classes}). Received labels in [{y.min()}, {y.max()}]"
        )
    return np.eye(num_classes, dtype=np.float32)[y]
