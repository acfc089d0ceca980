"""Frozen spatial filters, and keeping them frozen across ``.keras`` files.

Both papers that freeze filters need it: the covariance paper freezes the
depthwise convs of ConvMixers; the LC-blocks paper freezes every spatial conv
of off-the-shelf networks. Only kernel *variables* are frozen
(``variable.trainable = False``), so biases and normalization parameters of
the same layers keep training unless ``include_bias=True``.

Keras does not save a variable's ``trainable`` flag. The package's
``DepthwiseConv2D``/``GroupedConv2D`` (which the package's models use) store
it in their config (``kernel_trainable``), so their frozen kernels survive a
``.keras`` round trip by themselves. For stock layers, :func:`freeze_spatial`
records the frozen paths on the model, and ``model.save`` writes that record
into the ``.keras`` file as an asset (``assets/keras_structinit_frozen.json``,
the paths still frozen when saving); :func:`load_frozen_model` reads it back,
re-freezes the variables before the optimizer is built and then restores its
state. Plain ``keras.saving.load_model`` ignores the record.
"""

from __future__ import annotations

import json
import os
import posixpath
import zipfile

import keras

from keras_structinit import validation
from keras_structinit.walker import find_kernels, model_function

__all__ = ["FROZEN_RECORD", "freeze_spatial", "frozen_paths_in_file", "load_frozen_model",
           "portable_optimizers"]

#: The asset file, in a ``.keras`` archive, that lists the variables frozen when the model was saved.
FROZEN_RECORD = "keras_structinit_frozen.json"
_RECORD_ATTR = "_structinit_frozen"


def _check_not_trained(model):
    optimizer = getattr(model, "optimizer", None)
    if getattr(model, "compiled", False) and getattr(optimizer, "built", False):
        raise ValueError(
            f"`model` ({model.name}) has already been trained with its optimizer: "
            "Keras fixed its trainable variables then. Call freeze_spatial before "
            "the first fit, re-compile with a fresh optimizer after freezing, or "
            "reload a saved model with load_frozen_model."
        )


@model_function
def freeze_spatial(model, *, which="depthwise", include_bias=False, layers=None):
    """Marks the kernels of spatial convolutions non-trainable.

    Keras fixes the set of trainable variables when training starts: freeze
    before ``compile``/``fit``, or re-``compile`` with a fresh optimizer.

    Args:
        model: a built ``keras.Model``.
        which: ``"depthwise"`` (depthwise/grouped convs, the covariance paper's
            frozen filters) or ``"all_spatial"`` (every conv kernel larger than
            1x1, as in the LC-blocks paper; also the spatial kernels of
            ``LCConv2D`` layers, which then save ``frozen=True``).
        include_bias: also freeze the biases of those layers.
        layers: optional list of layer names/objects to restrict to.

    Returns:
        The frozen variables' paths, in model order.

    Example:
        >>> paths = freeze_spatial(model, which="all_spatial")
    """
    validation.boolean(include_bias, "include_bias")
    _check_not_trained(model)
    paths = []
    for layer, kernel in find_kernels(model, which=which, layers=layers):
        frozen = [kernel]
        bias = getattr(layer, "bias", None)
        if include_bias and bias is not None:
            frozen.append(bias)
        for variable in frozen:
            variable.trainable = False
            paths.append(variable.path)
    _record_frozen(model, paths)
    return paths


def _record_frozen(model, paths):
    """Remembers ``paths`` on ``model`` and has ``model.save`` write them as an asset.

    Keras calls a saveable's ``save_assets(dir)`` while it writes a ``.keras``
    file; an instance attribute provides it for this model only (a class's own
    ``save_assets`` still runs first). Set through ``__dict__`` so that Keras'
    attribute tracking leaves the record alone.
    """
    record = model.__dict__.setdefault(_RECORD_ATTR, {})
    record.update(dict.fromkeys(paths))
    if "save_assets" in model.__dict__:
        return
    own = getattr(type(model), "save_assets", None)

    def save_assets(dir_path):
        if own is not None:
            own(model, dir_path)
        trainable = {v.path: v.trainable for v in model.variables}
        still = [p for p in record if trainable.get(p) is False]
        with open(os.path.join(dir_path, FROZEN_RECORD), "w", encoding="utf-8") as f:
            json.dump({"format_version": RECORD_FORMAT, "frozen": still}, f, indent=1)

    model.__dict__["save_assets"] = save_assets


#: The record's layout this version writes and reads.
RECORD_FORMAT = 1
#: The largest frozen record read (one path per frozen variable: kilobytes for real models), checked
#: while inflating, before Keras' own archive checks run on the rest of the file.
MAX_RECORD_BYTES = 4 << 20


