"""`structinit demo` end to end on a tiny budget, and CLI argument errors."""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_structinit
from keras_structinit import cli
from keras_structinit.cli.demo import run_demo
from keras_structinit.utils import stats

from conftest import InterruptAtEpoch, once_per_suite, png_header, to_numpy


def test_demo_writes_table_json_and_plots_and_reports_seed_noise(tmp_path, capsys):
    """The demo with one seed: tables, files, and what one seed can tell."""
    pytest.importorskip("matplotlib")
    summary = run_demo(epochs=1, train_size=64, out=str(tmp_path), verbose=0, seeds=1)
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
    md = (tmp_path / "results.md").read_text()
    assert "procedural image set" in md
    # results.md names the model, epochs, seed, backend and data, and says what one seed can tell.
    assert (
        f"Model: ConvMixer-64/4, k=7, patch 2, frozen spatial filters, 1 epochs, seed 0, backend "
        f"{keras.backend.backend()}."
    ) in md
    assert "with one seed per init, which cannot tell it from seed noise" in md and saved["verdict"] in md
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # no half-written files left


@once_per_suite("averaging over seeds does not depend on the backend")
def test_demo_over_two_seeds_reports_mean_std_and_verdict(tmp_path, monkeypatch):
    """With two seeds: the mean, the std, the verdict, and the first seed's numbers exactly those of
    the one-seed run; the learning curves show every seed's run (issue 76, point 10)."""
    pytest.importorskip("matplotlib")
    from keras_structinit.utils import viz

    drawn, plot = [], viz.plot_learning_curves
    monkeypatch.setattr(viz, "plot_learning_curves", lambda h, *a, **k: drawn.append(h) or plot(h, *a, **k))
    summary = run_demo(epochs=1, train_size=64, out=str(tmp_path / "one"), verbose=0, seeds=1)
    two = run_demo(epochs=1, train_size=64, out=str(tmp_path / "two"), verbose=0, seeds=2, seed=0)
    assert list(drawn[0]) == [r["init"] for r in summary["results"]]
    assert list(drawn[1]) == [f"{r['init']}, seed {s}" for r in two["results"] for s in (0, 1)]
    assert drawn[1][f"{two['results'][0]['init']}, seed 0"] == summary["histories"][two["results"][0]["init"]]
    rows = two["results"]
    assert [r["seeds"] for r in rows] == [2, 2] and all(len(r["final_val_accuracies"]) == 2 for r in rows)
    for row, one in zip(rows, summary["results"], strict=True):
        assert row["final_val_accuracy"] == pytest.approx(np.mean(row["final_val_accuracies"]))
        assert row["final_val_accuracy_std"] == pytest.approx(np.std(row["final_val_accuracies"], ddof=1))
        assert row["final_val_accuracies"][0] == one["final_val_accuracy"]  # same seed, same numbers
    assert two["histories"] == summary["histories"]
    gaps = np.subtract(rows[1]["final_val_accuracies"], rows[0]["final_val_accuracies"])
    assert two["paired_gap"]["gaps"] == pytest.approx(gaps.tolist())
    error = np.std(gaps, ddof=1) / np.sqrt(2)
    assert two["paired_gap"]["standard_error"] == pytest.approx(error)
    # The verdict is the paired t-test at 95 % (1 degree of freedom with 2 seeds: |t| > 12.71).
    test = stats.paired_test(gaps)
    assert (two["paired_gap"]["t"], two["paired_gap"]["df"]) == (pytest.approx(test.t), 1)
    assert two["paired_gap"]["p"] == pytest.approx(test.p)
    words = "beyond seed noise (p < 0.05)" if test.p < 0.05 else "within seed noise (p >= 0.05)"
    assert re.fullmatch(
        r"Paired gap \(same seed, same batches\): [+-]\d+\.\d\d ± \d+\.\d\d points "
        r"\(mean of 2 per-seed gaps ± standard error; paired t = \S+, df 1, p [<=] \d\.\d+\): "
        + re.escape(words)
        + r"\. Unpaired: [+-]\d+\.\d\d ± \d+\.\d\d\.",
        two["verdict"].split("\n")[0],
    )
    assert "seeds 0..1" in (tmp_path / "two" / "results.md").read_text()
    if not (test.p < 0.05 and test.diff > 0):  # procedural, not ahead beyond noise
        assert "The embedded procedural images are not CIFAR-10" in two["verdict"]
    from keras_structinit.cli.demo import _what_it_shows, paired_gap

    # Three seeds, gaps -4, -5, -6 points: t = -8.66, df 2, p = 0.013; -4, -5, -10: p = 0.076.
    behind_3 = paired_gap([0.5] * 3, [0.46, 0.45, 0.44])
    assert behind_3["t"] == pytest.approx(-8.66, abs=0.01) and behind_3["p"] == pytest.approx(0.013, abs=1e-3)
    spread_3 = paired_gap([0.5] * 3, [0.46, 0.45, 0.40])
    assert spread_3["mean"] < -2 * spread_3["standard_error"] and spread_3["p"] > 0.05  # 2 SE would call it
    assert _what_it_shows("CIFAR-10 from x.zip", behind_3) == ""
    procedural = "the embedded procedural image set (...)"
    assert _what_it_shows(procedural, paired_gap([0.4] * 3, [0.46, 0.45, 0.44])) == ""  # the paper's way
    within = _what_it_shows(procedural, spread_3)
    assert "covariance.png" in within and "the gap is not beyond seed noise" in within
    behind = _what_it_shows(procedural, behind_3)
    assert "ConvCovariance is behind the default init beyond seed noise" in behind
    assert "this run cannot show the paper's effect" in behind and "covariance.png" in behind
    assert _what_it_shows(procedural, paired_gap([0.5], [0.45])) != ""  # one seed


