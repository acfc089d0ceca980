"""The mean shift's NumPy side: argument defaults and checks, shapes, seeds, expected moments, stripes."""

import math

import numpy as np
import pytest

from keras_structinit import mimetic
from keras_structinit.mimetic import DEFAULT_B, resolve_shift, shift_shape
from keras_structinit.mimetic.shift import expected_statistics, row_mean_statistics
from keras_structinit.utils.validation import derive_seed as shift_seed

from conftest import once_per_suite

pytestmark = once_per_suite("the shift's math is NumPy")


def test_defaults_per_mode():
    assert resolve_shift(None, "constant", None) == (DEFAULT_B, 0.0)
    assert resolve_shift(-0.2, "constant", None) == (-0.2, 0.0)
    assert resolve_shift(None, "per_input", None) == (0.0, pytest.approx(DEFAULT_B**2))  # Eq. 1: mean 0
    assert resolve_shift(0.1, "per_input", 0) == (0.1, 0.0)
    assert mimetic.MODES == ("constant", "per_input")


@pytest.mark.parametrize(
    "b, mode, variance, error, match",
    [
        (None, "per_input", -0.01, ValueError, r"`variance` must be a finite number >= 0"),
        (None, "per_input", math.inf, ValueError, "`variance`"),
        (None, "per_input", "0.1", TypeError, "`variance`"),
        (None, "constant", 0.01, ValueError, "`variance` applies to mode='per_input'"),
        (None, "row", None, ValueError, r"`mode` must be one of \('constant', 'per_input'\)"),
        (None, 1, None, TypeError, "`mode`"),
        (math.nan, "constant", None, ValueError, "`b` must be a finite number"),
        ("0.1", "constant", None, TypeError, "`b` must be a real number"),
        (True, "per_input", None, TypeError, "`b`"),
    ],
)
def test_bad_arguments_name_themselves(b, mode, variance, error, match):
    with pytest.raises(error, match=match):
        resolve_shift(b, mode, variance)


def test_shift_shapes_in_keras_layout():
    assert shift_shape((256, 1024), "constant") == ()
    assert shift_shape((256, 1024), "per_input") == (256, 1)  # one value per row (input) of a Dense kernel
    assert shift_shape((1, 1, 64, 256), "per_input") == (1, 1, 64, 1)  # a 1x1 conv: along its input axis
    assert shift_shape((3, 3, 8, 16), "per_input") == (3, 3, 8, 1)
    with pytest.raises(ValueError, match="not biases"):
        shift_shape((16,), "constant")
    with pytest.raises(ValueError, match="`shape`"):
        shift_shape((0, 4), "constant")


def test_shift_seed_is_reproducible_and_apart_from_neighbouring_seeds():
    assert shift_seed(0) == shift_seed(0)
    derived = {shift_seed(s) for s in range(1000)}
    assert len(derived) == 1000 and all(0 <= s < 2**31 for s in derived)
    assert not derived & set(range(2000))  # never a nearby seed, such as the next layer's s + 1
    assert 0 <= shift_seed(-5) < 2**31


def test_expected_statistics():
    var = mimetic.torch_default_variance(256)
    assert var == pytest.approx(1 / 768)
    assert expected_statistics(var, 0.1, "constant", None, 1024) == {
        "mean": 0.1,
        "entry_variance": pytest.approx(var),
        "row_mean_variance": pytest.approx(var / 1024),
    }
    stats = expected_statistics(var, None, "per_input", 0.01, 1024)
    assert stats["mean"] == 0.0 and stats["entry_variance"] == pytest.approx(var + 0.01)
    assert stats["row_mean_variance"] == pytest.approx(0.01 + var / 1024)
    with pytest.raises(ValueError, match="fan_in"):
        mimetic.torch_default_variance(0)


def test_row_mean_statistics_measure_the_stripe():
    rng = np.random.default_rng(0)
    iid = rng.standard_normal((400, 300))
    stats = row_mean_statistics(iid)
    assert stats["row_means"].shape == (400,)
    assert stats["stripe_fraction"] == pytest.approx(1 / 300, rel=0.3)  # only sampling noise
    assert stats["within_row_variance"] == pytest.approx(1.0, rel=0.02)
    striped = iid + 2.0 * rng.standard_normal((400, 1))  # row j shifted by b_n[j], variance 4
    stats = row_mean_statistics(striped)
    assert stats["row_mean_variance"] == pytest.approx(4.0 + 1 / 300, rel=0.2)
    assert stats["stripe_fraction"] == pytest.approx(0.8, abs=0.05)
    conv = row_mean_statistics(striped.reshape(4, 100, 300))  # (*k, in, out): rows are prod(k) * in
    assert np.array_equal(conv["row_means"], stats["row_means"])
    with pytest.raises(ValueError, match="at least 2 inputs"):
        row_mean_statistics(np.zeros((1, 5)))
