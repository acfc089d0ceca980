"""recipes.progress: Ctrl-C at the next batch end, the handler restored after fit (issue 37)."""

import os
import signal

import keras
import numpy as np
import pytest

from keras_structinit.recipes.progress import InterruptAtBatchEnd


@pytest.fixture
def default_sigint():
    """SIGINT as an interactive Python has it (a background CI lane ignores it), restored after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _fit(callbacks):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    return model.fit(x, y, batch_size=2, epochs=2, callbacks=callbacks, verbose=0)


class _Probe(keras.callbacks.Callback):
    """Records the SIGINT handler at each batch; sends SIGINT at batch ``at`` of the first epoch."""

    def __init__(self, at=None):
        super().__init__()
        self.at, self.handlers, self.batches = at, [], 0

    def on_train_batch_begin(self, batch, logs=None):
        self.handlers.append(signal.getsignal(signal.SIGINT))
        self.batches += 1
        if batch == self.at:
            os.kill(os.getpid(), signal.SIGINT)


def test_a_finished_fit_gives_back_the_previous_handler(default_sigint):
    stop, probe = InterruptAtBatchEnd(), _Probe()
    _fit([probe, stop])
    assert probe.handlers[0] == stop._handle and probe.batches == 8  # installed while training
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # and given back


def test_ctrl_c_stops_at_the_batch_end_and_the_next_fit_starts_afresh(default_sigint):
    stop, probe = InterruptAtBatchEnd(), _Probe(at=1)
    with pytest.raises(KeyboardInterrupt):
        _fit([probe, stop])
    assert stop.requested and probe.batches == 2  # batch 1 ran to its end, nothing after it
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # a second Ctrl-C interrupts
    _fit([stop])  # the same callback in a new fit: no stale request
    assert not stop.requested


def test_the_eta_leaves_out_the_compiling_first_step(monkeypatch):
    """Issue 50: the first ETA of a minutes-long run read 5h18m (the first step compiles)."""
    import io

    from keras_structinit.recipes import progress

    clock = iter([0.0, 300.0, 301.0, 302.0, 303.0, 304.0])  # epoch start; steps end at 300 (compiles), 301...
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    out = io.StringIO()
    log = progress.ProgressLog(interval=1e-9, stream=out)
    log.set_params({"epochs": 10, "steps": 4})
    log.on_train_begin()
    log.on_epoch_begin(0)
    for batch in range(4):
        log.on_train_batch_end(batch, {"loss": 1.0})
    log.on_epoch_end(0, {"loss": 1.0})
    lines = out.getvalue().splitlines()
    # Issue 76: the first step's line gave an ETA of hours from the compile alone; now none.
    assert lines[0].startswith("epoch 1/10 step 1/4 (first step 5m00s: it compiles; ETA from the next step)")
    assert "ETA" in lines[1] and "ETA from" not in lines[1], lines
    assert lines[-2].startswith("epoch 1/10 step 4/4 (1000 ms/step), ETA 36s"), lines  # 36 steps at 1 s
    # The epoch took 304 s; with its first step at 1 s it is 5 s: 9 epochs left, 45 s.
    assert lines[-1].startswith("epoch 1/10 done in 5m04s (76000 ms/step), ETA 45s"), lines
