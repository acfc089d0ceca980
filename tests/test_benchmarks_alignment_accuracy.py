"""``benchmarks/alignment_accuracy.py``'s run on the library's API: one tiny aligned run aligns the
layers its variant names and trains (the suite's run crashed on a positional ``images``)."""

import numpy as np

from benchmarks import alignment_accuracy as aa


def _data(count, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (count, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, count)


def test_an_aligned_run_aligns_its_layers_and_trains():
    train, held_out = _data(64, 0), _data(32, 1)
    run = aa.run_one("aligned_2", 0, 2, train, held_out, train[0][:32])
    assert run["aligned"] == ["conv_1/kernel", "conv_1/bias", "conv_2/kernel", "conv_2/bias"]
    assert set(run["accuracy"]["2"]) == {"train", "test"}
