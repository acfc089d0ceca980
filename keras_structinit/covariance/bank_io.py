"""Persistence of :class:`~keras_structinit.covariance.bank.FilterCovariance` banks (NumPy only).

Two forms, both exact float64:

* the ``.npz`` file of :meth:`FilterCovariance.save` / :meth:`FilterCovariance.load`
  (:func:`save`, :func:`load`): arrays ``means`` ``(L, n)`` and ``covariances``
  ``(L, n, n)``, and ``metadata``, a JSON string with the format version, kernel
  size, depth fractions, layer paths, source name and patch size;
* the JSON-serializable dict of :meth:`FilterCovariance.get_config` /
  :meth:`FilterCovariance.from_config` (:func:`to_config`, :func:`from_config`),
  which initializer configs embed, arrays as base64 of their little-endian bytes.

The functions work on a bank's *fields*, the dict of its constructor's arguments
(``means``, ``covariances``, ``kernel_size``, ``depth_fractions``, ``layer_paths``,
``source_name``, ``patch_size``): they check the file and its layout, the
constructor checks the values. This module does not import :mod:`.bank`, so the
bank can call it without an import cycle.
"""

from __future__ import annotations

import base64
import json
import os
import zipfile

import numpy as np

from keras_structinit.utils import validation
from keras_structinit.utils.file_checks import npz_headers
from keras_structinit.utils.io_utils import atomic_path, check_output

__all__ = ["ARRAY_KEYS", "FORMAT_VERSION", "from_config", "load", "save", "to_config"]

#: Version of the ``.npz`` layout written by :func:`save`.
FORMAT_VERSION = 1
#: The arrays of a bank's ``.npz`` file.
ARRAY_KEYS = ("means", "covariances", "metadata")


def save(fields, path, overwrite=False):
    """Writes a bank's ``fields`` to a ``.npz`` file atomically; returns the path written
    (``path``, with ``.npz`` appended when it lacks it). See :meth:`FilterCovariance.save`."""
    path = validation.path(path, "path")
    if not path.endswith(".npz"):
        path = path + ".npz"
    check_output(path, "path", overwrite=overwrite)
    metadata = {
        "format_version": FORMAT_VERSION,
        "kernel_size": list(fields["kernel_size"]),
        "depth_fractions": list(fields["depth_fractions"]),
        "layer_paths": fields["layer_paths"],
        "source_name": fields["source_name"],
        "patch_size": fields["patch_size"],
    }
    with atomic_path(path) as tmp:
        # The temporary path keeps the .npz suffix, so numpy adds nothing.
        np.savez(
            tmp,
            means=np.stack(fields["means"]),
            covariances=np.stack(fields["covariances"]),
            metadata=np.array(json.dumps(metadata)),
        )
    return path


def load(path):
    """The fields (constructor arguments) of the bank in the ``.npz`` file at ``path`` (or
    ``path + ".npz"``), after checking the file. See :meth:`FilterCovariance.load`."""
    path = validation.path(path, "path")
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path = path + ".npz"
    if not os.path.exists(path):
        raise FileNotFoundError(f"No FilterCovariance file at {path!r}.")
    if not zipfile.is_zipfile(path):  # NumPy would read it as a pickle and advise allow_pickle
        raise ValueError(
            f"{path!r} is not a FilterCovariance bank (an .npz written by FilterCovariance.save)."
        )
    try:
        npz_headers(path, "path")  # declared shapes against the file's size, before NumPy allocates them
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in ARRAY_KEYS if key not in data.files]
            if missing:
                raise ValueError(f"{path!r} is not a FilterCovariance file: missing {missing}.")
            means = np.array(data["means"], dtype=np.float64)
            covariances = np.array(data["covariances"], dtype=np.float64)
            metadata = json.loads(str(data["metadata"][()]))
    except ValueError:
        raise
    except Exception as error:  # zip/pickle/JSON/dtype errors of a bad file
        raise ValueError(f"Could not read a FilterCovariance from {path!r}: {error}") from error
    if not isinstance(metadata, dict) or "kernel_size" not in metadata:
        raise ValueError(f"{path!r} has invalid FilterCovariance metadata.")
    version = metadata.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ValueError(
            f"{path!r} has format version {version!r}; this version of "
            f"keras_structinit reads versions 1..{FORMAT_VERSION}."
        )
    if means.ndim != 2 or covariances.ndim != 3:
        raise ValueError(
            f"{path!r}: `means` must be (L, n) and `covariances` (L, n, n); "
            f"got shapes {means.shape} and {covariances.shape}."
        )
    try:
        kernel_size = tuple(metadata["kernel_size"])
    except TypeError as error:
        raise ValueError(f"{path!r} has an invalid kernel size.") from error
    patch_size = metadata.get("patch_size")
    try:
        validation.optional(validation.positive_int, patch_size, "patch_size")
    except TypeError as error:
        raise ValueError(f"{path!r} has an invalid patch size: {error}") from error
    return dict(
        means=list(means),
        covariances=list(covariances),
        kernel_size=kernel_size,
        depth_fractions=metadata.get("depth_fractions"),
        layer_paths=metadata.get("layer_paths"),
        source_name=metadata.get("source_name"),
        patch_size=patch_size,
    )


def to_config(fields):
    """The JSON-serializable dict of a bank's ``fields``. See :meth:`FilterCovariance.get_config`."""
    return {
        "means": _encode_array(np.stack(fields["means"])),
        "covariances": _encode_array(np.stack(fields["covariances"])),
        "kernel_size": list(fields["kernel_size"]),
        "depth_fractions": list(fields["depth_fractions"]),
        "layer_paths": fields["layer_paths"],
        "source_name": fields["source_name"],
        "patch_size": fields["patch_size"],
    }


def from_config(config):
    """The fields (constructor arguments) of the bank that :func:`to_config` described. See
    :meth:`FilterCovariance.from_config`."""
    if not isinstance(config, dict):
        raise TypeError(f"`config` must be a dict from FilterCovariance.get_config. Received: {config!r}")
    missing = [key for key in ("means", "covariances", "kernel_size") if key not in config]
    if missing:
        raise ValueError(f"`config` is not a FilterCovariance config: missing {missing}.")
    return dict(
        means=list(_decode_array(config["means"], "means")),
        covariances=list(_decode_array(config["covariances"], "covariances")),
        kernel_size=tuple(config["kernel_size"]),
        depth_fractions=config.get("depth_fractions"),
        layer_paths=config.get("layer_paths"),
        source_name=config.get("source_name"),
        patch_size=config.get("patch_size"),
    )


def _encode_array(array):
    array = np.ascontiguousarray(array, dtype="<f8")
    return {"shape": list(array.shape), "float64_base64": base64.b64encode(array.tobytes()).decode("ascii")}


def _decode_array(encoded, name):
    try:
        data = base64.b64decode(encoded["float64_base64"], validate=True)
        return np.frombuffer(data, dtype="<f8").reshape(encoded["shape"]).astype(np.float64)
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"`{name}` in the FilterCovariance config is not an encoded array: {error}"
        ) from error
