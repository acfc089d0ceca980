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
