"""Models from where users keep them: a ``.keras`` file, a KerasHub preset, KerasCV, keras.applications.

:func:`load_model` reads a model with the loader of the library it comes from, with one-line
errors for a missing, truncated or corrupt file and for a download that fails offline. Weight
selection loads its teachers this way (``selection.load_teacher``); ``structinit init`` and
``structinit inspect`` their models.
"""

from __future__ import annotations

import os
import zipfile

import keras

from keras_structinit.contract import check_model
from keras_structinit.io_utils import check_zip_sizes
from keras_structinit.model_files import check_model_file, check_weights_file

__all__ = ["APPLICATIONS", "MODEL_FORMS", "application_builder", "load_model"]

#: The prefix naming a keras.applications constructor (``"keras.applications:ConvNeXtTiny"``).
APPLICATIONS = "keras.applications:"
MODEL_FORMS = (
    "a keras.Model, a .keras file, a KerasHub preset name or local preset directory, "
    "'keras_cv:PRESET' (a KerasCV backbone preset), or a keras.applications constructor name with an "
    "optional weights file ('ConvNeXtTiny' or 'ConvNeXtTiny:/path/weights.h5', also after "
    "'keras.applications:')"
)


def application_builder(name):
    """The ``keras.applications`` constructor called ``name`` (``"ConvNeXtTiny"``), else ``None``."""
    builder = getattr(keras.applications, name, None)
    return builder if callable(builder) and name[:1].isupper() else None


def load_model(spec, *, name="model", max_model_bytes=None, **kwargs):
    """A model from ``spec``, loaded by the library it comes from.

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
        max_model_bytes: the most bytes of variables a ``.keras`` file (or a weights file) may
            declare, in its weights and in its config, checked before it is read
            (:func:`keras_structinit.model_files.check_model_file`); default: the bound of
            :func:`~keras_structinit.model_files.max_model_bytes_scope`, else 4 GiB.
        **kwargs: passed to the loader (e.g. ``input_shape``, ``classes``,
            ``include_preprocessing`` for ``keras.applications``, whose
            ``classifier_activation`` defaults to ``None`` here: logits).

    Returns:
        A ``keras.Model``. Downloads need network access. Errors name the argument ``name``
        (``"teacher"``, ``"MODEL"``).

    Example:

    >>> model = load_model("ConvNeXtTiny:convnext_tiny.weights.h5", include_preprocessing=False)
    >>> model = load_model("/data/presets/vit_small")   # KerasHub preset directory
    """
    if isinstance(spec, keras.Model):
        return check_model(spec, name)
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be {MODEL_FORMS}. Received: {name}={spec!r}")
    spec = os.fspath(spec)
    if spec.endswith(".keras"):
        if not os.path.isfile(spec):
            raise FileNotFoundError(f"`{name}` does not exist: {name}={spec!r}")
        if not zipfile.is_zipfile(spec):  # Keras would call it "not found"
            raise ValueError(
                f"`{name}` {spec!r} is not a .keras archive (not a zip file): is it truncated or corrupt?"
            )
        check_zip_sizes(spec, name)  # a bomb is refused before Keras inflates a byte of it
        check_model_file(  # and sizes that the files declare, before Keras allocates them
            spec,
            name,
            max_model_bytes=max_model_bytes,
            custom_objects=kwargs.get("custom_objects"),
            safe_mode=kwargs.get("safe_mode", True),
        )
        try:
            return keras.saving.load_model(spec, compile=False, **kwargs)
        except (zipfile.BadZipFile, EOFError, KeyError, OSError) as err:
            raise ValueError(f"`{name}` {spec!r} is a corrupt .keras file: {_first_line(err)}") from err
    if os.path.isdir(spec):
        if not os.path.isfile(os.path.join(spec, "config.json")):
            raise ValueError(f"`{name}` is a directory without config.json, not a KerasHub preset: {spec!r}")
        return _keras_hub().models.Backbone.from_preset(spec, **kwargs)
    if spec.startswith("keras_cv:"):
        try:
            import keras_cv
        except ImportError as err:
            raise ImportError(
                f"{name}='keras_cv:...' needs KerasCV: pip install -e \".[cv]\" (it needs TensorFlow)"
            ) from err
        return keras_cv.models.Backbone.from_preset(spec[len("keras_cv:") :], **kwargs)
    constructor, _, weights = spec.removeprefix(APPLICATIONS).partition(":")
    builder = application_builder(constructor)
    if builder is not None:
        if weights and not os.path.isfile(weights):
            raise FileNotFoundError(
                f"The weights file of `{name}` does not exist: {weights!r} ({name}={spec!r})"
            )
        kwargs.setdefault("classifier_activation", None)
        if weights:
            check = check_model_file if weights.endswith(".keras") else check_weights_file
            check(weights, name, max_model_bytes=max_model_bytes)
            return builder(weights=weights, **kwargs)
        with _downloading(
            f"the ImageNet weights of keras.applications.{constructor}",
            f"pass a weights file instead: '{constructor}:/path/weights.h5'",
        ):
            return builder(weights="imagenet", **kwargs)
    if "://" not in spec and (os.path.sep in spec or spec.startswith(".")):  # not a kaggle:// or hf:// handle
        raise FileNotFoundError(f"`{name}` does not exist: {name}={spec!r}")
    hub = _keras_hub()
    with _downloading(
        f"the KerasHub preset {spec!r}", "save it once with backbone.save_to_preset(DIR) and pass DIR"
    ):
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
        raise RuntimeError(
            f"Could not load {self.what} (is the machine offline?): {_first_line(err)}; {self.instead}"
        ) from err


def _keras_hub():
    try:
        import keras_hub
    except ImportError as err:
        raise ImportError('KerasHub models need keras-hub: pip install -e ".[hub]"') from err
    return keras_hub
