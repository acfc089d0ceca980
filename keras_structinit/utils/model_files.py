"""What a model file declares, checked before Keras reads it: :func:`check_model_file`.

A ``.keras`` archive holds ``config.json``, the layers whose variables Keras creates as it reads
it, and ``model.weights.h5``, an HDF5 file whose datasets declare their shapes; Keras allocates
both in full. Either can declare far more than the file holds: a few kilobytes naming a ``Dense``
of 10**9 units, or a 30000 x 30000 dataset that was never written. Reading declarations only,
:func:`check_model_file` refuses, in one ``ValueError`` line naming the argument:

* a weights file whose datasets declare more than the bound in all; a dataset of more than
  :data:`DATASET_FLOOR_BYTES` that stores less than ``1 / MAX_INFLATION`` of what it declares
  (Keras stores weights uncompressed), or weights declaring that of the whole file; a dataset
  kept in another file (external or virtual);
* a config whose layers would create more than the bound of variables. They are counted by
  deserializing the config in a ``keras.StatelessScope``, where Keras records each new variable's
  shape instead of allocating it; the count stops at the first variable past the bound, and the
  scope's record and layer-name counters are restored afterwards. A config that can only be
  built with values (a variable created from an array while it is built) is refused too: it
  cannot be counted without allocating it.

:func:`check_weights_file` checks a plain ``.h5`` weights file the same way. A JSON file of either
that nests deeper than :data:`MAX_JSON_DEPTH` (which would exhaust Python's recursion) is refused
unparsed by Keras: :func:`read_json`, and :func:`check_preset_folder` for a KerasHub preset folder.

The bound is :data:`MAX_MODEL_BYTES` unless raised: ``max_model_bytes=`` of the loaders
(``models.spec.load_model``, ``selection.load_teacher``, ``freezing.load_frozen_model``),
:func:`max_model_bytes_scope` around any call that loads a model (``init_model``, a ``Run``), and
``--max-model-bytes`` on the command line (``train``, ``init``, ``inspect``, ``select``).
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import io
import json
import math
import os
import re
import shutil
import struct
import tempfile
import zipfile

from keras_structinit import _hooks
from keras_structinit.utils.file_checks import (
    INFLATION_FLOOR_BYTES,
    MAX_INFLATION,
    MAX_JSON_MEMBER_BYTES,
    check_zip_sizes,
)
from keras_structinit.utils.validation import quoted

__all__ = [
    "DATASET_FLOOR_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MODEL_BYTES",
    "check_model_file",
    "check_preset_folder",
    "check_weights_file",
    "max_model_bytes_scope",
    "model_bytes_bound",
    "parse_bytes",
    "read_json",
]

#: The most bytes of variables a model file may declare, in its weights file and in its config, unless
#: raised. 4 GiB is 1.07 billion float32 parameters: 12 times the largest teacher the docs use (a
#: ViT-B of 86.6 M parameters, 330 MiB; docs/weight-selection.md), and more than a ViT-H (632 M)
#: needs; Keras' own check of a single HDF5 dataset starts there too.
MAX_MODEL_BYTES = 4 << 30
#: A weights dataset declaring more than this may not store less than ``1 / MAX_INFLATION`` of it.
DATASET_FLOOR_BYTES = 1 << 20
#: How the bound may be raised (said in the messages).
RAISE_HINT = "raise the bound with max_model_bytes= (--max-model-bytes on the command line)"
_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_BOUND = contextvars.ContextVar("max_model_bytes", default=None)


def parse_bytes(value, name="max_model_bytes"):
    """``value`` as a positive number of bytes: an int, or text such as ``"8589934592"``, ``"8GiB"``,
    ``"512 MiB"`` (units ``B``, ``KiB``, ``MiB``, ``GiB``, ``TiB``); ``ValueError`` naming ``name``."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]ib|b)?\s*", value, re.IGNORECASE)
        if match:
            number = int(float(match[1]) * _UNITS[(match[2] or "").lower()])
    if number is None or number < 1:
        raise ValueError(
            f"{quoted(name)} must be a positive number of bytes (e.g. 8589934592 or 8GiB). "
            f"Received: {value!r}"
        )
    return number


