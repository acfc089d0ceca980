"""Teachers from the ecosystem: ``load_teacher`` and ``smaller_config``.

A teacher is any trained Keras model of a supported family (see
:data:`~keras_structinit.selection.families.FAMILIES`); these helpers get one
from where users keep them, with each library's own loader.
"""

from __future__ import annotations

from keras_structinit.contract import check_model
from keras_structinit.sources import MODEL_FORMS, application_builder, load_model

__all__ = ["TEACHER_FORMS", "application_builder", "load_teacher", "smaller_config"]

#: What ``teacher`` may be (:data:`keras_structinit.sources.MODEL_FORMS`).
TEACHER_FORMS = MODEL_FORMS


def load_teacher(spec, *, max_model_bytes=None, **kwargs):
    """A teacher model from ``spec``: :func:`keras_structinit.sources.load_model` with errors naming
    ``teacher`` (a ``keras.Model``, a ``.keras`` file, a KerasHub preset name or directory,
    ``"keras_cv:PRESET"``, or ``"ConvNeXtTiny[:weights.h5]"``; ``kwargs`` go to the loader, e.g.
    ``input_shape``, ``classes``, ``include_preprocessing``; keras.applications models give logits).
    ``max_model_bytes``: the most bytes of variables a teacher file may declare (default 4 GiB,
    :mod:`keras_structinit.model_files`).

    Example:

    >>> teacher = load_teacher("ConvNeXtTiny:convnext_tiny.weights.h5", include_preprocessing=False)
    >>> teacher = load_teacher("/data/presets/vit_small")   # KerasHub preset directory
    """
    return load_model(spec, name="teacher", max_model_bytes=max_model_bytes, **kwargs)


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
