"""keras_structinit.utils.reporting: markdown tables, versions and machine facts."""

import importlib
import subprocess
import sys

import keras
import pytest

from keras_structinit.utils.reporting import (
    MISSING,
    Column,
    describe_machine,
    describe_software,
    format_table,
    gpus,
    machine_info,
    versions,
)


def test_format_table_keys_formats_callables_and_missing_values():
    rows = [{"name": "a", "acc": 0.12345, "frozen": True}, {"name": "b", "acc": None, "frozen": False}]
    table = format_table(
        rows,
        [
            ("name", "name"),
            ("acc", "acc", ".3f"),
            ("filters", lambda r: "frozen" if r["frozen"] else "trained"),
            Column("pct", "acc", lambda v: f"{100 * v:.0f}%", "right"),
        ],
    )
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
    assert list(info) == ["cpu", "cores", "ram_gib", "os", "thread_env", "gpus"]
    assert isinstance(info["cores"], int) and info["cores"] >= 1
    assert info["ram_gib"] is None or info["ram_gib"] > 0
    assert isinstance(info["thread_env"], dict)
    assert isinstance(info["gpus"], list)


def _fake_smi(tmp_path, monkeypatch, script):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + script)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))


def test_gpus_reads_each_card_from_nvidia_smi(tmp_path, monkeypatch):
    _fake_smi(
        tmp_path,
        monkeypatch,
        'echo "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04"\necho "NVIDIA H200, 143771 MiB, 580.159.03"\n',
    )
    assert gpus() == [
        "NVIDIA H100 80GB HBM3, 81559 MiB, driver 580.159.04",
        "NVIDIA H200, 143771 MiB, driver 580.159.03",
    ]


def test_gpus_is_empty_without_nvidia_smi_or_when_it_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpus() == []
    _fake_smi(tmp_path, monkeypatch, "echo 'NVIDIA-SMI has failed' >&2; exit 9\n")
    assert gpus() == []


def test_describe_software_names_each_version():
    software = {
        "python": "3.12.3",
        "numpy": "2.4.6",
        "keras": "3.15.1",
        "backend": "jax",
        "backend_version": "0.11.2",
    }
    assert describe_software(software) == "Python 3.12.3, NumPy 2.4.6, Keras 3.15.1, jax 0.11.2"


def test_describe_machine_names_the_gpu_first_and_reads_old_records():
    host = {"cpu": "AMD EPYC", "cores": 16, "ram_gib": 125.7, "os": "Linux", "thread_env": {}}
    assert describe_machine(host) == (
        "Machine: AMD EPYC, 16 cores, 125.7 GiB RAM, Linux; thread settings default; no GPU."
    )
    threads = describe_machine({**host, "thread_env": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}})
    assert "; thread settings OMP_NUM_THREADS=1, MKL_NUM_THREADS=1; no GPU." in threads
    line = describe_machine({**host, "gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, driver 580"]})
    assert line.startswith("Machine: NVIDIA H100 80GB HBM3, 81559 MiB, driver 580, on a host with AMD EPYC")


def test_importing_reporting_imports_no_keras():
    code = "import sys, keras_structinit.utils.reporting; assert 'keras' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