@contextlib.contextmanager
def max_model_bytes_scope(max_model_bytes):
    """Makes ``max_model_bytes`` (see :func:`parse_bytes`; ``None``: no change) the bound of every
    model file read inside the ``with`` block that is not given its own."""
    token = _BOUND.set(None if max_model_bytes is None else parse_bytes(max_model_bytes))
    try:
        yield
    finally:
        _BOUND.reset(token)


def model_bytes_bound(max_model_bytes=None):
    """The bound in force: ``max_model_bytes`` if given, else the innermost
    :func:`max_model_bytes_scope`'s, else :data:`MAX_MODEL_BYTES`."""
    if max_model_bytes is not None:
        return parse_bytes(max_model_bytes)
    scoped = _BOUND.get()
    return MAX_MODEL_BYTES if scoped is None else scoped


def _shown(count):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count} bytes ({count / (1 << shift):.3g} {unit})"
    return f"{count} bytes"


def _above(where, what, count, bound):
    return ValueError(
        f"{where}: {what} {_shown(count)}, above the bound of {_shown(bound)}: not read; {RAISE_HINT}"
    )


def check_model_file(path, name, *, max_model_bytes=None, custom_objects=None, safe_mode=True):
    """Refuses (``ValueError``, one line naming ``name``) the ``.keras`` file ``path`` if its weights
    file or its config declares more than the bound (see the module docstring); reads no weight.
    ``custom_objects`` and ``safe_mode`` as in ``keras.saving.load_model``. A file that is no zip,
    or whose config is no JSON, is left to the loader's own error."""
    bound = model_bytes_bound(max_model_bytes)
    where = f"{quoted(name)} {os.fspath(path)!r}"
    check_zip_sizes(path, name)
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError):
        return
    with archive:
        names = set(archive.namelist())
        if "model.weights.h5" in names:
            _check_h5_member(archive, archive.getinfo("model.weights.h5"), where, bound)
        elif "model.weights.npz" in names:
            _check_npz_member(archive, archive.getinfo("model.weights.npz"), where, bound)
        config = None
        for member in ("metadata.json", "config.json"):  # what Keras parses before it builds
            try:
                data = archive.read(member)
            except (KeyError, OSError, EOFError, zipfile.BadZipFile):
                continue
            parsed = read_json(data, f"{where}: its {member}")
            config = parsed if member == "config.json" else config
    if isinstance(config, dict):
        if _hooks.register_serializables is not None:  # the config may name any class of the package
            _hooks.register_serializables()
        _check_config(config, where, bound, custom_objects, safe_mode)


#: The deepest nesting (of objects and arrays) a model file's JSON may have. A model's config nests
#: about 15 levels per model inside it (layers, their configs, initializers, inbound nodes), so 100
#: takes models nested several deep; a deeper one is forged, and would exhaust Python's recursion
#: (``json`` and Keras' deserialization both recurse: "maximum recursion depth exceeded").
MAX_JSON_DEPTH = 100