def test_the_demo_help_states_its_defaults():
    from keras_structinit.cli.demo import DEFAULTS
    from keras_structinit.cli.demo_flags import add_arguments as _demo_arguments

    parser = argparse.ArgumentParser()
    _demo_arguments(parser)
    helps = {action.dest: action.help for action in parser._actions}
    assert f"(default {DEFAULTS['epochs']})" in helps["epochs"]
    assert f"(default {DEFAULTS['train_size']})" in helps["train_size"]
    assert f"default {DEFAULTS['seeds']})" in helps["seeds"]


def test_demo_runs_of_one_seed_differ_only_in_the_depthwise_kernels(monkeypatch):
    """Paired by seed: at the start of fit, the baseline and the ConvCovariance run of one seed hold
    the same weights but the depthwise kernels, and the same random state (the same batches)."""
    import random

    from keras_structinit.cli import demo

    seen = []

    def fit(model, *args, **kwargs):
        seen.append(
            (
                {w.path: keras.ops.convert_to_numpy(w) for w in model.weights},
                np.random.get_state()[1].copy(),
                random.getstate(),
            )
        )
        return type("History", (), {"history": {}})()

    monkeypatch.setattr(keras.Model, "fit", fit)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32, 32, 3)).astype("float32")
    data = (x, np.arange(16) % 4, x[:4], np.arange(4) % 4, 4)
    cfg = {**demo.DEFAULTS, "dim": 16, "depth": 2, "epochs": 1}
    for init in (None, "conv-cov:cifar-p2"):
        demo.train_one("run", init, data, cfg, verbose=0)
    (base, base_np, base_py), (cov, cov_np, cov_py) = seen
    assert base.keys() == cov.keys()
    np.testing.assert_array_equal(base_np, cov_np)
    assert base_py == cov_py
    for path, value in base.items():
        if "depthwise" in path and path.endswith("kernel"):
            assert not np.array_equal(value, cov[path]), path
        else:
            np.testing.assert_array_equal(value, cov[path], err_msg=path)


