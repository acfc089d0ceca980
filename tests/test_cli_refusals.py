"""Each refusal a user met as a cryptic line says what is wrong with which input, and what to do
(issue 76, point 9): one line on stderr, exit status 2, naming the flag. And no TensorFlow start-up
line on any backend (point 5): TensorFlow, which Keras and KerasHub import on JAX and torch too when
it is installed, starts silenced.

Every input is a tiny file in ``tmp_path``; every refusal comes before a model is trained.
"""

import ast
import importlib.util
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from keras_structinit import cli

from conftest import REPO_ROOT, once_per_suite

TRAIN = ["train", "--model", "simple-cnn", "--epochs", "1", "--batch-size", "2", "--rand-augment", "none"]
NPZ_FORM = "np.savez(path, x=x, y=y)"


def _error(capsys, argv):
    """The one stderr line of a refused command (exit status 2)."""
    assert cli.main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def _npz(path, size=8, count=4):
    np.savez(path, x=np.zeros((count, size, size, 3), np.uint8), y=np.arange(count) % 2)
    return path


def _train(tmp_path, data, *extra):
    return [*TRAIN, "--data", data, "--out", tmp_path / "run", *extra]


# ------------------------------------------------------------------------------- .npz files of --data


def test_an_npz_of_no_images_is_refused_naming_data(tmp_path, capsys):
    data = _npz(tmp_path / "empty.npz", count=0)
    err = _error(capsys, _train(tmp_path, data))
    assert "need at least one array" not in err
    assert "--data" in err and repr(str(data)) in err and "holds no images" in err
    assert "(0, 8, 8, 3)" in err and "at least one labelled image" in err
    assert not (tmp_path / "run").exists()


def test_an_npy_file_named_npz_is_refused_naming_the_form_expected(tmp_path, capsys):
    np.save(tmp_path / "images.npy", np.zeros((4, 8, 8, 3), np.uint8))
    data = tmp_path / "images.npz"
    os.replace(tmp_path / "images.npy", data)
    err = _error(capsys, _train(tmp_path, data))
    assert "context manager" not in err and "numpy.ndarray" not in err
    assert "--data" in err and repr(str(data)) in err
    assert "single .npy array" in err and NPZ_FORM in err


def test_a_truncated_npz_is_refused_naming_data_and_its_path(tmp_path, capsys):
    whole = _npz(tmp_path / "whole.npz").read_bytes()
    data = tmp_path / "cut.npz"
    data.write_bytes(whole[: len(whole) // 2])
    err = _error(capsys, _train(tmp_path, data))
    assert err != "structinit train: error: File is not a zip file"
    assert "--data" in err and repr(str(data)) in err
    assert "not a zip archive" in err and "truncated or corrupt" in err and NPZ_FORM in err


def test_an_npz_with_a_damaged_member_is_refused_naming_data_and_its_path(tmp_path, capsys):
    raw = bytearray(_npz(tmp_path / "whole.npz").read_bytes())
    start = raw.index(b"NUMPY") + 200  # inside x's pixels: the member's CRC no longer matches
    raw[start : start + 32] = b"\xff" * 32
    data = tmp_path / "damaged.npz"
    data.write_bytes(bytes(raw))
    err = _error(capsys, _train(tmp_path, data))
    assert "--data" in err and repr(str(data)) in err
    assert "cannot be read (BadZipFile: Bad CRC-32" in err and NPZ_FORM in err


# -------------------------------------------------------------------------- images too small to train


@pytest.mark.parametrize("model", ["simple-cnn", "convmixer-256/8"])
def test_images_smaller_than_a_model_takes_are_refused_before_a_model_is_built(tmp_path, capsys, model):
    data = _npz(tmp_path / "dots.npz", size=1)
    err = _error(capsys, [*_train(tmp_path, data), "--model", model])
    assert "Computed output size" not in err and "input_shape" not in err
    assert "--data" in err and repr(str(data)) in err
    assert "images of 1x1 pixels" in err and "below the 4x4" in err and "resize them first" in err
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------- --out a symbolic link


def _teacher(tmp_path):
    import keras

    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, padding="same")(inputs)
    outputs = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x))
    path = tmp_path / "teacher.keras"
    keras.Model(inputs, outputs).save(path)
    return path


