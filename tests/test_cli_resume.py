"""structinit train on long runs: the same numbers from one seed, outputs that cannot lie, resume
after a kill, Ctrl-C on every backend (issue 37)."""

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
    whole_log = (whole / "log.csv").read_text()
    # The header and epochs 1-2 (logged before the kill), as the whole run logged them.
    assert (out / "log.csv").read_text() == "".join(whole_log.splitlines(keepends=True)[:3])
    assert cli.main([*_argv(data, out), "--resume"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and results["resumed_at_epoch"] == 1
    assert (out / "log.csv").read_text() == whole_log
    assert len(results["metrics"]["loss"]) == 3
    for got, want in zip(_weights(out / "model.keras"), _weights(whole / "model.keras"), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(keras.backend.backend() != "jax",
                    reason="the backend whose fit swallowed Ctrl-C (TensorFlow and torch raised it already)")
def test_ctrl_c_mid_epoch_with_validation_exits_130_and_says_interrupted(tmp_path):
    """On JAX, Keras' log conversion swallows a KeyboardInterrupt; the handler stops at a batch end."""
    data = write_tiny_cifar(tmp_path / "train.npz", 80, 0)
    out = tmp_path / "run"
    child = run_cli_in_child(tmp_path, """
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
        """, _argv(data, out, epochs=50))
    assert child.returncode == 130, child.stdout[-2000:] + child.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "interrupted" and results["finished_epochs"] == 1
    assert "--resume goes on from there" in child.stderr
