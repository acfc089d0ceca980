"""LC blocks' pure math: folding, bank slicing and recycling, pruning masks, Table 1 arithmetic."""

import itertools
import math

import numpy as np
import pytest

from keras_structinit import lc

from conftest import once_per_suite

pytestmark = once_per_suite("LC math is NumPy")


# Independent references written from the definitions with explicit loops.
def ref_fold(spatial, pointwise):
    kh, kw, c_in, m = spatial.shape
    out = np.zeros((kh, kw, c_in, pointwise.shape[1]))
    for i, j, c, f in itertools.product(range(kh), range(kw), range(c_in), range(pointwise.shape[1])):
        out[i, j, c, f] = sum(spatial[i, j, c, q] * pointwise[q, f] for q in range(m))
    return out


def ref_bank_kernel(bank, shape):
    """K[i, j, c, o] = W[((o * c_in + c) * kh + i) * kw + j], W the bank repeated end to end."""
    kh, kw, c_in, c_out = shape
    out = np.zeros(shape)
    for i, j, c, o in itertools.product(range(kh), range(kw), range(c_in), range(c_out)):
        out[i, j, c, o] = bank[(((o * c_in + c) * kh + i) * kw + j) % len(bank)]
    return out


def test_fold_matches_the_definition():
    rng = np.random.default_rng(0)
    spatial, pointwise = rng.standard_normal((3, 2, 4, 6)), rng.standard_normal((6, 5))
    np.testing.assert_allclose(lc.fold_kernels(spatial, pointwise), ref_fold(spatial, pointwise), rtol=1e-12)
    # A (1, 1, M, F) 1x1 kernel is accepted as it is stored by LCConv2D.
    np.testing.assert_array_equal(
        lc.fold_kernels(spatial, pointwise[None, None]), lc.fold_kernels(spatial, pointwise)
    )
    with pytest.raises(ValueError, match="pointwise"):
        lc.fold_kernels(spatial, rng.standard_normal((5, 5)))


@pytest.mark.parametrize("shape", [(3, 3, 2, 4), (5, 3, 3, 2), (1, 1, 4, 3)])
def test_bank_kernel_is_the_pytorch_order_prefix(shape):
    bank = np.random.default_rng(1).uniform(-1, 1, math.prod(shape) + 7)
    kernel = lc.bank_kernel(bank, shape)
    np.testing.assert_array_equal(kernel, ref_bank_kernel(bank, shape))
    # Seen from PyTorch's (c_out, c_in, kh, kw) layout it is the plain prefix.
    np.testing.assert_array_equal(kernel.transpose(3, 2, 0, 1).reshape(-1), bank[: math.prod(shape)])
    # Each kh x kw filter is a contiguous run of the bank: filter (o=1, c=0) starts at c_in kh kw.
    kh, kw, c_in, _ = shape
    start = c_in * kh * kw
    np.testing.assert_array_equal(kernel[:, :, 0, 1].reshape(-1), bank[start : start + kh * kw])


def test_recycled_bank_repeats_whole_filters():
    shape = (3, 3, 4, 8)  # 32 filters of 9 values
    bank = np.random.default_rng(2).uniform(-1, 1, 9 * 5)  # 5 filters, repeated
    kernel = lc.bank_kernel(bank, shape, recycle=True)
    np.testing.assert_array_equal(kernel, ref_bank_kernel(bank, shape))
    filters = kernel.transpose(3, 2, 0, 1).reshape(-1, 9)
    for n, f in enumerate(filters):
        np.testing.assert_array_equal(f, bank.reshape(5, 9)[n % 5])


def test_bank_too_small_or_not_whole_filters_is_an_error():
    with pytest.raises(ValueError, match="recycle=True"):
        lc.bank_kernel(np.zeros(10), (3, 3, 2, 1))
    with pytest.raises(ValueError, match="multiple of 9"):
        lc.bank_kernel(np.zeros(10), (3, 3, 2, 1), recycle=True)
    lc.check_bank_fits(18, (3, 3, 2, 1), recycle=False)  # exactly fits
    with pytest.raises(ValueError, match="shape"):
        lc.bank_kernel(np.zeros(10), (3, 3, 2))


