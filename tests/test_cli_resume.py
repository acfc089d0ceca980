"""structinit train on long runs: the same numbers from one seed, outputs that cannot lie, resume
after a kill, Ctrl-C on every backend (issue 37)."""

import hashlib
import json

import keras
import numpy as np
import pytest
from test_cli import write_tiny_cifar

from keras_structinit import cli

from conftest import kill_at_epoch, run_cli_in_child

# The default augmentation of the CIFAR recipe: pad-and-crop, flip and RandAugment.
TRAIN = ["train", "--model", "simple-cnn", "--batch-size", "8", "--seed", "0", "--val-split", "0.25"]


def _argv(data, out, epochs=3):
    return [*TRAIN, "--epochs", str(epochs), "--data", data, "--out", str(out)]


def _weights(path):
    return [np.asarray(w) for w in keras.saving.load_model(path).get_weights()]


def test_one_seed_gives_one_log_and_a_killed_run_resumes_to_the_uninterrupted_weights(tmp_path, capsys):
    """One seed, one log.csv with the default augmentation: the killed run's first two epochs,
    logged by another process, equal the whole run's. Resumed after SIGKILL, it ends with the
    whole run's log (no repeated epoch) and its weights, bit for bit."""
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    whole = tmp_path / "whole"
    assert cli.main(_argv(data, whole)) == 0
    results = json.loads((whole / "results.json").read_text())
    assert results["status"] == "finished" and results["config"]["rand_augment"] is not None
    assert not (whole / "backup").exists()  # a finished run keeps no backup
    # A used --out: refused without --resume or --overwrite, the old results untouched.
    before = (whole / "results.json").read_text()
    assert cli.main(_argv(data, whole)) == 2
    assert "--resume" in capsys.readouterr().err
    assert cli.main([*_argv(data, whole), "--resume"]) == 2  # it finished
    assert "holds no unfinished run" in capsys.readouterr().err
    assert (whole / "results.json").read_text() == before

    out = tmp_path / "killed"
    # SIGKILL at the end of the second epoch: logged, not yet backed up.
    killed = run_cli_in_child(tmp_path, kill_at_epoch("on_epoch_end", 1), _argv(data, out))
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["status"] == "running"  # never "finished"
    whole_log = (whole / "log.csv").read_bytes()  # bytes: line endings count (issue 76, point 4)
    # The header and epochs 1-2 (logged before the kill), as the whole run logged them.
    assert (out / "log.csv").read_bytes() == b"".join(whole_log.splitlines(keepends=True)[:3])
    record_path = out / "backup" / "current" / "backup.json"
    record = json.loads(record_path.read_text())
    assert 0 < record["train_seconds"] < 1000
    record_path.write_text(json.dumps({**record, "train_seconds": 1000.0}))  # marks the first part's time
    capsys.readouterr()
    assert cli.main([*_argv(data, out), "--resume"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "esuming" in line]
    assert said == [f"Resuming after epoch 1 of 3 ({out / 'backup'})"], said
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and results["resumed_at_epoch"] == 1
    seconds = results["summary"]["train_seconds"]  # every epoch's time, not only the resumed part's
    assert 1000 < seconds <= 1000 + results["wall_seconds"] + 0.1, results["summary"]  # both rounded to 0.1 s
    assert (out / "log.csv").read_bytes() == whole_log  # byte for byte, line endings included
    assert len(results["metrics"]["loss"]) == 3
    for got, want in zip(_weights(out / "model.keras"), _weights(whole / "model.keras"), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="the backend whose fit swallowed Ctrl-C (TensorFlow and torch raised it already)",
)
def test_ctrl_c_mid_epoch_with_validation_exits_130_and_says_interrupted(tmp_path):
    """On JAX, Keras' log conversion swallows a KeyboardInterrupt; the handler stops at a batch end."""
    data = write_tiny_cifar(tmp_path / "train.npz", 80, 0)
    out = tmp_path / "run"
    child = run_cli_in_child(
        tmp_path,
        """
        import os, signal, sys, threading
        import keras_structinit.recipes.progress as progress

        started = threading.Event()
        end = progress.ProgressLog.on_train_batch_end

        def on_train_batch_end(self, batch, logs=None):
            if self._epoch == 1 and batch >= 2:  # the second epoch has begun: Ctrl-C from elsewhere
                started.set()
            return end(self, batch, logs)

        progress.ProgressLog.on_train_batch_end = on_train_batch_end
        threading.Thread(target=lambda: started.wait() and os.kill(os.getpid(), signal.SIGINT),
                         daemon=True).start()
        """,
        _argv(data, out, epochs=50),
    )
    assert child.returncode == 130, child.stdout[-2000:] + child.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "interrupted" and results["finished_epochs"] == 1
    assert "--resume goes on from there" in child.stderr


def _kill_at_backup(point, occurrence):
    """``run_cli_in_child`` code: SIGKILL at the ``occurrence``-th time the backup reaches ``point``."""
    return f"""
        import os, signal
        from keras_structinit.recipes import backup

        seen = []

        def reached(point):
            if point == {point!r}:
                seen.append(point)
                if len(seen) == {occurrence}:
                    os.kill(os.getpid(), signal.SIGKILL)

        backup.reached = reached
        """


_KILL_IN_MODEL_SAVE = """
    import contextlib, os, signal
    import keras_structinit.recipes.run_files as run_files

    atomic = run_files.atomic_path

    @contextlib.contextmanager
    def atomic_path(path, *args, **kwargs):
        with atomic(path, *args, **kwargs) as tmp:
            yield tmp
            if str(path).endswith("model.keras"):  # written, not yet in place
                os.kill(os.getpid(), signal.SIGKILL)

    run_files.atomic_path = atomic_path
    """


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("whole")
    data = write_tiny_cifar(root / "train.npz", 40, 0)
    assert cli.main(_argv(data, root / "out")) == 0
    return data, root / "out"


KILL_POINTS = [
    "before_weights",
    "after_weights",
    "after_record",
    "between_renames",
    "after_swap",
    "model.keras",
]


@pytest.mark.parametrize("point", KILL_POINTS if keras.backend.backend() == "jax" else ["between_renames"])
def test_a_kill_anywhere_in_the_backup_or_final_save_resumes_to_the_uninterrupted_weights(
    tmp_path, whole_run, point
):
    data, whole = whole_run
    out = tmp_path / "killed"
    code = _KILL_IN_MODEL_SAVE if point == "model.keras" else _kill_at_backup(point, 2)  # epoch 2's backup
    killed = run_cli_in_child(tmp_path, code, _argv(data, out))
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["status"] == "running"
    assert not (out / "model.keras").exists()
    assert cli.main([*_argv(data, out), "--resume"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished"
    assert results["resumed_at_epoch"] == {"after_swap": 2, "model.keras": 3}.get(point, 1)
    assert (out / "log.csv").read_bytes() == (whole / "log.csv").read_bytes()
    for got, want in zip(_weights(out / "model.keras"), _weights(whole / "model.keras"), strict=True):
        np.testing.assert_array_equal(got, want)
    assert not (out / "backup").exists()  # removed once the results were safe


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="folder checks, before any backend work")
def test_used_locked_or_backup_less_folders_are_refused_in_one_line(tmp_path, whole_run, capsys):
    import fcntl

    data, _ = whole_run
    only_backup = tmp_path / "only_backup"
    (only_backup / "backup" / "current").mkdir(parents=True)
    assert cli.main(_argv(data, only_backup)) == 2
    err = capsys.readouterr().err
    assert "holds the backup of a run" in err and len(err.strip().splitlines()) == 1
    # --resume of an unfinished run whose backup is gone, and of one with no whole backup
    for name, files in (("gone", {}), ("torn", {"backup/current/backup.json": "{"})):
        out = tmp_path / name
        out.mkdir()
        (out / "results.json").write_text(json.dumps({"status": "running"}))
        (out / "log.csv").write_text("epoch,loss\n1,2.0\n")
        for rel, text in files.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text(text)
        assert cli.main([*_argv(data, out), "--resume"]) == 2
        err = capsys.readouterr().err
        assert ("holds no backup" if name == "gone" else "no whole backup") in err, err
        assert len(err.strip().splitlines()) == 1
        assert (out / "log.csv").read_text() == "epoch,loss\n1,2.0\n"
        assert json.loads((out / "results.json").read_text()) == {"status": "running"}
    # --resume with a setting that differs: one line, the run's files untouched
    other = tmp_path / "other"
    (other / "backup" / "current").mkdir(parents=True)
    (other / "backup" / "current" / "state.weights.h5").write_bytes(b"weights")
    (other / "backup" / "current" / "backup.json").write_text(
        json.dumps(
            {
                "format_version": 1,
                "epoch": 1,
                "iterations": 4,
                "steps_per_epoch": 4,
                "sha256": hashlib.sha256(b"weights").hexdigest(),
            }
        )
    )
    (other / "results.json").write_text(json.dumps({"status": "running", "config": {"epochs": 7}}))
    (other / "log.csv").write_text("epoch,loss\n1,2.0\n")
    assert cli.main([*_argv(data, other), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "started with other settings" in err and len(err.strip().splitlines()) == 1
    assert (other / "log.csv").read_text() == "epoch,loss\n1,2.0\n"
    busy = tmp_path / "busy"
    busy.mkdir()
    with open(busy / ".structinit.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run holds the folder
        assert cli.main(_argv(data, busy)) == 2
    err = capsys.readouterr().err
    assert "in use by another run" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(keras.backend.backend() == "tensorflow", reason="JAX's XLA and torch's eager suffice")
def test_a_diverging_run_stops_with_exit_3_and_writes_no_model(tmp_path, whole_run, capsys):
    data, _ = whole_run
    out = tmp_path / "diverged"
    assert cli.main([*_argv(data, out, epochs=4), "--lr", "1e6"]) == 3
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "diverged", results["status"]
    assert results["diverged"]["epoch"] <= 4 and results["diverged"]["step"] >= 1
    assert not (out / "model.keras").exists()
    assert "no model.keras written" in capsys.readouterr().err
    if results["last_finite_backup_epoch"] is not None:
        weights_file = out / "backup" / "current" / "state.weights.h5"
        assert weights_file.exists()


def test_a_huge_init_is_echoed_in_part(tmp_path, capsys):
    data = write_tiny_cifar(tmp_path / "train.npz", 8, 0)
    assert cli.main([*_argv(data, tmp_path / "out"), "--init", "conv-cov:" + "y" * 100_000]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 2100 and "characters)" in err
