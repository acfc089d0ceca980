"""Data-aligned init, pure NumPy parts: patch covariance, misalignment, component scales."""

import numpy as np
import pytest

from keras_structinit.alignment import (
    component_scales,
    extract_patches,
    filter_covariance,
    misalignment,
    patch_covariance,
    random_basis,
    sorted_eigh,
)
from keras_structinit.alignment.components import check_components, cycled_filters
from keras_structinit.alignment.measures import eigenspaces

from conftest import once_per_suite

# Maennel et al., App. D.1: eigenvalues of the covariance of 5x5 patches of 30,000
# CIFAR-10 training images scaled to [-1, 1].
PAPER_D1_SPECTRUM = [12.3, 1.45, 1.18, 1.06, 0.37, 0.32, 0.28, 0.23, 0.128, 0.126, 0.115, 0.096]


def brute_force(images, kernel_size, centered=True):
    patches = extract_patches(images, kernel_size)
    patches = patches.reshape(-1, patches.shape[-1])
    if centered:
        patches = patches - patches.mean(axis=0)
    return patches.T @ patches / len(patches)


def as_matrix(eigvals, eigvecs):
    return (eigvecs * eigvals) @ eigvecs.T


def spd(eigvals, basis):
    return (basis * np.asarray(eigvals)) @ basis.T


@pytest.mark.parametrize("kernel_size", [3, (2, 4), (4, 1), (9, 11)])
@pytest.mark.parametrize("centered", [True, False])
def test_streamed_covariance_equals_the_brute_force_one(kernel_size, centered):
    images = np.random.default_rng(0).standard_normal((37, 9, 11, 2)) + 0.3
    expected = brute_force(images, kernel_size, centered)
    for batch_size in (1, 5, 100):
        got = as_matrix(*patch_covariance(images, kernel_size, centered=centered, batch_size=batch_size))
        np.testing.assert_allclose(got, expected, atol=1e-12)
    # An iterable of batches (e.g. a generator, or (images, labels) pairs) gives the same.
    stream = ((images[i : i + 8], np.zeros(8)) for i in range(0, 37, 8))
    np.testing.assert_allclose(
        as_matrix(*patch_covariance(stream, kernel_size, centered=centered)), expected, atol=1e-12
    )


def test_eigenpairs_are_sorted_and_signed_deterministically():
    images = np.random.default_rng(1).random((20, 8, 8, 3)).astype(np.float32)
    eigvals, eigvecs = patch_covariance(images, 3)
    assert eigvals.shape == (27,) and eigvecs.shape == (27, 27) and eigvecs.dtype == np.float64
    assert np.all(np.diff(eigvals) <= 0)
    np.testing.assert_allclose(eigvecs.T @ eigvecs, np.eye(27), atol=1e-12)
    largest = eigvecs[np.argmax(np.abs(eigvecs), axis=0), np.arange(27)]
    assert np.all(largest > 0)


def test_recovers_a_known_gaussian_patch_distribution():
    # One patch per image (images of the kernel's size), drawn from N(mu, Q diag(lambda) Q^T).
    rng = np.random.default_rng(2)
    basis = random_basis(27, seed=3)
    eigvals = 2.0 * 0.7 ** np.arange(27)
    n = 40_000
    patches = rng.standard_normal((n, 27)) * np.sqrt(eigvals) @ basis.T + 0.5
    got_vals, got_vecs = patch_covariance(patches.reshape(n, 3, 3, 3), 3, batch_size=4096)
    # Sampling error of an eigenvalue: about lambda * sqrt(2 / n) (0.7%).
    np.testing.assert_allclose(got_vals, eigvals, rtol=6 * np.sqrt(2 / n))
    cosines = np.abs(np.sum(got_vecs[:, :8] * basis[:, :8], axis=0))
    assert cosines.min() > 0.99, cosines


