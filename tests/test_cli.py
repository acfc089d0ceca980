"""`structinit demo` end to end on a tiny budget, and CLI argument errors."""

import json
import subprocess
import sys

import keras
import pytest

from keras_structinit import cli
from keras_structinit.recipes.demo import run_demo


def test_demo_smoke_writes_table_json_and_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    summary = run_demo(epochs=1, train_size=256, out=str(tmp_path), verbose=0)
    printed = capsys.readouterr().out
    assert "embedded procedural image set" in printed
    assert "| default (PyTorch uniform) |" in printed and "| ConvCovariance (cifar-p2) |" in printed
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["backend"] == keras.backend.backend()
    assert [r["init"] for r in saved["results"]] == [r["init"] for r in summary["results"]]
    for r in saved["results"]:
        assert 0.0 <= r["final_val_accuracy"] <= 1.0
    for name in ("covariance.png", "filters.png", "learning_curves.png", "results.md"):
        assert (tmp_path / name).stat().st_size > 0
    assert not list(tmp_path.glob(".tmp-*"))  # no half-written files left


def test_cli_rejects_missing_data_path(tmp_path, capsys):
    assert cli.main(["demo", "--data", str(tmp_path / "missing.zip"), "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["demo", "--epochs", "0"], ["demo", "--backend", "mxnet"], ["nope"]])
def test_cli_rejects_bad_arguments(argv):
    result = subprocess.run(
        [sys.executable, "-m", "keras_structinit.cli", *argv], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2
    assert "error" in result.stderr
