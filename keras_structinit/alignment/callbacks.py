"""``RecordInitialNorms``: the weight norms a model starts training with."""

from __future__ import annotations

import keras

from keras_structinit.alignment.apply import weight_norms

__all__ = ["RecordInitialNorms"]


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