def test_max_patches_is_a_batch_independent_random_subset():
    images = np.random.default_rng(4).standard_normal((30, 10, 10, 1))
    full = as_matrix(*patch_covariance(images, 3))
    everything = as_matrix(*patch_covariance(images, 3, max_patches=10**6))
    np.testing.assert_allclose(everything, full, atol=1e-12)
    subsets = [
        as_matrix(*patch_covariance(images, 3, max_patches=500, seed=7, batch_size=b)) for b in (1, 7, 30)
    ]
    for other in subsets[1:]:
        np.testing.assert_allclose(other, subsets[0], atol=1e-12)
    assert not np.allclose(subsets[0], full)
    other_seed = as_matrix(*patch_covariance(images, 3, max_patches=500, seed=8))
    assert not np.allclose(other_seed, subsets[0])
    assert np.abs(subsets[0] - full).max() < 0.5  # 500 of 1,920 patches: near the full covariance


def test_patch_covariance_bad_input():
    with pytest.raises(ValueError, match=r"`kernel_size` \(5, 5\) is larger than the images \(4x4"):
        patch_covariance(np.zeros((2, 4, 4, 3)), 5)
    with pytest.raises(ValueError, match=r"images \(N, H, W, C\)"):
        patch_covariance(np.zeros((4, 4, 3)), 3)
    with pytest.raises(ValueError, match="holds no images"):
        patch_covariance(np.zeros((0, 8, 8, 3)), 3)
    with pytest.raises(ValueError, match="one image shape"):
        patch_covariance([np.zeros((2, 8, 8, 3)), np.zeros((2, 9, 8, 3))], 3)
    with pytest.raises(TypeError, match="images"):
        patch_covariance("images.zip", 3)
    with pytest.raises(ValueError, match="kernel_size"):
        patch_covariance(np.zeros((2, 8, 8, 3)), (3, 3, 3))
    with pytest.raises(ValueError, match="max_patches"):
        patch_covariance(np.zeros((2, 8, 8, 3)), 3, max_patches=0)
    with pytest.raises(TypeError, match="centered"):
        patch_covariance(np.zeros((2, 8, 8, 3)), 3, centered=1)


@pytest.mark.parametrize("max_patches", [None, 500])
def test_non_finite_images_are_a_value_error_naming_them(max_patches):
    """Issue 32: one NaN pixel gave NaN eigenvalues and eigenvectors without a word."""
    images = np.random.default_rng(0).standard_normal((10, 8, 8, 3))
    for bad, what in ((np.nan, "1 NaN and 0 inf"), (np.inf, "0 NaN and 1 inf"), (-np.inf, "0 NaN and 1 inf")):
        broken = images.copy()
        broken[6, 2, 3, 1] = bad
        with pytest.raises(ValueError, match=rf"`images` must be finite: image 6 holds NaN or inf \({what}"):
            patch_covariance(broken, 3, max_patches=max_patches)
        # The image is counted across batches of a stream too.
        with pytest.raises(ValueError, match="image 6 holds NaN"):
            patch_covariance((broken[i : i + 4] for i in range(0, 10, 4)), 3, max_patches=max_patches)


@pytest.mark.parametrize("max_patches", [None, 100_000])
def test_large_finite_images_do_not_overflow(max_patches):
    images = np.random.default_rng(1).standard_normal((6, 7, 7, 2))
    eigvals, eigvecs = patch_covariance(images, 3, max_patches=max_patches)
    # Squares of 1e150 overflow float64; the covariance (1e300) does not.
    big_vals, big_vecs = patch_covariance(images * 1e150, 3, max_patches=max_patches)
    np.testing.assert_allclose(big_vals, eigvals * 1e300, rtol=1e-9)
    np.testing.assert_allclose(np.abs(big_vecs.T @ eigvecs), np.eye(18), atol=1e-6)
    # A stream whose later batches are larger rescales what it summed so far.
    stream = [images[:3], images[3:] * 2.0**200]
    scaled = np.concatenate([images[:3], images[3:] * 2.0**200]) / 2.0**200
    np.testing.assert_allclose(
        patch_covariance(stream, 3)[0], patch_covariance(scaled, 3)[0] * 2.0**400, rtol=1e-9
    )
    # A covariance beyond float64 (values ~1e200) is a clear error, not inf or NaN.
    with pytest.raises(ValueError, match="exceeds float64's range .*scale the images down"):
        patch_covariance(images * 1e200, 3, max_patches=max_patches)
    with pytest.raises(ValueError, match="exceeds float64's range"):
        patch_covariance(images * 0 + 1e200, 3, max_patches=max_patches)