def test_cli_rejects_missing_data_path(tmp_path, capsys):
    assert cli.main(["demo", "--data", str(tmp_path / "missing.zip"), "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["demo", "--epochs", "0"], ["demo", "--backend", "mxnet"], ["nope"]])
def test_cli_rejects_bad_arguments(argv):
    result = subprocess.run(
        [sys.executable, "-m", "keras_structinit.cli", *argv],
        check=False,
        capture_output=True,
        text=True,
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
    argv = [
        "train",
        "--model",
        "convmixer-8/2",
        "--kernel-size",
        "3",
        "--init",
        "conv-cov:cifar-p1",
        "--frozen",
        "--epochs",
        "1",
        "--data",
        data,
        "--eval-data",
        eval_data,
        "--out",
        str(out),
        "--batch-size",
        "16",
        "--rand-augment",
        "none",
        "--seed",
        "3",
        "--optimizer",
        "sgd",
        "--schedule",
        "cosine",
    ]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    # Not a terminal: what runs on what, then plain progress lines with time per step.
    assert "Data: 70 training / 10 held-out validation images 32x32, 10 classes, from" in printed
    assert re.search(
        r"Model: convmixer-8/2 32x32, [\d,]+ parameters \([\d,]+ trainable\); "
        r"init conv-cov:cifar-p1; 2 spatial kernels frozen",
        printed,
    )
    assert re.search(r"epoch 1/1 done in \d+s \(\d+ ms/step\): .*loss [\d.]+", printed)
    assert "| convmixer-8/2 | conv-cov:cifar-p1 | frozen | 1 |" in printed
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["model"] == "convmixer-8/2" and results["config"]["seed"] == 3
    assert results["config"]["optimizer"] == "sgd" and results["config"]["schedule"] == "cosine"
    assert results["versions"]["backend"] == keras.backend.backend()
    assert len(results["metrics"]["val_accuracy"]) == 1
    assert results["eval"]["accuracy"] == results["summary"]["eval_accuracy"]
    assert 0.0 <= results["eval"]["accuracy"] <= 1.0
    log = (out / "log.csv").read_text().splitlines()
    assert log[0].startswith("epoch") and len(log) == 2
    assert log[1].startswith("1,")  # epochs counted from 1, as in the plots and Keras' bar
    if importlib.util.find_spec("matplotlib"):
        assert (out / "learning_curves.png").stat().st_size > 0
        assert f"{out / 'learning_curves.png'}" in printed.splitlines()[-1]


def test_train_with_selection_and_distillation_from_one_teacher(tmp_path, capsys):
    from keras_structinit.models import build_model

    teacher = build_model("convmixer-16/2", 10, (32, 32, 3), kernel_size=3, patch_size=2)
    before = [keras.ops.convert_to_numpy(v).copy() for v in teacher.weights]
    teacher.save(tmp_path / "teacher.keras")
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "run"
    argv = [
        "train",
        "--model",
        "convmixer-8/2",
        "--kernel-size",
        "3",
        "--patch-size",
        "2",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(out),
        "--batch-size",
        "16",
        "--rand-augment",
        "none",
        "--init",
        f"select:{tmp_path / 'teacher.keras'}",
        "--distill-from",
        str(tmp_path / "teacher.keras"),
        "--distill-mode",
        "features",
        "--distill-alpha",
        "0.5",
    ]
    assert cli.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["distill_alpha"] == 0.5 and results["config"]["distill_mode"] == "features"
    assert results["config"]["distill_from"].endswith("teacher.keras")
    student = build_model("convmixer-8/2", 10, (32, 32, 3), kernel_size=3, patch_size=2)
    assert results["model_params"] == student.count_params()  # the student's, not the distiller's
    reloaded = keras.saving.load_model(tmp_path / "teacher.keras")
    for a, b in zip(reloaded.weights, before, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), b)
    bad = [*argv[:-1], "0", "--overwrite"]  # --out holds this run's results
    with pytest.raises(SystemExit) as exit_info:  # argparse's own check, before any import
        cli.main(bad)
    assert exit_info.value.code == 2 and "--distill-alpha" in capsys.readouterr().err
    missing = [*argv[:-5], str(tmp_path / "none.keras"), "--overwrite"]
    assert cli.main(missing) == 2 and "--distill-from" in capsys.readouterr().err
    imagenet = [
        "train",
        "--recipe",
        "imagenet",
        "--model",
        "convmixer-8/2",
        "--epochs",
        "1",
        "--distill-from",
        str(tmp_path / "teacher.keras"),
    ]
    assert cli.main(imagenet) == 2 and "CIFAR recipes" in capsys.readouterr().err


@pytest.mark.parametrize("at_epoch", [0, 1])
def test_train_interrupted_records_the_finished_epochs(tmp_path, capsys, at_epoch):
    from keras_structinit.recipes import RecipeConfig
    from keras_structinit.recipes.run import Run

    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "run"
    checked = Run(
        "simple-cnn", RecipeConfig("cifar10", epochs=2, batch_size=16, rand_augment=None), data=data
    ).check()
    with pytest.raises(KeyboardInterrupt):
        checked.execute(str(out), callbacks=[InterruptAtEpoch(at_epoch)], interactive=False)
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"] and results["finished_epochs"] == at_epoch
    assert len(results["metrics"].get("loss", [])) == at_epoch
    error = capsys.readouterr().err
    assert f"Interrupted in epoch {at_epoch + 1}/2: {at_epoch} finished epoch(s) recorded in" in error
    if at_epoch:
        assert len((out / "log.csv").read_text().splitlines()) == 2
    else:
        assert not (out / "log.csv").exists()  # no empty log left behind


def test_ctrl_c_exits_130_with_one_line(monkeypatch, capsys):
    from keras_structinit.cli import demo

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "run", interrupted)
    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == "structinit demo: interrupted\n"


def _bad_data(tmp_path, kind):
    import zipfile

    path = (
        tmp_path
        / {
            "empty zip": "e.zip",
            "corrupt zip": "c.zip",
            "no images": "folder",
            "not a dataset": "notes.txt",
            "zip without images": "z.zip",
            "decompression bomb": "bomb.zip",
        }[kind]
    )
    if kind == "empty zip":
        path.write_bytes(b"")
    elif kind == "corrupt zip":
        path.write_bytes(b"PK\x03\x04 not really a zip")
    elif kind == "no images":
        path.mkdir()
        (path / "readme.txt").write_text("no images here")
    elif kind == "not a dataset":
        path.write_text("hello")
    elif kind == "decompression bomb":  # a header that claims 20000x20000 pixels
        with zipfile.ZipFile(path, "w") as z:
            for name in ("train/cat/0.png", "train/dog/0.png"):
                z.writestr(name, png_header(20000, 20000))
    else:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("train/cat/readme.txt", "no images here")
    return str(path)


@pytest.mark.parametrize(
    "kind",
    ["empty zip", "corrupt zip", "no images", "not a dataset", "zip without images", "decompression bomb"],
)
@pytest.mark.parametrize("command", ["demo", "train"])
def test_data_errors_are_one_line_exit_2(tmp_path, capsys, kind, command):
    argv = [command, "--data", _bad_data(tmp_path, kind), "--out", str(tmp_path / "out")]
    if command == "train":
        argv += ["--model", "simple-cnn", "--epochs", "1"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"structinit {command}: error: ") and err.count("\n") == 1
    assert "--data" in err
    assert not (tmp_path / "out").exists()  # nothing trained, nothing written
    if kind == "decompression bomb":
        assert "decompression bomb" in err


@pytest.mark.parametrize("command", ["demo", "train"])
def test_train_size_beyond_the_data_is_an_error(tmp_path, capsys, command):
    data = write_tiny_cifar(tmp_path / "train.npz", 100, 0)
    argv = [command, "--data", data, "--train-size", "200", "--out", str(tmp_path / "out")]
    if command == "train":
        argv += ["--model", "simple-cnn", "--epochs", "1"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "at most the 90 training images" in err and "Received: train_size=200" in err


def test_demo_train_size_is_bounded_before_generating(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no CIFAR-10: the procedural set
    assert cli.main(["demo", "--train-size", "2000000", "--out", str(tmp_path / "out")]) == 2
    assert "at most 50000 for the procedural image set" in capsys.readouterr().err


def test_offline_without_data_names_the_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # empty cache

    def offline():
        raise Exception("URL fetch failure")  # noqa: TRY002 - what keras.utils.get_file raises

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", offline)
    assert cli.main(["train", "--model", "simple-cnn", "--epochs", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--data=PATH" in err and err.count("\n") == 1


@pytest.mark.parametrize("given", ["flag", "environment"])
def test_missing_backend_names_the_extra(monkeypatch, capsys, given):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real_find_spec(name, *a)
    )
    monkeypatch.delitem(sys.modules, "keras")  # as in a fresh `structinit` process
    if given == "flag":
        argv = ["demo", "--backend", "jax"]
    else:
        monkeypatch.setenv("KERAS_BACKEND", "jax")
        argv = ["demo"]
    assert cli.main(argv) == 2
    assert 'jax is not installed; install it with pip install -e ".[jax]"' in capsys.readouterr().err


@pytest.mark.parametrize("frozen", [True, False])
def test_train_an_lcresnet_frozen_or_not(tmp_path, capsys, frozen):
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "run"
    argv = [
        "train",
        "--model",
        "lcresnet-8-4x2",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(out),
        "--batch-size",
        "16",
        "--rand-augment",
        "none",
        *(["--frozen"] if frozen else []),
    ]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    # every spatial conv of LCResNet-8 is an LC block: the stem and 2 per basic block x 3 stages
    assert ("7 spatial kernels frozen" if frozen else "all filters trained") in printed
    assert json.loads((out / "results.json").read_text())["config"]["frozen"] is frozen


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model", "resnet-50"], "--model must be one of"),
        (["--model", "convmixer-256"], "convmixer-H/D"),
        (["--model", "convmixer-a/8"], "convmixer-H/D"),
        (["--model", "convmixer-8/2", "--init", "kaiming"], "--init part 'kaiming' is not one of default |"),
        (["--model", "convmixer-8/2", "--init", "conv-cov:nope"], "preset"),
        (["--model", "convmixer-8/2", "--rand-augment", "two"], "--rand-augment"),
        (["--model", "convmixer-8/2", "--rand-augment", "2,1.5"], "--rand-augment"),
        (["--model", "vit-tiny", "--frozen"], "--frozen: --model (vit_tiny_16) has no spatial depthwise"),
        (["--model", "vit-tiny", "--init", "conv-cov"], "--init conv-cov: --model (vit_tiny_16) has no"),
        (["--model", "vit-tiny", "--init", "conv-cov", "--frozen"], "--init conv-cov: --model (vit_tiny_16)"),
        (
            ["--model", "convmixer-8/2", "--init", "mean-shift"],
            "--init mean-shift: --model (convmixer_8_2) has no MLP blocks",
        ),
        (
            ["--model", "vit-tiny", "--init", "conv-cov+mean-shift"],
            "conv-cov+mean-shift: --model (vit_tiny_16) has no spatial depthwise",
        ),
        (["--model", "vit-tiny-8/2", "--init", "mean-shift:big"], "mean-shift takes a finite number"),
        (
            ["--model", "convnext-iso-8/2", "--init", "conv-cov+torch-default-depthwise"],
            "combines conv-cov and torch-default-depthwise, which act on the same spatial stage",
        ),
        (["--model", "vit-tiny", "--recipe", "imagenet", "--optimizer", "sgd"], "apply to the CIFAR recipes"),
        (
            ["--model", "vit-tiny", "--recipe", "imagenet", "--pad", "0", "--no-flip"],
            "--pad, --no-flip apply to the CIFAR recipes (cifar10, cifar100), not to recipe='imagenet'",
        ),
        (["--init", "default"], "--model is required (or --paper NAME, which sets it)"),
        (["--paper", "lc", "--recipe", "imagenet"], "--paper sets a paper's CIFAR experiment"),
        (
            ["--model", "simple-cnn", "--image-size", "64"],
            "--image-size apply to the ImageNet recipe (imagenet), not to recipe='cifar10'",
        ),
    ],
)
def test_train_rejects_bad_arguments(tmp_path, capsys, extra, message):
    data = write_tiny_cifar(tmp_path / "train.npz", 10, 0)
    assert cli.main(["train", "--epochs", "1", "--data", data, "--out", str(tmp_path), *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--pad", "-1"], "argument --pad: expected a non-negative integer, got '-1'"),
        (["--normalization", "zca"], "argument --normalization: invalid choice: 'zca'"),
        (["--lr", "-1"], "argument --lr: expected a positive number, got '-1'"),
        (["--weight-decay", "-1"], "argument --weight-decay: expected a number >= 0, got '-1'"),
        (["--label-smoothing", "2"], "argument --label-smoothing: expected a number in [0, 1), got '2'"),
    ],
)
def test_train_parser_rejects_bad_cifar_options(capsys, extra, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--model", "simple-cnn", "--epochs", "1", *extra])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1  # one line, no usage block


def test_train_paper_sets_the_papers_setup_and_records_departures(tmp_path, capsys):
    """Issue 35: --paper alignment is Maennel et al.'s VGG16 setup; flags given override it."""
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "run"
    argv = [
        "train",
        "--paper",
        "alignment",
        "--model",
        "simple-cnn",
        "--epochs",
        "1",
        "--train-size",
        "30",
        "--batch-size",
        "16",
        "--data",
        data,
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "Paper setup 'alignment': Maennel et al." in printed
    assert "optimizer = 'sgd_momentum'  [App. A.3: SGD with momentum 0.9]" in printed
    assert "model = 'vgg16'" in printed and "<- departure: --model simple-cnn" in printed
    config = json.loads((out / "results.json").read_text())["config"]
    assert (
        config["optimizer"],
        config["schedule"],
        config["normalization"],
        config["random_labels"],
        config["weight_decay"],
        config["rand_augment"],
        config["pad"],
        config["flip"],
    ) == ("sgd_momentum", "step", "symmetric", 1.0, 0.0, None, 0, False)
    paper = config["paper"]
    assert paper["name"] == "alignment" and paper["settings"]["learning_rate"] == {
        "value": 0.01,
        "source": "App. A.5: learning rate 0.01",
    }
    assert set(paper["departures"]) == {"model", "model_kwargs", "epochs", "train_size", "batch_size"}
    assert paper["departures"]["epochs"] == {"paper": 120, "given": 1}
    assert config["model_kwargs"] == {}  # VGG16's init_scale is not passed to another model


def test_every_paper_setup_is_a_valid_run_citing_its_sources():
    from keras_structinit import methods, recipes
    from keras_structinit.methods import RUN_SETTINGS, paper_setups
    from keras_structinit.models import parse_model_name

    setups = paper_setups()
    flags = {action.dest for action in _train_parser()._actions}
    assert set(setups) == {"convcov", "lc", "alignment", "mimetic", "mimetic-vit", "selection"}
    for name, setup in setups.items():
        config = recipes.paper_config(name)
        resolved = config.resolved()  # every field valid for the CIFAR recipe
        for setting, (value, source) in setup.settings.items():
            assert isinstance(source, str) and len(source) > 10, (name, setting)
            assert setting in RUN_SETTINGS or resolved[setting] == value, (name, setting)
            assert setting in flags or setting == "model_kwargs", (name, setting)  # a flag's dest: the field
        parse_model_name(setup.value("model"))
        methods.parse_init_spec(setup.value("init", "default"))
        args = cli.build_parser().parse_args(["train", "--paper", name])
        assert args.paper == name and args.model is None  # filled in when the run starts
    assert recipes.paper_config("lc").epochs == 75 and recipes.paper_config("selection").mixup_alpha == 0.8
    with pytest.raises(ValueError, match="`name` must be one of"):
        recipes.paper_config("resnet")


def test_train_cifar_option_choices_are_the_recipes():
    from keras_structinit.recipes import config

    choices = {action.dest: tuple(action.choices or ()) for action in _train_parser()._actions}
    assert choices["optimizer"] == config.OPTIMIZERS
    assert choices["schedule"] == config.SCHEDULES
    assert choices["normalization"] == config.NORMALIZATIONS
    assert choices["pipeline"] == config.PIPELINES


def _train_parser():
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices["train"]


def test_train_rejects_missing_data(tmp_path, capsys):
    argv = ["train", "--model", "convmixer-8/2", "--epochs", "1", "--data", str(tmp_path / "none.zip")]
    assert cli.main(argv) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["train", "--recipe", "imagenet", "--model", "vit-tiny", "--epochs", "1"]) == 2
    assert "needs --data" in capsys.readouterr().err


@once_per_suite("the exit status of a bad --model does not depend on the backend")
def test_train_cli_exits_nonzero_in_a_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "keras_structinit.cli", "train", "--model", "convmixer-0/8", "--epochs", "1"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and "convmixer-H/D" in result.stderr


def test_parsing_imports_no_keras():
    code = (
        "import sys; from keras_structinit import cli; "
        "cli.build_parser().parse_args(['train', '--model', 'convmixer-8/2', '--epochs', '1']); "
        "assert 'keras' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["train", "--epochs", "0"]])
def test_help_and_argument_errors_import_no_backend(argv):
    code = (
        f"import sys\nfrom keras_structinit import cli\ntry:\n    cli.main({argv!r})\n"
        "except SystemExit:\n    pass\n"
        "heavy = {'keras', 'tensorflow', 'jax', 'torch'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_default_output_directories_are_git_ignored():
    ignored = (Path(__file__).resolve().parents[1] / ".gitignore").read_text().split()
    for directory in ("structinit_demo/", "structinit_train/", "runs/"):
        assert directory in ignored


def test_initialize_dispatches_to_the_public_api():
    from keras_structinit import initialize, parse_init_spec
    from keras_structinit.models import convmixer

    model = convmixer(8, 2, kernel_size=3, patch_size=2, num_classes=10, input_shape=(8, 8, 3))
    assert initialize(model, "default", seed=0) == []
    paths = initialize(model, "torch-default-depthwise", seed=0)
    kernel = model.get_layer("block_1_depthwise_conv").kernel
    assert len(paths) == 2 and paths[0] == kernel.path
    assert np.abs(keras.ops.convert_to_numpy(kernel)).max() <= 1 / 3  # U[-1/sqrt(9), 1/sqrt(9)]
    assert len(initialize(model, parse_init_spec("conv-cov:cifar-p1"), seed=0)) == 2
    assert [(p.name, p.value) for p in parse_init_spec("conv-cov")] == [("conv-cov", "cifar-p2")]
    with pytest.raises(TypeError, match="init"):
        parse_init_spec(None)


def test_init_mean_shift_forms(tmp_path, capsys):
    from keras_structinit import initialize, parse_init_spec
    from keras_structinit.mimetic import DEFAULT_B
    from keras_structinit.models import build_model
    from keras_structinit.utils.validation import derive_seed

    def parsed(spec):
        return [(p.name, p.value) for p in parse_init_spec(spec)]

    # The mean shift acts on the paper's baseline, torch-default, unless another form sets the weights.
    assert parsed("mean-shift") == [("torch-default", None), ("mean-shift", DEFAULT_B)]
    assert parsed("mean-shift:-0.1") == [("torch-default", None), ("mean-shift", -0.1)]
    # Forms apply in stage order, whatever order the spec gives them.
    assert (
        parsed("mean-shift:0.2+conv-cov")
        == parsed("conv-cov+mean-shift:0.2")
        == [("torch-default", None), ("conv-cov", "cifar-p2"), ("mean-shift", 0.2)]
    )
    for bad in (
        "mean-shift:nan",
        "conv-cov+mean-shift+torch-default-depthwise",
        "default+mean-shift",
        "torch-default+default",
    ):
        with pytest.raises(ValueError, match="`init`"):
            parse_init_spec(bad)
    model = build_model("convnext-iso-8/2", 10, (8, 8, 3), kernel_size=3)
    paths = initialize(model, "conv-cov:cifar-p1+mean-shift:0.5", seed=0)
    conv_dense = [
        v.path for v in model.weights if v.path.endswith(("/kernel", "/bias")) and "norm" not in v.path
    ]
    assert paths == conv_dense  # torch-default wrote every conv and Dense kernel and bias
    assert keras.ops.convert_to_numpy(model.get_layer("block_2_pointwise_1").kernel).mean() > 0.4
    # Each form's seed is derived from the previous one's: the same as applying them by hand.
    by_hand = build_model("convnext-iso-8/2", 10, (8, 8, 3), kernel_size=3)
    import keras_structinit as ks

    ks.apply_torch_default(by_hand, seed=0)
    ks.apply_conv_covariance(by_hand, preset="cifar-p1", seed=derive_seed(0))
    ks.apply_mean_shift(by_hand, b=0.5, redraw=False, seed=derive_seed(derive_seed(0)))
    for a, b in zip(model.weights, by_hand.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
    from keras_structinit.methods import check_parts, load_parts

    for model_name in ("vit-tiny-8/2", "vit-small", "convnext-atto"):  # MLP blocks: the check passes
        check_parts(build_model(model_name, 10, (32, 32, 3)), load_parts(parse_init_spec("mean-shift")))
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    argv = [
        "train",
        "--model",
        "convnext-iso-8/1",
        "--kernel-size",
        "3",
        "--init",
        "conv-cov+mean-shift:0.1",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(tmp_path / "run"),
        "--batch-size",
        "16",
        "--rand-augment",
        "none",
    ]
    assert cli.main(argv) == 0
    assert "init conv-cov+mean-shift:0.1; all filters trained" in capsys.readouterr().out
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["init"] == "conv-cov+mean-shift:0.1"


def _saved_teacher(tmp_path):
    from keras_structinit.models import build_model

    teacher = build_model("convmixer-16/2", 10, (8, 8, 3), kernel_size=3, patch_size=2)
    path = tmp_path / "teacher.keras"
    teacher.save(path)
    return teacher, str(path)


def test_select_writes_a_student_that_reloads_and_a_report(tmp_path, capsys):
    teacher, path = _saved_teacher(tmp_path)
    out, report = tmp_path / "student.keras", tmp_path / "report.json"
    argv = [
        "select",
        "--teacher",
        path,
        "--student",
        "convmixer-8/2",
        "--student-kwargs",
        '{"kernel_size": 3, "patch_size": 2}',
        "--out",
        str(out),
        "--report",
        str(report),
    ]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| block_2_pointwise_conv/kernel | block_2_pointwise_conv/kernel |" in printed
    assert f"Wrote {out}" in printed
    student = keras.saving.load_model(out)
    assert tuple(student.input_shape) == (None, 8, 8, 3) and tuple(student.output_shape) == (None, 10)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(student.get_layer("block_1_pointwise_conv").kernel),
        keras.ops.convert_to_numpy(teacher.get_layer("block_1_pointwise_conv").kernel)[:, :, ::2, ::2],
    )
    assert json.loads(report.read_text())["family"] == "convmixer"


def test_select_from_a_keras_hub_preset_directory(tmp_path, capsys):
    keras_hub = pytest.importorskip("keras_hub")
    teacher = keras_hub.models.ViTBackbone(
        image_shape=(16, 16, 3), patch_size=4, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64
    )
    teacher.save_to_preset(str(tmp_path / "preset"))
    out = tmp_path / "student.keras"
    argv = ["select", "--teacher", str(tmp_path / "preset"), "--student", "vit-tiny", "--out", str(out)]
    assert cli.main(argv) == 2
    assert "--student-kwargs needs num_classes" in capsys.readouterr().err and not out.exists()
    # vit-tiny is 192 wide: larger than this 32-wide teacher, so the error names the axis.
    assert cli.main([*argv, "--student-kwargs", '{"num_classes": 3, "patch_size": 4}']) == 2
    assert "larger than the teacher" in capsys.readouterr().err


def test_select_passes_resize_position_embeddings(tmp_path, monkeypatch, capsys):
    from keras_structinit.selection import cli as select_cli

    seen = {}

    def fake_select_student(teacher, student, out, student_kwargs, report, **options):
        seen.update(options)
        raise ValueError("stop here")

    monkeypatch.setattr(select_cli, "select_student", fake_select_student)
    _, path = _saved_teacher(tmp_path)
    argv = ["select", "--teacher", path, "--student", "vit-tiny", "--out", str(tmp_path / "s.keras")]
    assert cli.main([*argv, "--resize-position-embeddings"]) == 2
    assert seen["resize_position_embeddings"] is True
    assert cli.main(argv) == 2 and seen["resize_position_embeddings"] is False
    assert seen["heads"] == "flatten" and seen["skip"] == () and seen["copy_head"] is False
    assert cli.main([*argv, "--heads", "fused", "--skip", "head", "head_norm"]) == 2
    assert seen["heads"] == "fused" and seen["skip"] == ("head", "head_norm")
    assert "stop here" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--student", "convmixer-32/2"], "larger than the teacher"),
        (["--student", "vit-tiny", "--student-kwargs", '{"patch_size": 4}'], "not of one supported family"),
        (["--student", "resnet-50"], "--student must be one of"),
        (["--student", "convmixer-8/2", "--student-kwargs", "[1]"], "--student-kwargs must be a JSON object"),
        (["--student", "convmixer-8/2", "--teacher", "none.keras"], "--teacher 'none.keras' does not exist"),
    ],
)
def test_select_bad_input_is_one_line_exit_2(tmp_path, capsys, extra, message):
    _, path = _saved_teacher(tmp_path)
    argv = ["select", "--teacher", path, "--out", str(tmp_path / "s.keras"), *extra]
    if "--student-kwargs" not in extra and "convmixer-32/2" in extra:
        argv += ["--student-kwargs", '{"kernel_size": 3, "patch_size": 2}']
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "s.keras").exists()


def test_train_init_select(tmp_path, capsys):
    _, path = _saved_teacher(tmp_path)
    from keras_structinit import initialize, parse_init_spec
    from keras_structinit.models import build_model

    assert [(p.name, p.value) for p in parse_init_spec(f"select:{path}")] == [("select", path)]
    with pytest.raises(ValueError, match=r"select needs a teacher .keras file \(.keras\)"):
        parse_init_spec("select:teacher.h5")
    student = build_model("convmixer-8/2", 10, (8, 8, 3), kernel_size=3, patch_size=2)
    paths = initialize(student, f"select:{path}", seed=0)
    assert "block_1_pointwise_conv/kernel" in paths and "head/kernel" not in paths


def test_select_never_writes_over_its_teacher_or_an_existing_file(tmp_path, capsys):
    """Issue 32: --out equal to --teacher destroyed the teacher; existing outputs were replaced silently."""
    _, path = _saved_teacher(tmp_path)
    original = Path(path).read_bytes()
    kwargs = ["--student", "convmixer-8/2", "--student-kwargs", '{"kernel_size": 3, "patch_size": 2}']
    link = tmp_path / "link.keras"
    link.symlink_to(path)
    for argv in (
        ["--out", path],
        ["--out", str(link)],
        ["--out", path, "--overwrite"],
        ["--out", str(tmp_path / "s.keras"), "--report", path],
    ):
        assert cli.main(["select", "--teacher", path, *kwargs, *argv]) == 2
        err = capsys.readouterr().err
        assert "is an input of this run" in err and err.count("\n") == 1
        assert Path(path).read_bytes() == original
    out, report = tmp_path / "s.keras", tmp_path / "r.json"
    assert cli.main(["select", "--teacher", path, *kwargs, "--out", str(out), "--report", str(out)]) == 2
    assert "is an input of this run" in capsys.readouterr().err and not out.exists()
    for existing in (out, report):
        existing.write_bytes(b"mine")
        argv = ["select", "--teacher", path, *kwargs, "--out", str(out), "--report", str(report)]
        assert cli.main(argv) == 2
        assert "already exists; pass --overwrite to replace it" in capsys.readouterr().err
        assert existing.read_bytes() == b"mine"
        out.unlink(missing_ok=True)
        report.unlink(missing_ok=True)
    out.write_bytes(b"mine")
    assert cli.main(["select", "--teacher", path, *kwargs, "--out", str(out), "--overwrite"]) == 0
    assert keras.saving.load_model(out).count_params() > 0
    assert Path(path).read_bytes() == original


def _lambda_teacher(tmp_path):
    inputs = keras.Input((32, 32, 3))
    outputs = keras.layers.Dense(10)(keras.layers.Lambda(lambda t: t * 2.0)(keras.layers.Flatten()(inputs)))
    path = tmp_path / "lambda.keras"
    keras.Model(inputs, outputs).save(path)
    return path


@pytest.mark.parametrize("teacher", ["lambda", "truncated"])
@pytest.mark.parametrize("flag", ["--init", "--distill-from"])
def test_train_with_a_bad_teacher_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, teacher, flag):
    if teacher == "lambda":
        path = _lambda_teacher(tmp_path)
    else:
        _, good = _saved_teacher(tmp_path)
        path = tmp_path / "truncated.keras"
        path.write_bytes(Path(good).read_bytes()[:2000])
    data = write_tiny_cifar(tmp_path / "train.npz", 20, 0)
    spec = f"select:{path}" if flag == "--init" else str(path)
    argv = [
        "train",
        "--model",
        "convmixer-8/2",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(tmp_path / "out"),
        flag,
        spec,
    ]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("structinit train: error: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["demo", "train"])
def test_an_earlier_run_is_replaced_only_with_overwrite(tmp_path, capsys, command):
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("{}")
    (out / "notes.txt").write_text("mine")
    argv = [command, "--data", data, "--out", str(out)]
    if command == "train":
        argv += ["--model", "simple-cnn", "--epochs", "1"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "already holds the results of a run (results.json); pass --overwrite" in err
    assert err.count("\n") == 1 and (out / "results.json").read_text() == "{}"
    # Nor may the outputs replace an input: the data file named like an output.
    assert cli.main([*argv[:2], str(out / "results.json"), *argv[3:], "--overwrite"]) == 2
    assert "is an input of this run" in capsys.readouterr().err
    assert (out / "results.json").read_text() == "{}" and (out / "notes.txt").read_text() == "mine"


def test_train_writes_a_model_that_reloads_frozen(tmp_path, capsys):
    """Issue 33: the command line closes its own loop (a trained model.keras for select/distill)."""
    from keras_structinit.engine.freezing import load_frozen_model

    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "run"
    argv = [
        "train",
        "--model",
        "convmixer-8/2",
        "--kernel-size",
        "3",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(out),
        "--batch-size",
        "16",
        "--rand-augment",
        "none",
        "--frozen",
    ]
    assert cli.main(argv) == 0
    assert f"Wrote {out / 'model.keras'}" in capsys.readouterr().out
    model = load_frozen_model(out / "model.keras")
    frozen = [v.path for v in model.weights if not v.trainable and v.path.endswith("depthwise_conv/kernel")]
    assert len(frozen) == 2  # the two blocks' spatial kernels
    assert json.loads((out / "results.json").read_text())["model_file"] == "model.keras"
    x = np.random.default_rng(0).integers(0, 256, (2, 32, 32, 3)).astype("float32")
    assert model(x).shape == (2, 10)


def _fake_application(monkeypatch):
    """keras.applications:TinyConvNeXt, a small ConvNeXt built by keras.applications' generic builder."""
    from keras.src.applications.convnext import ConvNeXt

    def tiny(weights=None, input_shape=None, classes=1000, classifier_activation="softmax", **kwargs):
        assert weights is None
        return ConvNeXt(
            depths=[1, 1, 1, 1],
            projection_dims=[8, 8, 16, 16],
            input_shape=input_shape,
            weights=None,
            classes=classes,
            classifier_activation=classifier_activation,
            include_preprocessing=False,
            name="tiny",
            **kwargs,
        )

    monkeypatch.setattr(keras.applications, "TinyConvNeXt", tiny, raising=False)


def test_select_students_from_a_keras_file_and_keras_applications(tmp_path, capsys, monkeypatch):
    from keras.src.applications.convnext import ConvNeXt

    teacher = ConvNeXt(
        depths=[1, 1, 2, 1],
        projection_dims=[16, 16, 32, 32],
        input_shape=(32, 32, 3),
        weights=None,
        classes=10,
        include_preprocessing=False,
        name="big",
        classifier_activation=None,
    )
    teacher.save(tmp_path / "teacher.keras")
    _fake_application(monkeypatch)
    out = tmp_path / "from_app.keras"
    argv = ["select", "--teacher", str(tmp_path / "teacher.keras"), "--out", str(out)]
    assert cli.main([*argv, "--student", "keras.applications:TinyConvNeXt"]) == 0
    student = keras.saving.load_model(out)
    assert student.output_shape == (None, 10) and "keras_convnext" in capsys.readouterr().out
    np.testing.assert_array_equal(  # the stem conv: every output channel of 8, of the teacher's 16
        to_numpy(student.get_layer("tiny_stem").get_layer("tiny_stem_conv").kernel),
        to_numpy(teacher.get_layer("big_stem").get_layer("big_stem_conv").kernel)[..., ::2],
    )
    # A .keras student: its architecture, the teacher's selected weights.
    out2 = tmp_path / "from_file.keras"
    assert cli.main([*argv[:-1], str(out2), "--student", str(out)]) == 0
    again = keras.saving.load_model(out2)
    stems = [m.get_layer("tiny_stem").get_layer("tiny_stem_conv").kernel for m in (again, student)]
    np.testing.assert_array_equal(*map(to_numpy, stems))
    for bad, message in (
        (["--student", "keras.applications:NoSuchNet"], "keras.applications has no model"),
        (["--student", str(tmp_path / "none.keras")], "does not exist"),
        (["--student", str(out), "--student-kwargs", '{"classes": 3}'], "not to a .keras"),
    ):
        assert cli.main([*argv[:-1], str(tmp_path / "x.keras"), *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_select_offline_teacher_download_is_one_line(tmp_path, capsys, monkeypatch):
    def offline(**kwargs):
        raise Exception("URL fetch failure on https://storage.googleapis.com/... : None -- [Errno -3]\nmore")

    monkeypatch.setattr(keras.applications, "ConvNeXtTiny", offline)
    argv = [
        "select",
        "--teacher",
        "keras.applications:ConvNeXtTiny:imagenet",  # pretrained weights, asked for explicitly
        "--student",
        "convnext-atto",
        "--out",
        str(tmp_path / "s.keras"),
    ]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert (
        "Could not load the ImageNet weights of keras.applications.ConvNeXtTiny (is the machine offline?)"
    ) in err
    assert "'keras.applications:ConvNeXtTiny:/path/weights.h5'" in err and err.count("\n") == 1


@pytest.mark.parametrize("case", ["data-aligned:99", "another family", "smaller teacher", "corrupt teacher"])
def test_train_init_that_cannot_apply_is_one_line_exit_2(tmp_path, capsys, case):
    from keras_structinit.models import build_model

    data = write_tiny_cifar(tmp_path / "train.npz", 20, 0)
    argv = [
        "train",
        "--model",
        "convmixer-8/2",
        "--kernel-size",
        "3",
        "--patch-size",
        "2",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(tmp_path / "out"),
    ]
    teacher = tmp_path / "teacher.keras"
    if case == "data-aligned:99":
        argv = [*argv[:2], "simple-cnn", *argv[7:]]
        spec, message = "data-aligned:99", "`num_layers` must be at most the number of spatial Conv2D layers"
    elif case == "another family":
        build_model("vit-tiny-8/2", 10, (32, 32, 3)).save(teacher)
        spec, message = f"select:{teacher}", "not of one supported family"
    elif case == "smaller teacher":
        build_model("convmixer-4/2", 10, (32, 32, 3), kernel_size=3, patch_size=2).save(teacher)
        spec, message = f"select:{teacher}", "student is larger than the teacher"
    else:
        teacher.write_bytes(b"PK\x03\x04 truncated")
        spec, message = f"select:{teacher}", "is not a .keras archive (not a zip file): is it truncated"
    assert cli.main([*argv, "--init", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_train_distribution_the_machine_cannot_run_is_one_line_exit_2(tmp_path, capsys):
    """Issue 33: --distribution tpu without a TPU was a traceback after the output folder was made."""
    data = write_tiny_cifar(tmp_path / "train.npz", 10, 0)
    argv = [
        "train",
        "--model",
        "simple-cnn",
        "--epochs",
        "1",
        "--data",
        data,
        "--out",
        str(tmp_path / "out"),
        "--distribution",
        "tpu",
    ]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    expected = {
        "tensorflow": "distribution='tpu' needs a TPU, and none was found here",
        "jax": "distribution='tpu' needs the TensorFlow backend",
        "torch": "--distribution is not supported on the torch backend",
    }[keras.backend.backend()]
    assert expected in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@once_per_suite("the start-up of the train command does not depend on the backend")
def test_a_usage_error_is_the_only_line_on_stderr(tmp_path):
    """Issue 33: TensorFlow's GPU build (pulled in by KerasHub) printed CUDA probe lines on every start."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_structinit.cli",
            "train",
            "--model",
            "simple-cnn",
            "--epochs",
            "1",
            "--data",
            str(tmp_path / "missing.zip"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
        env={k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"},
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"structinit train: error: --data '{tmp_path / 'missing.zip'}' does not exist"
    ]


def test_version_and_paper_init_specs_compared_as_parsed(capsys):
    """Issue 50: --version; `--paper` took `mean-shift+conv-cov` for a departure (order only)."""
    from keras_structinit.recipes.run import differs as _differs

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"structinit {keras_structinit.__version__}"
    assert not _differs("init", "mean-shift+conv-cov", "conv-cov+mean-shift")
    assert not _differs("init", "conv-cov+torch-default", "torch-default+conv-cov:cifar-p2")  # default preset
    assert _differs("init", "conv-cov", "torch-default+conv-cov:cifar-p2")  # no torch-default stage
    assert _differs("init", "conv-cov", "conv-cov+mean-shift")
    assert _differs("epochs", 3, 120) and not _differs("epochs", 120, 120)


def test_train_takes_the_class_count_of_its_data(tmp_path, capsys):
    """Issue 50: a 3-class folder trained a 10-output model; a 1-class folder trained and exited 0."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (24, 32, 32, 3), dtype=np.uint8)
    np.savez(tmp_path / "three.npz", x=x, y=np.arange(24) % 3)
    np.savez(tmp_path / "one.npz", x=x, y=np.zeros(24, int))
    argv = ["train", "--model", "simple-cnn", "--epochs", "1", "--batch-size", "8", "--rand-augment", "none"]
    assert cli.main([*argv, "--data", str(tmp_path / "one.npz"), "--out", str(tmp_path / "one")]) == 2
    assert "2 classes at least" in capsys.readouterr().err and not (tmp_path / "one").exists()
    assert cli.main([*argv, "--data", str(tmp_path / "three.npz"), "--out", str(tmp_path / "three")]) == 0
    assert keras.saving.load_model(tmp_path / "three" / "model.keras").output_shape[-1] == 3


def test_the_model_help_names_every_model_the_registry_builds():
    from keras_structinit.cli import ZOO_NAMES
    from keras_structinit.models.registry import available_models

    listed = {
        part
        for item in ZOO_NAMES.replace(" (D = 6n + 2)", "").split(", ")
        for part in (
            [item]
            if "|" not in item
            else [f"convnext-{v}" for v in item.removeprefix("convnext-").split("|")]
        )
    }
    assert listed == set(available_models())
