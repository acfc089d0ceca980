"""Plain-text training progress for logs, CI and pipes, where Keras' progress bar is silent.

Keras' bar (``verbose=1``) redraws one terminal line, and ``verbose=2`` prints
one line per epoch without an estimate of the time left. :class:`ProgressLog`
prints, flushed, a line per epoch and, within long epochs, a line every
``interval`` seconds, each with the time per step and the estimated time left
of the whole run. It also keeps every finished epoch's logs, which is what a
run interrupted with Ctrl-C can still report.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time

import keras

from keras_structinit.utils import validation
from keras_structinit.utils.io_utils import is_cleanup_handler, open_plain

__all__ = [
    "CSVLogger",
    "InterruptAtBatchEnd",
    "ProgressLog",
    "Terminated",
    "format_seconds",
    "progress_callbacks",
]


def format_seconds(seconds):
    """``"1h02m"``, ``"4m05s"`` or ``"12s"`` for a duration in seconds."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class ProgressLog(keras.callbacks.Callback):
    """Prints training progress as plain lines: per epoch, and every ``interval`` seconds within one.

    ETA = (steps left in the run) x (mean time per step of the current
    epoch after its first step); at an epoch's end, (epochs left) x (that
    epoch's wall time, validation included, with its first step counted at
    the mean time of the others). The first step of a run compiles: counted
    as it took, it made the first ETA of a minutes-long run read hours.

    Args:
        interval: seconds between two lines inside an epoch (``None``: per
            epoch only).
        stream: where to print (default ``sys.stdout`` at print time).
        quiet: print nothing, only keep ``epoch_logs`` (for a terminal,
            where Keras' bar shows progress).

    Attributes:
        epoch_logs: the logs of every finished epoch, in order.

    Example:

    >>> model.fit(x, y, epochs=5, verbose=0, callbacks=[ProgressLog(interval=30)])
    epoch 1/5 done in 41s (52 ms/step), ETA 2m44s: loss 1.9021, accuracy 0.3012, ...
    """

    def __init__(self, interval=60.0, stream=None, quiet=False):
        super().__init__()
        self.interval = validation.optional(validation.positive_float, interval, "interval")
        self.stream = stream
        self.quiet = validation.boolean(quiet, "quiet")
        self.epoch_logs = []

    def _print(self, text):
        if not self.quiet:
            print(text, file=self.stream or sys.stdout, flush=True)

    def _plan(self):
        return self.params.get("epochs") or 1, self.params.get("steps")

    def on_train_begin(self, logs=None):
        self.epoch_logs = []

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._epoch_start = self._last_print = time.perf_counter()
        self._first_end = self._last_end = None
        self._batches = 0

    def _per_step(self, now, batch):
        """Mean seconds per step of this epoch, its first (compiling) step left out once there are others."""
        if batch == 0 or self._first_end is None:
            return now - self._epoch_start
        return (now - self._first_end) / batch

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        if batch == 0:
            self._first_end = now
        self._last_end, self._batches = now, batch + 1
        if self.quiet or self.interval is None or now - self._last_print < self.interval:
            return
        self._last_print = now
        epochs, steps = self._plan()
        per_step = self._per_step(now, batch)
        line = f"epoch {self._epoch + 1}/{epochs} step {batch + 1}"
        if batch == 0 and steps:  # the first step compiles: its time says nothing of the others'
            line += f"/{steps} (first step {format_seconds(per_step)}: it compiles; ETA from the next step)"
        elif steps:
            left = (steps - batch - 1) + (epochs - self._epoch - 1) * steps
            line += f"/{steps} ({per_step * 1000:.0f} ms/step), ETA {format_seconds(left * per_step)}"
        else:
            line += f" ({per_step * 1000:.0f} ms/step)"
        self._print(line + _metrics(logs))

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        self.epoch_logs.append(logs)
        epochs, steps = self._plan()
        seconds = time.perf_counter() - self._epoch_start
        line = f"epoch {epoch + 1}/{epochs} done in {format_seconds(seconds)}"
        if steps:
            line += f" ({seconds / steps * 1000:.0f} ms/step)"
        if epoch + 1 < epochs:
            typical = seconds
            if self._batches > 1:  # the first step at the others' mean: it compiled
                first = self._first_end - self._epoch_start
                typical = seconds - first + self._per_step(self._last_end, self._batches - 1)
            line += f", ETA {format_seconds((epochs - epoch - 1) * typical)}"
        self._print(line + _metrics(logs))


def _metrics(logs):
    values = [f"{k} {float(v):.4f}" for k, v in (logs or {}).items() if _is_number(v)]
    return ": " + ", ".join(values) if values else ""