def _out_argv(command, tmp_path, out):
    data = _npz(tmp_path / "train.npz")
    if command == "train":
        return _train(tmp_path, data)[:-2] + ["--out", out]
    if command == "demo":
        return ["demo", "--data", data, "--epochs", "1", "--seeds", "1", "--train-size", "2", "--out", out]
    if command == "inspect":
        return ["inspect", "simple-cnn", "--out", out]
    if command == "init":
        return ["init", "simple-cnn", "--init", "torch-default", "--out", out]
    return ["select", "--teacher", _teacher(tmp_path), "--student", "simple-cnn", "--out", out]


@pytest.mark.parametrize("target", ["dangling", "a-folder"])
@pytest.mark.parametrize("command", ["train", "demo", "inspect", "init", "select"])
def test_a_symbolic_link_at_out_is_refused_naming_out(tmp_path, capsys, command, target):
    """A dangling link at --out said "File exists" (inspect) or "exists and is not a folder" (train,
    demo); a link to a folder was written through. Each command refuses it and leaves it as it is."""
    pointed = tmp_path / "elsewhere"
    if target == "a-folder":
        pointed.mkdir()
    out = tmp_path / ("out.keras" if command in ("init", "select") else "out")
    out.symlink_to(pointed, target_is_directory=target == "a-folder")
    err = _error(capsys, _out_argv(command, tmp_path, out))
    assert "File exists" not in err and "not a folder" not in err
    assert "--out" in err and repr(str(out)) in err and "is a symbolic link" in err
    assert os.path.islink(out) and os.readlink(out) == str(pointed)
    assert os.path.lexists(pointed) == (target == "a-folder")
    assert target == "dangling" or os.listdir(pointed) == []


# ------------------------------------------------------------------- a deeply nested model config


def _deep_json(levels):
    return '{"class_name": "Functional", "config": ' + "[" * levels + "]" * levels + "}"


@pytest.mark.parametrize("levels", [150, 100_000])
def test_a_deeply_nested_config_json_in_a_keras_file_is_refused(tmp_path, capsys, levels):
    path = tmp_path / "deep.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata.json", '{"keras_version": "3.0.0"}')
        archive.writestr("config.json", _deep_json(levels))
    err = _error(capsys, ["inspect", path, "--out", tmp_path / "report"])
    assert "maximum recursion depth" not in err
    assert "MODEL" in err and repr(str(path)) in err
    assert "its config.json nests its objects and arrays more than 100 levels deep" in err


def test_a_deeply_nested_config_json_in_a_preset_folder_is_refused(tmp_path, capsys):
    preset = tmp_path / "preset"
    preset.mkdir()
    (preset / "config.json").write_text(_deep_json(100_000))
    err = _error(capsys, ["inspect", preset, "--out", tmp_path / "report"])
    assert "maximum recursion depth" not in err
    assert "its config.json nests its objects and arrays more than 100 levels deep" in err


def test_check_preset_folder_refuses_a_deep_config_and_passes_a_plain_one(tmp_path):
    from keras_structinit.utils.model_files import check_preset_folder

    preset = tmp_path / "preset"
    preset.mkdir()
    (preset / "config.json").write_text('{"module": "keras_hub.src.models", "config": {"a": [[1]]}}')
    check_preset_folder(preset, "--model")
    (preset / "metadata.json").write_text(_deep_json(100_000))
    with pytest.raises(ValueError, match=r"^`--model` '.*preset': its metadata.json nests .* 100 levels"):
        check_preset_folder(preset, "--model")


# ---------------------------------------------------------------------------- RandAugment's form


