"""``SelectWeightsFrom``: weight selection at the start of ``fit``, for students built inside a script."""

from __future__ import annotations

import keras

from keras_structinit import validation
from keras_structinit.selection.indices import ELEMENT_METHODS, LAYER_METHODS
from keras_structinit.selection.plan import HEAD_MODES
from keras_structinit.selection.select import select_weights

__all__ = ["SelectWeightsFrom"]

_OPTIONS = ("layer_selection", "element_selection", "heads", "skip", "seed", "strict", "family")


class SelectWeightsFrom(keras.callbacks.Callback):
    """Applies :func:`~keras_structinit.selection.select_weights` from ``teacher`` at ``on_train_begin``.

    Refuses (``ValueError``) a student whose optimizer has already taken a
    step: selection replaces the weights it would keep training.

    Args:
        teacher: a ``keras.Model`` or a ``.keras`` path (loaded when training starts).
        **options: keyword arguments of ``select_weights``.

    Attributes:
        report: the :class:`~keras_structinit.selection.SelectionReport`, after training starts.

    Example:

    >>> student.fit(x, y, epochs=10, callbacks=[SelectWeightsFrom("teacher.keras")])
    """

    def __init__(self, teacher, **options):
        super().__init__()
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise TypeError(f"Unknown select_weights option(s) {unknown}; expected some of {_OPTIONS}.")
        for name, allowed in (("layer_selection", LAYER_METHODS), ("element_selection", ELEMENT_METHODS),
                              ("heads", HEAD_MODES)):
            if name in options:
                validation.one_of(options[name], name, allowed)
        self.teacher = teacher
        self.options = options
        self.report = None

    def on_train_begin(self, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and optimizer.built and int(optimizer.iterations) > 0:
            raise ValueError(
                f"SelectWeightsFrom: the student {self.model.name!r} has already trained "
                f"({int(optimizer.iterations)} optimizer steps); select weights into a fresh model."
            )
        self.report = select_weights(self.teacher, self.model, **self.options)
