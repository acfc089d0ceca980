"""Per-position weight variance of spatial filters (LC paper Sec. 4.4, Fig. 13)."""

import numpy as np
import pytest

from keras_structinit.lc import centre_border_ratio, pooled_position_variance, position_variance

from conftest import once_per_suite

pytestmark = once_per_suite("pure NumPy, the same on every backend")


def signed_kernel(scales, c_in=4, c_out=6):
    """Weights +-scale[i, j] at position (i, j), signs alternating over the filters: zero mean at
    every position, variance exactly scale[i, j]^2."""
    signs = np.where(np.arange(c_in * c_out) % 2, 1.0, -1.0).reshape(c_in, c_out)
    return np.asarray(scales, dtype=np.float64)[:, :, None, None] * signs


def test_the_map_is_each_positions_variance_over_input_and_output_channels():
    scales = np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]])
    kernel = signed_kernel(scales)
    np.testing.assert_allclose(position_variance(kernel, normalize=False), scales**2)
    # Normalized by the std of all weights (Fig. 13 caption): the map averages 1 for zero-mean weights.
    normalized = position_variance(kernel)
    np.testing.assert_allclose(normalized, scales**2 / np.mean(scales**2))
    assert normalized.mean() == pytest.approx(1.0)
    assert centre_border_ratio(normalized) == pytest.approx(16.0 / 2.5)  # border: (4 * 1 + 4 * 4) / 8
    np.testing.assert_allclose(position_variance(kernel.reshape(3, 3, -1), normalize=False), scales**2)


def test_iid_weights_give_a_flat_map_and_a_gaussian_with_per_position_std_its_square():
    rng = np.random.default_rng(0)
    flat = position_variance(rng.normal(size=(5, 5, 64, 64)))
    np.testing.assert_allclose(flat, 1.0, atol=0.05)
    assert centre_border_ratio(flat) == pytest.approx(1.0, abs=0.1)
    std = np.linspace(0.5, 2.0, 9).reshape(3, 3)
    drawn = rng.normal(size=(3, 3, 128, 128)) * std[:, :, None, None]
    np.testing.assert_allclose(position_variance(drawn, normalize=False), std**2, rtol=0.03)


def test_the_model_map_pools_each_normalized_kernel():
    small = signed_kernel(np.ones((3, 3)) * 0.01)
    centred = signed_kernel([[1.0, 1.0, 1.0], [1.0, 3.0, 1.0], [1.0, 1.0, 1.0]])
    pooled = pooled_position_variance([small, centred])
    # The first kernel's tiny scale does not drown in the second's: both count after normalizing.
    expected = (position_variance(small) + position_variance(centred)) / 2  # equal filter counts
    np.testing.assert_allclose(pooled, expected)
    unnormalized = pooled_position_variance([small, centred], normalize=False)
    assert unnormalized[0, 0] == pytest.approx((0.01**2 + 1.0) / 2)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="`kernel` must have rank >= 3"):
        position_variance(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="`kernel`"):
        position_variance("kernel")
    with pytest.raises(ValueError, match="share one kernel size"):
        pooled_position_variance([np.ones((3, 3, 2)), np.ones((5, 5, 2))])
    with pytest.raises(ValueError, match="one kernel at least"):
        pooled_position_variance([])
    with pytest.raises(TypeError, match="`kernels` must be a list"):
        pooled_position_variance(np.ones((3, 3, 2)))
    assert centre_border_ratio(np.ones((2, 2))) is None
