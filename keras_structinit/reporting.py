"""What runs report: markdown tables of results and the facts of the run.

* :func:`format_table` renders rows of results as a markdown table.
* :func:`versions` and :func:`machine_info` describe the software and the
  machine, under the keys the recorded results (``results.json`` of the
  command line, ``benchmarks/results/*.json``) use.

Importing this module imports no Keras (:func:`versions` does, when called),
so benchmark scripts can import it before choosing a backend.
"""

from __future__ import annotations

import importlib
import os
import platform
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from keras_structinit import validation

__all__ = ["MISSING", "Column", "format_table", "machine_info", "versions"]

MISSING = "—"  # a cell whose value is None
_RULES = {None: "---", "left": ":---", "right": "---:", "center": ":---:"}


class Column(NamedTuple):
    """A column of :func:`format_table`.

    Attributes:
        header: the header cell.
        value: a key of the row (``row[value]``) or a function of the row.
        fmt: a format spec for ``format(value, fmt)`` (e.g. ``".4f"``) or a
            function of the value returning the cell text.
        align: ``None``, ``"left"``, ``"right"`` or ``"center"``.
    """

    header: str
    value: Any
    fmt: str | Callable = ""
    align: str | None = None


def format_table(rows, columns):
    """A markdown table of ``rows``, one line per row.

    Args:
        rows: dicts (or anything the columns' ``value`` functions accept).
        columns: :class:`Column` objects or tuples of their fields, such as
            ``("final val acc", "final_val_accuracy", ".4f")``.

    Returns:
        The table as a string without a trailing newline. A value of ``None``
        shows as ``"—"``; an empty cell as a single space.
    """
    columns = [Column(*column) for column in columns]
    for column in columns:
        validation.one_of(column.align, "align", tuple(_RULES))
    lines = [_line([column.header for column in columns]),
             "|" + "|".join(_RULES[column.align] for column in columns) + "|"]
    lines += [_line([_cell(row, column) for column in columns]) for row in rows]
    return "\n".join(lines)


def _cell(row, column):
    value = column.value(row) if callable(column.value) else row[column.value]
    if value is None:
        return MISSING
    return column.fmt(value) if callable(column.fmt) else format(value, column.fmt)


def _line(cells):
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def versions():
    """Versions of Python, NumPy, Keras and the Keras backend in use.

    Returns:
        ``{"python", "numpy", "keras", "backend", "backend_version"}``, where
        ``backend`` is the backend's name and ``backend_version`` the version
        of its package (``"?"`` when it has none).
    """
    import keras

    backend = keras.backend.backend()
    try:
        backend_version = getattr(importlib.import_module(backend), "__version__", "?")
    except ImportError:
        backend_version = "?"
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "keras": keras.__version__,
        "backend": backend,
        "backend_version": backend_version,
    }


def _proc_field(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info():
    """The machine: ``{"cpu", "cores", "ram_gib", "os", "thread_env"}``.

    ``cpu`` is the CPU model, ``ram_gib`` the total memory (``None`` where
    ``/proc/meminfo`` is missing) and ``thread_env`` the thread-count
    variables set (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``).
    """
    mem_kb = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor(),
        "cores": os.cpu_count(),
        "ram_gib": round(int(mem_kb.split()[0]) / 2**20, 1) if mem_kb else None,
        "os": platform.platform(),
        "thread_env": {
            k: os.environ[k]
            for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            if k in os.environ
        },
    }
