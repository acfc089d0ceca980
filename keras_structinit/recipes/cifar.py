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

import functools

import numpy as np

from keras_structinit.datasets import load_labeled_images
from keras_structinit.recipes import augment, native
from keras_structinit.recipes.data import cifar_dataset, input_normalization, random_labels
from keras_structinit.recipes.native import choose_pipeline
from keras_structinit.recipes.schedules import TriangularSchedule, step_decay, warmup_cosine
from keras_structinit.recipes.training import (
    RecipeData,
    check_callbacks,
    check_model_for_run,
    check_whole_batches,
    fit_classifier,
    recipe_config,
    resume_epoch,
)
from keras_structinit.utils import validation


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
    config, o = recipe_config("cifar", config, epochs, options)
    x, y = _checked_inputs(model, data, callbacks, o)
    num_classes = _num_classes(o, y, num_classes)
    normalization = input_normalization(x, o.normalization)
    sets = {"validation_data": validation_data, "eval_data": eval_data}
    streams = _cifar_data(o, (x, y), sets, num_classes, normalization, (backup_dir, resume))
    import keras

    history = fit_classifier(
        model,
        streams,
        o,
        _cifar_schedule(o, streams.steps),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=o.label_smoothing),
        callbacks=callbacks,
        verbose=verbose,
        wrap=wrap,
        backup_dir=backup_dir,
    )
    history.normalization = {"mean": list(normalization[0]), "std": list(normalization[1])}
    history.config = config
    return history


def _checked_inputs(model, data, callbacks, o):
    """The training images and labels of ``data``, after the checks of ``data``, ``model`` and
    ``callbacks`` (the arguments that are not ``o``'s fields, checked when it was built)."""
    if not (isinstance(data, tuple) and len(data) == 2):
        raise TypeError(
            "`data` must be a tuple (x, y) of uint8 images and integer labels; "
            "use `keras_structinit.datasets.load_cifar(path)` to read files."
        )
    check_model_for_run(model, o.precision, o.distribution)
    check_callbacks(callbacks)
    x, y = load_labeled_images(data, name="data")
    if len(x) == 0:
        raise ValueError("`data` must hold at least one image. Received: 0 images")
    return x, y


def _num_classes(o, y, num_classes):
    """The width of the one-hot labels: ``random_classes`` (App. A.1 step 3: the upstream head has
    these many outputs), else ``num_classes``, else the labels' ``max(y) + 1``."""
    if o.random_classes is not None:
        return o.random_classes
    if num_classes is None:
        return int(y.max()) + 1
    return validation.int_value(num_classes, "num_classes", minimum=2)


def _cifar_data(o, data, sets, num_classes, normalization, backup):
    """The data step: a :class:`RecipeData` of the training stream (``data``, from the resumed
    epoch's first batch; ``backup``: ``(backup_dir, resume)``) and the validation and evaluation
    ones (``sets``: their sources by name), with random labels where ``o`` asks for them."""
    x, y = data
    steps = o.steps_per_epoch or max(len(x) // o.batch_size, 1)
    pipeline = choose_pipeline(o.pipeline, o.distribution, rand_augment=o.rand_augment)
    start_batch = resume_epoch(*backup, steps) * steps
    held_out = {name: None if s is None else load_labeled_images(s, name=name) for name, s in sets.items()}
    check_whole_batches(
        o.batch_size,
        o.distribution,
        data=len(x),
        **{name: None if part is None else len(part[0]) for name, part in held_out.items()},
    )
    if o.random_labels:  # the training labels; validation and evaluation keep the true ones ...
        y = random_labels(y, o.random_labels, num_classes, seed=o.seed)
    if o.random_classes is not None:  # ... unless the head has other classes than the data
        for offset, (name, part) in enumerate(held_out.items(), 1):  # seeds seed + 1, seed + 2
            if part is not None:
                held_out[name] = (part[0], random_labels(part[1], 1.0, num_classes, seed=o.seed + offset))
    stream = functools.partial(_cifar_stream, o, pipeline, num_classes, normalization)
    train = stream(x, y, start_batch)
    validation_set, eval_set = held_out.values()
    return RecipeData(
        train,
        steps,
        None if validation_set is None else stream(*validation_set),
        None if eval_set is None else stream(*eval_set),
    )


def _cifar_stream(o, pipeline, num_classes, normalization, xs, ys, start_batch=None):
    """The batches of ``(xs, ys)``: augmented training batches from ``start_batch`` on, or (``None``)
    the held-out ones, unaugmented."""
    mean, std = normalization
    training = start_batch is not None
    labels = _one_hot(ys, num_classes)
    if pipeline == "native":
        augmentation = (
            augment.Augmentation(
                o.pad, o.flip, o.rand_augment, o.random_erasing, o.mixup_alpha, o.cutmix_alpha
            )
            if training
            else None
        )
        return native.ArrayStream(
            xs,
            labels,
            o.batch_size,
            mean,
            std,
            augmentation=augmentation,
            seed=o.seed,
            start_batch=start_batch or 0,
        )
    return cifar_dataset(
        xs,
        labels,
        o.batch_size,
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
        start_batch=start_batch or 0,
        drop_remainder=None if training else o.distribution == "multi_worker",
    )


def _cifar_schedule(o, steps):
    """The schedule step: ``total_steps -> learning-rate schedule`` of ``o.schedule``."""
    if o.schedule == "triangular":
        return functools.partial(TriangularSchedule, o.learning_rate)
    if o.schedule == "step":
        return functools.partial(step_decay, o.learning_rate)

    def make_schedule(total):  # "cosine"
        warmup = total // 20 if o.warmup_epochs is None else int(round(float(o.warmup_epochs) * steps))
        return warmup_cosine(o.learning_rate, total, min(warmup, total - 1))

    return make_schedule


def _one_hot(y, num_classes):
    if y.max(initial=0) >= num_classes or y.min(initial=0) < 0:
        raise ValueError(
            f"Labels must lie in [0, num_classes={num_classes}). Received labels in [{y.min()}, {y.max()}]"
        )
    return np.eye(num_classes, dtype=np.float32)[y]
