"""``RecordInitialNorms``: the weight norms a model starts training with; ``RecordSpecialization``:
how often each conv and Dense layer's neurons are activated, per epoch (Maennel et al., Fig. 24)."""

from __future__ import annotations

import keras
import numpy as np

from keras_structinit.alignment.activations import BATCH_SIZE, layer_activations
from keras_structinit.alignment.apply import weight_norms
from keras_structinit.utils import validation

__all__ = ["RecordInitialNorms", "RecordSpecialization"]


class RecordInitialNorms(keras.callbacks.Callback):
    """Records ``{layer path: ||theta||_2}`` of the model's layers when its first ``fit`` begins.

    The transfer protocol of Maennel et al. (NeurIPS 2020, App. A.4)
    pre-trains a network (e.g. on random labels), rescales each layer back
    to its initial norm, then fine-tunes; this callback keeps those norms for
    :func:`~keras_structinit.alignment.rescale_to_initial_norms`. Every layer
    with a trainable kernel is recorded, its kernel and bias together
    (:func:`weight_norms`); a later ``fit`` with the same callback keeps the
    first record.

    Attributes:
        norms: the recorded dict, ``None`` before training begins.

    Example:
        >>> record = RecordInitialNorms()
        >>> model.fit(x, random_labels, epochs=10, callbacks=[record])
        >>> rescale_to_initial_norms(model, record.norms)
    """

    def __init__(self):
        super().__init__()
        self.norms = None

    def on_train_begin(self, logs=None):
        if self.norms is None:
            self.norms = weight_norms(self.model)

    def get_config(self):
        """The constructor arguments (none; callbacks are not serialized by Keras)."""
        return {}


class RecordSpecialization(keras.callbacks.Callback):
    """Records, after every epoch, how often each conv and Dense layer's neurons are activated on
    a fixed set of held-out images: Maennel et al.'s Fig. 24 (App. F), "the frequency of the output
    of a hidden activation function being non-zero measured over a hold-out dataset", which drops
    abruptly and for good in the upper layers when pre-training switches to the downstream task.

    A neuron is one value of a layer's activation (:mod:`keras_structinit.alignment.activations`
    says which values: the layer's own non-linear output, or the activation layer after it), and
    it is activated by an image when that value is above 0. A layer's frequency is the fraction of
    its (neuron, image) pairs activated (``inspect``'s ``active``). The images are a subset of
    ``images`` drawn once, with ``seed``, so every epoch measures the same ones.

    Each epoch's frequencies also go into the epoch's logs as ``activation/<layer name>`` (so
    ``History`` and ``CSVLogger`` keep them) unless ``add_to_logs=False``. A later ``fit`` with the
    same callback goes on appending (Fig. 24's two tasks, a fine-tuning ``fit`` after the
    pre-training one); the epochs are the ones Keras counts in each ``fit``.

    Args:
        images: held-out images ``(N, H, W, C)``, scaled as the model's input is.
        num_examples: how many of them to measure (a subset drawn with ``seed``); ``None``: all.
        seed: the subset's seed (an int).
        layers: names of the conv and Dense layers to follow; ``None``: every one.
        batch_size: of the forward passes.
        add_to_logs: also write the frequencies into the epoch's logs.

    Attributes:
        indices: the measured images' indices into ``images`` (sorted).
        epochs: the epochs recorded (1-based, as Keras counts them in each ``fit``).
        history: ``{layer name: [frequency after each recorded epoch]}``.
        dead: ``{layer name: [share of its neurons no image activates, per epoch]}``.
        initial: ``{layer name: frequency}`` when the first ``fit`` begins (Fig. 24's start).

    Example:
        >>> record = RecordSpecialization(x_test, num_examples=1000, seed=0)
        >>> model.fit(x, random_labels, epochs=20, callbacks=[record])
        >>> record.history["dense"]  # Fig. 24: one value per epoch
    """

    def __init__(
        self, images, num_examples=1000, seed=0, layers=None, batch_size=BATCH_SIZE, add_to_logs=True
    ):
        super().__init__()
        if not hasattr(images, "shape") or len(images.shape) < 2:
            raise TypeError(
                f"`images` must be an array of images (N, H, W, C). Received: {type(images).__name__}"
            )
        self.num_examples = validation.optional(validation.positive_int, num_examples, "num_examples")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"`seed` must be an int. Received: seed={seed!r}")
        self.seed = int(seed)
        if layers is not None and (isinstance(layers, str) or not all(isinstance(n, str) for n in layers)):
            raise TypeError(f"`layers` must be None or a list of layer names. Received: layers={layers!r}")
        self.layers = None if layers is None else list(layers)
        self.batch_size = validation.positive_int(batch_size, "batch_size")
        self.add_to_logs = validation.boolean(add_to_logs, "add_to_logs")
        count = int(images.shape[0])
        if count == 0:
            raise ValueError("`images` holds no image.")
        if self.num_examples is None or self.num_examples >= count:
            self.indices = np.arange(count)
        else:
            chosen = np.random.default_rng(self.seed).choice(count, self.num_examples, replace=False)
            self.indices = np.sort(chosen)
        self._images = np.asarray(keras.ops.convert_to_numpy(images))[self.indices]
        self.epochs = []
        self.history = {}
        self.dead = {}
        self.initial = None

    def _measure(self):
        rows = layer_activations(self.model, self._images, layers=self.layers, batch_size=self.batch_size)
        return {
            row.target.layer.name: (
                float(row.counts.sum() / (row.counts.size * row.examples)),
                float(np.mean(row.counts == 0)),
            )
            for row in rows
            if row.counts is not None
        }

    def on_train_begin(self, logs=None):
        if self.initial is None:
            self.initial = {name: active for name, (active, _) in self._measure().items()}

    def on_epoch_end(self, epoch, logs=None):
        measured = self._measure()
        self.epochs.append(epoch + 1)
        for name, (active, dead) in measured.items():
            self.history.setdefault(name, []).append(active)
            self.dead.setdefault(name, []).append(dead)
            if self.add_to_logs and logs is not None:
                logs[f"activation/{name}"] = active

    def get_config(self):
        """The constructor arguments but the images (data, not configuration): JSON-serializable;
        ``RecordSpecialization(images, **config)`` measures the same subset."""
        return {
            "num_examples": self.num_examples,
            "seed": self.seed,
            "layers": self.layers,
            "batch_size": self.batch_size,
            "add_to_logs": self.add_to_logs,
        }
