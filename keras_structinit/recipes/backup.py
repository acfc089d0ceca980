"""A training run's backup that a kill at any point leaves whole, and that checks itself on resume.

Keras' ``BackupAndRestore`` overwrites its weights file and then its metadata in place, so a kill
between the two leaves weights of one epoch beside the epoch number of another, and it reads the
epoch before falling back from a torn file. :class:`RunBackup` writes each backup into a new folder
(the weights and optimizer state, then ``backup.json`` with the epoch, the optimizer's step count
and the weights file's SHA-256, each fsynced) and swaps it in with renames::

    backup/previous   ->  removed (the older of the two whole backups), then
    backup/.incoming  ->  written in full, then
    backup/current    ->  renamed to backup/previous, then
    backup/.incoming  ->  renamed to backup/current

so every instant holds at least one complete backup, and at most two copies of the weights and
optimizer state (a run resumed from ``previous``, ``current`` being torn, removes ``current``
instead). A write that fails (a full disk) removes ``.incoming`` and raises; the backups before
it stay whole. :func:`latest` takes ``current`` if it is
whole (its record parses, its digest matches, ``iterations == epoch * steps_per_epoch``), else
``previous``; a folder holding backups of which none is whole is refused, not trained over, and a
whole one that does not fit the run (of more epochs than it has, of other steps per epoch, of
weights its model cannot take) is refused with :class:`BackupRefused` when ``fit`` starts.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from typing import NamedTuple

import keras

from keras_structinit.utils.io_utils import file_sha256

#: The layout of ``backup.json``; a record of another version is refused.
FORMAT_VERSION = 1
WEIGHTS, RECORD = "state.weights.h5", "backup.json"
CURRENT, PREVIOUS, INCOMING = "current", "previous", ".incoming"
#: Largest ``backup.json`` read (a few hundred bytes when written here).
MAX_RECORD_BYTES = 1 << 16


class BackupRefused(ValueError):
    """A whole backup that does not fit the run resuming from it (one line, raised before any
    training step)."""


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
        return (
            f"{RECORD} holds epoch={epoch!r}, iterations={iterations!r}, steps_per_epoch={steps_per_epoch!r}"
        )
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
    legacy = [
        n
        for n in ("latest.weights.h5", "training_metadata.json")
        if os.path.exists(os.path.join(backup_dir, n))
    ]
    if legacy:
        reasons.append(f"{', '.join(legacy)} of Keras' BackupAndRestore (an older version of this package)")
    if reasons:
        raise ValueError(
            f"The backup folder {os.fspath(backup_dir)!r} holds no whole backup "
            f"({'; '.join(reasons)}): remove it to start the run afresh"
        )
    return None


def holds_backup(backup_dir):
    """Whether ``backup_dir`` holds anything of a backup (whole or not)."""
    return (
        backup_dir is not None
        and os.path.isdir(backup_dir)
        and any(not name.startswith(INCOMING) for name in os.listdir(backup_dir))
    )


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
        self._kept = None  # the slot of the newest whole backup (CURRENT once this run backed up)

    def on_train_begin(self, logs=None):
        self._start = time.perf_counter()
        try:
            found = latest(self.backup_dir)
        except ValueError as err:
            raise BackupRefused(str(err)) from None
        if found is None:
            return
        self.seconds_before = found.train_seconds
        epochs = self.params.get("epochs") if self.params else None
        if epochs is not None and found.epoch > epochs:
            raise BackupRefused(
                f"The backup in {found.path!r} holds {found.epoch} epochs, beyond the run's "
                f"{epochs}: resume with the run's own settings, or remove the folder to "
                "start afresh"
            )
        check_steps(found, self.steps_per_epoch)
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                self.model.load_weights(os.path.join(found.path, WEIGHTS))
            except Exception as err:  # weights of another model, or an h5 file of no model at all
                lines = str(err).strip().splitlines()
                raise BackupRefused(
                    f"The backup in {found.path!r} does not fit the run's model "
                    f"({type(err).__name__}: {lines[0][:300] if lines else ''}): remove the "
                    "folder to start afresh"
                ) from None
        for warning in said:  # Keras' warnings of a load that failed are left out of the refusal's line
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        iterations = int(keras.ops.convert_to_numpy(optimizer.iterations)) if optimizer is not None else None
        if iterations is not None and iterations != found.iterations:
            raise BackupRefused(
                f"The backup in {found.path!r} restored an optimizer at step {iterations}, "
                f"its record says {found.iterations}: remove the folder to start afresh"
            )
        self.model._initial_epoch = found.epoch
        self._kept = os.path.basename(found.path)

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        if (loss is not None and not _finite(loss)) or getattr(self.divergence, "diverged", None):
            return  # a diverged epoch is not a state to resume from
        self.save(epoch + 1)

    def save(self, epoch):
        """Writes the model's weights and optimizer state after ``epoch`` epochs (see the module).

        An ``OSError`` (a full disk, a folder gone read-only) removes what this backup wrote and is
        raised again; the backup before it stays whole."""
        os.makedirs(self.backup_dir, exist_ok=True)
        incoming = os.path.join(self.backup_dir, INCOMING)
        current, previous = (os.path.join(self.backup_dir, n) for n in (CURRENT, PREVIOUS))
        shutil.rmtree(incoming, ignore_errors=True)  # a kill's leftover
        # Two copies at most: the newest whole backup, and the one being written.
        shutil.rmtree(current if self._kept == PREVIOUS else previous, ignore_errors=True)
        try:
            self._write(incoming, epoch)
        except OSError:
            shutil.rmtree(incoming, ignore_errors=True)
            raise
        reached("after_record")
        if os.path.isdir(current):
            os.rename(current, previous)
        reached("between_renames")
        os.rename(incoming, current)
        self._kept = CURRENT
        _fsync(self.backup_dir)
        reached("after_swap")

    def _write(self, incoming, epoch):
        """The backup of ``epoch`` epochs, in full, in the folder ``incoming``."""
        os.makedirs(incoming)
        reached("before_weights")
        weights = os.path.join(incoming, WEIGHTS)
        self.model.save_weights(weights)
        _fsync(weights)
        reached("after_weights")
        iterations = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        record = {
            "format_version": FORMAT_VERSION,
            "epoch": int(epoch),
            "iterations": iterations,
            "steps_per_epoch": self.steps_per_epoch,
            "sha256": file_sha256(weights),
            "train_seconds": round(self.seconds_before + time.perf_counter() - self._start, 3),
        }
        with open(os.path.join(incoming, RECORD), "w", encoding="utf-8") as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        _fsync(incoming)


def check_steps(found, steps_per_epoch):
    """A :class:`BackupRefused` where the backup ``found`` was made with other steps per epoch."""
    if found.steps_per_epoch != steps_per_epoch:
        raise BackupRefused(
            f"The backup in {found.path!r} was made at {found.steps_per_epoch} steps per "
            f"epoch, this run takes {steps_per_epoch}: resume with the run's own settings"
        )


def _finite(value):
    try:
        return bool(abs(float(value)) < float("inf"))
    except (TypeError, ValueError):
        return True


def remove(backup_dir):
    """Deletes a run's backup folder (its results are safe)."""
    shutil.rmtree(os.fspath(backup_dir), ignore_errors=True)
