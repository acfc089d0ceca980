"""Every script in examples/ runs as a script, at tiny sizes, from an empty folder."""

import runpy
import sys

import numpy as np
import pytest

from conftest import REPO_ROOT, once_per_suite

EXAMPLES = REPO_ROOT / "examples"

#: Arguments that shrink each example to seconds (the files' own defaults take a minute or more).
TINY = {
    "conv_covariance_init.py": [],
    "covariance_transfer.py": [
        "--data",
        "{npz}",
        "--train-size",
        "60",
        "--val-size",
        "20",
        "--source-epochs",
        "1",
        "--epochs",
        "1",
        "--seeds",
        "0",
        "--targets",
        "wider",
        "--filters",
        "frozen",
        "--batch-size",
        "30",
        "--out",
        "ct",
    ],
    "fit_cifar_recipe.py": ["--data", "{npz}", "--epochs", "1", "--train-size", "60", "--batch-size", "30"],
    "mimetic_init.py": ["--images", "64", "--epochs", "1"],
    "lc_blocks.py": ["--images", "64", "--epochs", "1", "--expansion", "2"],
    "data_aligned_init.py": ["--images", "96", "--epochs", "1"],
    "weight_selection.py": ["--images", "96", "--epochs", "1", "--out", "sel"],
}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(TINY)


@once_per_suite("the examples run the same code on every backend")
@pytest.mark.parametrize("name", sorted(TINY))
def test_example_runs(name, tmp_path, monkeypatch, capsys):
    """As ``python examples/NAME ARGS`` from an empty folder, in this interpreter (Keras is imported
    once for all of them)."""
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "cifar.npz",
        x=rng.integers(0, 256, (120, 32, 32, 3), dtype=np.uint8),
        y=np.arange(120) % 10,
    )
    args = [a.format(npz=tmp_path / "cifar.npz") for a in TINY[name]]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(EXAMPLES / name), *args])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert capsys.readouterr().out.strip()
