"""covariance/bank.py: FilterCovariance, measuring, interpolating, resizing and approximating filter
statistics (saving and loading them: tests/test_covariance_bank_io.py)."""

import keras
import numpy as np
import pytest

from keras_structinit import covariance as cv
from keras_structinit.covariance import FilterCovariance
from keras_structinit.initializers import ConvCovariance

NUM_FILTERS = 20000
SIGMAS = (0.3, 2.0)


def fixed_sigma_init(sigma, seed):
    return ConvCovariance(preset=None, sigma0=sigma, v_sigma=0.0, a_sigma=0.0, seed=seed)


def two_layer_model(kernel_sizes=(5, 5), channels=NUM_FILTERS, name="source"):
    inputs = keras.Input((6, 6, channels))
    x = inputs
    for i, k in enumerate(kernel_sizes):
        x = keras.layers.DepthwiseConv2D(k, padding="same", name=f"dw{i}")(x)
    return keras.Model(inputs, x, name=name)


@pytest.fixture(scope="module")
def sampled_model():
    model = two_layer_model()
    for i, sigma in enumerate(SIGMAS):
        layer = model.get_layer(f"dw{i}")
        init = fixed_sigma_init(sigma, seed=10 + i)
        layer.kernel.assign(init(tuple(layer.kernel.shape), dtype="float32"))
    return model