def _depth(value):
    """How deep ``value`` (parsed JSON) nests its objects and arrays (a scalar: 0); not recursive."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            level += 1
            deepest = max(deepest, level)
            stack.extend((child, level) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def read_json(data, where):
    """The JSON document ``data`` (bytes or text) of a model file, ``None`` if it is no JSON (the
    loader says so); ``ValueError`` naming ``where`` when it nests deeper than :data:`MAX_JSON_DEPTH`."""
    try:
        value = json.loads(data)
    except RecursionError:
        value, deep = None, True
    except (ValueError, TypeError):
        return None
    else:
        deep = _depth(value) > MAX_JSON_DEPTH
    if deep:
        raise ValueError(
            f"{where} nests its objects and arrays more than {MAX_JSON_DEPTH} levels deep, beyond any "
            "model's config (forged or corrupt): not read"
        )
    return value


def check_preset_folder(path, name):
    """Refuses (``ValueError``, one line naming ``name``) a KerasHub preset folder whose JSON files
    (``config.json``, ``metadata.json``, ...) are larger than ``file_checks.MAX_JSON_MEMBER_BYTES`` or
    nest deeper than :data:`MAX_JSON_DEPTH`; before KerasHub parses them."""
    where = f"{quoted(name)} {os.fspath(path)!r}"
    for entry in sorted(os.listdir(path)):
        file = os.path.join(path, entry)
        if not entry.endswith(".json") or not os.path.isfile(file):
            continue
        size = os.path.getsize(file)
        if size > MAX_JSON_MEMBER_BYTES:
            raise ValueError(
                f"{where}: its {entry} holds {size} bytes, above the {MAX_JSON_MEMBER_BYTES} a model's "
                "config may have: not read"
            )
        with open(file, "rb") as f:
            read_json(f.read(), f"{where}: its {entry}")


def check_weights_file(path, name, *, max_model_bytes=None):
    """Refuses (``ValueError`` naming ``name``) the HDF5 weights file ``path`` (``model.save_weights``')
    if its datasets declare more than the bound or far more than they store."""
    bound = model_bytes_bound(max_model_bytes)
    where = f"{quoted(name)} {os.fspath(path)!r}"
    with open(path, "rb") as f:
        _check_h5(f, where, bound, os.path.getsize(path))


def _check_h5_member(archive, info, where, bound):
    if info.compress_type == zipfile.ZIP_STORED:  # as Keras writes it: its bytes, read in place
        with open(archive.filename, "rb") as raw:
            start = _data_start(raw, info)
            if start is not None:
                return _check_h5(_Window(raw, start, info.file_size), where, bound, info.file_size)
    with archive.open(info) as member, tempfile.TemporaryFile() as copied:
        shutil.copyfileobj(member, copied, 1 << 20)  # h5py seeks back and forth: a compressed member
        copied.seek(0)  # would be inflated again from its start at each step back
        return _check_h5(copied, where, bound, info.file_size)


def _data_start(raw, info):
    """Where the stored member ``info``'s bytes start in the archive ``raw`` (after its local header)."""
    raw.seek(info.header_offset)
    head = raw.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = struct.unpack("<2H", head[26:30])
    return info.header_offset + 30 + name_length + extra_length


class _Window(io.RawIOBase):
    """``size`` bytes of the open file ``raw`` from ``start``, as a file of their own (for h5py:
    ``zipfile``'s own member file goes back to the member's start at each backward seek)."""

    def __init__(self, raw, start, size):
        super().__init__()
        self.raw, self.start, self.size, self.position = raw, start, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(base + offset, 0)
        return self.position

    def readinto(self, buffer):
        count = max(min(len(buffer), self.size - self.position), 0)
        self.raw.seek(self.start + self.position)
        data = self.raw.read(count)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def _datasets(fileobj, where):
    """``[(path, shape, dtype, declared bytes, stored bytes, elsewhere)]`` of the HDF5 file open as
    ``fileobj``, from its metadata (``None`` for what is no HDF5 file: the loader says so)."""
    import h5py

    try:
        weights = h5py.File(fileobj, "r")
    except (OSError, ValueError):
        return None
    found = []

    def visit(path, item):
        if isinstance(item, h5py.Dataset):
            declared = 0 if item.shape is None else math.prod(item.shape) * item.dtype.itemsize
            elsewhere = bool(item.external) or item.is_virtual
            found.append((path, item.shape, item.dtype, declared, item.id.get_storage_size(), elsewhere))

    try:
        with weights:
            weights.visititems(visit)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as err:
        first = (str(err).strip().splitlines() or [""])[0]
        raise ValueError(
            f"{where}: its weights file cannot be read ({type(err).__name__}: {first})"
        ) from None
    return found


def _check_h5(fileobj, where, bound, size):
    """The checks of an HDF5 weights file open as ``fileobj`` (``size`` bytes): metadata only."""
    datasets = _datasets(fileobj, where)
    if datasets is None:
        return
    total = stored_total = 0
    for path, shape, dtype, declared, stored, elsewhere in datasets:
        if elsewhere:
            raise ValueError(f"{where}: its weights dataset {path!r} is kept in another file: not read")
        if declared > DATASET_FLOOR_BYTES and declared > MAX_INFLATION * stored:
            raise ValueError(
                f"{where}: its weights dataset {path!r} declares {shape} {dtype} ({declared} bytes) but "
                f"stores {stored}: never written or forged, not read"
            )
        total, stored_total = total + declared, stored_total + stored
    if total > bound:
        raise _above(where, "its weights file declares", total, bound)
    if total > INFLATION_FLOOR_BYTES and total > MAX_INFLATION * min(stored_total, size):
        raise ValueError(
            f"{where}: its weights declare {total} bytes in a weights file of {size} bytes "
            f"storing {stored_total}: never written or forged, not read"
        )


def _check_npz_member(archive, info, where, bound):
    from keras_structinit.utils.file_checks import npy_arrays

    with archive.open(info) as member:
        try:
            inner = zipfile.ZipFile(member)
        except (OSError, zipfile.BadZipFile, EOFError):
            return
        with inner:
            total = sum(declared for *_, declared in npy_arrays(inner, info.file_size, where))
    if total > bound:
        raise _above(where, "its weights file declares", total, bound)


def _itemsize(dtype):
    import numpy as np

    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # bfloat16, float8_e4m3fn, ...: the bits in the name
        bits = re.search(r"(\d+)", str(dtype))
        return max(int(bits[1]) // 8, 1) if bits else 4


class _PastBound(Exception):
    """Raised by :class:`_Budget` at the first variable past the bound: nothing more is built."""


class _Budget(list):
    """Keras' record of the variables a stateless scope defers (a list it appends to): counts their
    bytes and stops the build at the first one past ``bound``."""

    def __init__(self, bound):
        super().__init__()
        self.bound, self.total = bound, 0

    def append(self, variable):
        super().append(variable)
        self.total += math.prod(variable.shape) * _itemsize(variable.dtype)
        if self.total > self.bound:
            raise _PastBound


def config_variable_bytes(config, bound, *, custom_objects=None, safe_mode=True):
    """``(bytes, error)``: the bytes of the variables ``config`` (a model's serialized config, as in
    ``config.json``) creates when deserialized, counted without allocating them (stopping once past
    ``bound``), and the exception the deserialization raised (``None`` if none)."""
    import keras
    from keras.src.backend.common import global_state
    from keras.src.saving.serialization_lib import ObjectSharingScope

    kept = ("uninitialized_variables", "name_uid_map")
    saved = {key: global_state.get_global_attribute(key) for key in kept}
    budget = _Budget(bound)
    global_state.set_global_attribute("uninitialized_variables", budget)
    global_state.set_global_attribute("name_uid_map", copy.copy(saved["name_uid_map"]))
    error = None
    try:
        with keras.StatelessScope(initialize_variables=False), ObjectSharingScope():
            keras.saving.deserialize_keras_object(
                {**config, "compile_config": None}, custom_objects=custom_objects, safe_mode=safe_mode
            )
    except Exception as err:  # the loader raises it again, or the bound was passed
        error = err
    finally:
        for key, value in saved.items():
            global_state.set_global_attribute(key, value)
    return budget.total, error


def _check_config(config, where, bound, custom_objects, safe_mode):
    total, error = config_variable_bytes(config, bound, custom_objects=custom_objects, safe_mode=safe_mode)
    if total > bound:
        raise _above(where, "its config's layers would create at least", total, bound)
    if error is not None and "stateless scope" in str(error):
        first = str(error).strip().splitlines()[0]
        raise ValueError(
            f"{where}: its config builds a variable from values ({first}), which cannot be counted "
            "before it is allocated: not read; load it with keras.saving.load_model and pass the model"
        )
    # Any other error is the loader's to raise, at the same point of the same build: what was built
    # before it is counted above.
