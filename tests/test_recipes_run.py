"""recipes.run: a training run as one value, checked once (issue 50)."""

import json

import keras
import numpy as np
import pytest

from keras_structinit import cli
from keras_structinit.recipes import RecipeConfig, Run
from keras_structinit.recipes.config import DEFAULT
from keras_structinit.recipes.run import differs

from conftest import once_per_suite


@once_per_suite("building the value and its departures: pure Python")
def test_from_paper_records_departures_field_by_field():
    same = Run.from_paper("convcov", init="conv-cov+torch-default", rand_augment="torchvision:n2-m12")
    assert same.paper["departures"] == {}  # the setup's spec and form, written otherwise
    assert same.model == "convmixer-256/8" and same.frozen is True
    assert same.model_kwargs == {"kernel_size": 9, "patch_size": 2}
    assert same.config.optimizer == "adamw" and same.config.batch_size == 512
    run = Run.from_paper("convcov", epochs=3, init="conv-cov", batch_size=64)
    assert run.paper["departures"] == {
        "epochs": {"paper": 20, "given": 3},
        "batch_size": {"paper": 512, "given": 64},
        "init": {"paper": "torch-default+conv-cov:cifar-p2", "given": "conv-cov"},
    }
    assert (run.config.epochs, run.config.batch_size, run.init) == (3, 64, "conv-cov")
    other = Run.from_paper("convcov", model="convmixer-64/4", kernel_size=5)
    assert other.model_kwargs == {"kernel_size": 5}  # the paper's patch size fits its model alone
    assert set(other.paper["departures"]) == {"model", "kernel_size", "model_kwargs"}
    assert other.paper["departures"]["model_kwargs"] == {"paper": {"patch_size": 2}, "given": {}}
    assert not differs("init", "mean-shift+conv-cov", "conv-cov+mean-shift")
    assert differs("init", "conv-cov", "conv-cov+mean-shift") and differs("epochs", 3, 20)
    with pytest.raises(ValueError, match="`paper` must be one of"):
        Run.from_paper("resnet")


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the upstream/downstream plumbing: one backend")
def test_the_alignment_setup_pretrains_on_5_random_classes_then_fine_tunes_apart(tmp_path, capsys):
    """Maennel et al. App. A.1: upstream labels from 5 random classes (a 5-way head); the downstream
    run (a fresh head, App. A.4) trains on images the upstream run never saw (step 2)."""
    from test_cli import write_tiny_cifar

    data = write_tiny_cifar(tmp_path / "train.npz", 80, 0)
    small = dict(model="simple-cnn", epochs=1, batch_size=8, train_size=24, data=data)
    upstream = Run.from_paper("alignment", **small)
    assert (upstream.config.random_labels, upstream.config.random_classes) == (1.0, 5)
    checked = upstream.check()
    assert checked.num_classes == 5 and checked.data.num_classes == 10
    assert checked.execute(tmp_path / "up", interactive=False)["status"] == "finished"
    pretrained = tmp_path / "up" / "model.keras"
    assert keras.saving.load_model(pretrained).output_shape == (None, 5)
    downstream = Run.from_paper(
        "alignment",
        **{**small, "model": str(pretrained), "train_size": 40},
        new_head=True,
        train_offset=24,
        random_labels=0.0,
    )
    assert downstream.config.random_classes is DEFAULT
    assert downstream.paper["departures"]["random_classes"] == {"paper": 5, "given": None}
    checked_down = downstream.check()
    seen = {tuple(image[0, 0]) for image in checked.data.train[0]}
    assert not seen & {tuple(image[0, 0]) for image in checked_down.data.train[0]}
    assert len(checked_down.data.train[0]) == 40 and checked_down.num_classes == 10
    assert checked_down.execute(tmp_path / "down", interactive=False)["status"] == "finished"
    assert keras.saving.load_model(tmp_path / "down" / "model.keras").output_shape == (None, 10)
    config = json.loads((tmp_path / "down" / "results.json").read_text())["config"]
    assert (config["train_offset"], config["random_classes"], config["random_labels"]) == (24, None, 0.0)
    with pytest.raises(ValueError, match="`random_classes` .* needs random_labels=1"):
        Run.from_paper("alignment", random_labels=0.5, random_classes=5)


def _image_folder(root, classes, per_class=8):
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in range(classes):
        (root / f"class_{c}").mkdir(parents=True)
        for i in range(per_class):
            image = Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
            image.save(root / f"class_{c}" / f"{i}.png")
    return str(root)


def _own_model(path, outputs):
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="spatial")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(8, 1)(x))
    keras.Model(inputs, keras.layers.Dense(outputs, name="head")(x)).save(path)
    return str(path)


