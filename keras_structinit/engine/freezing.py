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
records the frozen variables on the model, and ``model.save`` writes that record
into the ``.keras`` file as an asset (``assets/keras_structinit_frozen.json``,
the variables still frozen when saving, by place in ``model.variables``, with their paths and
shapes); :func:`load_frozen_model` reads it back,
re-freezes the variables before the optimizer is built and then restores its
state. Plain ``keras.saving.load_model`` ignores the record.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import zipfile
from dataclasses import dataclass

import keras

from keras_structinit.engine.contract import model_function
from keras_structinit.engine.walker import find_kernels
from keras_structinit.utils import validation
from keras_structinit.utils.file_checks import check_zip_sizes
from keras_structinit.utils.model_files import check_model_file

__all__ = [
    "FROZEN_RECORD",
    "freeze_spatial",
    "frozen_paths_in_file",
    "load_frozen_model",
    "portable_optimizers",
    "save_portable",
]

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
    paths, variables = [], []
    for layer, kernel in find_kernels(model, which=which, layers=layers):
        frozen = [kernel]
        bias = getattr(layer, "bias", None)
        if include_bias and bias is not None:
            frozen.append(bias)
        for variable in frozen:
            variable.trainable = False
            paths.append(variable.path)
            variables.append(variable)
    _record_frozen(model, variables)
    return paths


def _record_frozen(model, variables):
    """Remembers ``variables`` on ``model`` and has ``model.save`` write them as an asset.

    The record holds the variables themselves, not their paths: two same-named layers of nested
    models reload with the same path (``dw/kernel`` twice), and a record keyed by path kept one
    of them (issue 64). The file records each by its place in ``model.variables``
    (:data:`RECORD_FORMAT`).

    Keras calls a saveable's ``save_assets(dir)`` while it writes a ``.keras``
    file; an instance attribute provides it for this model only (a class's own
    ``save_assets`` still runs first). Set through ``__dict__`` so that Keras'
    attribute tracking leaves the record alone.
    """
    record = model.__dict__.setdefault(_RECORD_ATTR, {})
    record.update((id(v), v) for v in variables)
    if "save_assets" in model.__dict__:
        return
    own = getattr(type(model), "save_assets", None)

    def save_assets(dir_path):
        if own is not None:
            own(model, dir_path)
        variables = model.variables
        place = {id(v): i for i, v in enumerate(variables)}
        still = sorted(place[key] for key, v in record.items() if key in place and v.trainable is False)
        with open(os.path.join(dir_path, FROZEN_RECORD), "w", encoding="utf-8") as f:
            json.dump(
                {
                    "format_version": RECORD_FORMAT,
                    "variables": len(variables),
                    "indices": still,
                    "frozen": [variables[i].path for i in still],
                    "shapes": [[int(n) for n in variables[i].shape] for i in still],
                },
                f,
                indent=1,
            )

    model.__dict__["save_assets"] = save_assets


#: The record's layout this version writes (it reads 1 and 2 too). 2 added each variable's place
#: in ``model.variables``: Keras rebuilds the variables of a nested model without its parent's
#: path prefix (``outer/inner/conv2d/kernel`` reloads as ``conv2d/kernel``), while their order,
#: set by the saved config, stays. 3 adds each variable's shape, checked on load with its name,
#: and is written from the variables themselves, so two variables of one path (same-named layers
#: of nested models) both stay recorded through any number of save/load rounds.
RECORD_FORMAT = 3
#: The largest frozen record read (one path per frozen variable: kilobytes for real models), checked
#: while inflating, before Keras' own archive checks run on the rest of the file.
MAX_RECORD_BYTES = 4 << 20