def _read_record(archive, name, filepath):
    """The frozen paths of the record ``name`` in ``archive``; one-line ``ValueError`` naming the file."""
    where = f"{os.fspath(filepath)!r} ({name})"
    with archive.open(name) as f:  # inflated piece by piece: a zip bomb stops at the cap
        text = f.read(MAX_RECORD_BYTES + 1)
    if len(text) > MAX_RECORD_BYTES:
        raise ValueError(f"The frozen record in {where} is larger than {MAX_RECORD_BYTES} bytes: not a "
                         "record this package writes")
    try:
        record = json.loads(text)
    except ValueError as err:
        raise ValueError(f"The frozen record in {where} is not JSON: {err}") from None
    if not isinstance(record, dict) or record.get("format_version") != RECORD_FORMAT:
        version = record.get("format_version") if isinstance(record, dict) else None
        raise ValueError(f"The frozen record in {where} has format_version {version!r}; this version "
                         f"reads {RECORD_FORMAT}")
    frozen = record.get("frozen")
    if not isinstance(frozen, list) or not all(isinstance(p, str) for p in frozen):
        raise ValueError(f"The frozen record in {where} must hold `frozen`, a list of variable paths. "
                         f"Received: {type(frozen).__name__}")
    return frozen


def frozen_paths_in_file(filepath):
    """The variable paths recorded as frozen in a ``.keras`` file (``[]`` when none are).

    A record over :data:`MAX_RECORD_BYTES` inflated, not JSON, of another ``format_version`` or
    whose ``frozen`` is not a list of strings is a ``ValueError`` that names the file.
    """
    paths = {}
    with zipfile.ZipFile(filepath) as archive:
        for name in archive.namelist():
            if name.startswith("assets/") and posixpath.basename(name) == FROZEN_RECORD:
                paths.update(dict.fromkeys(_read_record(archive, name, filepath)))
    return list(paths)


def portable_optimizers(config):
    """``config`` (a saved compile config) with every optimizer saved as a backend's own class
    named by its public ``keras.optimizers`` class instead.

    Keras saves an optimizer by the class it ran as: on torch, AdamW is
    ``keras.src.backend.torch.optimizers.torch_adamw.AdamW``, which deserializes as that class on
    every backend, so the file loads on JAX or TensorFlow and its first training step fails
    (keras-team/keras: torch tensors expected, JAX arrays given). Rebuilt from its public class,
    the optimizer is the current backend's; its saved state still loads by path.
    """
    if isinstance(config, list):
        return [portable_optimizers(item) for item in config]
    if not isinstance(config, dict):
        return config
    out = {key: portable_optimizers(value) for key, value in config.items()}
    module, name = out.get("module"), out.get("class_name")
    if (isinstance(module, str) and module.startswith("keras.src.backend.")
            and isinstance(getattr(keras.optimizers, str(name), None), type)):
        out.update(module="keras.optimizers", registered_name=None)
    return out


def load_frozen_model(filepath, frozen=None, *, custom_objects=None, safe_mode=True):
    """Loads a ``.keras`` model whose listed variables were frozen when it was saved.

    The model is loaded without compiling, the variables in ``frozen`` (by
    default those the file records: frozen by :func:`freeze_spatial` and
    still frozen when saved) are marked non-trainable, then the
    model is compiled from its saved compile config — so its optimizer is
    built over the same trainable variables as before saving — and its
    weights and optimizer state are loaded. Training then continues exactly
    where it stopped, with the same variables frozen, also on another backend than the one
    that saved it (:func:`portable_optimizers`).

    Args:
        filepath: path of a ``.keras`` file.
        frozen: ``None`` (what the file records) or a list of variable paths
            to freeze (e.g. for files saved before the record existed).
        custom_objects, safe_mode: as in ``keras.saving.load_model``.

    Returns:
        The loaded ``keras.Model``.

    Example:
        >>> freeze_spatial(model, which="all_spatial")
        >>> model.compile(...); model.fit(...); model.save("m.keras")
        >>> model = load_frozen_model("m.keras")
    """
    filepath = validation.path(filepath, "filepath")
    if not filepath.endswith(".keras"):
        raise ValueError(f"`filepath` must be a .keras file. Received: filepath={filepath!r}")
    if frozen is None:
        frozen = frozen_paths_in_file(filepath)
    elif isinstance(frozen, str) or not isinstance(frozen, (list, tuple)):
        raise TypeError(f"`frozen` must be None or a list of variable paths. Received: frozen={frozen!r}")
    model = keras.saving.load_model(
        filepath, custom_objects=custom_objects, compile=False, safe_mode=safe_mode
    )
    by_path = {variable.path: variable for variable in model.variables}
    missing = [p for p in frozen if p not in by_path]
    if missing:
        raise ValueError(f"`frozen` names variables the model does not have: {missing}")
    for p in frozen:
        by_path[p].trainable = False
    _record_frozen(model, frozen)  # saved again, it keeps the record
    with zipfile.ZipFile(filepath) as archive:
        compile_config = portable_optimizers(json.loads(archive.read("config.json")).get("compile_config"))
    if compile_config:
        with keras.saving.custom_object_scope(custom_objects or {}):
            model.compile_from_config(compile_config)  # builds the optimizer
    model.load_weights(filepath)
    return model
