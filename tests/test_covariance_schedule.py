"""covariance/schedule.py: the variance schedule over depth (Eq. 11), its presets and depth fractions."""

import numpy as np
import pytest

from keras_structinit import covariance as cv

from conftest import once_per_suite

pytestmark = once_per_suite("the schedule is NumPy")


def test_variance_schedule_values():
    assert cv.variance_schedule(0.0, 0.08, 0.37, 2.9) == pytest.approx(0.08)
    assert cv.variance_schedule(0.5, 0.08, 0.37, 2.9) == pytest.approx(0.08 + 0.185 + 0.3625)
    assert cv.variance_schedule(1.0, 0.08, 0.37, 2.9) == pytest.approx(0.08 + 0.37 + 1.45)
    assert cv.variance_schedule(1.0, *cv.PRESETS["imagenet-frozen"]) == pytest.approx(0.775)
    assert cv.PRESETS == {
        "cifar-p2": (0.08, 0.37, 2.9),
        "cifar-p1": (0.16, 0.32, 2.88),
        "imagenet-frozen": (0.15, 0.5, 0.25),
        "imagenet-thawed": (0.15, 0.25, 1.0),
    }


def test_depth_fractions():
    assert cv.depth_fractions(1) == [0.0]
    np.testing.assert_allclose(cv.depth_fractions(8), np.arange(8) / 7)
    with pytest.raises(ValueError, match="num_layers"):
        cv.depth_fractions(0)


def test_resolve_schedule():
    assert cv.resolve_schedule("cifar-p1") == (0.16, 0.32, 2.88)
    assert cv.resolve_schedule("cifar-p1", a_sigma=1.0) == (0.16, 0.32, 1.0)
    assert cv.resolve_schedule(None, 0.1, 0.2, 0.3) == (0.1, 0.2, 0.3)
    with pytest.raises(ValueError, match="preset"):
        cv.resolve_schedule("cifar")
    with pytest.raises(ValueError, match="v_sigma"):
        cv.resolve_schedule(None, 0.1, None, 0.3)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: cv.variance_schedule(1.5, 0.1, 0.1, 0.1), ValueError, "depth_fraction"),
        (lambda: cv.variance_schedule(-0.1, 0.1, 0.1, 0.1), ValueError, "depth_fraction"),
        (lambda: cv.variance_schedule(float("nan"), 0.1, 0.1, 0.1), ValueError, "depth_fraction"),
        (lambda: cv.variance_schedule(0.5, float("nan"), 0.1, 0.1), ValueError, "sigma0"),
        (lambda: cv.variance_schedule(1.0, 0.1, -1.0, 0.1), ValueError, "sigma must be > 0"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
