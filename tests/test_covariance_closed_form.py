"""covariance/closed_form.py: the closed-form covariance (Eq. 1, 5, 6, 10) against references written from
the equations, and its layouts."""

import math

import numpy as np
import pytest

from keras_structinit import covariance as cv

from conftest import once_per_suite

pytestmark = once_per_suite("the closed forms are NumPy")

KERNEL_SIZES = [3, 5, 7, 9, 15]
SIGMAS = [0.08, 0.5, 1.5, 3.5]


# ---------------------------------------------------------------------------
# Independent references, written straight from the equations with
# explicit loops and np.kron / np.block (no package code).
# ---------------------------------------------------------------------------
def ref_delta(a, b, k):
    c = k // 2
    return ((a - b + c) % k) - c


def ref_gaussian(r, s, k, sigma):
    """Eq. 5: G_(r,s)[i, j] = exp(-(delta(i,r)^2 + delta(j,s)^2) / (2 sigma))."""
    g = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            g[i, j] = math.exp(-(ref_delta(i, r, k) ** 2 + ref_delta(j, s, k) ** 2) / (2 * sigma))
    return g


def ref_block_covariance(k, sigma):
    """Eq. 6 and 10: Sigma_blk = 1/2 [M * (C - S) + C * S]."""
    C = np.block([[ref_gaussian(i, j, k, sigma) for j in range(k)] for i in range(k)])
    Z = ref_gaussian(k // 2, k // 2, k, sigma)
    S = np.kron(np.ones((k, k)), Z)
    M = np.kron(Z, np.ones((k, k)))
    return 0.5 * (M * (C - S) + C * S)


def ref_vector_covariance(k, sigma):
    """Eq. 1: Sigma'[k*i + j, k*l + m] = Sigma_blk[k*i + l, k*j + m]."""
    blk = ref_block_covariance(k, sigma)
    out = np.empty((k * k, k * k))
    for i in range(k):
        for j in range(k):
            for l in range(k):
                for m in range(k):
                    out[k * i + j, k * l + m] = blk[k * i + l, k * j + m]
    return out


def ref_pixel_covariance(kernel_size, sigma):
    """Any rank: Sigma'[p, q] = 1/2 [Z[p](G_p[q] - Z[q]) + G_p[q] Z[q]], per-axis wrap."""
    pixels = list(np.ndindex(*kernel_size))
    centre = tuple(k // 2 for k in kernel_size)

    def g(p, q):
        d2 = sum(ref_delta(qa, pa, k) ** 2 for pa, qa, k in zip(p, q, kernel_size, strict=True))
        return math.exp(-d2 / (2 * sigma))

    n = len(pixels)
    out = np.empty((n, n))
    for a, p in enumerate(pixels):
        for b, q in enumerate(pixels):
            zp, zq, gpq = g(centre, p), g(centre, q), g(p, q)
            out[a, b] = 0.5 * (zp * (gpq - zq) + gpq * zq)
    return out


# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", KERNEL_SIZES)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_conv_covariance_matches_reference(k, sigma):
    got = cv.conv_covariance(k, sigma)
    assert got.dtype == np.float64 and got.shape == (k * k, k * k)
    np.testing.assert_allclose(got, ref_vector_covariance(k, sigma), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("k", KERNEL_SIZES)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_block_form_matches_reference_and_is_block_symmetric(k, sigma):
    blk = cv.conv_covariance_blocks(k, sigma)
    np.testing.assert_allclose(blk, ref_block_covariance(k, sigma), rtol=0, atol=1e-12)
    # Block-transpose: block (i, j) equals block (j, i) transposed.
    blocks = blk.reshape(k, k, k, k)  # [i, l, j, m] = block (i, j) entry (l, m)
    block_transposed = blocks.transpose(2, 3, 0, 1).reshape(k * k, k * k)
    np.testing.assert_allclose(block_transposed, blk, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(cv.block_to_vector(blk, k), cv.conv_covariance(k, sigma))


@pytest.mark.parametrize("kernel_size", [(3, 5), (5, 3), (4, 4), (2, 7), (6,), (3, 3, 3), (1, 5)])
def test_non_square_and_other_ranks_match_pixel_reference(kernel_size):
    got = cv.conv_covariance(kernel_size, 0.9)
    np.testing.assert_allclose(got, ref_pixel_covariance(kernel_size, 0.9), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got, got.T)


def test_square_int_and_tuple_agree():
    np.testing.assert_array_equal(cv.conv_covariance(7, 1.0), cv.conv_covariance((7, 7), 1.0))


def test_centre_pixel_has_largest_variance():
    for k in (5, 9):
        diag = np.diag(cv.conv_covariance(k, 1.0)).reshape(k, k)
        assert np.unravel_index(np.argmax(diag), diag.shape) == (k // 2, k // 2)
        # 1/2 [Z[c] (G_c[c] - Z[c]) + G_c[c] Z[c]] = 1/2 [0 + 1]
        assert diag[k // 2, k // 2] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: cv.conv_covariance(5, 0.0), ValueError, "sigma"),
        (lambda: cv.conv_covariance(5, -1.0), ValueError, "sigma"),
        (lambda: cv.conv_covariance(5, float("nan")), ValueError, "sigma"),
        (lambda: cv.conv_covariance(5, "1"), TypeError, "sigma"),
        (lambda: cv.conv_covariance(0, 1.0), ValueError, "kernel_size"),
        (lambda: cv.conv_covariance((3, 2.5), 1.0), TypeError, "kernel_size"),
        (lambda: cv.conv_covariance(True, 1.0), TypeError, "kernel_size"),
        (lambda: cv.conv_covariance_blocks((3,), 1.0), ValueError, "kernel_size"),
        (lambda: cv.vector_to_block(np.eye(9), 5), ValueError, "shape"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
