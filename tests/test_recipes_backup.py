"""A run's backup: whole after a kill at any point, checked on resume (issue 49)."""

import json
import os

import keras
import numpy as np
import pytest

from keras_structinit.recipes import backup
from keras_structinit.recipes.progress import StopOnDivergence
from keras_structinit.recipes.training import resume_epoch


def _model(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(keras.optimizers.AdamW(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 4)).astype("float32"), rng.integers(0, 3, n)


def _fit(model, folder, epochs, callbacks=()):
    x, y = _data()
    return model.fit(
        x,
        y,
        batch_size=8,
        epochs=epochs,
        verbose=0,
        shuffle=False,
        callbacks=[*callbacks, backup.RunBackup(folder, 4)],
    )


def test_backups_swap_in_whole_and_resume_where_they_stopped(tmp_path):
    folder = tmp_path / "backup"
    model = _model()
    _fit(model, folder, 2)
    found = backup.latest(folder)
    assert (found.epoch, found.iterations, found.steps_per_epoch) == (2, 8, 4)
    assert found.path == os.path.join(folder, backup.CURRENT)
    assert sorted(os.listdir(folder)) == [backup.CURRENT, backup.PREVIOUS]
    assert backup.latest(folder)._replace(path=None) == found._replace(path=None)
    with open(os.path.join(folder, backup.PREVIOUS, backup.RECORD)) as f:
        assert json.load(f)["epoch"] == 1
    resumed = _model(seed=1)  # other initial weights: the backup's replace them
    x, y = _data()
    resumed(x[:1])
    history = _fit(resumed, folder, 3)
    assert history.epoch == [2]  # only the third epoch ran
    whole = _model()
    _fit(whole, tmp_path / "whole", 3)
    for got, want in zip(resumed.get_weights(), whole.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert int(resumed.optimizer.iterations) == 12


def test_a_torn_or_tampered_backup_falls_back_or_is_refused(tmp_path):
    folder = tmp_path / "backup"
    _fit(_model(), folder, 2)
    weights = os.path.join(folder, backup.CURRENT, backup.WEIGHTS)
    with open(weights, "r+b") as f:  # torn: the digest no longer matches
        f.seek(os.path.getsize(weights) // 2)
        f.write(b"\0" * 64)
    assert backup.latest(folder).epoch == 1  # the previous whole one
    record = os.path.join(folder, backup.PREVIOUS, backup.RECORD)
    for text in (
        "",
        "{not json",
        json.dumps({"format_version": 99, "epoch": 1, "iterations": 4, "steps_per_epoch": 4, "sha256": "x"}),
        json.dumps({"format_version": 1, "epoch": 1, "iterations": 5, "steps_per_epoch": 4, "sha256": "x"}),
        "[1, 2]",
    ):
        with open(record, "w") as f:
            f.write(text)
        with pytest.raises(ValueError, match=r"no whole backup \(current: .*; previous: .*\): remove it"):
            backup.latest(folder)


def test_keras_backup_files_and_leftovers(tmp_path):
    assert backup.latest(tmp_path / "none") is None and not backup.holds_backup(tmp_path / "none")
    folder = tmp_path / "keras"
    folder.mkdir()
    (folder / backup.INCOMING).mkdir()  # a kill's leftover alone is no backup
    assert backup.latest(folder) is None and not backup.holds_backup(folder)
    (folder / "training_metadata.json").write_text('{"epoch": 2}')
    assert backup.holds_backup(folder)
    with pytest.raises(ValueError, match="BackupAndRestore"):
        backup.latest(folder)


def test_resume_epoch_says_what_a_folder_allows(tmp_path):
    folder = tmp_path / "backup"
    assert resume_epoch(None, False, 4) == 0 and resume_epoch(folder, False, 4) == 0
    with pytest.raises(ValueError, match="resume=True.*needs the `backup_dir`"):
        resume_epoch(None, True, 4)
    with pytest.raises(ValueError, match="holds no backup"):
        resume_epoch(folder, True, 4)
    _fit(_model(), folder, 1)
    with pytest.raises(ValueError, match="pass resume=True"):
        resume_epoch(folder, False, 4)
    assert resume_epoch(folder, True, 4) == 1
    with pytest.raises(ValueError, match="4 steps per epoch, this run takes 5"):
        resume_epoch(folder, True, 5)
    with pytest.raises(TypeError, match="resume"):
        resume_epoch(folder, "yes", 4)


def test_a_diverged_epoch_stops_the_run_and_is_not_backed_up(tmp_path):
    folder = tmp_path / "backup"
    model = _model()
    x, y = _data()
    divergence = StopOnDivergence()
    callbacks = [divergence, backup.RunBackup(folder, 4, divergence)]
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=callbacks)
    assert divergence.diverged is None and backup.latest(folder).epoch == 1
    x[9] = np.nan  # the second batch
    history = model.fit(
        x, y, batch_size=8, epochs=3, initial_epoch=1, verbose=0, shuffle=False, callbacks=callbacks
    )
    # The loss at the batch of the NaN (JAX, torch); TensorFlow's relu maps NaN to 0, so its loss
    # stays finite while the weights turn NaN: found at the epoch's end.
    assert divergence.diverged in (
        {"epoch": 2, "step": 2, "loss": "nan"},
        {"epoch": 2, "step": 4, "loss": "finite, but the weights are not"},
    )
    assert len(history.epoch) == 1  # stopped in its first epoch
    assert backup.latest(folder).epoch == 1  # the last finite state stays
