"""covariance/fit.py: the filter statistics of a kernel (Eq. 3, 4) and the closed form nearest a
measured covariance (``fit_sigma``)."""

import numpy as np
import pytest

from keras_structinit.covariance import conv_covariance, psd_project
from keras_structinit.covariance.fit import SIGMA_GRID, filter_statistics, fit_sigma

from conftest import once_per_suite

pytestmark = once_per_suite("the fit is NumPy")


def test_filter_statistics_are_the_mean_and_unbiased_covariance_of_the_filters():
    kernel = np.random.default_rng(0).normal(size=(3, 2, 4, 5))
    filters = np.stack([kernel[:, :, a, b].reshape(-1) for a in range(4) for b in range(5)])  # row-major
    mean, cov = filter_statistics(kernel)
    assert mean.dtype == cov.dtype == np.float64 and cov.shape == (6, 6)
    np.testing.assert_allclose(mean, filters.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(cov, np.cov(filters.T, ddof=1), atol=1e-12)
    with pytest.raises(ValueError, match="at least two"):
        filter_statistics(np.zeros((3, 3, 1, 1)))


@pytest.mark.parametrize(
    "kernel_size, sigma, psd", [(5, 0.3, "abs"), (5, 1.2, "abs"), (7, 3.0, "abs"), ((3, 5), 0.8, "clip")]
)
def test_fit_sigma_recovers_a_scaled_closed_form(kernel_size, sigma, psd):
    cov = 0.3 * psd_project(conv_covariance(kernel_size, sigma), psd)
    fitted, scale, error = fit_sigma(cov, kernel_size, psd=psd)
    assert fitted == pytest.approx(sigma, rel=1e-3)
    assert scale == pytest.approx(0.3, rel=1e-3)
    assert error < 1e-3


def test_fit_sigma_of_iid_filters_is_a_poor_fit():
    sigma, scale, error = fit_sigma(np.eye(25), 5)
    assert SIGMA_GRID[0] <= sigma <= SIGMA_GRID[-1] and scale > 0
    assert error > 0.5  # an identity covariance is far from every centre-heavy closed form


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((np.eye(9), 5), ValueError, r"\(25, 25\)"),
        ((np.full((9, 9), np.nan), 3), ValueError, "finite"),
        ((np.zeros((9, 9)), 3), ValueError, "zero"),
        ((np.eye(9), 3, "eigen"), ValueError, "psd"),
        ((np.eye(9), 0), ValueError, "kernel_size"),
    ],
)
def test_fit_sigma_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        fit_sigma(*args)
