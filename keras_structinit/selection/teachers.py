"""Teachers from the ecosystem: ``load_teacher`` and ``smaller_config``.

A teacher is any trained Keras model of a supported family (see
:data:`~keras_structinit.selection.families.FAMILIES`); these helpers get one
from where users keep them, with each library's own loader.
"""

from __future__ import annotations

import os
import zipfile

import keras

from keras_structinit import walker

__all__ = ["TEACHER_FORMS", "application_builder", "load_teacher", "smaller_config"]

TEACHER_FORMS = (
    "a keras.Model, a .keras file, a KerasHub preset name or local preset directory, "
    "'keras_cv:PRESET' (a KerasCV backbone preset), or a keras.applications constructor name with an "
    "optional weights file ('ConvNeXtTiny' or 'ConvNeXtTiny:/path/weights.h5')"
)


def application_builder(name):
    """The ``keras.applications`` constructor called ``name`` (``"ConvNeXtTiny"``), else ``None``."""
    builder = getattr(keras.applications, name, None)
    return builder if callable(builder) and name[:1].isupper() else None


def load_teacher(spec, **kwargs):
    """A teacher model from ``spec``, loaded by the library it comes from.

    Args:
        spec: one of

            * a built ``keras.Model``: returned as is;
            * ``"path/model.keras"``: ``keras.saving.load_model(compile=False)``;
            * a local KerasHub preset directory (one with ``config.json``, as
              ``backbone.save_to_preset(dir)`` writes) or a KerasHub preset
              name / handle: ``keras_hub.models.Backbone.from_preset``;
            * ``"keras_cv:PRESET"``: ``keras_cv.models.Backbone.from_preset``
              (the ``cv`` extra; KerasCV needs TensorFlow installed);
            * ``"ConvNeXtTiny"`` (a ``keras.applications`` constructor; its
              ImageNet weights are downloaded) or ``"ConvNeXtTiny:weights.h5"``
              (a weights file, e.g. from ``model.save_weights``).
        **kwargs: passed to the loader (e.g. ``input_shape``, ``classes``,
            ``include_preprocessing`` for ``keras.applications``, whose
            ``classifier_activation`` defaults to ``None`` here: logits).

    Returns:
        The teacher, a ``keras.Model``. Downloads need network access.

    Example:

    >>> teacher = load_teacher("ConvNeXtTiny:convnext_tiny.weights.h5", include_preprocessing=False)
    >>> teacher = load_teacher("/data/presets/vit_small")   # KerasHub preset directory
    """
    if isinstance(spec, keras.Model):
        return walker.check_model(spec, "teacher")
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"`teacher` must be {TEACHER_FORMS}. Received: teacher={spec!r}")
    spec = os.fspath(spec)
    if spec.endswith(".keras"):
        if not os.path.isfile(spec):
            raise FileNotFoundError(f"`teacher` does not exist: teacher={spec!r}")
        if not zipfile.is_zipfile(spec):  # Keras would call it "not found"
            raise ValueError(f"`teacher` {spec!r} is not a .keras archive (not a zip file): is it truncated "
                             "or corrupt?")
        try:
            return keras.saving.load_model(spec, compile=False, **kwargs)
        except (zipfile.BadZipFile, EOFError, KeyError, OSError) as err:
            raise ValueError(f"`teacher` {spec!r} is a corrupt .keras file: {_first_line(err)}") from err
    if os.path.isdir(spec):
        if not os.path.isfile(os.path.join(spec, "config.json")):
            raise ValueError(f"`teacher` is a directory without config.json, not a KerasHub preset: {spec!r}")
        return _keras_hub().models.Backbone.from_preset(spec, **kwargs)
    if spec.startswith("keras_cv:"):
        try:
            import keras_cv
        except ImportError as err:
            raise ImportError(
                "teacher='keras_cv:...' needs KerasCV: pip install -e \".[cv]\" (it needs TensorFlow)"
            ) from err
        return keras_cv.models.Backbone.from_preset(spec[len("keras_cv:"):], **kwargs)
    name, _, weights = spec.partition(":")
    builder = application_builder(name)
    if builder is not None:
        if weights and not os.path.isfile(weights):
            raise FileNotFoundError(
                f"The weights file of `teacher` does not exist: {weights!r} (teacher={spec!r})")
        kwargs.setdefault("classifier_activation", None)
        if weights:
            return builder(weights=weights, **kwargs)
        with _downloading(f"the ImageNet weights of keras.applications.{name}",
                          f"pass a weights file instead: '{name}:/path/weights.h5'"):
            return builder(weights="imagenet", **kwargs)
    if "://" not in spec and (os.path.sep in spec or spec.startswith(".")):  # not a kaggle:// or hf:// handle
        raise FileNotFoundError(f"`teacher` does not exist: teacher={spec!r}")
    hub = _keras_hub()
    with _downloading(f"the KerasHub preset {spec!r}",
                      "save it once with backbone.save_to_preset(DIR) and pass DIR"):
        return hub.models.Backbone.from_preset(spec, **kwargs)


def _first_line(err):
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"


class _downloading:
    """Turns a failed download into one ``RuntimeError`` line saying what was fetched and what to do."""

    def __init__(self, what, instead):
        self.what, self.instead = what, instead

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if err is None or not isinstance(err, Exception) or isinstance(err, (TypeError, ValueError)):
            return False  # wrong arguments stay what they are
        raise RuntimeError(f"Could not load {self.what} (is the machine offline?): {_first_line(err)}; "
                           f"{self.instead}") from err


def _keras_hub():
    try:
        import keras_hub
    except ImportError as err:
        raise ImportError('KerasHub teachers need keras-hub: pip install -e ".[hub]"') from err
    return keras_hub


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
    teacher = walker.check_model(teacher, "teacher")
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
            f"{type(teacher).__name__} has no argument(s) {unknown}; its config has {sorted(config)}.")
    config = {**config, **changes}
    config.pop("name", None)
    return config