def random_bank(num_layers=3, k=5, seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    n = k * k
    means, covs = [], []
    for _ in range(num_layers):
        x = rng.normal(size=(n, 3 * n))
        covs.append(x @ x.T / (3 * n))
        means.append(rng.normal(size=n))
    return FilterCovariance(means, covs, k, **kwargs)


def random_spd(k, rng):
    x = rng.normal(size=(k, k))
    return x @ x.T + k * np.eye(k)


# ----------------------------------------------------------------------------
# from_model
# ----------------------------------------------------------------------------
def test_from_model_recovers_sampled_covariance(sampled_model):
    bank = FilterCovariance.from_model(sampled_model)
    assert len(bank) == 2
    assert bank.kernel_size == (5, 5)
    assert bank.depth_fractions == (0.0, 1.0)
    assert bank.source_name == "source"
    paths = bank.layer_paths
    assert len(paths) == 2 and "dw0" in paths[0] and "dw1" in paths[1]
    n = NUM_FILTERS
    for mean, emp, sigma in zip(bank.means, bank.covariances, SIGMAS, strict=True):
        target = cv.psd_project(cv.conv_covariance(5, sigma))
        diag = np.diag(target)
        # Standard error of a Gaussian sample covariance entry (Isserlis).
        stderr = np.sqrt((np.outer(diag, diag) + target**2) / n)
        assert np.all(np.abs(emp - target) <= 6.0 * stderr + 1e-5)
        assert np.all(np.abs(mean) <= 6.0 * np.sqrt(diag / n) + 1e-6)
        np.testing.assert_array_equal(emp, emp.T)


def test_from_model_matches_direct_estimate_on_multiplier_kernel():
    inputs = keras.Input((6, 6, 4))
    outputs = keras.layers.DepthwiseConv2D(3, depth_multiplier=3, name="dw")(inputs)
    model = keras.Model(inputs, outputs)
    kernel = np.asarray(keras.ops.convert_to_numpy(model.get_layer("dw").kernel.value), np.float64)
    filters = np.stack([kernel[:, :, a, b].reshape(-1) for a in range(4) for b in range(3)])
    bank = FilterCovariance.from_model(model)
    np.testing.assert_allclose(bank.means[0], filters.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(bank.covariances[0], np.cov(filters.T, ddof=1), atol=1e-12)
    assert bank.depth_fractions == (0.0,)


def test_from_model_without_spatial_convs_fails():
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    with pytest.raises(ValueError, match="no spatial depthwise"):
        FilterCovariance.from_model(model)


def test_from_model_mismatched_kernel_sizes_fails():
    model = two_layer_model(kernel_sizes=(3, 5), channels=4)
    with pytest.raises(ValueError, match="share one kernel size"):
        FilterCovariance.from_model(model)
    # Selecting layers of one size works.
    assert FilterCovariance.from_model(model, layers=["dw1"]).kernel_size == (5, 5)


# ----------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------
def test_invalid_banks_fail():
    cov = cv.conv_covariance(3, 1.0)
    with pytest.raises(ValueError, match="at least one layer"):
        FilterCovariance([], [], 3)
    bad = cov.copy()
    bad[1, 2] = bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="Layer 1"):
        FilterCovariance([np.zeros(9)] * 2, [cov, bad], 3)
    with pytest.raises(ValueError, match="shape"):
        FilterCovariance([np.zeros(9), np.zeros(25)], [cov, cv.conv_covariance(5, 1.0)], 3)
    asym = cov.copy()
    asym[0, 1] += 0.1
    with pytest.raises(ValueError, match="not symmetric"):
        FilterCovariance([np.zeros(9)], [asym], 3)
    with pytest.raises(ValueError, match="one entry per layer"):
        FilterCovariance([np.zeros(9)], [cov, cov], 3)
    with pytest.raises(ValueError, match="strictly increasing"):
        FilterCovariance([np.zeros(9)] * 2, [cov, cov], 3, depth_fractions=[0.5, 0.5])


# ----------------------------------------------------------------------------
# at_depth
# ----------------------------------------------------------------------------
def test_at_depth_exact_and_linear():
    bank = random_bank(num_layers=3)
    for d, mean, cov in zip(bank.depth_fractions, bank.means, bank.covariances, strict=True):
        got_mean, got_cov = bank.at_depth(d)
        np.testing.assert_array_equal(got_mean, mean)
        np.testing.assert_array_equal(got_cov, cov)
    mid_mean, mid_cov = bank.at_depth(0.25)
    np.testing.assert_allclose(mid_mean, 0.5 * (bank.means[0] + bank.means[1]), atol=1e-12)
    np.testing.assert_allclose(mid_cov, 0.5 * (bank.covariances[0] + bank.covariances[1]), atol=1e-12)
    _, cov_q = bank.at_depth(0.625)  # a quarter of the way from layer 1 to 2
    expected = 0.75 * bank.covariances[1] + 0.25 * bank.covariances[2]
    np.testing.assert_allclose(cov_q, expected, atol=1e-12)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            bank.at_depth(bad)


def test_at_depth_single_layer():
    bank = random_bank(num_layers=1)
    for d in (0.0, 0.4, 1.0):
        _, cov = bank.at_depth(d)
        np.testing.assert_array_equal(cov, bank.covariances[0])


# ----------------------------------------------------------------------------
# resized
# ----------------------------------------------------------------------------
def test_resized_same_size_is_identity():
    bank = random_bank(num_layers=2, k=5)
    same = bank.resized(5)
    for a, b in zip(bank.covariances + bank.means, same.covariances + same.means, strict=True):
        np.testing.assert_array_equal(a, b)
    assert same.depth_fractions == bank.depth_fractions


@pytest.mark.parametrize("source, target", [(7, 9), (9, 7), (5, (3, 7))])
def test_resized_shapes_and_symmetry(source, target):
    n_target = 9 * 9 if target == 9 else (49 if target == 7 else 21)
    bank = FilterCovariance([np.zeros(source**2)], [cv.conv_covariance(source, 1.0)], source)
    out = bank.resized(target)
    cov = out.covariances[0]
    assert cov.shape == (n_target, n_target)
    assert out.means[0].shape == (n_target,)
    np.testing.assert_array_equal(cov, cov.T)


@pytest.mark.parametrize("source, target", [(7, 9), (9, 7), (5, 9), (9, 5)])
@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_resized_keeps_centre_variance_largest(source, target, sigma):
    bank = FilterCovariance([np.zeros(source**2)], [cv.conv_covariance(source, sigma)], source)
    diag = np.diag(bank.resized(target).covariances[0]).reshape(target, target)
    centre = diag[target // 2, target // 2]
    others = np.delete(diag.reshape(-1), (target // 2) * target + target // 2)
    assert centre > others.max()


def test_resized_mean_pads_with_mean_and_crops():
    mean = np.arange(9.0)
    bank = FilterCovariance([mean], [np.eye(9)], 3)
    grown = bank.resized(5).means[0].reshape(5, 5)
    np.testing.assert_array_equal(grown[1:4, 1:4], mean.reshape(3, 3))
    assert np.all(grown[0] == mean.mean())
    back = bank.resized(5).resized(3).means[0]
    np.testing.assert_array_equal(back, mean)


def test_resized_crop_is_the_centre_pixels_distribution():
    bank = random_bank(num_layers=2, k=9)
    out = bank.resized((5, 3), method="crop")
    assert out.kernel_size == (5, 3)
    pairs = zip(out.covariances, out.means, bank.covariances, bank.means, strict=True)
    for cov, mean, src_cov, src_mean in pairs:
        expected = src_cov.reshape(9, 9, 9, 9)[2:7, 3:6, 2:7, 3:6].reshape(15, 15)
        np.testing.assert_array_equal(cov, expected)
        np.testing.assert_array_equal(mean, src_mean.reshape(9, 9)[2:7, 3:6].reshape(-1))
    with pytest.raises(ValueError, match="method='crop'.*only shrinks"):
        bank.resized(11, method="crop")


def _bilinear_resize(images, target):
    """Independent aligned-corner bilinear resize of ``(N, k, k)`` images with np.interp."""
    k = images.shape[-1]
    grid, pos = np.arange(k), np.linspace(0, k - 1, target)
    rows = np.stack([[np.interp(pos, grid, col) for col in image.T] for image in images]).transpose(0, 2, 1)
    return np.stack([[np.interp(pos, grid, row) for row in image] for image in rows])


@pytest.mark.parametrize("source, target", [(9, 5), (5, 9), (3, 7)])
def test_resized_interpolate_is_the_resized_filters_distribution(source, target):
    # Filters F with empirical mean and covariance (mu, Sigma): resizing every
    # filter bilinearly gives exactly the resized bank's mean and covariance.
    filters = np.random.default_rng(0).normal(size=(400, source, source)) + np.linspace(-1, 1, source)
    flat = filters.reshape(len(filters), -1)
    bank = FilterCovariance([flat.mean(0)], [np.cov(flat, rowvar=False)], source)
    resized = _bilinear_resize(filters, target).reshape(len(filters), -1)
    out = bank.resized(target, method="interpolate")
    np.testing.assert_allclose(out.means[0], resized.mean(0), atol=1e-12)
    np.testing.assert_allclose(out.covariances[0], np.cov(resized, rowvar=False), atol=1e-12)


def _stationary(k, scale):
    ii, jj = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    p = np.stack([ii.ravel(), jj.ravel()], 1)
    return np.exp(-((p[:, None] - p[None]) ** 2).sum(-1) / (2 * scale**2))


@pytest.mark.parametrize("source, target", [(9, 5), (5, 9)])
def test_consistent_resizes_stay_covariances_and_blocks_does_not(source, target):
    bank = FilterCovariance([np.zeros(source**2)], [_stationary(source, 2.0)], source)
    methods = ("interpolate", "crop") if target < source else ("interpolate",)
    for method in methods:
        assert np.linalg.eigvalsh(bank.resized(target, method=method).covariances[0]).min() > -1e-10
    crop = bank.resized(5, method="crop").covariances[0] if target < source else None
    if crop is not None:
        np.testing.assert_allclose(np.diag(crop), 1.0)  # a stationary covariance keeps its variance
    # The paper's block construction maps the two pixel indices differently (documented).
    assert np.linalg.eigvalsh(bank.resized(target).covariances[0]).min() < -0.05


def test_resized_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        random_bank(num_layers=1, k=3).resized(5, method="bicubic")


# ----------------------------------------------------------------------------
# kronecker
# ----------------------------------------------------------------------------
def test_kron_layout_matches_pixel_formula():
    # Sigma'[(i, j), (l, m)] = A[i, l] A[j, m] is numpy.kron(A, A) in vector layout.
    a = random_spd(4, np.random.default_rng(3))
    pixelwise = np.einsum("il,jm->ijlm", a, a).reshape(16, 16)
    np.testing.assert_array_equal(pixelwise, np.kron(a, a))


def test_kronecker_recovers_exact_product():
    rng = np.random.default_rng(1)
    covs = [np.kron(a, a) for a in (random_spd(5, rng), random_spd(5, rng))]
    bank = FilterCovariance([np.zeros(25)] * 2, covs, 5)
    kron_bank, errors = bank.kronecker()
    assert len(errors) == 2 and max(errors) < 1e-10
    for got, want in zip(kron_bank.covariances, covs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_kronecker_nonsquare_product_and_approximation_error():
    rng = np.random.default_rng(2)
    cov = np.kron(random_spd(3, rng), random_spd(5, rng))
    _, errors = FilterCovariance([np.zeros(15)], [cov], (3, 5)).kronecker()
    assert errors[0] < 1e-10
    # The closed-form covariance is not an exact Kronecker product.
    approx, errors = FilterCovariance([np.zeros(25)], [cv.conv_covariance(5, 1.0)], 5).kronecker()
    assert 0.0 < errors[0] < 1.0
    cov = approx.covariances[0]
    np.testing.assert_array_equal(cov, cov.T)
    assert np.all(np.diag(cov) > 0)


# ----------------------------------------------------------------------------
# structure
# ----------------------------------------------------------------------------
def test_structure_separates_iid_from_centre_heavy_covariances():
    n = 81
    iid = FilterCovariance([np.zeros(n)], [np.eye(n) * 0.004], 9)
    (s,) = iid.structure()
    assert s["total_variance"] == pytest.approx(0.324)
    assert s["centre_ratio"] == pytest.approx(1.0)
    assert s["top_eigen_share"] == pytest.approx(1 / n)
    cov = cv.conv_covariance(9, 0.5)
    cov = (cov + cov.T) / 2
    (t,) = FilterCovariance([np.zeros(n)], [cov], 9).structure()
    assert t["total_variance"] == pytest.approx(np.trace(cov))
    assert t["centre_ratio"] == pytest.approx(cov[40, 40] / (np.trace(cov) / n))
    assert t["centre_ratio"] > 10 and t["top_eigen_share"] > 5 / n


# ----------------------------------------------------------------------------
# patch_size metadata
# ----------------------------------------------------------------------------
def test_patch_size_defaults_to_none_and_is_validated():
    assert random_bank().patch_size is None
    assert random_bank(patch_size=4).patch_size == 4
    assert "patch_size=4" in repr(random_bank(patch_size=4))
    for bad in (0, -2):
        with pytest.raises(ValueError, match="patch_size"):
            random_bank(patch_size=bad)
    for bad in (2.0, "2", True):
        with pytest.raises(TypeError, match="patch_size"):
            random_bank(patch_size=bad)


def test_patch_size_kept_by_derived_banks():
    bank = random_bank(num_layers=2, k=5, patch_size=2)
    assert bank.resized(7).patch_size == 2
    assert bank.resized(5).patch_size == 2
    assert bank.resized((3, 7)).patch_size == 2
    assert bank.kronecker()[0].patch_size == 2


@pytest.mark.parametrize("patch_size", [1, 4])
def test_from_model_infers_patch_size_of_convmixer(patch_size):
    from keras_structinit.models import convmixer

    model = convmixer(8, 2, kernel_size=3, patch_size=patch_size, input_shape=(8, 8, 3))
    bank = FilterCovariance.from_model(model)
    assert bank.patch_size == patch_size
    assert bank.resized(5).patch_size == patch_size
    assert FilterCovariance.from_model(model, patch_size=None).patch_size is None
    assert FilterCovariance.from_model(model, patch_size=3).patch_size == 3
    with pytest.raises(ValueError, match="patch_size"):
        FilterCovariance.from_model(model, patch_size="auto")
    with pytest.raises(ValueError, match="patch_size"):
        FilterCovariance.from_model(model, patch_size=0)


def test_from_model_without_patch_embedding_gives_none(sampled_model):
    assert FilterCovariance.from_model(sampled_model).patch_size is None  # depthwise convs only
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, strides=2, name="stem")(inputs)  # not a patch embedding
    x = keras.layers.Conv2D(4, 2, strides=2, name="later")(x)
    outputs = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    assert FilterCovariance.from_model(keras.Model(inputs, outputs)).patch_size is None
