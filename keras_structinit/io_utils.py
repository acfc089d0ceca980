"""Small file-system helpers: writes that never leave half-written files."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside ``path``; moves it into place on success.

    The temporary file keeps ``path``'s extension (writers such as matplotlib
    and ``numpy.savez`` pick the format from it) and is removed on error.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    suffix = os.path.splitext(path)[1]
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=suffix)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp files are owner-only
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text):
    """Atomically writes ``text`` to ``path``."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def write_json(path, obj):
    """Atomically writes ``obj`` as indented JSON to ``path``."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