def test_keras_rand_augment_on_the_native_stream_names_the_form_not_a_dataclass(tmp_path, capsys):
    data = _npz(tmp_path / "train.npz")
    err = _error(capsys, [*_train(tmp_path, data), "--rand-augment", "2,0.4", "--pipeline", "native"])
    assert "RandAugmentForm(" not in err
    assert "--rand-augment='keras:n2-f0.4' is Keras' RandAugment" in err
    assert "--pipeline='native'" in err and "torchvision:n2-m12" in err


# ------------------------------------------------------------------ backticks once, never doubled


def _message_strings(tree):
    """The string pieces of every ``raise`` statement's exception and every ``...Error(...)`` call."""
    for node in ast.walk(tree):
        parts = [node.exc] if isinstance(node, ast.Raise) and node.exc is not None else []
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called.endswith(("Error", "Exception", "Warning")) or called in ("warn", "usage_error"):
                parts.extend(node.args)
        for part in parts:
            for piece in ast.walk(part):
                if isinstance(piece, ast.Constant) and isinstance(piece.value, str):
                    yield piece


@once_per_suite("a scan of the package's sources")
def test_no_error_message_of_the_package_writes_doubled_backticks():
    """Messages name an argument in one pair of backticks (```x```); ````x```` is reST, not for people."""
    found = []
    for path in sorted((REPO_ROOT / "keras_structinit").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [
            f"{path.relative_to(REPO_ROOT)}:{s.lineno}" for s in _message_strings(tree) if "``" in s.value
        ]
    assert not found, found


def test_the_python_api_names_a_run_setting_in_one_pair_of_backticks(tmp_path):
    """A ``Run``'s names come in backticks (```validation_split```); the checks wrapped them again."""
    from keras_structinit.recipes.run import Run

    with pytest.raises(ValueError, match=r"^`validation_split` must be a number in \[0, 1\)") as info:
        Run.from_values("cifar10", model="simple-cnn", epochs=1, validation_split=2.0).check()
    assert "``" not in str(info.value)
    data = _npz(tmp_path / "empty.npz", count=0)
    with pytest.raises(ValueError, match=r"^`data` '.*empty.npz' holds no images") as info:
        Run.from_values("cifar10", model="simple-cnn", epochs=1, data=str(data)).check()
    assert "``" not in str(info.value)


# ------------------------------------------------------------------ TensorFlow's start-up lines

STARTUP_LINES = ("absl::InitializeLog", "cudart_stub", "oneDNN", "cpu_feature_guard", "cuda drivers")


@once_per_suite("a subprocess on JAX, whatever the test process's backend")
def test_no_tensorflow_start_up_line_on_jax_when_keras_hub_imports_it(tmp_path):
    """Issue 76, point 5: with the hub extra, ``inspect`` of a KerasHub preset on JAX printed
    TensorFlow's start-up lines (``import keras_hub`` imports it through tensorflow-text)."""
    for module in ("keras_hub", "tensorflow", "jax"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(
                f"{module} is not installed: there are no TensorFlow start-up lines on JAX to silence"
            )
    preset = tmp_path / "vit_preset"
    script = (
        "import keras_hub\n"
        "keras_hub.models.ViTBackbone(image_shape=(16, 16, 3), patch_size=8, num_layers=1, num_heads=2, "
        f"hidden_dim=8, mlp_dim=16).save_to_preset({str(preset)!r})\n"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "STRUCTINIT_TF_STARTUP_LOG")
    }
    env["KERAS_BACKEND"] = "jax"
    made = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert made.returncode == 0, made.stderr[-3000:]
    command = [
        sys.executable,
        "-m",
        "keras_structinit.cli",
        "inspect",
        str(preset),
        "--out",
        str(tmp_path / "r"),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "r" / "report.md").is_file()
    for line in STARTUP_LINES:
        assert line not in done.stderr, done.stderr[:3000]