def _is_number(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def progress_callbacks(interactive=None, interval=60.0):
    """``(verbose, [ProgressLog])`` for ``fit``: Keras' bar on a terminal, plain lines otherwise.

    ``interactive`` defaults to ``sys.stdout.isatty()``. On a terminal the
    :class:`ProgressLog` is quiet and only keeps the finished epochs' logs,
    so that an interrupted run can still report them.
    """
    if interactive is None:
        interactive = sys.stdout.isatty()
    interactive = validation.boolean(interactive, "interactive")
    return (1 if interactive else 0), [ProgressLog(interval=interval, quiet=interactive)]


class CSVLogger(keras.callbacks.CSVLogger):
    """``keras.callbacks.CSVLogger`` numbering epochs from 1, as Keras' progress bar and the plots do,
    whose file is opened without following a link (:func:`~keras_structinit.utils.io_utils.open_plain`: a
    link, FIFO or device planted at ``log.csv`` is refused, never written through) and with no newline
    translation, so that every row ends as the ``csv`` module ends it, appended or not."""

    def on_train_begin(self, logs=None):
        self.append_header = True
        if self.append and os.path.isfile(self.filename):
            with open_plain(self.filename, "r+", "log.csv") as f:
                self.append_header = not f.readline()
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open_plain(self.filename, "a" if self.append else "w", "log.csv")
        self.writer, self.keys = None, None

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch + 1, logs)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a job scheduler's stop, ``kill PID``), raised as Ctrl-C is: the run records its
    finished epochs (status ``interrupted``, resumable); ``structinit`` exits with 128 + ``signum``."""

    signum = signal.SIGTERM


class InterruptAtBatchEnd(keras.callbacks.Callback):
    """Ctrl-C (SIGINT) and SIGTERM stop training at the next batch end, on every backend.

    Python raises ``KeyboardInterrupt`` wherever the signal lands; in JAX's ``fit`` that is
    often inside Keras' conversion of the logs, whose bare ``except:`` swallows it, so the
    run goes on. While training, this callback's handlers only record the signal; the next
    batch end (of training, validation or prediction) raises ``KeyboardInterrupt`` there
    (:class:`Terminated` for SIGTERM, which would otherwise end the process with no record),
    where nothing catches it. A second signal acts at once (the previous handlers are back).
    A signal whose handler is not the default (SIGINT ignored in a background job, a SIGTERM
    handler of the program's own; :mod:`~keras_structinit.utils.io_utils`' handler that removes lock files
    and temporaries counts as the default, and is back after training) is left alone, and so is
    everything off the main thread.
    As a callback it installs the handlers when training begins and restores the previous ones
    when training ends or a signal arrives; used as a context manager around ``fit`` as well, the
    handlers are restored whatever else ends ``fit``.
    """

    #: The signals handled, with the handler each must have to be replaced.
    SIGNALS = ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL))

    def __init__(self):
        super().__init__()
        self.requested = None  # the signal received, or None
        self._previous = {}

    def _handle(self, signum, frame):
        self.requested = signum
        self.restore()

    def install(self):
        if not self._previous and threading.current_thread() is threading.main_thread():
            for signum, default in self.SIGNALS:
                found = signal.getsignal(signum)
                if found is default or is_cleanup_handler(found):  # the latter acts as the default does
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def restore(self):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}

    __enter__ = install

    def __exit__(self, *exc):
        self.restore()

    def on_train_begin(self, logs=None):
        self.requested = None
        self.install()

    def on_train_end(self, logs=None):
        self.restore()

    def _raise_if_requested(self, *args, **kwargs):
        if self.requested == signal.SIGTERM:
            raise Terminated
        if self.requested is not None:
            raise KeyboardInterrupt

    on_train_batch_end = on_test_batch_end = on_predict_batch_end = _raise_if_requested


class StopOnDivergence(keras.callbacks.Callback):
    """Stops ``fit`` at the first batch whose loss is not finite and records where.

    Keras' ``TerminateOnNaN`` stops too but keeps no record; here ``diverged`` is ``None`` or
    ``{"epoch": e, "step": s, "loss": value}`` (both from 1), which the recipes copy to
    ``history.diverged``. At each epoch's end the weights (batch-norm statistics too) are checked as well.
    :class:`~keras_structinit.recipes.backup.RunBackup` given this callback backs up no
    diverged epoch, so the last backup holds finite weights.
    """

    def __init__(self):
        super().__init__()
        self.diverged = None
        self._epoch = 0

    def on_train_begin(self, logs=None):
        self.diverged = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or self.diverged is not None:
            return
        value = float(keras.ops.convert_to_numpy(loss))
        if not math.isfinite(value):
            self._stop(batch + 1, str(value))

    def on_epoch_end(self, epoch, logs=None):
        """A finite loss over non-finite weights (an overflow late in the epoch) diverged too."""
        if self.diverged is None and not all(
            bool(keras.ops.convert_to_numpy(keras.ops.all(keras.ops.isfinite(w)))) for w in self.model.weights
        ):
            self._stop(self.params.get("steps"), "finite, but the weights are not")

    def _stop(self, step, loss):
        self.diverged = {"epoch": self._epoch + 1, "step": step, "loss": loss}
        self.model.stop_training = True
