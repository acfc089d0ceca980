"""The ImageNet recipe's ``tf.data`` stream: Inception-style random resized crops of an ImageFolder
directory, a TFDS dataset or in-memory arrays, with the same host-drawn augmentation as the CIFAR
stream (:mod:`keras_structinit.recipes.data`, whose in-graph helpers it uses)."""

from __future__ import annotations

import os

from keras_structinit import datasets
from keras_structinit.recipes import augment, image_ops
from keras_structinit.recipes.data import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    _draws_in_graph,
    _erase_noise,
    _host_draws,
    _rand_augment_layer,
    _seeded,
    _tf,
    element_seed,
    normalize_images,
    rand_augment_batch,
)
from keras_structinit.utils import validation

__all__ = ["imagenet_dataset", "imagenet_source", "random_resized_crop"]


def random_resized_crop(image, size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), seed=0):
    """Inception-style crop: area fraction in ``scale``, aspect ratio in ``ratio``, resized to ``size``.

    Keras has no random-resized-crop layer; this samples the box with
    ``tf.image.stateless_sample_distorted_bounding_box`` (``seed``: an int or a stateless ``(2,)``
    seed; the whole image after 10 failed tries) and resizes bilinearly.
    """
    size = validation.positive_int(size, "size")
    tf = _tf()
    if isinstance(seed, int):
        seed = (seed, 0)
    begin, box_size, _ = tf.image.stateless_sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=tf.constant([0.0, 0.0, 1.0, 1.0], tf.float32, [1, 1, 4]),
        min_object_covered=0.0,
        aspect_ratio_range=ratio,
        area_range=scale,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
        seed=seed,
    )
    crop = tf.slice(image, begin, box_size)
    resized = tf.image.resize(crop, (size, size), method="bilinear")
    resized.set_shape((size, size, image.shape[-1]))  # the slice loses the static channel count
    return resized


#: Decoded images a TFDS source shuffles before resizing them (see :func:`imagenet_source`).
TFDS_SHUFFLE_BUFFER = 2048


def imagenet_source(source, split, load_size, shuffle, seed, name="data"):
    """Unbatched ``(uint8-valued float image, int label)`` dataset and its class count.

    ``source``: an ImageFolder directory (``<class>/<image>``, read with
    ``keras.utils.image_dataset_from_directory``, cropped to the square aspect
    ratio, not distorted), ``"tfds:<name>"`` (``tensorflow_datasets``,
    ``split``), or what :func:`keras_structinit.datasets.load_labeled_images`
    reads (arrays, an .npz, a zip of equal-sized images). Every image comes out
    as its central square resized to ``load_size`` x ``load_size``.

    ``shuffle`` shuffles where elements are small, before any image is
    resized to float: the file list of a directory (all of it), the uint8
    images of arrays (all of them), the record files and
    :data:`TFDS_SHUFFLE_BUFFER` decoded images of a TFDS source. A buffer of
    resized float images (786 KB each at 256 x 256) would hold gigabytes.
    """
    tf = _tf()
    import keras

    def central_square(image, label):
        shape = tf.shape(image)
        side = tf.minimum(shape[0], shape[1])
        image = tf.image.resize_with_crop_or_pad(image, side, side)
        return tf.image.resize(image, (load_size, load_size)), label

    if isinstance(source, str) and source.startswith("tfds:"):
        try:
            import tensorflow_datasets as tfds
        except ImportError as err:
            raise ImportError("A 'tfds:' source needs `pip install tensorflow-datasets`.") from err
        ds, info = tfds.load(
            source[5:], split=split, as_supervised=True, with_info=True, shuffle_files=shuffle
        )
        num_classes = info.features["label"].num_classes
        if shuffle:
            ds = ds.shuffle(TFDS_SHUFFLE_BUFFER, seed=seed, reshuffle_each_iteration=True)
    elif isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        ds = keras.utils.image_dataset_from_directory(
            source,
            labels="inferred",
            label_mode="int",
            batch_size=None,
            image_size=(load_size, load_size),
            crop_to_aspect_ratio=True,
            shuffle=shuffle,
            seed=seed,
            verbose=False,
        )
        return ds, len(ds.class_names)
    else:
        x, y = datasets.load_labeled_images(source, name=name)
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        if shuffle:  # uint8: the whole set fits the buffer (it is in memory already)
            ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
        num_classes = int(y.max()) + 1
    return ds.map(central_square, num_parallel_calls=tf.data.AUTOTUNE), num_classes


