"""What a data file declares, checked before it is read.

* :func:`npz_headers` reads the ``.npy`` header of each array in an ``.npz`` (its shape and dtype)
  and refuses one that declares more bytes than the archive stores for it: ``np.load`` allocates
  the declared array before it reads any of it (an ``.npz`` of a kilobyte declaring 10**8 images
  asked for 286 GiB).
* :func:`check_image_file` refuses, from ``lstat``/``stat`` and without opening it, an image path
  that is not a regular file (a FIFO, which blocks whoever opens it; a device such as
  ``/dev/zero``, which never ends), a link that leads out of its folder, or a file above
  :data:`MAX_IMAGE_FILE_BYTES`; :func:`read_image_file` reads one with those checks made again
  on the open file (opened with ``O_NONBLOCK``, so a FIFO put in its place does not block).

Errors are one-line ``ValueError`` s naming the argument and the file. NumPy and the standard
library only.
"""

from __future__ import annotations

import math
import os
import stat
import zipfile

import numpy as np

from keras_structinit.utils.validation import quoted

__all__ = [
    "INFLATION_FLOOR_BYTES",
    "MAX_IMAGE_FILE_BYTES",
    "MAX_INFLATION",
    "MAX_JSON_MEMBER_BYTES",
    "check_zip_sizes",
    "check_image_file",
    "inside",
    "npy_arrays",
    "npz_headers",
    "read_image_file",
]

#: The largest image file read (bytes). An uncompressed 8-bit RGB image of 4096 x 4096 pixels (a BMP
#: or TIFF) is 48 MiB; the images read whole are at most 1024 x 1024 pixels
#: (``datasets.MAX_IMAGE_PIXELS``), and the ImageNet recipe's photographs are JPEGs of a few
#: hundred kilobytes.
MAX_IMAGE_FILE_BYTES = 64 << 20


#: The most bytes a JSON member of an archive (a ``.keras`` file's ``config.json``) may inflate to; a
#: model's config is kilobytes to a few megabytes, and it is read whole.
MAX_JSON_MEMBER_BYTES = 64 << 20
#: A member that inflates to more than this many times its stored size, and to more than
#: :data:`INFLATION_FLOOR_BYTES`, is a bomb: Keras stores its files uncompressed, and weights hardly
#: compress. (Keras' own check starts at 4 GiB; a 1 MB file inflating to 2.35 GB passed it.)
MAX_INFLATION = 100
INFLATION_FLOOR_BYTES = 16 << 20


def check_zip_sizes(path, name, *, json_members=("config.json", "metadata.json")):
    """Refuses (``ValueError``, one line naming ``name``) an archive whose directory declares a member
    that would inflate far beyond its stored size (:data:`MAX_INFLATION`), or a ``json_members``
    entry above :data:`MAX_JSON_MEMBER_BYTES`; reads the central directory only. Python's ``zipfile``
    stops inflating a member at its declared size, so the declared sizes bound what a reader gets.
    A file that is no zip is left to the reader's own error."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (OSError, zipfile.BadZipFile, EOFError):
        return
    for info in infos:
        where = f"{quoted(name)} {os.fspath(path)!r}: its member {info.filename!r}"
        if info.filename in json_members and info.file_size > MAX_JSON_MEMBER_BYTES:
            raise ValueError(
                f"{where} inflates to {info.file_size} bytes, above the "
                f"{MAX_JSON_MEMBER_BYTES} a model's config may have: not read"
            )
        stored = max(info.compress_size, 1)
        if info.file_size > INFLATION_FLOOR_BYTES and info.file_size > MAX_INFLATION * stored:
            raise ValueError(
                f"{where} inflates {info.compress_size} stored bytes to {info.file_size} "
                f"(more than {MAX_INFLATION} times): a zip bomb, not read"
            )


def _header(f):
    """``(shape, dtype)`` of the ``.npy`` stream ``f``, left at its first data byte."""
    version = np.lib.format.read_magic(f)
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = reader(f)
    return shape, dtype


def npz_headers(path, name):
    """``{key: (shape, dtype)}`` of the arrays of the ``.npz`` at ``path``, from their headers.

    ``ValueError`` (one line naming ``name`` and the array) for an array whose header declares more
    data bytes than its member holds (:func:`npy_arrays`), and for a zip bomb
    (:func:`check_zip_sizes`). What cannot be read as a zip is left to ``np.load`` to say what
    is wrong.
    """
    check_zip_sizes(path, name, json_members=())
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError):
        return {}
    with archive:
        where = f"{quoted(name)} {os.fspath(path)!r}"
        return {
            key: (shape, dtype) for key, shape, dtype, _ in npy_arrays(archive, os.path.getsize(path), where)
        }


def npy_arrays(archive, size, where):
    """``(key, shape, dtype, declared bytes)`` of each ``.npy`` member of the open zip ``archive`` (of
    ``size`` bytes), from its header; ``ValueError`` naming ``where`` and the array where the header
    declares more data bytes than the member holds (or, for a compressed member, than
    :data:`MAX_INFLATION` times ``size``). A header that cannot be read, and an object array
    (``np.load(allow_pickle=False)`` refuses those), are left out."""
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            continue
        try:
            with archive.open(info) as f:
                shape, dtype = _header(f)
                offset = f.tell()
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            continue
        if dtype.hasobject:
            continue
        declared = math.prod(shape) * dtype.itemsize
        ratio = 1 if info.compress_type == zipfile.ZIP_STORED else MAX_INFLATION
        holds = max(min(info.file_size, ratio * size) - offset, 0)
        key = info.filename[: -len(".npy")]
        if declared > holds:
            raise ValueError(
                f"{where}: its array {key!r} declares shape {tuple(shape)} of {dtype} ({declared} "
                f"bytes), but the file holds {holds} bytes for it: truncated or forged, not read"
            )
        yield key, tuple(shape), dtype, declared


def inside(path, root):
    """Whether the real path ``path`` is ``root`` (a real path) or under it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _kind(mode):
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def _check_status(status, where, limit):
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"{where} is {_kind(status.st_mode)}, not a regular file: not read")
    if status.st_size > limit:
        raise ValueError(f"{where} holds {status.st_size} bytes, above the {limit} an image file may hold")


def check_image_file(path, root, where, limit=MAX_IMAGE_FILE_BYTES):
    """``ValueError`` naming ``where`` unless ``path`` is a regular file of at most ``limit`` bytes,
    or a link to one inside ``root`` (the folder's real path); never opens ``path``."""
    status = os.lstat(path)
    if stat.S_ISLNK(status.st_mode):
        real = os.path.realpath(path)
        if not inside(real, root):
            raise ValueError(f"{where} is a link that leads out of the folder (to {real!r}): not read")
        try:
            status = os.stat(path)
        except OSError:
            raise ValueError(f"{where} is a link to nothing (to {real!r})") from None
    _check_status(status, where, limit)


def read_image_file(path, where, limit=MAX_IMAGE_FILE_BYTES):
    """The bytes of the regular file ``path`` (at most ``limit``), checked on the open file: what
    was swapped for a FIFO or a device after :func:`check_image_file` is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as f:
        _check_status(os.fstat(fd), where, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{where} holds more than the {limit} bytes an image file may hold")
    return data
