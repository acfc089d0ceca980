"""``benchmarks/inspect_trained.py`` on the fixed split (issue 79, point 5): its entries train on the
split's training part and report accuracy on 2,000 of its test part (as many images as the held-out
subset they evaluated before); a tiny run records the split, the test part's digest and each run's
``test_accuracy``; results recorded before the split still render as held-out accuracy."""

import json

import numpy as np
from test_cli import write_tiny_cifar

from benchmarks import inspect_trained as it
from benchmarks.bench_utils import accuracy_of, cifar_split, index_digest
from benchmarks.suite import CPU

from conftest import REPO_ROOT, once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entries on torch")


def test_the_entries_report_on_2000_test_images_and_choose_nothing():
    for name in ("inspect_sigma", "inspect_entropy"):
        bench = next(b for b in CPU if b.name == name)
        args = it.parse_args([*bench.args, "--data", str(REPO_ROOT)])
        assert (args.test_size, args.validation_size) == (2000, 0), name


def test_tiny_run_records_the_split_and_test_accuracy(tmp_path):
    data_path = write_tiny_cifar(tmp_path / "tiny.npz", 100, 0)
    out = tmp_path / "out"
    argv = ["sigma", "--data", data_path, "--out", str(out), "--backend", "torch", "--train-size", "40"]
    it.main([*argv, "--epochs", "1", "--batch-size", "20", "--seeds", "0", "--test-size", "6"])

    data = json.loads((out / "inspect_sigma.json").read_text())
    config, (run,) = data["config"], data["runs"]
    split = cifar_split(np.load(data_path)["y"])
    assert config["split"]["test"] == {"size": 10, "sha256": index_digest(split.test)}
    assert config["split"]["used"]["test"]["size"] == 6 == config["test_size"]
    assert config["split"]["used"]["train"]["size"] == 40 and "validation" not in config["split"]["used"]
    assert "held_out" not in config and "held_out_size" not in config
    assert 0 <= run["test_accuracy"] <= 1 and accuracy_of(run) == run["test_accuracy"]
    assert "val_accuracy" not in run
    text = (out / "inspect_sigma.md").read_text()
    assert f"accuracy on the test part: 6 of its 10 images (sha256 {index_digest(split.test)[:12]})" in text
    assert "Test accuracy" in text


def test_results_before_the_split_still_render_as_held_out():
    # The runs of 2026-11-29, before issue 79's split (archived when the entry re-ran on it).
    archived = REPO_ROOT / "benchmarks" / "results" / "archive" / "inspect_entropy_20261129.json"
    data = json.loads(archived.read_text())
    assert "split" not in data["config"]
    text = it.render_markdown(data)
    assert "held-out accuracy on 2,000 (stratified 10%" in text and "| Held-out acc. % |" in text
    assert it.headline("inspect_entropy", data)[0].startswith("first-layer H frozen")