def test_bank_size_and_scale():
    shapes = [(3, 3, 3, 2048), (3, 3, 64, 8192), (3, 3, 32, 8192)]
    assert lc.bank_size(shapes) == 4_718_592  # LCResNet-20-16x128's largest kernel
    assert lc.bank_size(shapes, 1 / 16) == 294_912 == 9 * 32_768
    assert lc.bank_size([(3, 3, 1, 1)], 1 / 16) == 9  # at least one whole filter
    assert lc.kernel_scale((3, 3, 16, 7)) == pytest.approx(1 / 12)
    with pytest.raises(ValueError, match="fraction"):
        lc.bank_size(shapes, 0.0)
    with pytest.raises(ValueError, match="fraction"):
        lc.bank_size(shapes, 1.5)
    with pytest.raises(TypeError, match="shapes"):
        lc.bank_size([])


def test_magnitude_masks_prune_exactly_round_ratio_n():
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((1, 1, 7, 3)), rng.standard_normal((5, 2))]
    masks = lc.magnitude_masks(arrays, 0.7)
    assert [m.shape for m in masks] == [a.shape for a in arrays]
    pruned = sum(int((~m).sum()) for m in masks)
    assert pruned == lc.pruned_count(31, 0.7) == 22
    kept = np.concatenate([np.abs(a[m]) for a, m in zip(arrays, masks, strict=True)])
    dropped = np.concatenate([np.abs(a[~m]) for a, m in zip(arrays, masks, strict=True)])
    assert dropped.max() <= kept.min()
    # Ties (here: all equal) still give the exact count.
    assert sum(int((~m).sum()) for m in lc.magnitude_masks([np.ones(10)], 0.35)) == 4
    assert all(m.all() for m in lc.magnitude_masks(arrays, 0.0))


@pytest.mark.parametrize("ratio, error", [(1.0, ValueError), (-0.1, ValueError), ("0.5", TypeError)])
def test_pruning_ratio_must_be_in_0_1(ratio, error):
    with pytest.raises(error, match="ratio"):
        lc.magnitude_masks([np.ones(3)], ratio)


# Table 1 of the paper (LCResNet-20-16x128, cumulative rows) and the counts quoted in the issue.
def test_table_1_arithmetic():
    counts = lc.lcresnet_parameter_counts
    baseline = counts(20, 16, 128, frozen=False)
    assert (baseline["spatial"], baseline["pointwise"]) == (34_265_088, 4_161_536)
    assert baseline["total"] - baseline["spatial"] - baseline["pointwise"] == 1_376 + 650
    assert (baseline["total"], baseline["learnable"]) == (38_428_650, 38_428_650)
    assert (counts(20, 16, 128)["total"], counts(20, 16, 128)["learnable"]) == (38_428_650, 4_163_562)
    assert counts(20, 16, 128, sharing="global")["total"] == 8_882_154
    # Recycled (1/16 of the largest kernel) and pruned (rho = 0.7) rows, derived.
    assert counts(20, 16, 128, sharing="recycled")["total"] == 4_458_474
    assert counts(20, 16, 128, sharing="recycled", prune_ratio=0.7)["nonzero"] == 1_545_399
    assert (counts(20, 16, 1)["total"], counts(20, 16, 1)["learnable"]) == (302_234, 34_538)
    assert (counts(20, 16, 8)["total"], counts(20, 16, 8)["learnable"]) == (2_403_690, 262_122)
    # Option B adds two 1x1 projections with BatchNorm: 16*32 + 64 + 32*64 + 128.
    assert counts(20, 16, 1, shortcut="B")["total"] - counts(20, 16, 1)["total"] == 2_752


def test_lcresnet_convs_and_depth_check():
    convs = lc.lcresnet_convs(8, 4)
    assert convs == [(3, 4, 1), (4, 4, 1), (4, 4, 1), (4, 8, 2), (8, 8, 1), (8, 16, 2), (16, 16, 1)]
    assert len(lc.lcresnet_convs(20, 16)) == 19
    for bad in (2, 7, 21):
        with pytest.raises(ValueError, match="6n"):
            lc.lcresnet_convs(bad, 16)
    with pytest.raises(ValueError, match="sharing"):
        lc.lcresnet_parameter_counts(sharing="partial")