@once_per_suite("NumPy only")
def test_cifar10_spectrum_matches_the_paper(shared_cifar10):
    # 30,000 of the 45,000 training images (the held-out 10% excluded), as the benchmark does.
    ((x, _), _), _ = shared_cifar10
    x = x[np.sort(np.random.default_rng(0).choice(len(x), 30_000, replace=False))]
    scaled = (x[i : i + 256] / 127.5 - 1.0 for i in range(0, len(x), 256))  # [-1, 1], streamed
    eigvals, _ = patch_covariance(scaled, 5)
    assert eigvals.shape == (75,)
    # Measured 12.30 1.447 1.134 1.059 0.375 0.330 0.287 0.226 0.130 0.128 0.117 0.100 (as the benchmark);
    # JPEG compression and the paper's rounding stay within 5%.
    np.testing.assert_allclose(eigvals[:12], PAPER_D1_SPECTRUM, rtol=0.05)


def test_misalignment_is_zero_for_aligned_pairs_and_positive_otherwise():
    basis = random_basis(6, seed=0)
    sigma_x = spd([6, 5, 4, 3, 2, 1], basis)
    aligned = spd([0.1, 3.0, 7.0, 0.5, 2.0, 1.0], basis)  # same eigenvectors, any eigenvalues
    assert abs(misalignment(sigma_x, aligned)) < 1e-9
    assert abs(misalignment(sigma_x, np.eye(6))) < 1e-9  # the identity is aligned with everything
    other = spd([0.1, 3.0, 7.0, 0.5, 2.0, 1.0], random_basis(6, seed=1))
    assert misalignment(sigma_x, other) > 0.1


def test_misalignment_invariances():
    rng = np.random.default_rng(5)
    sigma_x = spd(np.linspace(5, 1, 5), random_basis(5, seed=2))
    a = rng.standard_normal((5, 8))
    sigma_w = a @ a.T / 8
    value = misalignment(sigma_x, sigma_w)
    assert value > 0
    assert misalignment(sigma_x, 37.0 * sigma_w) == pytest.approx(value, rel=1e-10)  # scale invariant
    q = random_basis(5, seed=9)
    assert misalignment(q @ sigma_x @ q.T, q @ sigma_w @ q.T) == pytest.approx(value, rel=1e-9)  # equivariant
    _, eigvecs = np.linalg.eigh(sigma_x)
    assert misalignment(None, sigma_w, basis=eigvecs) == pytest.approx(value, rel=1e-12)


def _misalignment_by_definition(spaces, sigma_w):
    """``inf D(Sigma, Sigma_w) over Sigma = sum_i l_i P_i`` (the definition in App. D.4), ``P_i`` the
    projectors onto the orthonormal column blocks ``spaces``: D separates into one convex function
    of ``log l_i`` per space, minimized on a fine grid and refined."""
    inverse = np.linalg.inv(sigma_w)
    total = -sum(v.shape[1] for v in spaces)
    for v in spaces:
        b, c = np.trace(v.T @ sigma_w @ v), np.trace(v.T @ inverse @ v)
        grid = np.linspace(-12.0, 12.0, 200_001)
        values = (np.exp(-grid) * b + np.exp(grid) * c) / 2
        best = grid[np.argmin(values)]
        fine = np.linspace(best - 1e-3, best + 1e-3, 20_001)
        total += ((np.exp(-fine) * b + np.exp(fine) * c) / 2).min()
    return total