@pytest.mark.skipif(keras.backend.backend() == "tensorflow", reason="JAX and torch suffice for files")
def test_structinit_train_trains_your_own_model_file(tmp_path, capsys):
    """Acceptance of issue 50: a user's .keras trained on a 3-class folder; a head of another size and
    a 1-class folder are one line, exit 2; --new-head gives the model a head of the data's classes."""
    three, one = _image_folder(tmp_path / "three", 3), _image_folder(tmp_path / "one", 1)
    mine, ten = _own_model(tmp_path / "mine.keras", 3), _own_model(tmp_path / "ten.keras", 10)
    argv = ["train", "--epochs", "1", "--batch-size", "8", "--rand-augment", "none", "--data", three]
    own = [*argv, "--model", mine, "--init", "conv-cov", "--frozen", "--out", str(tmp_path / "a")]
    assert cli.main(own) == 0
    from keras_structinit import load_frozen_model

    trained = load_frozen_model(tmp_path / "a" / "model.keras")
    assert trained.output_shape == (None, 3) and not trained.get_layer("spatial").kernel.trainable
    assert json.loads((tmp_path / "a" / "results.json").read_text())["config"]["model"] == mine
    capsys.readouterr()
    for model, data, phrase in (
        (ten, three, "ends in 10 outputs; the data has 3 classes: pass --new-head"),
        (mine, one, "2 classes at least"),
    ):
        assert (
            cli.main(
                [
                    "train",
                    "--epochs",
                    "1",
                    "--data",
                    data,
                    "--model",
                    model,
                    "--out",
                    str(tmp_path / "refused"),
                ]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert phrase in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "refused").exists()
    assert cli.main([*argv, "--model", ten, "--new-head", "--out", str(tmp_path / "b")]) == 0
    assert keras.saving.load_model(tmp_path / "b" / "model.keras").output_shape == (None, 3)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the same value from both doors: one backend")
def test_python_and_the_command_line_run_the_same_value(tmp_path, capsys):
    from test_cli import write_tiny_cifar

    data = write_tiny_cifar(tmp_path / "train.npz", 32, 0)
    run = Run(
        "simple-cnn",
        RecipeConfig("cifar10", epochs=1, batch_size=8, rand_augment=None, seed=3),
        data=data,
        train_size=24,
    )
    results = run.check().execute(tmp_path / "python", interactive=False)
    assert results["status"] == "finished"
    argv = [
        "train",
        "--model",
        "simple-cnn",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--rand-augment",
        "none",
        "--seed",
        "3",
        "--data",
        data,
        "--train-size",
        "24",
        "--out",
        str(tmp_path / "cli"),
    ]
    assert cli.main(argv) == 0
    by_cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert by_cli["config"] == json.loads(json.dumps(results["config"]))
    assert by_cli["metrics"] == results["metrics"]  # one seed, one run
    with pytest.raises(ValueError, match="`epochs` is needed"):
        Run("simple-cnn", data=data).check()
    with pytest.raises(TypeError, match="`config` must be a RecipeConfig"):
        Run("simple-cnn", config={"epochs": 1}).check()


@once_per_suite("argparse only: no backend")
def test_train_help_is_short_grouped_and_help_all_has_every_flag(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps help to the terminal's width
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    short = capsys.readouterr().out
    assert len(short.splitlines()) < 60
    for group in ("the model:", "initialization:", "data:", "training (", "output:"):
        assert group in short
    assert cli.main(["train", "--help-all"]) == 0
    full = capsys.readouterr().out
    parser = cli.build_parser(full=True).train_parser
    flags = [a.option_strings[0] for a in parser._actions if a.option_strings]
    assert all(flag in full for flag in flags) and "--random-labels" not in short
    helps = {a.option_strings[0]: a.help for a in parser._actions if a.option_strings}
    silent = [
        f
        for f, text in helps.items()
        if f not in ("-h", "--help-all", "--backend")
        and "default" not in text
        and "required" not in text
        and "--paper" not in f
    ]
    assert not silent, f"flags whose help does not name their default: {silent}"


@once_per_suite("a process of the command line's own")
def test_an_argument_error_comes_before_any_backend_import():
    """Issue 50: every bad-argument check waited for TensorFlow to import (42-54 s under load)."""
    import subprocess
    import sys
    import time

    code = (
        "import sys\nfrom keras_structinit import cli\ntry:\n    cli.main(sys.argv[1:])\n"
        "except SystemExit as e:\n"
        "    print(sorted(set(sys.modules) & {'keras', 'tensorflow', 'jax', 'torch'}), e.code)"
    )
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code, "train", "--model", "simple-cnn", "--epochs", "1", "--lr", "-1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - start < 15  # 0.3 s on the 2-core machine; generous under CI load
    assert result.stdout.strip() == "[] 2", result.stdout + result.stderr
    assert result.stderr.strip().endswith(
        "argument --lr: expected a positive number, got '-1' (see structinit train --help)"
    )


@once_per_suite("reading source files: no backend")
def test_the_command_line_stays_thin():
    """Issue 50: cli/train.py was 547 lines with a 155-line run; the run path is now recipes.run."""
    import ast

    from conftest import REPO_ROOT

    cli_dir = REPO_ROOT / "keras_structinit" / "cli"
    assert len((cli_dir / "train.py").read_text().splitlines()) < 200
    long = [
        f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(cli_dir.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60
    ]
    assert not long, long
    config = REPO_ROOT / "keras_structinit" / "recipes" / "config.py"
    source = (cli_dir / "train.py").read_text() + config.read_text()
    assert "PAPER_FLAGS" not in source and "COMMAND_LINE" not in source
