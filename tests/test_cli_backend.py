"""Which Keras backend ``structinit`` selects when neither ``--backend`` nor ``KERAS_BACKEND``
names one (issue 58, point 2); the no-TensorFlow lanes run the real commands
(``tests/test_no_tensorflow.py``)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from keras_structinit.cli import choose_backend

from conftest import once_per_suite


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    return tmp_path


def test_keras_own_default_is_kept_when_installed(keras_home):
    assert choose_backend(["tensorflow", "jax", "torch"]) is None
    (keras_home / "keras.json").write_text(json.dumps({"backend": "torch"}))
    assert choose_backend(["torch"]) is None  # keras.json's backend, installed


@pytest.mark.parametrize("installed", [["jax"], ["torch"]])
def test_the_one_installed_backend_is_chosen(keras_home, installed):
    assert choose_backend(installed) == installed[0]


def test_keras_json_naming_a_missing_backend_with_one_installed(keras_home):
    (keras_home / "keras.json").write_text(json.dumps({"backend": "jax"}))
    assert choose_backend(["torch"]) == "torch"


def test_several_or_none_installed_names_the_choices(keras_home):
    with pytest.raises(
        ValueError,
        match=r"default backend \(tensorflow\) is not installed: choose one of "
        r"jax, torch with --backend or KERAS_BACKEND",
    ):
        choose_backend(["jax", "torch"])
    with pytest.raises(ValueError, match=r"no Keras backend is installed: install one with pip install"):
        choose_backend([])


@once_per_suite("TensorFlow's start-up lines, in a child process")
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed")
def test_tensorflow_start_up_lines_are_silenced_on_keras_default_backend(tmp_path):
    """No --backend, no KERAS_BACKEND, no keras.json: Keras' default (TensorFlow) runs, and none of
    the lines TensorFlow prints at start-up reach the terminal (issue 58, point 6)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL")}
    env["KERAS_HOME"] = str(tmp_path / "keras_home")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_structinit.cli",
            "init",
            "convmixer-8/1",
            "--init",
            "conv-cov",
            "--out",
            str(tmp_path / "m.keras"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout + done.stderr
    for line in ("absl::InitializeLog", "cpu_feature_guard", "AVX2", "FMA", "oneDNN", "cuda"):
        assert line not in printed, printed[:3000]
