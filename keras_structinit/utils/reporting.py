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
import shutil
import subprocess
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from keras_structinit.utils import validation

__all__ = [
    "MISSING",
    "Column",
    "describe_machine",
    "describe_software",
    "format_table",
    "gpus",
    "machine_info",
    "versions",
]

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
    lines = [
        _line([column.header for column in columns]),
        "|" + "|".join(_RULES[column.align] for column in columns) + "|",
    ]
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


def gpus():
    """The NVIDIA GPUs as ``nvidia-smi`` names them: ``["NVIDIA H100 80GB HBM3, 81559 MiB,
    driver 580.159.04", ...]``; ``[]`` where there is no ``nvidia-smi`` or it fails.

    Read without a framework, so that a record says which card ran it whatever the backend.
    """
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    cards = []
    for line in out.stdout.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 3:
            cards.append(f"{fields[0]}, {fields[1]}, driver {fields[2]}")
    return cards


def machine_info():
    """The machine: ``{"cpu", "cores", "ram_gib", "os", "thread_env", "gpus"}``.

    ``cpu`` is the CPU model, ``ram_gib`` the total memory (``None`` where
    ``/proc/meminfo`` is missing), ``thread_env`` the thread-count variables set
    (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``) and ``gpus``
    what :func:`gpus` finds (``[]`` on a machine without one).
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
        "gpus": gpus(),
    }


def describe_machine(machine):
    """One sentence for a :func:`machine_info` record, the GPUs first where there are any
    (records written before ``gpus`` was recorded read as CPU-only)."""
    threads = ", ".join(f"{k}={v}" for k, v in (machine.get("thread_env") or {}).items()) or "default"
    host = (
        f"{machine['cpu']}, {machine['cores']} cores, {machine['ram_gib']} GiB RAM, "
        f"{machine['os']}; thread settings {threads}"
    )
    cards = machine.get("gpus") or []
    if not cards:
        return f"Machine: {host}; no GPU."
    return f"Machine: {'; '.join(cards)}, on a host with {host}."


def describe_software(software):
    """``"Python 3.12.3, NumPy 2.4.6, Keras 3.15.1, torch 2.13.0"`` for a :func:`versions` record."""
    return (
        f"Python {software['python']}, NumPy {software['numpy']}, Keras {software['keras']}, "
        f"{software['backend']} {software['backend_version']}"
    )
