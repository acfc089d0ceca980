"""The native input stream: uint8 images on the device, each batch augmented there, no TensorFlow.

:class:`ArrayStream` is a ``keras.utils.PyDataset`` with no worker (``model.fit`` calls it in its
own thread, so no process holds a copy of the images): the uint8 images live on the device (host
memory on a CPU); per batch it draws on the host (:func:`~keras_structinit.recipes.augment.draw_batch`,
a few kB), gathers the batch on the device and runs
:func:`~keras_structinit.recipes.augment.transform_batch` there, compiled once with XLA on JAX
(``jax.jit``) and run as a ``tf.function`` on TensorFlow (XLA on an accelerator); PyTorch runs it
eagerly. Its batches are the backend's tensors, which ``fit`` takes as they are.
"""

from __future__ import annotations

import keras
import numpy as np

from keras_structinit import validation
from keras_structinit.recipes import augment, image_ops


def tensorflow_available():
    """Whether TensorFlow can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("tensorflow") is not None


def choose_pipeline(pipeline="auto", distribution=None):
    """The input stream a run uses: ``"native"`` or ``"tf"``.

    ``"auto"`` takes the native stream where TensorFlow is not installed and ``tf.data`` where
    it is, as before the native stream existed (on one core of the 2-core CPU, JAX, the native
    stream measured 2.4-4.9x tf.data's images/s: ``benchmarks/results/cpu/input_streams.md``;
    making it ``auto``'s choice everywhere is still to be validated); a multi-process run takes
    ``tf.data``, which Keras shards across processes. ``"tf"`` without TensorFlow is an
    ``ImportError`` that says what to install.
    """
    validation.one_of(pipeline, "pipeline", ("auto", "native", "tf"))
    if pipeline == "auto":
        pipeline = "tf" if tensorflow_available() or distribution == "multi_worker" else "native"
    if pipeline == "tf" and not tensorflow_available():
        raise ImportError("pipeline='tf' needs TensorFlow (`pip install tensorflow-cpu`, or keras_structinit"
                          "[recipes]); pipeline='native' (or 'auto') trains without it")
    if pipeline == "native" and distribution == "multi_worker":
        raise ValueError("pipeline='native' feeds one process; a multi_worker run needs pipeline='tf' "
                         "(Keras shards tf.data across processes)")
    return pipeline


#: The draws the compiled batch function takes (the rest are host-side seeds).
_DEVICE_DRAWS = ("offsets", "flips", "kernels", "arguments", "rows", "boxes", "mix_weight", "mix_box")


def _compiled(function):
    """``function`` compiled for the running backend: ``jax.jit``, a ``tf.function`` (XLA where an
    accelerator is), or itself (PyTorch, eager)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.jit(function)
    if backend == "tensorflow":
        import tensorflow as tf

        from keras_structinit.recipes.devices import accelerator

        return tf.function(function, jit_compile=accelerator() != "cpu", reduce_retracing=True)
    return function


class ArrayStream(keras.utils.PyDataset):
    """Normalized ``(images, labels)`` batches of uint8 arrays, for ``model.fit``.

    Training (``augmentation`` given): an endless stream of passes, each in its own order
    (:func:`~keras_structinit.recipes.augment.pass_order`), each dropping its last partial batch
    unless ``drop_remainder=False``; item ``i`` is batch ``start_batch + i`` of the stream, so a
    resumed run passes ``start_batch = epoch * steps_per_epoch``. Evaluation (``augmentation=None``):
    one pass in order, normalization only.
    """

    def __init__(self, x, y, batch_size, mean, std, augmentation=None, seed=0, start_batch=0,
                 drop_remainder=None):
        super().__init__(workers=1, use_multiprocessing=False)
        self.batch_size = validation.positive_int(batch_size, "batch_size")
        self.seed = validation.random_seed(seed)
        self.start_batch = validation.int_value(start_batch, "start_batch", minimum=0)
        self.augmentation = augmentation
        self.count = len(x)
        self.size = tuple(x.shape[1:3])
        self.mean, self.std = tuple(mean), tuple(std)
        if drop_remainder is None:  # training drops a pass's last partial batch, evaluation keeps it
            drop_remainder = augmentation is not None
        drop = bool(drop_remainder) and self.count >= self.batch_size
        self.batches_per_pass = self.count // self.batch_size if drop else -(-self.count // self.batch_size)
        self._K = image_ops.backend_ops()
        self._images = keras.ops.convert_to_tensor(np.asarray(x, np.uint8))
        self._labels = np.asarray(y, np.float32)
        self._order = (None, None)
        self._train = _compiled(self._train_batch)
        self._eval = _compiled(self._eval_batch)

    @property
    def num_batches(self):
        return None if self.augmentation is not None else self.batches_per_pass

    def _train_batch(self, images, labels, draws, noise):
        return augment.transform_batch(self._K, self.augmentation, images, labels, draws, noise,
                                       self.mean, self.std)

    def _eval_batch(self, images):
        return image_ops.normalize(self._K, self._K.core.cast(images, "float32"), self.mean, self.std)

    def indices(self, index):
        """``(pass, position, example indices)`` of item ``index``."""
        if self.augmentation is None:
            stop = min((index + 1) * self.batch_size, self.count)
            return 0, index, np.arange(index * self.batch_size, stop)
        epoch_pass, position = divmod(self.start_batch + index, self.batches_per_pass)
        if self._order[0] != epoch_pass:
            self._order = (epoch_pass, augment.pass_order(self.seed, epoch_pass, self.count))
        order = self._order[1]
        return epoch_pass, position, order[position * self.batch_size:(position + 1) * self.batch_size]

    def __getitem__(self, index):
        epoch_pass, position, rows = self.indices(index)
        images = keras.ops.take(self._images, keras.ops.convert_to_tensor(rows.astype(np.int32)), axis=0)
        labels = self._labels[rows]
        if self.augmentation is None:
            return self._eval(images), keras.ops.convert_to_tensor(labels)
        draws = augment.draw_batch(self.augmentation, self.seed, epoch_pass, position, len(rows), self.size)
        noise = None
        if self.augmentation.random_erasing:
            shape = (len(rows), *self.size, images.shape[-1])
            noise = keras.random.normal(shape, seed=int(draws["noise_seed"]))
        device_draws = {k: keras.ops.convert_to_tensor(draws[k]) for k in _DEVICE_DRAWS}
        return self._train(images, keras.ops.convert_to_tensor(labels), device_draws, noise)
