"""How each form of a model argument is loaded: with the loader of the library it comes from.

:class:`~keras_structinit.models.spec.ModelSpec` parses the text (the one grammar); the functions
here read what it names, with one-line errors for a missing, truncated or corrupt file and for a
download that fails offline: a ``.keras`` file (its zip and declared sizes checked before Keras reads
it), a KerasHub preset (a local folder or a named one), a KerasCV preset and a keras.applications
constructor with or without weights.
"""

from __future__ import annotations

import os
import zipfile

import keras

from keras_structinit.utils.file_checks import check_zip_sizes
from keras_structinit.utils.model_files import check_model_file, check_preset_folder, check_weights_file

__all__ = ["application_builder", "build_application", "load_cv_preset", "load_hub_preset", "load_keras_file"]


def application_builder(name):
    """The ``keras.applications`` constructor called ``name`` (``"ConvNeXtTiny"``), else ``None``."""
    builder = getattr(keras.applications, name, None)
    return builder if callable(builder) and name[:1].isupper() else None


def load_keras_file(path, name, *, max_model_bytes=None, **kwargs):
    """``keras.saving.load_model(path, compile=False)`` after the checks of a ``.keras`` file: it
    exists, is a zip, inflates within bounds and declares at most ``max_model_bytes`` of variables
    (:func:`~keras_structinit.utils.model_files.check_model_file`). ``name`` spells the argument."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"`{name}` does not exist: {name}={path!r}")
    if not zipfile.is_zipfile(path):  # Keras would call it "not found"
        raise ValueError(
            f"`{name}` {path!r} is not a .keras archive (not a zip file): is it truncated or corrupt?"
        )
    check_zip_sizes(path, name)  # a bomb is refused before Keras inflates a byte of it
    check_model_file(  # and sizes that the files declare, before Keras allocates them
        path,
        name,
        max_model_bytes=max_model_bytes,
        custom_objects=kwargs.get("custom_objects"),
        safe_mode=kwargs.get("safe_mode", True),
    )
    try:
        return keras.saving.load_model(path, compile=False, **kwargs)
    except (zipfile.BadZipFile, EOFError, KeyError, OSError) as err:
        raise ValueError(f"`{name}` {path!r} is a corrupt .keras file: {_first_line(err)}") from err


def load_hub_preset(preset, name, *, local, **kwargs):
    """``keras_hub.models.Backbone.from_preset(preset)``: a local preset folder (``local``; its JSON
    checked first) or a named preset or handle (downloaded)."""
    if local:  # a folder with config.json (ModelSpec.parse checked)
        check_preset_folder(preset, name)  # its JSON's size and depth, before KerasHub parses it
        return _keras_hub().models.Backbone.from_preset(preset, **kwargs)
    hub = _keras_hub()
    with _downloading(
        f"the KerasHub preset {preset!r}", "save it once with backbone.save_to_preset(DIR) and pass DIR"
    ):
        return hub.models.Backbone.from_preset(preset, **kwargs)


def load_cv_preset(preset, name, **kwargs):
    """``keras_cv.models.Backbone.from_preset(preset)`` (the ``cv`` extra; KerasCV needs TensorFlow)."""
    try:
        import keras_cv
    except ImportError as err:
        raise ImportError(
            f"{name}='keras_cv:...' needs KerasCV: pip install -e \".[cv]\" (it needs TensorFlow)"
        ) from err
    return keras_cv.models.Backbone.from_preset(preset, **kwargs)


def build_application(constructor, weights, name, *, max_model_bytes=None, **kwargs):
    """``keras.applications.<constructor>(weights=weights, **kwargs)``, logits out unless
    ``classifier_activation`` is given. ``weights``: ``None`` (built without weights), ``"imagenet"``
    (downloaded) or a weights file (``.h5``, ``.weights.h5`` or ``.keras``; its declared sizes checked
    first)."""
    builder = application_builder(constructor)
    kwargs.setdefault("classifier_activation", None)
    if weights is None:
        return builder(weights=None, **kwargs)
    if weights == "imagenet":
        with _downloading(
            f"the ImageNet weights of keras.applications.{constructor}",
            f"pass a weights file instead: 'keras.applications:{constructor}:/path/weights.h5'",
        ):
            return builder(weights="imagenet", **kwargs)
    if not os.path.isfile(weights):
        raise FileNotFoundError(f"The weights file of `{name}` does not exist: {weights!r}")
    check = check_model_file if weights.endswith(".keras") else check_weights_file
    check(weights, name, max_model_bytes=max_model_bytes)
    return builder(weights=weights, **kwargs)


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
