"""Filter variance entropy (LC paper Sec. 4.2 / App. E; CNN Filter DB's metric)."""

import math

import keras
import numpy as np
import pytest

from keras_structinit.lc import randomness_threshold, variance_entropy

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="pure NumPy, the same on every backend: runs once, on torch"
)


def test_random_filters_spread_their_variance_evenly():
    kernel = np.random.default_rng(0).normal(size=(3, 3, 64, 64))
    entropy = variance_entropy(kernel)
    assert entropy == pytest.approx(math.log10(9), abs=0.01)  # 9 equal shares: log10(9) = 0.954
    # Above the randomness threshold: a normalized value over 1 reads as random filters.
    assert variance_entropy(kernel, normalized=True) == pytest.approx(entropy / randomness_threshold(4096))
    assert variance_entropy(kernel, normalized=True) > 1.0


def test_one_repeated_pattern_has_zero_entropy_and_two_equal_directions_log10_2():
    pattern = np.random.default_rng(1).normal(size=(3, 3))
    scales = np.random.default_rng(2).normal(size=(8, 16))
    collapsed = pattern[:, :, None, None] * scales  # every filter a multiple of one pattern
    assert variance_entropy(collapsed) == pytest.approx(0.0, abs=1e-9)
    assert variance_entropy(np.zeros((3, 3, 2, 2))) == 0.0
    # Filters +-e1, +-e2 (zero mean): the variance splits in two equal shares.
    e1, e2 = np.eye(9)[0].reshape(3, 3), np.eye(9)[1].reshape(3, 3)
    two = np.stack([e1, -e1, e2, -e2], axis=-1)[:, :, None, :]
    assert variance_entropy(two) == pytest.approx(math.log10(2))


def test_threshold_is_the_published_logistic_fit():
    # t(n) = 1.2618 / (1 + exp(-0.8877 (log2 n - 2.3044))) - 0.3105
    logistic = 1.2618047 / (1 + math.exp(-0.88767525 * (math.log2(5) - 2.30436435))) - 0.31050834
    assert randomness_threshold(5) == pytest.approx(logistic)
    assert randomness_threshold(10**6) == pytest.approx(1.2618047 - 0.31050834, abs=1e-3)


@pytest.mark.parametrize(
    "kernel, error",
    [
        (np.zeros((1, 1, 3, 3)), ValueError),
        (np.zeros((3, 3, 3)), ValueError),
        (np.full((3, 3, 1, 2), np.nan), ValueError),
        ("kernel", TypeError),
    ],
)
def test_bad_kernels(kernel, error):
    with pytest.raises(error, match="`kernel`"):
        variance_entropy(kernel)
