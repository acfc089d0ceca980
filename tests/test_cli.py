"""`structinit demo` end to end on a tiny budget, and CLI argument errors."""

import importlib.util
import json
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_structinit import cli
from keras_structinit.cli.demo import run_demo


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
        [sys.executable, "-m", "keras_structinit.cli", *argv], check=False, capture_output=True, text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert "error" in result.stderr


def write_tiny_cifar(path, n, seed):
    rng = np.random.default_rng(seed)
    np.savez(path, x=rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), y=np.arange(n) % 10)
    return str(path)


def test_train_smoke_writes_log_results_and_eval(tmp_path, capsys):
    data = write_tiny_cifar(tmp_path / "train.npz", 80, 0)
    eval_data = write_tiny_cifar(tmp_path / "eval.npz", 20, 1)
    out = tmp_path / "run"
    argv = ["train", "--model", "convmixer-8/2", "--kernel-size", "3", "--init", "conv-cov:cifar-p1",
            "--frozen", "--epochs", "1", "--data", data, "--eval-data", eval_data, "--out", str(out),
            "--batch-size", "16", "--rand-augment", "none", "--seed", "3"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| convmixer-8/2 | conv-cov:cifar-p1 | frozen | 1 |" in printed
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["model"] == "convmixer-8/2" and results["config"]["seed"] == 3
    assert results["versions"]["backend"] == keras.backend.backend()
    assert len(results["metrics"]["val_accuracy"]) == 1
    assert results["eval"]["accuracy"] == results["summary"]["eval_accuracy"]
    assert 0.0 <= results["eval"]["accuracy"] <= 1.0
    log = (out / "log.csv").read_text().splitlines()
    assert log[0].startswith("epoch") and len(log) == 2
    if importlib.util.find_spec("matplotlib"):
        assert (out / "learning_curves.png").stat().st_size > 0


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model", "resnet-50"], "`model` must be one of"),
        (["--model", "convmixer-256"], "convmixer-H/D"),
        (["--model", "convmixer-a/8"], "convmixer-H/D"),
        (["--model", "convmixer-8/2", "--init", "kaiming"], "`init` must be one of"),
        (["--model", "convmixer-8/2", "--init", "conv-cov:nope"], "preset"),
        (["--model", "convmixer-8/2", "--rand-augment", "two"], "--rand-augment"),
        (["--model", "convmixer-8/2", "--rand-augment", "2,1.5"], "--rand-augment"),
        (["--model", "vit-tiny", "--frozen"], "spatial depthwise convs"),
    ],
)
def test_train_rejects_bad_arguments(tmp_path, capsys, extra, message):
    data = write_tiny_cifar(tmp_path / "train.npz", 10, 0)
    assert cli.main(["train", "--epochs", "1", "--data", data, "--out", str(tmp_path), *extra]) == 2
    assert message in capsys.readouterr().err


def test_train_rejects_missing_data(tmp_path, capsys):
    argv = ["train", "--model", "convmixer-8/2", "--epochs", "1", "--data", str(tmp_path / "none.zip")]
    assert cli.main(argv) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["train", "--recipe", "imagenet", "--model", "vit-tiny", "--epochs", "1"]) == 2
    assert "needs --data" in capsys.readouterr().err


def test_train_cli_exits_nonzero_in_a_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "keras_structinit.cli", "train", "--model", "convmixer-0/8", "--epochs", "1"],
        check=False, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 2 and "convmixer-H/D" in result.stderr


def test_parsing_imports_no_keras():
    code = ("import sys; from keras_structinit import cli; "
            "cli.build_parser().parse_args(['train', '--model', 'convmixer-8/2', '--epochs', '1']); "
            "assert 'keras' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_apply_init_dispatches_to_the_public_api():
    from keras_structinit.cli.train import apply_init, parse_init
    from keras_structinit.models import convmixer

    model = convmixer(8, 2, kernel_size=3, patch_size=2, num_classes=10, input_shape=(8, 8, 3))
    assert apply_init(model, "default", seed=0) == []
    paths = apply_init(model, "torch-uniform", seed=0)
    kernel = model.get_layer("block_1_depthwise_conv").kernel
    assert len(paths) == 2 and paths[0] == kernel.path
    assert np.abs(keras.ops.convert_to_numpy(kernel)).max() <= 1 / 3  # U[-1/sqrt(9), 1/sqrt(9)]
    assert len(apply_init(model, ("conv-cov", "cifar-p1"), seed=0)) == 2
    assert parse_init("conv-cov") == ("conv-cov", "cifar-p2")
    with pytest.raises(TypeError, match="init"):
        parse_init(None)