def _read_record(archive, name, filepath):
    """The frozen paths of the record ``name`` in ``archive``; one-line ``ValueError`` naming the file."""
    where = f"{os.fspath(filepath)!r} ({name})"
    with archive.open(name) as f:  # inflated piece by piece: a zip bomb stops at the cap
        text = f.read(MAX_RECORD_BYTES + 1)
    if len(text) > MAX_RECORD_BYTES:
        raise ValueError(
            f"The frozen record in {where} is larger than {MAX_RECORD_BYTES} bytes: not a "
            "record this package writes"
        )
    try:
        record = json.loads(text)
    except ValueError as err:
        raise ValueError(f"The frozen record in {where} is not JSON: {err}") from None
    version = record.get("format_version") if isinstance(record, dict) else None
    if version not in (1, 2, RECORD_FORMAT) or type(version) is not int:
        raise ValueError(
            f"The frozen record in {where} has format_version {version!r}; this version "
            f"reads 1 to {RECORD_FORMAT}"
        )
    frozen = record.get("frozen")
    if not isinstance(frozen, list) or not all(isinstance(p, str) for p in frozen):
        raise ValueError(
            f"The frozen record in {where} must hold `frozen`, a list of variable paths. "
            f"Received: {type(frozen).__name__}"
        )
    if version == 1:
        return _Record(name, frozen)
    indices, count = record.get("indices"), record.get("variables")
    if not (
        isinstance(indices, list)
        and len(indices) == len(frozen)
        and type(count) is int
        and all(type(i) is int and 0 <= i < count for i in indices)
    ):
        raise ValueError(
            f"The frozen record in {where} must hold `indices`, one place in "
            "`model.variables` per frozen path, below `variables`"
        )
    if version == 2:
        return _Record(name, frozen, indices, count)
    shapes = record.get("shapes")
    if not (
        isinstance(shapes, list)
        and len(shapes) == len(frozen)
        and all(isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape) for shape in shapes)
    ):
        raise ValueError(
            f"The frozen record in {where} must hold `shapes`, one list of sizes per frozen path"
        )
    return _Record(name, frozen, indices, count, [tuple(shape) for shape in shapes])


@dataclass(frozen=True)
class _Record:
    """A frozen record read from a file: its member ``name``, the ``paths``, and (format 2 on) each
    one's place in ``model.variables`` of the model that wrote it (``count`` variables), and (3) shape."""

    name: str
    paths: list
    indices: list | None = None
    count: int | None = None
    shapes: list | None = None


def _records(filepath):
    """The :class:`_Record` s of the frozen records in a ``.keras`` file."""
    with zipfile.ZipFile(filepath) as archive:
        return [
            _read_record(archive, name, filepath)
            for name in archive.namelist()
            if name.startswith("assets/") and posixpath.basename(name) == FROZEN_RECORD
        ]


def frozen_paths_in_file(filepath):
    """The variable paths recorded as frozen in a ``.keras`` file, as they were when it was saved
    (``[]`` when none are; each path once, though same-named layers of nested models may share
    one: the record keeps every variable by its place, see :data:`RECORD_FORMAT`).

    A record over :data:`MAX_RECORD_BYTES` inflated, not JSON, of another ``format_version`` or
    whose ``frozen`` is not a list of strings is a ``ValueError`` that names the file.
    """
    paths = {}
    for record in _records(filepath):
        paths.update(dict.fromkeys(record.paths))
    return list(paths)


def _snake_case(name):
    """Keras' ``naming.to_snake_case``: how a ``.keras`` file names a saved object by its class."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _writer(model, record):
    """The model of ``model``'s tree that wrote ``record``: its asset's folder is the model's place
    in the file as Keras names it (``assets/layers/functional_1/``: the second Functional in the
    ``layers`` of the model); ``None`` for a place outside the models' ``layers``."""
    parts = record.name.split("/")[1:-1]
    owner = model
    while parts:
        if len(parts) < 2 or parts[0] != "layers" or not isinstance(getattr(owner, "layers", None), list):
            return None
        used, found = {}, None
        for layer in owner.layers:  # Keras' _get_unique_name: functional, functional_1, ...
            name = _snake_case(type(layer).__name__)
            used[name] = used[name] + 1 if name in used else 0
            if (f"{name}_{used[name]}" if used[name] else name) == parts[1]:
                found = layer
                break
        if not isinstance(found, keras.Model):
            return None
        owner, parts = found, parts[2:]
    return owner


