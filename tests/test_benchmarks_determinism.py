"""Run-to-run determinism and pairing of the training benchmarks (issue 59, points 5 and 6).

The report judges a difference paired where the two variants of one seed share the data order,
the augmentation draws and the weights the variant leaves alone, and takes a rerun of one code as
identical. Both rest on what is checked here, on the session's backend: the same seed set before
building, the same stateless input stream and the same thread count give bit-identical runs, with
no backend determinism flag; frozen and learnable LCResNets of one seed start from the same weights.
"""

import keras
import numpy as np

from benchmarks.lc_accuracy import RECIPE
from keras_structinit import recipes
from keras_structinit.models import lcresnet


def _data(count, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (count, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, count)


def _weights(model):
    return {v.path: keras.ops.convert_to_numpy(v).copy() for v in model.weights}


def _run(seed, frozen=False):
    """A tiny lc_accuracy run: the benchmark's steps (seed, build, fit_cifar with its recipe)."""
    keras.utils.set_random_seed(seed)
    model = lcresnet(8, 4, 1, frozen=frozen)
    history = recipes.fit_cifar(
        model, _data(64, 0), 2, eval_data=_data(32, 1), seed=seed, verbose=0, **dict(RECIPE, batch_size=16)
    )
    return history.history, history.eval_results, _weights(model)


def test_two_runs_of_one_seed_are_identical():
    first, second = _run(3), _run(3)
    assert first[0] == second[0] and first[1] == second[1]  # every epoch's loss and accuracy, exactly
    assert first[2].keys() == second[2].keys()
    for path, value in first[2].items():
        np.testing.assert_array_equal(value, second[2][path], err_msg=path)
    other = _run(4)
    assert any(not np.array_equal(value, other[2][path]) for path, value in first[2].items())


def test_frozen_and_learnable_lcresnets_of_one_seed_start_from_the_same_weights():
    built = {}
    for frozen in (True, False):
        keras.utils.set_random_seed(0)
        built[frozen] = _weights(lcresnet(8, 4, 2, frozen=frozen))
    assert built[True].keys() == built[False].keys()
    for path, value in built[True].items():
        np.testing.assert_array_equal(value, built[False][path], err_msg=path)
