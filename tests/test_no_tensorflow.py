"""``structinit train`` where TensorFlow is not installed: the native input stream end to end.

Runs in the no-TensorFlow lanes of ``scripts/test_all_backends.sh`` (a venv with
``pip install -e ".[jax,test]"`` or ``".[torch,test]"`` only); skipped where TensorFlow is
installed, whose processes test the same commands with ``--pipeline native`` elsewhere.
"""

import importlib.util
import json
import signal
import sys

import keras
import numpy as np
import pytest

from keras_structinit import cli

from conftest import kill_at_epoch, run_cli_in_child

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is not None,
    reason="TensorFlow is installed: the no-TensorFlow lanes run these",
)


def _data(path, count=160, seed=0):
    rng = np.random.default_rng(seed)
    np.savez(path, x=rng.integers(0, 256, (count, 32, 32, 3), dtype=np.uint8), y=np.arange(count) % 10)
    return str(path)


def _argv(data, out, epochs=2, *extra):
    return [
        "train",
        "--model",
        "convmixer-16/2",
        "--epochs",
        str(epochs),
        "--train-size",
        "128",
        "--batch-size",
        "16",
        "--data",
        data,
        "--seed",
        "0",
        "--out",
        str(out),
        *extra,
    ]


def _weights(path):
    return [np.asarray(w) for w in keras.saving.load_model(path).get_weights()]


def test_tensorflow_is_absent_and_auto_is_native():
    from keras_structinit.recipes.native import choose_pipeline

    assert importlib.util.find_spec("tensorflow") is None
    assert choose_pipeline("auto") == "native"
    with pytest.raises(ImportError, match="pipeline='native'"):
        choose_pipeline("tf")


@pytest.mark.parametrize("extra", [(), ("--mixup", "0.8", "--cutmix", "1.0", "--random-erasing", "0.25")])
def test_train_without_tensorflow_writes_the_model_and_one_seed_one_log(tmp_path, extra):
    data = _data(tmp_path / "train.npz")
    logs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert cli.main(_argv(data, out, 2, *extra)) == 0
        results = json.loads((out / "results.json").read_text())
        assert results["status"] == "finished"
        assert results["config"]["pipeline"] == "auto"
        assert results["config"]["rand_augment"] == "torchvision:n2-m12"
        assert (out / "model.keras").is_file()
        logs.append((out / "log.csv").read_text())
    assert logs[0] == logs[1] and len(logs[0].splitlines()) == 3
    assert "tensorflow" not in sys.modules


def test_a_killed_native_run_resumes_to_the_uninterrupted_weights(tmp_path):
    data = _data(tmp_path / "train.npz")
    whole = tmp_path / "whole"
    assert cli.main(_argv(data, whole, 3)) == 0
    out = tmp_path / "killed"
    # SIGKILL as epoch 2 begins: epoch 1 is logged and backed up.
    child = run_cli_in_child(tmp_path, kill_at_epoch("on_epoch_begin", 1), _argv(data, out, 3))
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["status"] == "running"
    assert cli.main([*_argv(data, out, 3), "--resume"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and results["resumed_at_epoch"] == 1
    assert (out / "log.csv").read_text() == (whole / "log.csv").read_text()
    for got, want in zip(_weights(out / "model.keras"), _weights(whole / "model.keras"), strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_imagenet_recipe_trains_on_a_folder_without_tensorflow(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(24):
        folder = tmp_path / "images" / f"class_{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (40 + i, 50, 3), dtype=np.uint8)).save(folder / f"{i}.jpg")
    out = tmp_path / "run"
    argv = [
        "train",
        "--recipe",
        "imagenet",
        "--model",
        "convmixer-16/2",
        "--image-size",
        "32",
        "--epochs",
        "2",
        "--batch-size",
        "8",
        "--data",
        str(tmp_path / "images"),
        "--seed",
        "0",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and len(results["metrics"]["loss"]) == 2
    assert (out / "model.keras").is_file()
    assert "tensorflow" not in sys.modules


def test_commands_without_backend_setting_take_the_one_installed(tmp_path):
    """No --backend, no KERAS_BACKEND, no keras.json: train, init and inspect run on the one backend
    installed and say so in their first line (issue 58, point 2)."""
    import os
    import subprocess

    backend = keras.backend.backend()
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env["KERAS_HOME"] = str(tmp_path / "keras_home")
    data = _data(tmp_path / "train.npz", count=64)
    commands = {
        "train": [
            "train",
            "--model",
            "convmixer-16/2",
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--data",
            data,
            "--out",
            str(tmp_path / "run"),
        ],
        "init": ["init", "convmixer-16/2", "--init", "conv-cov", "--out", str(tmp_path / "init.keras")],
        "inspect": ["inspect", str(tmp_path / "init.keras"), "--out", str(tmp_path / "report")],
    }
    for name, argv in commands.items():
        done = subprocess.run(
            [sys.executable, "-m", "keras_structinit.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, (name, done.stderr[-3000:])
        said = f"structinit: backend {backend} (the one installed; --backend or KERAS_BACKEND chooses)"
        assert done.stdout.splitlines()[0] == said, (name, done.stdout[:500])
        assert "Traceback" not in done.stderr, (name, done.stderr[-3000:])
