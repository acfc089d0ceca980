"""A training run's backup that a kill at any point leaves whole, and that checks itself on resume.

Keras' ``BackupAndRestore`` overwrites its weights file and then its metadata in place, so a kill
between the two leaves weights of one epoch beside the epoch number of another, and it reads the
epoch before falling back from a torn file. :class:`RunBackup` writes each backup into a new folder
(the weights and optimizer state, then ``backup.json`` with the epoch, the optimizer's step count
and the weights file's SHA-256, each fsynced) and swaps it in with renames::

    backup/.incoming  ->  written in full, then
    backup/current    ->  renamed to backup/previous (the older one removed first), then
    backup/.incoming  ->  renamed to backup/current

so every instant holds at least one complete backup. :func:`latest` takes ``current`` if it is
whole (its record parses, its digest matches, ``iterations == epoch * steps_per_epoch``), else
``previous``; a folder holding backups of which none is whole is refused, not trained over.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import NamedTuple

import keras

from keras_structinit.io_utils import file_sha256

#: The layout of ``backup.json``; a record of another version is refused.
FORMAT_VERSION = 1
WEIGHTS, RECORD = "state.weights.h5", "backup.json"
CURRENT, PREVIOUS, INCOMING = "current", "previous", ".incoming"
#: Largest ``backup.json`` read (a few hundred bytes when written here).
MAX_RECORD_BYTES = 1 << 16


class Backup(NamedTuple):
    """A whole backup: the epochs it holds, the optimizer's step count, the run's steps per epoch,
    its folder, and the seconds ``fit`` trained to reach it (over every resumed part; 0 where an
    older record does not say)."""

    epoch: int
    iterations: int
    steps_per_epoch: int
    path: str
    train_seconds: float = 0.0


def reached(point):
    """Called at each named point of :meth:`RunBackup.save` (tests kill the process here)."""


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _whole(folder):
    """The :class:`Backup` in ``folder``, or the reason it is not whole."""
    record_path, weights_path = os.path.join(folder, RECORD), os.path.join(folder, WEIGHTS)
    if not os.path.isfile(record_path) or not os.path.isfile(weights_path):
        return "incomplete"
    if os.path.getsize(record_path) > MAX_RECORD_BYTES:
        return f"{RECORD} is larger than {MAX_RECORD_BYTES} bytes"
    try:
        with open(record_path, encoding="utf-8") as f:
            record = json.load(f)
        epoch, iterations, digest = record["epoch"], record["iterations"], record["sha256"]
        version, steps_per_epoch = record["format_version"], record["steps_per_epoch"]
        seconds = record.get("train_seconds", 0.0)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"unreadable {RECORD} ({type(err).__name__})"
    if version != FORMAT_VERSION:
        return f"format_version {version!r}, not {FORMAT_VERSION}"
    if not all(type(v) is int and v >= 1 for v in (epoch, iterations, steps_per_epoch)):
        return (f"{RECORD} holds epoch={epoch!r}, iterations={iterations!r}, "
                f"steps_per_epoch={steps_per_epoch!r}")
    if type(seconds) not in (int, float) or not 0 <= seconds < float("inf"):
        return f"{RECORD} holds train_seconds={seconds!r}"
    if iterations != epoch * steps_per_epoch:
        return f"{iterations} optimizer steps for {epoch} epoch(s) of {steps_per_epoch} steps"
    if file_sha256(weights_path) != digest:
        return f"{WEIGHTS} does not match its digest"
    return Backup(epoch, iterations, steps_per_epoch, folder, float(seconds))


def latest(backup_dir):
    """The newest whole :class:`Backup` in ``backup_dir``, or ``None`` where it holds none.

    Raises ``ValueError`` (one line, naming the folder) where it holds backups of which none is
    whole, or files of Keras' ``BackupAndRestore``: nothing is trained over them.
    """
    if backup_dir is None or not os.path.isdir(backup_dir):
        return None
    reasons = []
    for slot in (CURRENT, PREVIOUS):
        folder = os.path.join(os.fspath(backup_dir), slot)
        if os.path.isdir(folder):
            found = _whole(folder)
            if isinstance(found, Backup):
                return found
            reasons.append(f"{slot}: {found}")
    legacy = [n for n in ("latest.weights.h5", "training_metadata.json") if os.path.exists(
        os.path.join(backup_dir, n))]
    if legacy:
        reasons.append(f"{', '.join(legacy)} of Keras' BackupAndRestore (an older version of this package)")
    if reasons:
        raise ValueError(f"The backup folder {os.fspath(backup_dir)!r} holds no whole backup "
                         f"({'; '.join(reasons)}): remove it to start the run afresh")
    return None


def holds_backup(backup_dir):
    """Whether ``backup_dir`` holds anything of a backup (whole or not)."""
    return backup_dir is not None and os.path.isdir(backup_dir) and any(
        not name.startswith(INCOMING) for name in os.listdir(backup_dir))


class RunBackup(keras.callbacks.Callback):
    """Backs the run up after every epoch whose loss is finite; resumes from :func:`latest`.

    ``divergence``: a :class:`~keras_structinit.recipes.progress.StopOnDivergence` placed before
    this callback; no epoch it found diverged is backed up.

    ``steps_per_epoch``: the run's, recorded with each backup (a backup whose optimizer step
    count is not ``epoch * steps_per_epoch`` is not whole). On ``fit``'s start the newest whole
    backup is loaded (one of other ``steps_per_epoch`` is refused) and ``fit`` goes on after its
    epoch; the loaded optimizer's step count is checked against the record. Each backup records
    the seconds trained so far, :attr:`seconds_before` those of the backup resumed from. The
    folder stays when ``fit`` returns: remove it when the run's results are safe (:func:`remove`).
    """

    def __init__(self, backup_dir, steps_per_epoch, divergence=None):
        super().__init__()
        self.backup_dir = os.fspath(backup_dir)
        self.steps_per_epoch = int(steps_per_epoch)
        self.divergence = divergence
        self.seconds_before, self._start = 0.0, time.perf_counter()

    def on_train_begin(self, logs=None):
        self._start = time.perf_counter()
        found = latest(self.backup_dir)
        if found is None:
            return
        self.seconds_before = found.train_seconds
        check_steps(found, self.steps_per_epoch)
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        self.model.load_weights(os.path.join(found.path, WEIGHTS))
        iterations = int(keras.ops.convert_to_numpy(optimizer.iterations)) if optimizer is not None else None
        if iterations is not None and iterations != found.iterations:
            raise ValueError(f"The backup in {found.path!r} restored an optimizer at step {iterations}, its "
                             f"record says {found.iterations}: remove the folder to start afresh")
        self.model._initial_epoch = found.epoch

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        if (loss is not None and not _finite(loss)) or getattr(self.divergence, "diverged", None):
            return  # a diverged epoch is not a state to resume from
        self.save(epoch + 1)

    def save(self, epoch):
        """Writes the model's weights and optimizer state after ``epoch`` epochs (see the module)."""
        os.makedirs(self.backup_dir, exist_ok=True)
        incoming = os.path.join(self.backup_dir, INCOMING)
        shutil.rmtree(incoming, ignore_errors=True)  # a kill's leftover
        os.makedirs(incoming)
        reached("before_weights")
        weights = os.path.join(incoming, WEIGHTS)
        self.model.save_weights(weights)
        _fsync(weights)
        reached("after_weights")
        iterations = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        record = {"format_version": FORMAT_VERSION, "epoch": int(epoch), "iterations": iterations,
                  "steps_per_epoch": self.steps_per_epoch, "sha256": file_sha256(weights),
                  "train_seconds": round(self.seconds_before + time.perf_counter() - self._start, 3)}
        with open(os.path.join(incoming, RECORD), "w", encoding="utf-8") as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        _fsync(incoming)
        reached("after_record")
        current, previous = (os.path.join(self.backup_dir, n) for n in (CURRENT, PREVIOUS))
        if os.path.isdir(current):
            shutil.rmtree(previous, ignore_errors=True)
            os.rename(current, previous)
        reached("between_renames")
        os.rename(incoming, current)
        _fsync(self.backup_dir)
        reached("after_swap")


def check_steps(found, steps_per_epoch):
    """A ``ValueError`` where the backup ``found`` was made with other steps per epoch."""
    if found.steps_per_epoch != steps_per_epoch:
        raise ValueError(f"The backup in {found.path!r} was made at {found.steps_per_epoch} steps per epoch, "
                         f"this run takes {steps_per_epoch}: resume with the run's own settings")


def _finite(value):
    try:
        return bool(abs(float(value)) < float("inf"))
    except (TypeError, ValueError):
        return True


def remove(backup_dir):
    """Deletes a run's backup folder (its results are safe)."""
    shutil.rmtree(os.fspath(backup_dir), ignore_errors=True)