def test_misalignment_sums_over_eigenspaces_of_repeated_eigenvalues():
    """Prop. 2, item 7: the sum runs over the eigenspaces of Sigma_x, not over single eigenvectors."""
    assert misalignment(np.eye(2), np.diag([1.0, 2.0])) == pytest.approx(
        np.sqrt(4.5) - 2, abs=1e-12
    )  # 0.1213
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 9))
    sigma_w = a @ a.T / 9
    e = np.eye(3)
    expected = _misalignment_by_definition([e[:, :1], e[:, 1:]], sigma_w)  # A = diag(2, 1, 1)
    assert misalignment(np.diag([2.0, 1.0, 1.0]), sigma_w) == pytest.approx(expected, abs=1e-7)
    # Distinct eigenvalues: one space per eigenvector, as before.
    distinct = _misalignment_by_definition([e[:, :1], e[:, 1:2], e[:, 2:]], sigma_w)
    assert misalignment(np.diag([3.0, 2.0, 1.0]), sigma_w) == pytest.approx(distinct, abs=1e-7)
    assert distinct < expected  # split spaces leave Sigma more freedom: sum sqrt(b c) <= sqrt(sum b sum c)
    # The basis eigh picks inside a repeated eigenspace does not matter (item 6).
    q = random_basis(3, seed=4)
    rotated = np.diag([1.0, 1.0, 2.0])
    assert misalignment(q @ rotated @ q.T, sigma_w) == pytest.approx(
        _misalignment_by_definition([q[:, :2], q[:, 2:]], sigma_w), abs=1e-7
    )
    np.testing.assert_array_equal(eigenspaces([1.0, 1.0, 2.0, 2.0 + 1e-14, 3.0]), [0, 0, 1, 1, 2])


def test_random_basis_control():
    # The paper's control: the same sum over a random orthonormal basis instead of Sigma_x's eigenvectors.
    basis = random_basis(8, seed=0)
    sigma_x = spd(np.linspace(8, 1, 8), basis)
    sigma_w = spd(np.geomspace(4, 0.1, 8), basis)
    assert abs(misalignment(sigma_x, sigma_w)) < 1e-9
    control = misalignment(sigma_x, sigma_w, basis=random_basis(8, seed=1))
    assert control > 0.5
    assert abs(misalignment(sigma_x, np.eye(8), basis=random_basis(8, seed=1))) < 1e-9
    partial = random_basis(8, seed=2)[:, :3]  # k < d columns: k terms, minus k
    assert misalignment(None, sigma_w, basis=partial) >= 0
    q = random_basis(8, seed=3)
    np.testing.assert_allclose(q.T @ q, np.eye(8), atol=1e-12)
    assert np.linalg.det(random_basis(8, seed=3)) == pytest.approx(np.linalg.det(q))


