"""``SelectWeightsFrom``: weight selection at the start of ``fit``, for students built inside a script."""

from __future__ import annotations

import keras

from keras_structinit.selection.indices import ELEMENT_METHODS, LAYER_METHODS
from keras_structinit.selection.planning import HEAD_MODES
from keras_structinit.selection.select import selection_report
from keras_structinit.selection.teachers import check_teacher_spec
from keras_structinit.utils import validation

__all__ = ["SelectWeightsFrom"]

_OPTIONS = ("layer_selection", "element_selection", "heads", "skip", "seed", "strict", "family", "copy_head")


class SelectWeightsFrom(keras.callbacks.Callback):
    """Applies :func:`~keras_structinit.selection.select_weights` from ``teacher`` at ``on_train_begin``.

    Refuses (``ValueError``) a student whose optimizer has already taken a
    step: selection replaces the weights it would keep training.

    Args:
        teacher: a ``keras.Model``, a ``.keras`` path or another spec of
            :func:`~keras_structinit.selection.load_teacher`, loaded when
            training starts; checked here (a missing local file is a ``ValueError``,
            another type a ``TypeError``).
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
        for name, allowed in (
            ("layer_selection", LAYER_METHODS),
            ("element_selection", ELEMENT_METHODS),
            ("heads", HEAD_MODES),
        ):
            if name in options:
                validation.one_of(options[name], name, allowed)
        self.teacher = check_teacher_spec(teacher)
        self.options = options
        self.report = None

    def on_train_begin(self, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and optimizer.built and int(optimizer.iterations) > 0:
            raise ValueError(
                f"SelectWeightsFrom: the student {self.model.name!r} has already trained "
                f"({int(optimizer.iterations)} optimizer steps); select weights into a fresh model."
            )
        self.report = selection_report(self.model, teacher=self.teacher, write=True, **self.options)
