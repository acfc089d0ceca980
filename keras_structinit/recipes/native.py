"""The native input streams: each batch augmented on the device, no TensorFlow.

:class:`ArrayStream` (the CIFAR recipes) is a ``keras.utils.PyDataset`` with one worker thread
(no process holds a copy of the images): the uint8 images live on the device (host memory on a
CPU); per batch it draws on the host (:func:`~keras_structinit.recipes.augment.draw_batch`, a few
kB), gathers the batch on the device and runs
:func:`~keras_structinit.recipes.augment.transform_batch` there as two compiled calls (the
per-image ops, then erasing, mixing and normalization): ``jax.jit`` on JAX, ``tf.function`` on
TensorFlow (XLA on an accelerator), eager on PyTorch. :class:`ImageStream` (the ImageNet recipe)
decodes and random-resized-crops image files on worker threads, then runs the same device half.
Their batches are the backend's tensors, which ``fit`` takes as they are.
:func:`choose_pipeline` picks between them and ``tf.data``.
"""

from __future__ import annotations

import os
import threading

import keras
import numpy as np

from keras_structinit.recipes import augment, image_ops
from keras_structinit.recipes.rand_augment import parse_rand_augment
from keras_structinit.utils import validation
from keras_structinit.utils.arguments import PIPELINES, SLOWER_NATIVE


def tensorflow_available():
    """Whether TensorFlow can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("tensorflow") is not None


def choose_pipeline(pipeline="auto", distribution=None, needs_tf=(), recipe="cifar", rand_augment=None):
    """The input stream a run uses: ``"native"`` or ``"tf"``.

    ``"auto"`` takes the native stream, except where ``tf.data`` is needed: a ``multi_worker``
    run (Keras shards ``tf.data`` across processes), a distributed run on the TensorFlow backend
    (``tf.distribute`` takes ``tf.data``), or ``needs_tf`` (names of arguments that only
    ``tf.data`` reads, e.g. a ``"tfds:"`` source); and, where TensorFlow is installed, the
    ``(recipe, backend)`` pairs of :data:`~keras_structinit.utils.arguments.SLOWER_NATIVE`, and Keras'
    RandAugment form (``rand_augment``, a Keras layer in ``tf.data``). Elsewhere the native
    stream measured 1.6-4.7x ``tf.data``'s rate on JAX and torch, and 0.96-1.03x on TensorFlow,
    on one core of the 2-core CPU (``benchmarks/results/cpu/input_streams.md``). ``"tf"`` without
    TensorFlow is an ``ImportError`` that says what to install.
    """
    validation.one_of(pipeline, "pipeline", PIPELINES)
    needs_tf = list(needs_tf)
    form = parse_rand_augment(rand_augment)
    if form is not None and form.library == "keras":
        needs_tf.append(f"rand_augment in Keras' form ({form})")
    if distribution == "multi_worker":
        needs_tf.append("distribution='multi_worker'")
    elif distribution is not None and keras.backend.backend() == "tensorflow":
        needs_tf.append(f"distribution={distribution!r} on the TensorFlow backend")
    if pipeline == "auto":
        slower = (recipe, keras.backend.backend()) in SLOWER_NATIVE and tensorflow_available()
        pipeline = "tf" if needs_tf or slower else "native"
    if pipeline == "tf" and not tensorflow_available():
        raise ImportError(
            "pipeline='tf' needs TensorFlow (`pip install tensorflow-cpu`, or keras_structinit"
            "[tensorflow])"
            + (
                f"; {needs_tf[0]} is read with tf.data"
                if needs_tf
                else "; pipeline='native' (or 'auto') trains without it"
            )
        )
    if pipeline == "native" and needs_tf:
        raise ValueError(f"pipeline='native' cannot serve {needs_tf[0]}: use pipeline='tf' (or 'auto')")
    return pipeline


def _labeled_sources(source, name):
    """``(images, labels)``: file paths of an ImageFolder directory (not decoded), else the arrays
    :func:`~keras_structinit.datasets.load_labeled_images` reads."""
    from keras_structinit import datasets

    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        return datasets.list_image_folder(source, name)[:2]
    return datasets.load_labeled_images(source, name=name)


def count_classes(source, name="data"):
    """The class count of an ImageNet-style source as the native stream reads it."""
    return int(_labeled_sources(source, name)[1].max(initial=0)) + 1


def image_stream(source, batch_size, image_size, augmentation, seed, num_classes=None, name="data"):
    """``(ImageStream, num_classes)`` of an ImageFolder directory, or of what
    :func:`~keras_structinit.datasets.load_labeled_images` reads (arrays, an .npz, a zip),
    with one-hot labels and ImageNet's mean and std."""
    images, labels = _labeled_sources(source, name)
    num_classes = num_classes or int(labels.max(initial=0)) + 1
    if labels.max(initial=0) >= num_classes:
        raise ValueError(
            f"`{name}` holds labels up to {int(labels.max())}, beyond the training data's "
            f"{num_classes} classes"
        )
    one_hot = np.eye(num_classes, dtype=np.float32)[labels]
    stream = ImageStream(
        images,
        one_hot,
        batch_size,
        image_size,
        augment.IMAGENET_MEAN,
        augment.IMAGENET_STD,
        augmentation,
        seed,
    )
    return stream, num_classes


