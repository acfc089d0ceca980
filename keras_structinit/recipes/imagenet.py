"""ImageNet-style training with ``model.fit``, close to "ResNet strikes back" A1.

Defaults and how they relate to A1 (Wightman et al. 2021), the recipe the
covariance paper's ImageNet runs follow:

* random-resized crop (scale 0.08-1) to 224, horizontal flip, timm's RandAugment
  ``rand-m7-mstd0.5-inc1`` (A1's; ``"timm:m7-n2-mstd0.5-inc1"``), MixUp alpha 0.2 / CutMix alpha
  1.0 (one of them per batch, as A1), binary cross-entropy on the mixed
  one-hot targets (A1's loss), no label smoothing;
* AdamW (A1 uses LAMB) with peak learning rate 5e-3 at a global batch of
  2048, scaled linearly with the batch size, weight decay 0.01, 5 warmup
  epochs then cosine decay to 0 (``keras.optimizers.schedules.CosineDecay``);
* evaluation: resize to 224 / 0.875 = 256 and centre-crop 224;
* optional EMA of the weights (``ema=0.9998``; A1 uses none).
"""

from __future__ import annotations

import keras

from keras_structinit.recipes import augment
from keras_structinit.recipes.config import IMAGENET_DEFAULTS
from keras_structinit.recipes.imagenet_data import imagenet_dataset
from keras_structinit.recipes.native import choose_pipeline, image_stream
from keras_structinit.recipes.schedules import warmup_cosine
from keras_structinit.recipes.training import (
    RecipeData,
    check_callbacks,
    check_model_for_run,
    fit_classifier,
    recipe_config,
    resume_epoch,
    steps_of,
)


def fit_imagenet(
    model,
    data,
    epochs=None,
    *,
    config=None,
    validation_data=None,
    eval_data=None,
    callbacks=(),
    verbose="auto",
    backup_dir=None,
    resume=False,
    **options,
):
    """Trains ``model`` on an ImageFolder directory or a TFDS dataset; returns the ``History``.

    Args:
        model: a ``keras.Model`` producing logits (or probabilities: for a softmax or sigmoid head
            the loss takes probabilities, see :func:`~keras_structinit.recipes.training.head_loss`),
            or a zero-argument builder (required with ``distribution``).
        data: training images: an ImageFolder directory (``<class>/<image>``),
            ``"tfds:<name>"`` (e.g. ``"tfds:imagenet2012"``, split "train"), or
            equal-sized uint8 images as ``(x, y)``, an .npz or a zip (see
            :func:`~keras_structinit.recipes.imagenet_data.imagenet_source`).
        epochs: passes over ``data`` (or ``config.epochs``).
        config: a :class:`~keras_structinit.recipes.RecipeConfig` with ``recipe="imagenet"``;
            ``options`` (its fields as keywords: ``image_size``, ``batch_size``,
            ``learning_rate`` (default ``5e-3 * batch_size / 2048``), ``warmup_epochs``
            (clipped to ``epochs - 1``), ``rand_augment``, ``mixup_alpha``, ``cutmix_alpha``,
            ``random_erasing``,
            ``loss`` ("bce": A1's sigmoid cross-entropy on the mixed one-hot targets, or
            "ce" with ``label_smoothing``), ...) replace its fields. Fields not given take
            :data:`~keras_structinit.recipes.IMAGENET_DEFAULTS`.
        validation_data, eval_data: a directory, ``"tfds:<name>"`` (split
            "validation"), an .npz with uint8 ``x``/int ``y`` or a tuple of
            arrays; ``eval_data`` accuracy is printed at the end and stored in
            ``history.eval_results``.
        callbacks, verbose: as in ``model.fit``.
        backup_dir, resume: as in :func:`fit_cifar`. With the native stream a resumed run sees
            the batches an uninterrupted one would; the ``tf.data`` stream starts afresh.

    The input stream (``pipeline``, :func:`~keras_structinit.recipes.native.choose_pipeline`):
    ``"native"`` decodes and random-resized-crops on host threads and augments on the device
    (:class:`~keras_structinit.recipes.native.ImageStream`); ``"tf"`` runs it all in ``tf.data``
    (:func:`~keras_structinit.recipes.imagenet_data.imagenet_dataset`; a ``"tfds:"`` source needs it).
    """
    config, o = recipe_config("imagenet", config, epochs, options)
    check_model_for_run(model, o.precision, o.distribution)
    check_callbacks(callbacks)
    sources = {"data": data, "validation_data": validation_data, "eval_data": eval_data}
    streams = _imagenet_data(o, sources, backup_dir, resume)
    history = fit_classifier(
        model,
        streams,
        o,
        _imagenet_schedule(o, streams.steps),
        loss=_imagenet_loss(o),
        callbacks=callbacks,
        verbose=verbose,
        backup_dir=backup_dir,
    )
    history.config = config
    return history