def _recorded_variables(model, filepath):
    """The variables of the loaded ``model`` that the file records as frozen: by place in the model
    (or nested model) that wrote each record, each checked to be a variable of the same name (and
    shape, format 3); by path for a record without places (format 1) or whose writer is not found
    (every variable of a recorded path)."""
    by_path = {}
    for variable in model.variables:
        by_path.setdefault(variable.path, []).append(variable)
    found = {}
    for record in _records(filepath):
        writer = None if record.indices is None else _writer(model, record)
        if writer is not None and len(writer.variables) == record.count:
            variables = writer.variables
            for i, (path, index) in enumerate(zip(record.paths, record.indices, strict=True)):
                variable = variables[index]
                shape = None if record.shapes is None else record.shapes[i]
                if variable.path.rsplit("/", 1)[-1] != path.rsplit("/", 1)[-1] or (
                    shape is not None and tuple(variable.shape) != shape
                ):
                    raise ValueError(
                        f"The frozen record in {os.fspath(filepath)!r} places {path!r}"
                        f"{'' if shape is None else f' of shape {shape}'} at variable {index}, "
                        f"which is {variable.path!r} of shape {tuple(variable.shape)}: the "
                        "file's config and record disagree"
                    )
                found[id(variable)] = variable
            continue
        missing = [p for p in record.paths if p not in by_path]
        if missing:
            raise ValueError(
                f"The frozen record in {os.fspath(filepath)!r} names variables the model does "
                f"not have: {validation.clipped(str(missing), 300)}"
            )
        found.update((id(v), v) for p in record.paths for v in by_path[p])
    return list(found.values())


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
    if (
        isinstance(module, str)
        and module.startswith("keras.src.backend.")
        and isinstance(getattr(keras.optimizers, str(name), None), type)
    ):
        out.update(module="keras.optimizers", registered_name=None)
    return out


def save_portable(model, filepath):
    """``model.save(filepath)`` with its compile config's optimizers named by their public
    ``keras.optimizers`` classes (:func:`portable_optimizers`), so that plain
    ``keras.saving.load_model`` compiles the file on any backend, whichever backend trained it;
    the optimizer's state is saved as usual. The model itself is left as it was."""
    own = model.__dict__.get("get_compile_config")
    model.__dict__["get_compile_config"] = lambda: portable_optimizers(type(model).get_compile_config(model))
    try:
        model.save(filepath)
    finally:
        if own is None:
            del model.__dict__["get_compile_config"]
        else:
            model.__dict__["get_compile_config"] = own


def load_frozen_model(filepath, frozen=None, *, custom_objects=None, safe_mode=True, max_model_bytes=None):
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
            to freeze (e.g. for files saved before the record existed; a path that several
            variables share, same-named layers of nested models, freezes each).
        custom_objects, safe_mode: as in ``keras.saving.load_model``.
        max_model_bytes: the most bytes of variables the file may declare, checked before it is
            read (:func:`keras_structinit.utils.model_files.check_model_file`; default 4 GiB).

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
    check_zip_sizes(filepath, "filepath")  # a zip bomb is refused before Keras inflates a byte of it
    check_model_file(  # and declared sizes before Keras allocates them
        filepath,
        "filepath",
        max_model_bytes=max_model_bytes,
        custom_objects=custom_objects,
        safe_mode=safe_mode,
    )
    if frozen is None:
        _records(filepath)  # a bad record is refused before the model is read
    elif isinstance(frozen, str) or not isinstance(frozen, (list, tuple)):
        raise TypeError(f"`frozen` must be None or a list of variable paths. Received: frozen={frozen!r}")
    model = keras.saving.load_model(
        filepath, custom_objects=custom_objects, compile=False, safe_mode=safe_mode
    )
    if frozen is None:
        targets = _recorded_variables(model, filepath)
    else:
        paths = {variable.path for variable in model.variables}
        missing = [p for p in frozen if p not in paths]
        if missing:
            raise ValueError(f"`frozen` names variables the model does not have: {missing}")
        targets = [v for v in model.variables if v.path in set(frozen)]
    for variable in targets:
        variable.trainable = False
    _record_frozen(model, targets)  # saved again, it keeps the record
    with zipfile.ZipFile(filepath) as archive:
        compile_config = portable_optimizers(json.loads(archive.read("config.json")).get("compile_config"))
    if compile_config:
        with keras.saving.custom_object_scope(custom_objects or {}):
            model.compile_from_config(compile_config)  # builds the optimizer
    model.load_weights(filepath)
    return model
