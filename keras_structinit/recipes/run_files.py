"""The files of a training run in its ``out`` folder, kept by one Keras callback.

:class:`RunFiles` owns what a run writes besides its backup: ``results.json`` and its
``status`` (``running`` -> ``finished`` / ``interrupted`` / ``diverged`` / ``failed``), ``log.csv`` (a
:class:`~keras_structinit.recipes.progress.CSVLogger` it holds, as Keras composes callbacks),
``model.keras`` and ``results.md``; and the folder's rules: a used folder is refused unless
``overwrite``, ``out`` must be writable, ``resume`` needs an unfinished run with a whole backup,
the same settings and the same data (the SHA-256 the run recorded, ``data_sha256``), and a lock
(:class:`~keras_structinit.utils.io_utils.OutputLock`) keeps a second run out: taken before anything in
``out`` is removed or written, its refusal names the other run's pid (the kernel releases it on a
kill). Nothing in ``out`` is removed or written before training begins (:meth:`RunFiles.start`), so
that every refusal of the recipe, ``overwrite`` or not, leaves an earlier run whole; an entry where
the run writes that is a symbolic link, a FIFO or a device is refused, never written through.

A run that fails (a full disk, a backup that does not fit: :meth:`RunFiles.failed`) before it
finished an epoch leaves ``out`` as it found it; after one, ``results.json`` says ``failed`` with
the error, and ``resume`` goes on from the last backup.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import shutil
import sys

import keras

from keras_structinit.recipes import backup
from keras_structinit.recipes.progress import CSVLogger
from keras_structinit.utils.io_utils import (
    LOCK_FILE,
    OutputLock,
    atomic_path,
    prepare_output_dir,
    write_json,
    write_text,
)

__all__ = [
    "BACKUP_DIR",
    "LOCK_FILE",
    "OUTPUT_FILES",
    "READ_ONLY",
    "STATUSES",
    "UNFINISHED",
    "RunFiles",
    "RunRefused",
]

#: The files a run writes to its ``out`` folder.
OUTPUT_FILES = ("log.csv", "results.json", "results.md", "learning_curves.png", "model.keras")
#: The folder in ``out`` where a run keeps what ``resume`` needs (:class:`~.backup.RunBackup`).
BACKUP_DIR = "backup"
#: ``results.json``'s ``status``: written ``running`` first, so a killed run never looks finished.
STATUSES = ("running", "finished", "interrupted", "diverged", "failed")
#: The statuses of a run ``resume`` goes on with (``failed``: an error such as a full disk stopped it).
UNFINISHED = ("running", "interrupted", "failed")
#: The ``errno`` of an ``out`` that cannot be written at all (a bad argument, not a failing disk).
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


class RunRefused(ValueError):
    """The run cannot start or go on in ``out`` as asked (another run holds it, it holds a run
    that a new one may not replace, or ``resume`` with other settings)."""


class RunFiles(keras.callbacks.Callback):
    """A run's files in ``out`` (see the module docstring); ``names`` spells the arguments
    (``{"out": "--out", "resume": "--resume", "overwrite": "--overwrite"}`` on the command line).

    Use: :meth:`check` before anything is loaded, then ``with files.open(record):`` around
    ``fit`` (with ``files`` among its callbacks: :meth:`start` writes ``out`` as training begins),
    then :meth:`finish`, :meth:`interrupted` or :meth:`diverged`.
    """

    def __init__(self, out, *, resume=False, overwrite=False, inputs=(), names=None):
        super().__init__()
        self.out, self.resume, self.overwrite, self.inputs = os.fspath(out), resume, overwrite, list(inputs)
        self.names = {k: (names or {}).get(k, f"`{k}`") for k in ("out", "resume", "overwrite")}
        self.log_path = os.path.join(self.out, "log.csv")
        self.results_path = os.path.join(self.out, "results.json")
        self.backup_dir = os.path.join(self.out, BACKUP_DIR)
        self.record, self._csv = None, None
        self._saved, self._epochs_logged, self.failure = {}, 0, None
        self._lock = OutputLock(self.out, self.names["out"], what="another run")

    # ------------------------------------------------------------------ before the run

    def check(self, *, check_only=True):
        """Raises if the run may not use ``out``; returns the earlier ``results.json`` with ``resume``.
        Another run holding ``out`` comes first (:class:`RunRefused` naming its pid)."""
        out, names = self.out, self.names
        if not self._lock.held:
            try:
                self._lock.check()
            except ValueError as err:
                raise RunRefused(str(err)) from None
        _check_writable(out, names["out"])
        _check_folder(self.backup_dir, names["out"])
        if not self.resume:
            if not self.overwrite and backup.holds_backup(self.backup_dir):
                raise RunRefused(
                    f"{names['out']} {out!r} holds the backup of a run ({self.backup_dir}): "
                    f"pass {names['resume']} to go on with it, or {names['overwrite']} to "
                    "replace it"
                )
            prepare_output_dir(
                out,
                OUTPUT_FILES,
                names["out"].strip("`"),
                overwrite=self.overwrite,
                inputs=self.inputs,
                check_only=check_only,
                hint=f"{names['overwrite']} (or {names['resume']}, to go on with an unfinished run)",
            )
            if self.overwrite and not check_only:
                shutil.rmtree(self.backup_dir, ignore_errors=True)
            return None
        if self.overwrite:
            raise ValueError(
                f"{names['resume']} goes on with the run in {names['out']}, "
                f"{names['overwrite']} replaces it: pass one of them"
            )
        try:
            with open(self.results_path, encoding="utf-8") as f:
                previous = json.load(f)
        except (OSError, ValueError):
            previous = {}
        if previous.get("status") not in UNFINISHED:
            raise ValueError(
                f"{names['resume']}: {names['out']} {out!r} holds no unfinished run (a "
                f"results.json with status {' or '.join(UNFINISHED)})"
            )
        if backup.latest(self.backup_dir) is None:  # a folder of no whole backup: latest's one line
            raise ValueError(
                f"{names['resume']}: {names['out']} {out!r} holds no backup to go on from "
                f"({self.backup_dir} is missing: the run finished no epoch, or it was removed); "
                f"start anew with {names['overwrite']}"
            )
        prepare_output_dir(
            out, OUTPUT_FILES, names["out"].strip("`"), overwrite=True, inputs=self.inputs, check_only=True
        )
        return previous

    def open(self, record):
        """Locks ``out`` and checks it again, resume's settings and data included (``record``: what
        ``results.json`` holds besides its status; its ``config`` must equal the earlier run's with
        ``resume``, and its ``data_sha256`` too where both runs recorded one). Nothing in ``out`` is
        removed or written here: that is :meth:`start`'s, as training begins, once the recipe has
        checked everything, so a run refused before then leaves an earlier run's files as they were,
        ``overwrite`` or not. A context manager: leaving it releases the lock."""
        try:
            self._lock.acquire()
        except ValueError as err:
            raise RunRefused(str(err)) from None
        except OSError as err:
            if err.errno in READ_ONLY:  # out's folder cannot be made or written
                raise RunRefused(_cannot_write(self.out, self.names["out"], err)) from None
            raise
        try:
            try:
                previous = self.check()
            except (ValueError, FileExistsError) as err:
                raise RunRefused(str(err)) from err
            self.resumed_at = backup.latest(self.backup_dir).epoch if self.resume else None
            if self.resume:
                _check_same_run(previous, record, self.names, self.out)
            self.record = {**record, "resumed_at_epoch": self.resumed_at}
        except BaseException:
            self.close()
            raise
        return self

    @property
    def started(self):
        """Whether :meth:`start` wrote ``out`` (training began)."""
        return self._csv is not None

    def start(self):
        """The run's first change to ``out``, as training begins: an earlier run's files removed
        (``overwrite``) or a resumed ``log.csv`` cut to the backup's epochs, then ``results.json`` with
        ``"status": "running"`` and ``log.csv`` opened. Once per run; what fails here is put back."""
        if self.started:
            return
        try:
            if self.resume:
                self._saved = _contents(self.results_path, self.log_path)  # put back if it fails at once
                self._truncate_log(self.resumed_at)
            else:
                self.check(check_only=False)  # the lock is held: removes an earlier run's files
            write_json(self.results_path, {"status": "running", **self.record})
            self._csv = CSVLogger(self.log_path, append=self.resume)
        except BaseException as err:
            self._put_back()
            if isinstance(err, OSError) and err.errno in READ_ONLY:
                raise RunRefused(_cannot_write(self.out, self.names["out"], err)) from None
            raise
        if getattr(self, "_model", None) is not None:
            self._csv.set_model(self._model)

    def close(self):
        self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ------------------------------------------------------------------ during the run (Keras hooks)

    def set_model(self, model):
        super().set_model(model)
        if self.started:
            self._csv.set_model(model)

    def on_train_begin(self, logs=None):
        self.start()
        self._csv.on_train_begin(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._csv.on_epoch_end(epoch, logs)
        self._epochs_logged += 1

    def on_train_end(self, logs=None):
        self._csv.on_train_end(logs)

    # ------------------------------------------------------------------ how the run ended

    def logged_metrics(self):
        """``{metric: [per epoch]}`` of ``log.csv`` (every epoch, a resumed run's included); a column
        never logged (Keras' ``val_*`` of a run without validation, all ``NA``) is left out."""
        if not os.path.exists(self.log_path):
            return {}
        with open(self.log_path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        metrics = {
            key: [None if row[key] in ("", "NA") else float(row[key]) for row in rows]
            for key in (rows[0] if rows else ())
            if key != "epoch"
        }  # NA: not logged
        return {key: values for key, values in metrics.items() if any(v is not None for v in values)}

    def finish(self, results, model, table):
        """Writes ``model.keras`` (atomically), ``results.md``, then ``results.json`` with
        ``"status": "finished"``; only then is the backup removed. An error on the way (a full disk)
        is recorded as :meth:`failed` records it (the backup stays) and raised again."""
        from keras_structinit.engine.freezing import save_portable

        try:
            with atomic_path(os.path.join(self.out, "model.keras")) as tmp:
                # Loads on every backend; frozen kernels of stock layers are recorded in it
                # (load_frozen_model)
                save_portable(model, tmp)
            write_text(os.path.join(self.out, "results.md"), table + "\n")
            results = {"status": "finished", **self.record, **results}
            write_json(self.results_path, results)  # last: "finished" once everything is written
        except Exception as err:
            self._record_failure(err, "writing the results")
            raise
        backup.remove(self.backup_dir)
        return results

    def diverged(self, diverged, metrics, seconds):
        """Records a run stopped by a non-finite loss: no ``model.keras``; its last finite backup stays."""
        found = backup.latest(self.backup_dir)
        results = {
            "status": "diverged",
            **self.record,
            "diverged": diverged,
            "metrics": metrics,
            "last_finite_backup_epoch": None if found is None else found.epoch,
            "wall_seconds": round(seconds, 1),
        }
        write_json(self.results_path, results)
        return results, found

    def interrupted(self, epochs, seconds):
        """Records the finished epochs of an interrupted run and says where they are (before training
        began: says that ``out`` was left as it was)."""
        if not self.started:
            print(
                f"\nInterrupted before training began: {self.names['out'].strip('`')} {self.out!r} "
                "was left as it was.",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(AttributeError):
                sys.exc_info()[1].said = True
            return
        if os.path.exists(self.log_path) and os.path.getsize(self.log_path) == 0:
            os.remove(self.log_path)  # CSVLogger writes its header with the first finished epoch
        metrics = self.logged_metrics()
        finished = len(next(iter(metrics.values()), []))
        write_json(
            self.results_path,
            {
                "status": "interrupted",
                **self.record,
                "interrupted": True,
                "finished_epochs": finished,
                "metrics": metrics,
                "wall_seconds": round(seconds, 1),
            },
        )
        where = self.results_path + (f" and {self.log_path}" if finished else "")
        how = "Terminated (SIGTERM)" if getattr(sys.exc_info()[1], "signum", None) == 15 else "Interrupted"
        print(
            f"\n{how} in epoch {finished + 1}/{epochs}: {finished} finished epoch(s) recorded in {where}; "
            f"{self.names['resume'].strip('`')} goes on from there.",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(AttributeError):  # called while the interrupt is handled: it was said
            sys.exc_info()[1].said = True

    def failed(self, error):
        """Records a run that ``error`` (an exception, not Ctrl-C) stopped during ``fit``.

        A run that finished no epoch here leaves ``out`` as it found it: a resumed run's
        ``results.json`` and ``log.csv`` are put back (a backup refused as it loads changes nothing),
        a new run's files removed (its ``out`` takes a new run without ``overwrite``). Otherwise
        ``results.json`` says ``"status": "failed"`` with the error, and ``resume`` goes on from the
        last backup.
        """
        if not self.started:
            return  # refused before training began: nothing was written
        if not self._epochs_logged:
            if self.resume:
                self._put_back()
            else:
                self.forget_unstarted()
            return
        self._record_failure(error, "training")

    def forget_unstarted(self):
        """A new run that failed before finishing an epoch leaves nothing that says "running": its
        ``out`` takes a new run without ``overwrite``."""
        if self.resume or (os.path.exists(self.log_path) and os.path.getsize(self.log_path) > 0):
            return  # an epoch finished: the record stays for resume
        for path in (self.results_path, self.log_path):
            if os.path.exists(path):
                os.remove(path)
        shutil.rmtree(self.backup_dir, ignore_errors=True)

    def _record_failure(self, error, during):
        """``results.json`` with ``"status": "failed"``, the error, where it came and the finished epochs.
        A disk that refuses this write too leaves the earlier ``results.json`` (``running``: resumable)."""
        try:
            found = backup.latest(self.backup_dir)
        except ValueError:
            found = None
        metrics = self.logged_metrics()
        lines = str(error).strip().splitlines()
        self.failure = {
            "status": "failed",
            **self.record,
            "error": f"{type(error).__name__}: {lines[0] if lines else ''}"[:1000],
            "failed_while": during,
            "finished_epochs": len(next(iter(metrics.values()), [])),
            "last_backup_epoch": None if found is None else found.epoch,
            "metrics": metrics,
        }
        with contextlib.suppress(OSError):
            write_json(self.results_path, self.failure)

    def _put_back(self):
        """Restores the files :meth:`open` changed for a resume (nothing changed where it failed at once)."""
        for path, content in self._saved.items():
            with contextlib.suppress(OSError):
                if content is None:
                    if os.path.exists(path):
                        os.remove(path)
                else:
                    with atomic_path(path) as tmp, open(tmp, "wb") as f:
                        f.write(content)
        self._saved = {}

    def _truncate_log(self, epochs):
        """Keeps the header and the first ``epochs`` rows of ``log.csv``: a run killed after logging
        an epoch but before backing it up logs that epoch again when it resumes."""
        if not os.path.exists(self.log_path):
            return
        with open(self.log_path, encoding="utf-8", newline="") as f:  # "\r\n" rows stay "\r\n"
            lines = f.read().splitlines(keepends=True)
        write_text(self.log_path, "".join(lines[: 1 + epochs]) if epochs else "")


def _check_same_run(previous, record, names, out):
    """``resume`` goes on with the same run: :class:`RunRefused` naming the settings that differ, or
    saying that the data differ (their SHA-256, where both runs recorded one)."""
    now = json.loads(json.dumps(record["config"], default=str))
    before = previous.get("config", {})
    differ = sorted(k for k in {*now, *before} if now.get(k) != before.get(k))
    if differ:
        raise RunRefused(
            f"{names['resume']}: the run in {names['out']} was started with other settings "
            f"({', '.join(differ)}); pass them as they were, or start a new run with "
            f"{names['overwrite']}"
        )
    then, digest = previous.get("data_sha256"), record.get("data_sha256")
    if then is not None and digest is not None and then != digest:
        raise RunRefused(
            f"{names['resume']}: the images differ from those the run in {names['out']} {out!r} "
            f"was started on (SHA-256 {str(then)[:12]}... then, {digest[:12]}... now, of "
            f"{now.get('data')}): pass the data it was started on, or start a new run with "
            f"{names['overwrite']}"
        )


def _contents(*paths):
    """``{path: its bytes, or None where it does not exist}``."""
    saved = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                saved[path] = f.read()
        except FileNotFoundError:
            saved[path] = None
    return saved


def _cannot_write(out, name, err):
    return f"{name} {out!r} cannot be written ({err.strerror or err}): choose a folder this process may write"


def _check_folder(path, name):
    """Refuses a ``path`` in ``out`` (the backup folder) that is there but is not a folder of its own: a
    symbolic link would take the run's writes, and its removals, out of ``out``."""
    if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
        kind = "a symbolic link" if os.path.islink(path) else "not a folder"
        raise RunRefused(
            f"{name}: {path!r} is {kind}, where a run keeps its backup folder; it is neither followed "
            "nor replaced: remove it, or choose another folder"
        )


def _check_writable(out, name):
    """:class:`RunRefused` when ``out``, or the nearest folder above it that exists, is read-only."""
    probe = os.path.abspath(out)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return
        probe = parent
    if os.path.isdir(probe) and not os.access(probe, os.W_OK):
        raise RunRefused(_cannot_write(out, name, OSError(errno.EROFS, "read-only")))