def _imagenet_data(o, sources, backup_dir, resume):
    """The data step: a :class:`RecipeData` of the training stream of ``sources["data"]`` (from the
    resumed epoch's first batch on the native stream) and the held-out ones."""
    tfds = [
        f"{name}={source!r}"
        for name, source in sources.items()
        if isinstance(source, str) and source.startswith("tfds:")
    ]
    pipeline = choose_pipeline(
        o.pipeline, o.distribution, needs_tf=tfds, recipe="imagenet", rand_augment=o.rand_augment
    )
    if pipeline == "native":
        augmentation = augment.Augmentation(
            0, True, o.rand_augment, o.random_erasing, o.mixup_alpha, o.cutmix_alpha
        )
        train, num_classes = image_stream(sources["data"], o.batch_size, o.image_size, augmentation, o.seed)
        steps = o.steps_per_epoch or train.batches_per_pass
        train.start_batch = resume_epoch(backup_dir, resume, steps) * steps  # the batches it would see
    else:
        train, num_classes = imagenet_dataset(
            sources["data"],
            o.batch_size,
            training=True,
            image_size=o.image_size,
            rand_augment=o.rand_augment,
            mixup_alpha=o.mixup_alpha,
            cutmix_alpha=o.cutmix_alpha,
            random_erasing=o.random_erasing,
            seed=o.seed,
        )
        steps = o.steps_per_epoch or steps_of(train, "data")
        resume_epoch(backup_dir, resume, steps)
        train = train.repeat()
    held_out = (
        None if sources[name] is None else _held_out(o, pipeline, sources[name], num_classes, name)
        for name in ("validation_data", "eval_data")
    )
    return RecipeData(train, steps, *held_out)


def _held_out(o, pipeline, source, num_classes, name):
    """The evaluation batches of ``source`` (resized and centre-cropped, unaugmented)."""
    if pipeline == "native":
        return image_stream(
            source, o.batch_size, o.image_size, None, o.seed, num_classes=num_classes, name=name
        )[0]
    return imagenet_dataset(
        source,
        o.batch_size,
        training=False,
        image_size=o.image_size,
        split="validation",
        num_classes=num_classes,
        name=name,
    )[0]


def _imagenet_schedule(o, steps):
    """The schedule step: ``total_steps -> warmup + cosine`` at the peak rate (default: scaled with
    the batch size), the warmup clipped to ``epochs - 1``."""
    peak = (
        o.learning_rate
        if o.learning_rate is not None
        else (IMAGENET_DEFAULTS["base_learning_rate"] * o.batch_size / 2048)
    )
    warmup = min(o.warmup_epochs, o.epochs - 1) * steps

    def make_schedule(total):
        return warmup_cosine(peak, total, warmup)

    return make_schedule


def _imagenet_loss(o):
    """A1's sigmoid cross-entropy on the mixed one-hot targets (``"bce"``), or ``"ce"``."""
    if o.loss == "bce":
        return keras.losses.BinaryCrossentropy(from_logits=True)
    return keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=o.label_smoothing)