def imagenet_dataset(
    source,
    batch_size,
    training,
    image_size=224,
    split="train",
    num_classes=None,
    rand_augment="timm:m7-n2-mstd0.5-inc1",
    mixup_alpha=0.2,
    cutmix_alpha=1.0,
    random_erasing=0.0,
    crop_fraction=0.875,
    seed=0,
    name="data",
):
    """``(dataset, num_classes)``: normalized ``(images, one-hot labels)`` batches.

    Training: random-resized crop to ``image_size`` (scale 0.08-1, ratio 3/4-4/3), horizontal
    flip and RandAugment per image (a form of :mod:`~keras_structinit.recipes.rand_augment`),
    then per batch random erasing, MixUp and CutMix
    (:func:`~keras_structinit.recipes.augment.finish_batch`). Evaluation: images loaded at
    ``image_size / crop_fraction`` and centre-cropped. Labels are one-hot (soft after mixing);
    ImageNet mean/std normalization. Per-image draws are stateless functions of ``seed`` and the
    image's position in the stream, per-batch ones of the batch's.
    """
    import keras

    tf = _tf()
    batch_size = validation.positive_int(batch_size, "batch_size")
    image_size = validation.positive_int(image_size, "image_size")
    seed = validation.random_seed(seed)
    a = augment.Augmentation(0, False, rand_augment, random_erasing, mixup_alpha, cutmix_alpha)
    if validation.positive_float(crop_fraction, "crop_fraction") > 1.0:
        raise ValueError(f"`crop_fraction` must be in (0, 1]. Received: crop_fraction={crop_fraction!r}")
    load_size = round(image_size / crop_fraction)
    ds, found_classes = imagenet_source(source, split, load_size, training, seed, name=name)
    num_classes = num_classes or found_classes
    # The maps run as traced, not through AutoGraph: they hold no tensor-dependent Python control flow
    # (their ops serve every backend), and AutoGraph's cache of converted functions was seen, late in
    # a long test process, to call one module function for another (element_seed as keras_rand_augment).
    plain = tf.autograph.experimental.do_not_convert
    if training:  # shuffled by imagenet_source, where elements are small
        ds = ds.enumerate().map(
            plain(_per_image(tf, a, image_size, seed)), num_parallel_calls=tf.data.AUTOTUNE
        )
    else:
        crop = keras.layers.CenterCrop(image_size, image_size)
        ds = ds.map(plain(lambda image, label: (crop(image), label)), num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch_size, drop_remainder=training)
    # One batch map, not parallel: a parallel map holds a float32 batch per call (see PREFETCH_BATCHES).
    if training:
        finish = _per_batch(tf, a, batch_size, image_size, seed)
        ds = ds.enumerate().map(
            plain(lambda i, batch: finish(i, (batch[0], tf.one_hot(batch[1], num_classes))))
        )
    else:
        ds = ds.map(
            plain(
                lambda images, labels: (
                    normalize_images(images, IMAGENET_MEAN, IMAGENET_STD),
                    tf.one_hot(labels, num_classes),
                )
            )
        )
    return ds.prefetch(PREFETCH_BATCHES).with_options(_bounded_memory(tf)), num_classes


def _per_image(tf, a, image_size, seed):
    """``imagenet_dataset``'s training map of one ``(position, (image, label))``: random-resized
    crop, flip and the RandAugment of ``a`` (an :class:`~keras_structinit.recipes.augment.Augmentation`)."""
    size = (image_size, image_size)
    form = a.rand_augment
    keras_layer = None
    if form is not None and form.library == "keras":
        keras_layer = _rand_augment_layer(form, seed)
    image_augmentation = augment.Augmentation(rand_augment=a.native_rand_augment)
    one_image = _host_draws(image_augmentation, seed, 1, 1, 1, 0, size, stream=1, shuffle=False)

    def per_image(position, example):  # image by image: a batch of 224 x 224 images would
        image, label = example  # multiply each map call's memory
        key = element_seed(seed, -2, position)
        image = random_resized_crop(image, image_size, seed=tf.random.experimental.stateless_fold_in(key, -1))
        image = tf.image.stateless_random_flip_left_right(
            image, tf.random.experimental.stateless_fold_in(key, -2)
        )[None]
        if keras_layer is not None:
            image = _seeded(
                keras_layer, image, tf.random.experimental.stateless_fold_in(key, -3), call=rand_augment_batch
            )
        elif form is not None:
            draws = _draws_in_graph(tf, one_image, position, a, 1, size)
            for step in range(form.num_ops):
                image = image_ops.apply_step(
                    image_ops.backend_ops("tensorflow"),
                    image,
                    draws["kernels"][step],
                    draws["arguments"][step],
                    draws["rows"][step],
                    form.fill,
                    form.interpolation,
                )
        return image[0], label

    return per_image


def _per_batch(tf, a, batch_size, image_size, seed):
    """``imagenet_dataset``'s training map of one ``(index, batch)``: random erasing, MixUp or
    CutMix (:func:`~keras_structinit.recipes.augment.finish_batch`) and the normalization."""
    size = (image_size, image_size)
    batch_augmentation = augment.Augmentation(0, False, None, a.random_erasing, a.mixup_alpha, a.cutmix_alpha)
    per_batch = _host_draws(
        batch_augmentation, seed, batch_size, batch_size, 1, 0, size, stream=2, shuffle=False
    )

    def finish(index, batch):
        draws = _draws_in_graph(tf, per_batch, index, batch_augmentation, batch_size, size)
        return augment.finish_batch(
            image_ops.backend_ops("tensorflow"),
            a,
            *batch,
            draws,
            _erase_noise(tf, a, batch[0], draws),
            IMAGENET_MEAN,
            IMAGENET_STD,
        )

    return finish


#: Batches the ImageNet pipeline prepares ahead of the model (each 617 MB at 1024 x 224 x 224 x 3
#: float32). With the one being batched (float32, uint8 values), the one in the batch map (its input
#: and its output) and the one ``fit`` trains on, ``PREFETCH_BATCHES + 4`` batches at most.
PREFETCH_BATCHES = 2
#: The float32 batches the training stream holds at most (see :data:`PREFETCH_BATCHES`).
BATCHES_IN_FLIGHT = PREFETCH_BATCHES + 4
#: What tf.data's autotuner may buffer in all (its default is half the machine's memory).
PIPELINE_RAM_BUDGET = 1 << 30


def _bounded_memory(tf):
    options = tf.data.Options()
    options.autotune.ram_budget = PIPELINE_RAM_BUDGET
    return options