#: The draws the compiled calls take (the rest are host-side seeds), with their image axis (``None``:
#: one per batch): the per-image ones of :func:`~keras_structinit.recipes.augment.augment_images`
#: and the ones of :func:`~keras_structinit.recipes.augment.finish_batch`.
_IMAGE_DRAWS = {"offsets": 0, "flips": 0, "kernels": 1, "arguments": 1, "rows": 1}
_BATCH_DRAWS = {"boxes": 0, "mix_weight": None, "mix_box": None}
#: Bytes of float32 images one compiled call transforms at most (:func:`chunk_images`):
#: TensorFlow's graph (no XLA on a CPU) holds many ops' outputs at once, each a call's size (617 MB
#: for a batch of 1024 x 224 x 224 x 3): one call on a whole batch of the ImageNet defaults passed
#: 12 GB, in chunks of 64 images it took 2 GB more than the batch's uint8 pixels.
CHUNK_BYTES = 64 << 20
#: Bytes of finished batches a stream holds ahead of the training step at most (:func:`queue_depth`),
#: a batch ahead at least.
AHEAD_BYTES = 1 << 30


def chunk_images(count, size, channels=3):
    """Images per compiled call: the largest power of two whose float32 images fit
    :data:`CHUNK_BYTES` (at least 2, a mixing pair), at most ``count``."""
    per_image = 4 * channels * int(np.prod(size))
    return min(count, 1 << max(1, (CHUNK_BYTES // per_image).bit_length() - 1))


def batch_bytes(batch_size, size, channels=3, num_classes=1):
    """Bytes of one finished training batch: float32 images and float32 one-hot labels."""
    return 4 * batch_size * (channels * int(np.prod(size)) + num_classes)


def queue_depth(workers, batch_size, size, channels=3):
    """``max_queue_size`` of a stream: a batch per worker, at least 2 (the enqueuer also submits
    one beyond a full queue), cut to what :data:`AHEAD_BYTES` holds of finished batches, at least 1.
    A stream then holds ``queue_depth + 1`` batches ahead of the one ``fit`` trains on."""
    fits = AHEAD_BYTES // batch_bytes(batch_size, size, channels)
    return max(1, min(max(2, workers), fits - 1))


def mix_groups(count, chunk):
    """The rows of a batch of ``count`` in groups of about ``chunk``, each closed under the mixing's
    pairing of row ``i`` with row ``count - 1 - i`` (:func:`~keras_structinit.recipes.image_ops.mix`):
    rows ``lo:hi``, the middle row of an odd ``count`` in the last group, then rows
    ``count - hi:count - lo``, so that a group's mirror is its own pairing. Yields
    ``(rows, front)``: int32 rows and how many of them lead the batch (the rest trail it, in order)."""
    if chunk >= count:
        yield np.arange(count, dtype=np.int32), count
        return
    half, step = count // 2, max(1, chunk // 2)
    for lo in range(0, half, step):
        hi = min(half, lo + step)
        middle = [half] if count % 2 and hi == half else []
        rows = np.concatenate([np.arange(lo, hi), middle, np.arange(count - hi, count - lo)])
        yield rows.astype(np.int32), hi - lo + len(middle)


def _draws_of(draws, names, rows, whole):
    """Device tensors of the ``names`` (``{name: image axis}``) of ``draws`` at ``rows``."""
    picked = {}
    for name, axis in names.items():
        value = draws[name]
        if axis is not None and not whole:
            value = np.take(value, rows, axis=axis)
        picked[name] = keras.ops.convert_to_tensor(value)
    return picked


def _compiled(function, retrace=False):
    """``function`` compiled for the running backend: ``jax.jit``, a ``tf.function`` (XLA where an
    accelerator is; traced per shape with ``retrace``, else a trace of unknown batch size after
    the second), or itself (PyTorch, eager)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.jit(function)
    if backend == "tensorflow":
        import tensorflow as tf

        from keras_structinit.recipes.devices import accelerator

        return tf.function(function, jit_compile=accelerator() != "cpu", reduce_retracing=not retrace)
    return function


class _DeviceStream(keras.utils.PyDataset):
    """What both native streams share: the order of a pass, the draws of a batch, and the
    compiled device half (:func:`~keras_structinit.recipes.augment.transform_batch`)."""

    def __init__(
        self, count, size, batch_size, mean, std, augmentation, seed, start_batch, drop_remainder, workers=1
    ):
        batch_size = validation.positive_int(batch_size, "batch_size")
        # About a batch in flight per worker (each a float32 batch on the device), within AHEAD_BYTES.
        depth = queue_depth(workers, batch_size, size)
        super().__init__(workers=workers, use_multiprocessing=False, max_queue_size=depth)
        self.batch_size = batch_size
        self.seed = validation.random_seed(seed)
        self.start_batch = validation.int_value(start_batch, "start_batch", minimum=0)
        self.augmentation = augmentation
        self.count, self.size = count, tuple(size)
        self.mean, self.std = tuple(mean), tuple(std)
        if drop_remainder is None:  # training drops a pass's last partial batch, evaluation keeps it
            drop_remainder = augmentation is not None
        drop = bool(drop_remainder) and self.count >= self.batch_size
        self.batches_per_pass = self.count // self.batch_size if drop else -(-self.count // self.batch_size)
        self._K = image_ops.backend_ops()
        self._order = (None, None)
        self._order_lock = threading.Lock()  # workers > 1 call __getitem__ from several threads
        self._device_lock = threading.Lock()
        # Two compiled calls: in one, XLA on CPU fused the per-image ops into each of the mixing's
        # uses of their output, computing them again (JAX, one core, CIFAR with RandAugment and
        # MixUp/CutMix: 3451 images/s as one call, 5887 as two).
        self._augment = _compiled(self._augment_images, retrace=True)  # static shapes (mix_groups' sizes)
        self._finish = _compiled(self._finish_batch, retrace=True)
        self._eval = _compiled(self._eval_batch)

    @property
    def num_batches(self):
        return None if self.augmentation is not None else self.batches_per_pass

    def _augment_images(self, images, draws):
        return augment.augment_images(self._K, self.augmentation, images, draws)

    def _finish_batch(self, images, labels, draws, noise):
        return augment.finish_batch(
            self._K, self.augmentation, images, labels, draws, noise, self.mean, self.std
        )

    def _train(self, images, labels, draws, noise):
        """:func:`~keras_structinit.recipes.augment.transform_batch` as two compiled calls on
        groups of :func:`mix_groups` (at most :func:`chunk_images` images), one batch at a time.
        An image's output is a function of its own pixels and draws and of its mixing partner's,
        which its group holds: the groups give the whole batch's values."""
        count = images.shape[0]
        groups = list(mix_groups(count, chunk_images(count, self.size, images.shape[-1])))
        fronts, backs = [], []
        with self._device_lock:  # one batch's device half at a time, whatever the workers
            for rows, front in groups:
                whole = len(groups) == 1
                index = keras.ops.convert_to_tensor(rows)

                def part(tensor, whole=whole, index=index):
                    return tensor if whole or tensor is None else keras.ops.take(tensor, index, axis=0)

                augmented = self._augment(part(images), _draws_of(draws, _IMAGE_DRAWS, rows, whole))
                batch_draws = _draws_of(draws, _BATCH_DRAWS, rows, whole)
                out = self._finish(augmented, part(labels), batch_draws, part(noise))
                if whole:
                    return out
                fronts.append(tuple(t[:front] for t in out))
                backs.insert(0, tuple(t[front:] for t in out))
                del augmented, out
            del images, noise
            pieces = [p for p in fronts + backs if p[0].shape[0]]
            return tuple(keras.ops.concatenate([p[i] for p in pieces], axis=0) for i in range(2))

    def _eval_batch(self, images):
        return image_ops.normalize(self._K, self._K.core.cast(images, "float32"), self.mean, self.std)

    def indices(self, index):
        """``(pass, position, example indices)`` of item ``index``."""
        if self.augmentation is None:
            stop = min((index + 1) * self.batch_size, self.count)
            return 0, index, np.arange(index * self.batch_size, stop)
        epoch_pass, position = divmod(self.start_batch + index, self.batches_per_pass)
        with self._order_lock:
            if self._order[0] != epoch_pass:
                self._order = (epoch_pass, augment.pass_order(self.seed, epoch_pass, self.count))
            order = self._order[1]
        return epoch_pass, position, order[position * self.batch_size : (position + 1) * self.batch_size]

    def _images(self, rows, epoch_pass, position):
        """The uint8 images ``(B, H, W, C)`` of ``rows``, a backend tensor."""
        raise NotImplementedError

    def __getitem__(self, index):
        epoch_pass, position, rows = self.indices(index)
        images = self._images(rows, epoch_pass, position)
        labels = self._labels[rows]
        if self.augmentation is None:
            return self._eval(images), keras.ops.convert_to_tensor(labels)
        draws = augment.draw_batch(self.augmentation, self.seed, epoch_pass, position, len(rows), self.size)
        noise = None
        if self.augmentation.random_erasing:
            shape = (len(rows), *self.size, images.shape[-1])
            noise = keras.random.normal(shape, seed=int(draws["noise_seed"]))
        return self._train(images, keras.ops.convert_to_tensor(labels), draws, noise)


class ArrayStream(_DeviceStream):
    """Normalized ``(images, labels)`` batches of uint8 arrays, for ``model.fit``.

    Training (``augmentation`` given): an endless stream of passes, each in its own order
    (:func:`~keras_structinit.recipes.augment.pass_order`), each dropping its last partial batch
    unless ``drop_remainder=False``; item ``i`` is batch ``start_batch + i`` of the stream, so a
    resumed run passes ``start_batch = epoch * steps_per_epoch``. Evaluation (``augmentation=None``):
    one pass in order, normalization only.
    """

    def __init__(
        self, x, y, batch_size, mean, std, augmentation=None, seed=0, start_batch=0, drop_remainder=None
    ):
        super().__init__(
            len(x), x.shape[1:3], batch_size, mean, std, augmentation, seed, start_batch, drop_remainder
        )
        self._pixels = keras.ops.convert_to_tensor(np.asarray(x, np.uint8))
        self._labels = np.asarray(y, np.float32)

    def _images(self, rows, epoch_pass, position):
        return keras.ops.take(self._pixels, keras.ops.convert_to_tensor(rows.astype(np.int32)), axis=0)


#: The default most threads an :class:`ImageStream` decodes with (each holds a batch in flight).
MAX_WORKERS = 8


def _cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class ImageStream(_DeviceStream):
    """ImageNet-style batches for ``model.fit``: images of any size decoded on the host, then
    augmented on the device.

    ``images``: image file paths (JPEG, PNG, ...; decoded with Pillow) or a uint8 array
    ``(N, H, W, 3)``. ``workers`` threads (default: the cores this process may use, at most
    :data:`MAX_WORKERS`) each prepare a batch: decode, then, training, the random-resized crop of
    :func:`~keras_structinit.recipes.augment.resized_crop_box` (torchvision's
    ``RandomResizedCrop``: area ``scale``, aspect ``ratio``, bilinear to ``image_size``);
    evaluating, the central square resized to ``image_size / crop_fraction`` and its central
    ``image_size`` crop. The rest of ``augmentation`` (flip, RandAugment, erasing, mixing) and
    the normalization run on the device as in :class:`ArrayStream`, with the same order, draws
    and ``start_batch``. Pillow releases the GIL while it decodes and resizes, so threads
    scale without copies of the data in worker processes.
    """

    def __init__(
        self,
        images,
        y,
        batch_size,
        image_size,
        mean,
        std,
        augmentation=None,
        seed=0,
        start_batch=0,
        drop_remainder=None,
        crop_fraction=0.875,
        scale=(0.08, 1.0),
        ratio=(3 / 4, 4 / 3),
        workers=None,
    ):
        image_size = validation.positive_int(image_size, "image_size")
        if workers is None:
            workers = min(_cores(), MAX_WORKERS)
        workers = validation.positive_int(workers, "workers")
        if not 0 < validation.finite_float(crop_fraction, "crop_fraction") <= 1:
            raise ValueError(f"`crop_fraction` must be in (0, 1]. Received: crop_fraction={crop_fraction!r}")
        if augmentation is not None and augmentation.pad:
            raise ValueError(
                "ImageStream crops with `scale` and `ratio`; its augmentation takes pad=0. "
                f"Received: pad={augmentation.pad}"
            )
        super().__init__(
            len(images),
            (image_size, image_size),
            batch_size,
            mean,
            std,
            augmentation,
            seed,
            start_batch,
            drop_remainder,
            workers=workers,
        )
        from keras_structinit.datasets import _import_pil, rgb_image

        self._pil, self._rgb = _import_pil(), rgb_image
        self._sources = images
        self._labels = np.asarray(y, np.float32)
        self.load_size = round(image_size / crop_fraction)
        self.scale, self.ratio = tuple(scale), tuple(ratio)

    def _open(self, row):
        source = self._sources[row]
        if isinstance(source, (str, os.PathLike)):
            with self._pil.open(source) as image:
                return self._rgb(image, f"Image {os.fspath(source)!r}").copy()  # 16-bit scaled, not clipped
        return self._pil.fromarray(np.asarray(source, np.uint8))

    def _images(self, rows, epoch_pass, position):
        side = self.size[0]
        out = np.empty((len(rows), side, side, 3), np.uint8)
        bilinear = self._pil.Resampling.BILINEAR
        uniforms = None
        if self.augmentation is not None:
            uniforms = augment.draw_crops(self.seed, epoch_pass, position, len(rows))
        for i, row in enumerate(rows):
            image = self._open(int(row))
            width, height = image.size
            if uniforms is not None:
                top, left, h, w = augment.resized_crop_box(uniforms[i], height, width, self.scale, self.ratio)
                crop = image.crop((left, top, left + w, top + h))  # then resized: torchvision's resized_crop
                out[i] = np.asarray(crop.resize((side, side), bilinear))
            else:  # resized at load_size, then cropped, as torchvision's Resize + CenterCrop
                edge = min(width, height)
                top, left = (height - edge) // 2, (width - edge) // 2
                square = image.resize(
                    (self.load_size, self.load_size), bilinear, box=(left, top, left + edge, top + edge)
                )
                start = (self.load_size - side) // 2
                out[i] = np.asarray(square)[start : start + side, start : start + side]
        return keras.ops.convert_to_tensor(out)
