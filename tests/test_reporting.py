"""keras_structinit.reporting: markdown tables, versions and machine facts."""

import importlib
import subprocess
import sys

import keras
import pytest

from keras_structinit.reporting import MISSING, Column, format_table, machine_info, versions


def test_format_table_keys_formats_callables_and_missing_values():
    rows = [{"name": "a", "acc": 0.12345, "frozen": True}, {"name": "b", "acc": None, "frozen": False}]
    table = format_table(rows, [
        ("name", "name"),
        ("acc", "acc", ".3f"),
        ("filters", lambda r: "frozen" if r["frozen"] else "trained"),
        Column("pct", "acc", lambda v: f"{100 * v:.0f}%", "right"),
    ])
    assert table.split("\n") == [
        "| name | acc | filters | pct |",
        "|---|---|---|---:|",
        "| a | 0.123 | frozen | 12% |",
        f"| b | {MISSING} | trained | {MISSING} |",
    ]


def test_format_table_alignments_empty_cells_and_no_rows():
    table = format_table([("x", "")], [("l", 0, "", "left"), ("c", 1, "", "center")])
    assert table.split("\n") == ["| l | c |", "|:---|:---:|", "| x | |"]
    assert format_table([], [("only", "k")]) == "| only |\n|---|"


def test_format_table_rejects_an_unknown_alignment():
    with pytest.raises(ValueError, match="align"):
        format_table([], [("h", "k", "", "middle")])


def test_versions_names_the_backend_in_use():
    info = versions()
    assert list(info) == ["python", "numpy", "keras", "backend", "backend_version"]
    backend = keras.backend.backend()
    assert info["backend"] == backend and info["keras"] == keras.__version__
    assert info["backend_version"] == importlib.import_module(backend).__version__


def test_machine_info_keys():
    info = machine_info()
    assert list(info) == ["cpu", "cores", "ram_gib", "os", "thread_env"]
    assert isinstance(info["cores"], int) and info["cores"] >= 1
    assert info["ram_gib"] is None or info["ram_gib"] > 0
    assert isinstance(info["thread_env"], dict)


def test_importing_reporting_imports_no_keras():
    code = "import sys, keras_structinit.reporting; assert 'keras' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