def test_misalignment_bad_input():
    sigma_x = np.diag([3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match=r"`sigma_w` must be positive definite.*rank 2 of 3"):
        misalignment(sigma_x, np.diag([1.0, 1.0, 0.0]))
    kernel = np.random.default_rng(0).standard_normal((3, 3, 3, 16))  # 16 filters in 27 dimensions
    with pytest.raises(ValueError, match="rank 16 of 27"):
        misalignment(np.eye(27), filter_covariance(kernel))
    with pytest.raises(ValueError, match="symmetric"):
        misalignment(sigma_x, np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]]))
    with pytest.raises(ValueError, match=r"`sigma_x` must be a \(3, 3\) matrix"):
        misalignment(np.eye(4), np.eye(3))
    with pytest.raises(ValueError, match="orthonormal"):
        misalignment(None, np.eye(3), basis=np.ones((3, 2)))
    with pytest.raises(ValueError, match="only when `basis` is given"):
        misalignment(None, np.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        misalignment(sigma_x, np.full((3, 3), np.nan))


def test_filter_covariance_uses_the_patch_order():
    kernel = np.random.default_rng(1).standard_normal((3, 2, 4, 5))
    filters = np.stack([kernel[..., o].reshape(-1) for o in range(5)])  # one row per filter
    np.testing.assert_allclose(filter_covariance(kernel), filters.T @ filters / 5, atol=1e-12)
    centered = filters - filters.mean(axis=0)
    np.testing.assert_allclose(
        filter_covariance(kernel, centered=True), centered.T @ centered / 5, atol=1e-12
    )
    with pytest.raises(ValueError, match="rank >= 2"):
        filter_covariance(np.ones(3))


def test_component_scales_and_cycled_filters():
    eigvals = np.array([4.0, 1.0, 0.25, -1e-17])
    np.testing.assert_array_equal(component_scales(eigvals), np.ones(4))
    np.testing.assert_allclose(component_scales(eigvals, 0.5), [2.0, 1.0, 0.5, 0.0])
    np.testing.assert_allclose(component_scales(eigvals, lambda v: v + 1), eigvals + 1)
    np.testing.assert_allclose(component_scales(eigvals, [1, 2, 3, 4]), [1, 2, 3, 4])
    with pytest.raises(ValueError, match="one per component"):
        component_scales(eigvals, [1, 2])
    with pytest.raises(TypeError, match="`f` must be None"):
        component_scales(eigvals, "flat")
    with pytest.raises(ValueError, match="non-finite"):
        component_scales(eigvals, -1.0)
    basis = random_basis(4, seed=0)
    filters = cycled_filters(basis[:, :2], np.array([2.0, 3.0]), 5)
    np.testing.assert_allclose(filters, basis[:, [0, 1, 0, 1, 0]] * [2, 3, 2, 3, 2])


def test_check_components():
    eigvals, eigvecs = sorted_eigh(spd([3, 2, 1, 0.5], random_basis(4, seed=0)))
    vals, vecs = check_components(eigvals, eigvecs, 2)
    np.testing.assert_array_equal(vals, eigvals[:2])
    np.testing.assert_array_equal(vecs, eigvecs[:, :2])
    with pytest.raises(ValueError, match=r"`n_components` must be at most .* patch dimension is 4"):
        check_components(eigvals, eigvecs, 5)
    with pytest.raises(ValueError, match="correspond one to one"):
        check_components(eigvals[:3], eigvecs, 2)
    with pytest.raises(ValueError, match="orthonormal"):
        check_components(eigvals, 2 * eigvecs, 2)
    with pytest.raises(TypeError, match="n_components"):
        check_components(eigvals, eigvecs, 2.0)


@once_per_suite("pure NumPy")
def test_transfer_function_is_the_weight_variance_along_each_data_eigenvector():
    """tau_i^2 = v_i^T Sigma_w v_i (Maennel et al., Sec. 2.3, App. A.8), largest sigma_i^2 first."""
    from keras_structinit.alignment.measures import transfer_function

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 6, 6))
    sigma_x, sigma_w = a @ a.T, b @ b.T
    sigma2, tau2 = transfer_function(sigma_x, sigma_w)
    vals, vecs = np.linalg.eigh(sigma_x)
    order = np.argsort(vals)[::-1]
    np.testing.assert_allclose(sigma2, vals[order])
    np.testing.assert_allclose(tau2, [vecs[:, i] @ sigma_w @ vecs[:, i] for i in order])
    assert tau2.sum() == pytest.approx(np.trace(sigma_w))
    np.testing.assert_allclose(transfer_function(sigma_x, np.eye(6))[1], 1.0)  # isotropic weights
    # A repeated eigenvalue: its space's mean, whatever basis eigh picks (tr(diag(1, 3)) / 2 = 2).
    np.testing.assert_allclose(
        transfer_function(np.diag([5.0, 1.0, 1.0]), np.diag([7.0, 1.0, 3.0]))[1], [7.0, 2.0, 2.0]
    )
    singular = np.outer([1.0, 0, 0], [1.0, 0, 0])  # one filter direction: Sigma_w of rank 1 is fine
    np.testing.assert_allclose(transfer_function(np.diag([3.0, 2.0, 1.0]), singular)[1], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="`sigma_x` must be a \\(3, 3\\) matrix"):
        transfer_function(np.eye(2), np.eye(3))
