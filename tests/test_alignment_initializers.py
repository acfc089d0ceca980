"""DataAligned's eigenvalues: variances, so finite and non-negative (round-off aside)."""

import keras
import numpy as np
import pytest

from keras_structinit.alignment import DataAligned, patch_covariance, random_basis

from conftest import to_numpy


def components(dim=27, seed=0):
    return np.geomspace(3.0, 0.3, dim), random_basis(dim, seed=seed)


@pytest.mark.parametrize("f", [0.5, 1.0, None])
def test_negative_eigenvalues_are_refused(f):
    # With f=0.5, tau = max(lambda, 0) ** 0.5 made every filter of -eigvals zero.
    eigvals, eigvecs = components()
    with pytest.raises(ValueError, match=r"`eigvals` must be non-negative.*Received: .* minimum -3"):
        DataAligned(-eigvals, eigvecs, f=f)
    partly = eigvals.copy()
    partly[20] = -0.1
    with pytest.raises(ValueError, match="`eigvals` must be non-negative"):
        DataAligned(partly, eigvecs, n_components=4, f=f)  # a negative one past the components used


def test_all_zero_eigenvalues_with_a_power_are_refused():
    eigvals, eigvecs = components()
    with pytest.raises(ValueError, match=r"`eigvals` of the 16 components used are all zero.*f=0.5"):
        DataAligned(np.zeros(27), eigvecs, f=0.5)
    # The smallest components of a rank-deficient covariance are zero too.
    with pytest.raises(ValueError, match="`eigvals`"):
        DataAligned(np.r_[eigvals[:11], np.zeros(16)][::-1], eigvecs[:, ::-1], f=1.0)
    flat = DataAligned(np.zeros(27), eigvecs)((3, 3, 3, 16))  # f=None: unit scales whatever the variances
    assert np.abs(to_numpy(flat)).max() > 0
    with pytest.raises(ValueError, match="`f` gives every component the scale 0"):
        DataAligned(eigvals, eigvecs, f=lambda v: 0.0)


@pytest.mark.parametrize(
    "eigvals, error, match",
    [
        (np.full(27, np.nan), ValueError, "`eigvals` must be finite numbers"),
        (np.r_[np.inf, np.ones(26)], ValueError, "`eigvals` must be finite numbers"),
        (np.ones((27, 1)), ValueError, r"`eigvals` must be a non-empty 1-D array.*shape \(27, 1\)"),
        ([], ValueError, "`eigvals` must be a non-empty 1-D array"),
        (["a"] * 27, TypeError, "`eigvals` must be a 1-D array of real numbers"),
    ],
)
def test_malformed_eigenvalues(eigvals, error, match):
    with pytest.raises(error, match=match):
        DataAligned(eigvals, components()[1])


def test_round_off_negatives_of_a_covariance_are_read_as_zero(tmp_path):
    # A rank-deficient patch covariance (a constant channel) has eigenvalues of about -1e-17;
    # its smallest components, the paper's control, must still initialize and round-trip.
    rng = np.random.default_rng(0)
    images = rng.standard_normal((8, 6, 6, 3)).astype("float32")
    images[..., 2] = 0.5
    eigvals, eigvecs = patch_covariance(images, 3)
    smallest, vectors = eigvals[::-1], eigvecs[:, ::-1]
    noisy = smallest.copy()
    noisy[0] = -1e-12 * eigvals[0]
    init = DataAligned(noisy, vectors, n_components=4, mode="sample", seed=0)
    assert np.all(init.eigvals >= 0.0)
    clone = DataAligned.from_config(init.get_config())
    np.testing.assert_array_equal(to_numpy(clone((3, 3, 3, 4))), to_numpy(init((3, 3, 3, 4))))
    layer = keras.layers.Conv2D(4, 3, kernel_initializer=init)
    layer.build((None, 6, 6, 3))
    assert np.all(np.isfinite(to_numpy(layer.kernel)))
