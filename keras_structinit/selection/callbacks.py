"""``SelectWeightsFrom``: weight selection at the start of ``fit``, for students built inside a script."""

from __future__ import annotations

import os

import keras

from keras_structinit import validation
from keras_structinit.selection.indices import ELEMENT_METHODS, LAYER_METHODS
from keras_structinit.selection.planning import HEAD_MODES
from keras_structinit.selection.select import selection_report
from keras_structinit.selection.teachers import TEACHER_FORMS, application_builder

__all__ = ["SelectWeightsFrom"]

_OPTIONS = ("layer_selection", "element_selection", "heads", "skip", "seed", "strict", "family")


def _check_teacher(teacher):
    """``teacher`` if it can name a teacher (see :func:`~keras_structinit.selection.load_teacher`).

    Nothing is loaded: models are taken as they are, and a string is refused
    only when it names a local file or directory that is missing: a ``.keras``
    path, a keras.applications weights file, or a path with a separator (or
    starting with ``.``) that is not a preset handle such as ``kaggle://...``.
    A local directory must be a KerasHub preset (hold ``config.json``).

    Raises:
        TypeError: ``teacher`` is neither a ``keras.Model``, a str nor an ``os.PathLike``.
        ValueError: an empty string, or a path of the above kinds that does not exist.
    """
    if isinstance(teacher, keras.Model):
        return teacher
    if not isinstance(teacher, (str, os.PathLike)):
        raise TypeError(
            f"`teacher` must be {TEACHER_FORMS}. "
            f"Received: teacher={teacher!r} of type {type(teacher).__name__}"
        )
    spec = os.fspath(teacher)
    if not spec:
        raise ValueError(f"`teacher` must be {TEACHER_FORMS}. Received: teacher=''")
    if spec.endswith(".keras"):
        if not os.path.isfile(spec):
            raise ValueError(f"`teacher` names a .keras file that does not exist. Received: teacher={spec!r}")
        return teacher
    if os.path.isdir(spec):
        if not os.path.isfile(os.path.join(spec, "config.json")):
            raise ValueError(
                "`teacher` is a directory without config.json, not a KerasHub preset directory. "
                f"Received: teacher={spec!r}"
            )
        return teacher
    name, _, weights = spec.partition(":")
    if application_builder(name) is not None:
        if weights and not os.path.isfile(weights):
            raise ValueError(
                f"`teacher` names a weights file that does not exist: {weights!r}. Received: teacher={spec!r}"
            )
        return teacher
    separators = [os.sep] + ([os.altsep] if os.altsep else [])
    local = any(sep in spec for sep in separators) or spec.startswith(".")
    if local and "://" not in spec and not os.path.exists(spec):
        raise ValueError(f"`teacher` names a path that does not exist. Received: teacher={spec!r}")
    return teacher


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
        self.teacher = _check_teacher(teacher)
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
