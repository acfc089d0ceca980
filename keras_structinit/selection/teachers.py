"""Teachers from the ecosystem: ``load_teacher`` and ``smaller_config``.

A teacher is any trained Keras model of a supported family (see
:data:`~keras_structinit.selection.families.FAMILIES`); these helpers get one
from where users keep them, with each library's own loader.
"""

from __future__ import annotations

import os

import keras

from keras_structinit import _hooks
from keras_structinit.engine.contract import check_model

__all__ = ["check_teacher_spec", "load_teacher", "smaller_config"]


def load_teacher(spec, *, max_model_bytes=None, **kwargs):
    """A teacher model from ``spec``: a ``keras.Model``, or a model argument in any form of the one
    grammar (:class:`keras_structinit.models.spec.ModelSpec`: a ``.keras`` file, a KerasHub preset
    folder, ``keras_hub:PRESET``, ``keras_cv:PRESET``, ``keras.applications:NAME[:WEIGHTS]``, a zoo
    name), read by :func:`keras_structinit.models.spec.load_model` with errors naming ``teacher``.
    A keras.applications teacher has weights only when asked (``:imagenet`` or ``:FILE``) and gives
    logits; ``kwargs`` go to the builder or loader (``input_shape``, ``classes``,
    ``include_preprocessing``). ``max_model_bytes``: the most bytes of variables a teacher file may
    declare (default 4 GiB, :mod:`keras_structinit.utils.model_files`).

    Example:

    >>> teacher = load_teacher("keras.applications:ConvNeXtTiny:imagenet", include_preprocessing=False)
    >>> teacher = load_teacher("/data/presets/vit_small")   # KerasHub preset directory
    """
    return _hooks.load_model(spec, name="teacher", max_model_bytes=max_model_bytes, **kwargs)


def check_teacher_spec(spec):
    """``spec`` if it names a teacher: a ``keras.Model`` as is, else text the one grammar parses (a
    missing file refused); nothing is loaded."""
    if isinstance(spec, keras.Model):
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(
            "`teacher` must be a keras.Model or a model argument (a .keras file, a KerasHub preset folder, "
            "keras_hub:PRESET, keras_cv:PRESET, keras.applications:NAME[:WEIGHTS], a zoo name). "
            f"Received: teacher={spec!r} of type {type(spec).__name__}"
        )
    _hooks.parse_model(spec, "`teacher`")
    return spec


def smaller_config(teacher, **changes):
    """The constructor config of a student of ``teacher``'s family: the teacher's, with ``changes``.

    For models whose config is their constructor arguments (KerasHub
    backbones). Build the student with ``type(teacher).from_config(config)``.
    Unknown keys are a ``ValueError``; the package's own models are built by
    name (``keras_structinit.models.build_model``).

    Example:

    >>> config = smaller_config(teacher, hidden_dim=192, num_heads=3, mlp_dim=768, num_layers=6)
    >>> student = type(teacher).from_config(config)
    """
    teacher = check_model(teacher, "teacher")
    config = teacher.get_config()
    if "layers" in config or "input_layers" in config:
        raise TypeError(
            f"`teacher` ({type(teacher).__name__}) is a functional model whose config is its graph, not "
            "constructor arguments: build the student with its library's builder (for the package's models, "
            "keras_structinit.models.build_model)."
        )
    unknown = sorted(set(changes) - set(config))
    if unknown:
        raise ValueError(
            f"{type(teacher).__name__} has no argument(s) {unknown}; its config has {sorted(config)}."
        )
    config = {**config, **changes}
    config.pop("name", None)
    return config
