"""ImageNet-style training with ``model.fit``, close to "ResNet strikes back" A1.

Defaults and how they relate to A1 (Wightman et al. 2021), the recipe the
covariance paper's ImageNet runs follow:

* random-resized crop (scale 0.08-1) to 224, horizontal flip, RandAugment
  with 2 ops at magnitude 0.7 (A1: rand-m7), MixUp alpha 0.2 / CutMix alpha
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

from keras_structinit import validation
from keras_structinit.recipes.data import check_rand_augment, imagenet_dataset
from keras_structinit.recipes.schedules import warmup_cosine
from keras_structinit.recipes.training import (
    check_fit_arguments,
    check_training_options,
    fit_classifier,
    steps_of,
)

IMAGENET_DEFAULTS = {
    "image_size": 224,
    "batch_size": 1024,
    "base_learning_rate": 5e-3,  # at batch 2048
    "weight_decay": 0.01,
    "warmup_epochs": 5,
    "rand_augment": (2, 0.7),
    "mixup_alpha": 0.2,
    "cutmix_alpha": 1.0,
    "loss": "bce",
    "label_smoothing": 0.0,
}
LOSSES = ("bce", "ce")


def fit_imagenet(
    model,
    data,
    epochs,
    image_size=IMAGENET_DEFAULTS["image_size"],
    batch_size=IMAGENET_DEFAULTS["batch_size"],
    learning_rate=None,
    weight_decay=IMAGENET_DEFAULTS["weight_decay"],
    warmup_epochs=IMAGENET_DEFAULTS["warmup_epochs"],
    rand_augment=IMAGENET_DEFAULTS["rand_augment"],
    mixup_alpha=IMAGENET_DEFAULTS["mixup_alpha"],
    cutmix_alpha=IMAGENET_DEFAULTS["cutmix_alpha"],
    loss=IMAGENET_DEFAULTS["loss"],
    label_smoothing=IMAGENET_DEFAULTS["label_smoothing"],
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
):
    """Trains ``model`` on an ImageFolder directory or a TFDS dataset; returns the ``History``.

    Args:
        model: a ``keras.Model`` producing logits, or a zero-argument builder
            (required with ``distribution``).
        data: training images: an ImageFolder directory (``<class>/<image>``),
            ``"tfds:<name>"`` (e.g. ``"tfds:imagenet2012"``, split "train"), or
            equal-sized uint8 images as ``(x, y)``, an .npz or a zip (see
            :func:`~keras_structinit.recipes.data.imagenet_source`).
        epochs: passes over ``data``.
        learning_rate: peak AdamW rate; default ``5e-3 * batch_size / 2048``.
        warmup_epochs: linear warmup before the cosine decay (clipped to
            ``epochs - 1``).
        rand_augment, mixup_alpha, cutmix_alpha: augmentation (``None``/0 off).
        loss: "bce" (A1: sigmoid cross-entropy on the mixed one-hot targets)
            or "ce" (softmax cross-entropy with ``label_smoothing``).
        validation_data, eval_data: a directory, ``"tfds:<name>"`` (split
            "validation"), an .npz with uint8 ``x``/int ``y`` or a tuple of
            arrays; ``eval_data`` accuracy is printed at the end and stored in
            ``history.eval_results``.
        precision, distribution, ema, seed, callbacks, verbose, jit_compile:
            as in :func:`keras_structinit.recipes.fit_cifar`.
    """
    validation.one_of(loss, "loss", LOSSES)
    check_rand_augment(rand_augment)
    check_fit_arguments(model, epochs, precision, distribution, ema)
    check_training_options(
        batch_size, learning_rate, weight_decay, label_smoothing, steps_per_epoch, callbacks
    )
    validation.int_value(warmup_epochs, "warmup_epochs", minimum=0)
    train, num_classes = imagenet_dataset(
        data, batch_size, training=True, image_size=image_size, rand_augment=rand_augment,
        mixup_alpha=mixup_alpha, cutmix_alpha=cutmix_alpha, seed=seed,
    )
    steps = steps_per_epoch or steps_of(train, "data")
    peak = learning_rate if learning_rate is not None else (
        IMAGENET_DEFAULTS["base_learning_rate"] * batch_size / 2048)
    warmup = min(warmup_epochs, epochs - 1) * steps

    def make_schedule(total):
        return warmup_cosine(peak, total, warmup)

    def eval_dataset(source, name):
        return imagenet_dataset(source, batch_size, training=False, image_size=image_size,
                                split="validation", num_classes=num_classes, name=name)[0]

    loss_fn = (keras.losses.BinaryCrossentropy(from_logits=True) if loss == "bce"
               else keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=label_smoothing))
    return fit_classifier(
        model, train.repeat(), epochs, steps, make_schedule, loss=loss_fn, weight_decay=weight_decay,
        validation_data=None if validation_data is None else eval_dataset(
            validation_data, "validation_data"),
        eval_data=None if eval_data is None else eval_dataset(eval_data, "eval_data"),
        precision=precision, distribution=distribution, ema=ema,
        callbacks=callbacks, verbose=verbose, jit_compile=jit_compile,
    )
