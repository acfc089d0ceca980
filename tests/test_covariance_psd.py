"""covariance/psd.py: making the (slightly indefinite) closed-form covariance sampleable."""

import numpy as np
import pytest

from keras_structinit import covariance as cv

from conftest import once_per_suite

pytestmark = once_per_suite("the PSD handling is NumPy")


def test_indefinite_for_wide_gaussians_and_psd_handling():
    cov = cv.conv_covariance(9, 1.5)
    eigvals, eigvecs = np.linalg.eigh(cov)
    assert eigvals.min() < -1e-6, "expected small negative eigenvalues for sigma >= 0.5, k >= 7"
    np.testing.assert_allclose(
        cv.psd_project(cov, "abs"), eigvecs @ np.diag(np.abs(eigvals)) @ eigvecs.T, atol=1e-12
    )
    np.testing.assert_allclose(
        cv.psd_project(cov, "clip"), eigvecs @ np.diag(np.maximum(eigvals, 0)) @ eigvecs.T, atol=1e-12
    )
    assert np.linalg.eigvalsh(cv.psd_project(cov, "clip")).min() > -1e-10


def test_abs_equals_covariance_numpy_multivariate_normal_samples():
    # numpy.random.multivariate_normal(method="svd") draws x = z * sqrt(s) @ vh
    # with (u, s, vh) = svd(cov), so its covariance is vh.T diag(s) vh.
    cov = cv.conv_covariance(7, 2.0)
    _, s, vh = np.linalg.svd(cov)
    np.testing.assert_allclose(cv.psd_project(cov, "abs"), vh.T @ np.diag(s) @ vh, atol=1e-10)


def test_psd_factor_rejects_bad_input():
    with pytest.raises(ValueError, match="psd"):
        cv.psd_factor(np.eye(4), "eigen")
    with pytest.raises(ValueError, match="NaN"):
        cv.psd_factor(np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="square"):
        cv.psd_factor(np.ones((3, 4)))


@pytest.mark.parametrize("kernel_size, sigma", [(3, 0.08), (5, 1.9), ((3, 7), 0.5)])
def test_matched_scale_gives_the_target_mean_variance(kernel_size, sigma):
    factor = cv.psd_factor(cv.conv_covariance(kernel_size, sigma))
    scale = cv.matched_scale(factor, 0.01)
    covariance = (scale * factor) @ (scale * factor).T
    np.testing.assert_allclose(np.trace(covariance) / covariance.shape[0], 0.01, rtol=1e-12)
    # the correlations between pixels are kept: the covariance is the unscaled one times scale^2
    np.testing.assert_allclose(covariance, scale**2 * cv.psd_project(cv.conv_covariance(kernel_size, sigma)))


def test_matched_scale_rejects_bad_input():
    with pytest.raises(ValueError, match="variance"):
        cv.matched_scale(np.eye(3), 0.0)
    with pytest.raises(TypeError, match="variance"):
        cv.matched_scale(np.eye(3), "0.1")
    with pytest.raises(ValueError, match="samples nothing"):
        cv.matched_scale(np.zeros((3, 3)), 0.1)
