"""Joint covariance of an MLP block's W1 and W2 (Trockman & Kolter, mimetic MLP init, Sec. 2, Fig. 1)."""

import numpy as np
import pytest

from keras_structinit.mimetic.blocks import second_layer_path
from keras_structinit.mimetic.joint import block_summary, population_covariance, unit_covariance, unit_samples

from conftest import once_per_suite

pytestmark = once_per_suite("pure NumPy, the same on every backend")


def test_unit_covariance_recovers_a_known_joint_covariance_over_hidden_units():
    """Hidden units drawn as L z, z ~ N(0, I): [W1[i], W2[:, i]] has covariance S = L L^T, here with
    W2^T anti-correlated to W1 (the lower blocks of L copy the upper ones, negated, plus noise)."""
    n, p = 3, 200_000
    rng = np.random.default_rng(0)
    upper = rng.normal(size=(n, 2 * n))
    lower = -upper + 0.8 * rng.normal(size=(n, 2 * n))
    mix = np.vstack([upper, lower])
    s = mix @ mix.T
    samples = rng.normal(size=(p, 2 * n)) @ mix.T
    w1, w2 = samples[:, :n], samples[:, n:].T  # paper's W1 (p, n), W2 (n, p)
    np.testing.assert_allclose(unit_samples(w1, w2), samples)
    covariance = unit_covariance(w1, w2)
    np.testing.assert_allclose(covariance, s, atol=0.05 * np.abs(s).max())
    summary = block_summary(covariance, n)
    want = np.diag(s[:n, n:]).mean() / np.sqrt(np.diag(s)[:n].mean() * np.diag(s)[n:].mean())
    assert want < -0.5 and summary["cross_correlation"] == pytest.approx(want, abs=0.02)
    assert summary["w1_variance"] == pytest.approx(np.diag(s)[:n].mean(), rel=0.02)
    assert summary["w2_variance"] == pytest.approx(np.diag(s)[n:].mean(), rel=0.02)
    assert summary["w1_offdiagonal"] == pytest.approx((s[:n, :n].sum() - np.trace(s[:n, :n])) / 6, abs=0.05)


def test_exactly_anticorrelated_weights_and_the_mean_shift_which_a_covariance_ignores():
    w1 = np.random.default_rng(1).normal(size=(64, 8))
    summary = block_summary(unit_covariance(w1, -w1.T), 8)
    assert summary["cross_correlation"] == pytest.approx(-1.0)
    shifted = block_summary(unit_covariance(w1 + 0.3, -w1.T), 8)  # Eq. 2's b shifts the mean only
    assert shifted["w1_variance"] == pytest.approx(summary["w1_variance"])


def test_population_covariance_shows_the_stripes_of_a_random_group_mean():
    """Eq. (1) over a population: W1 = Z + 1_p b^T, b ~ N(0, v I): Cov(W1[i, k], W1[j, k]) = v for
    every pair of rows i, j (stripes), 0 across inputs k != l."""
    networks, p, n, v = 40_000, 3, 2, 0.25
    rng = np.random.default_rng(2)
    b = rng.normal(scale=np.sqrt(v), size=(networks, 1, n))
    w1s = rng.normal(size=(networks, p, n)) + b
    w2s = rng.normal(size=(networks, n, p))
    covariance = population_covariance(w1s, w2s)
    assert covariance.shape == (2 * n * p, 2 * n * p)
    w1_block = covariance[: n * p, : n * p].reshape(p, n, p, n)
    np.testing.assert_allclose(w1_block[0, 0, 2, 0], v, atol=0.02)  # rows 0 and 2, input 0
    np.testing.assert_allclose(w1_block[0, 0, 0, 0], 1 + v, atol=0.03)
    np.testing.assert_allclose(w1_block[0, 0, 1, 1], 0.0, atol=0.02)  # different inputs
    np.testing.assert_allclose(covariance[n * p :, n * p :], np.eye(n * p), atol=0.03)


def test_bad_inputs_and_the_second_layers_name():
    with pytest.raises(ValueError, match=r"\(p, n\) and \(n, p\)"):
        unit_covariance(np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(TypeError, match="`w1`"):
        unit_covariance("w1", np.ones((3, 4)))
    with pytest.raises(ValueError, match="2 samples"):
        unit_covariance(np.ones((1, 3)), np.ones((3, 1)))
    with pytest.raises(ValueError, match="networks"):
        population_covariance(np.ones((4, 3)), np.ones((3, 4)))
    assert second_layer_path("block_3_mlp_1/kernel") == "block_3_mlp_2/kernel"
    assert second_layer_path("vit/layer_0/mlp/dense_1/kernel") == "vit/layer_0/mlp/dense_2/kernel"
    assert second_layer_path("s_0_block_1_pointwise_conv_1/kernel") == "s_0_block_1_pointwise_conv_2/kernel"
    assert second_layer_path("conv_1/kernel") is None
    with pytest.raises(TypeError, match="`first_path`"):
        second_layer_path(None)
