"""apply_filter_transfer: direct copying of learned depthwise filters."""

import keras
import numpy as np
import pytest

from keras_structinit.covariance.filter_transfer import apply_filter_transfer
from keras_structinit.engine.walker import find_kernels
from keras_structinit.models.convmixer_model import convmixer


def make(dim, depth, kernel_size=5, seed=None):
    if seed is not None:
        keras.utils.set_random_seed(seed)
    return convmixer(dim, depth, kernel_size=kernel_size, num_classes=3, input_shape=(8, 8, 3))


def kernels(model):
    return [np.array(keras.ops.convert_to_numpy(k.value)) for _, k in find_kernels(model)]


def filter_rows(kernel):
    """The H filters of a kernel as rows of length kh * kw."""
    n = kernel.shape[0] * kernel.shape[1]
    return kernel.reshape(n, -1).T


def test_wider_deeper_target_copies_nearest_layer():
    source, target = make(8, 2, seed=1), make(16, 4, seed=2)
    before = [w.copy() for w in source.get_weights()]
    paths = apply_filter_transfer(target, source=source, seed=0)
    expected_paths = [k.path for _, k in find_kernels(target)]
    assert paths == expected_paths
    src = [filter_rows(k) for k in kernels(source)]
    # Depth fractions 0, 1/3, 2/3, 1 against 0, 1 -> source layers 0, 0, 1, 1.
    for t_kernel, s_index in zip(kernels(target), [0, 0, 1, 1], strict=True):
        rows = filter_rows(t_kernel)
        assert rows.shape == (16, 25)
        source_set = {tuple(r) for r in src[s_index]}
        assert all(tuple(r) in source_set for r in rows)
        # Tiling uses every source filter (exactly twice when H_t = 2 * H_s).
        _, counts = np.unique(rows, axis=0, return_counts=True)
        assert len(counts) == 8 and np.all(counts == 2)
    for a, b in zip(before, source.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_tiling_with_remainder():
    source, target = make(8, 2, seed=1), make(12, 2, seed=2)
    apply_filter_transfer(target, source=source, seed=3)
    for s_kernel, t_kernel in zip(kernels(source), kernels(target), strict=True):
        rows = filter_rows(t_kernel)
        src = filter_rows(s_kernel)
        np.testing.assert_array_equal(rows[:8], src)
        remainder = {tuple(r) for r in rows[8:]}
        assert len(remainder) == 4
        assert remainder <= {tuple(r) for r in src}


@pytest.mark.parametrize("source_dim,target_dim", [(8, 12), (16, 8)])
def test_int_seed_is_reproducible(source_dim, target_dim):
    # Widths with a random part: tiling remainder (8 -> 12) or sub-sampling.
    source = make(source_dim, 2, seed=1)
    t1, t2, t3 = (make(target_dim, 4, seed=s) for s in (2, 3, 4))
    apply_filter_transfer(t1, source=source, seed=7)
    apply_filter_transfer(t2, source=source, seed=7)
    apply_filter_transfer(t3, source=source, seed=8)
    for a, b in zip(kernels(t1), kernels(t2), strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, c) for a, c in zip(kernels(t1), kernels(t3), strict=True))


def test_narrower_target_subsamples_distinct_filters():
    source, target = make(16, 4, seed=1), make(8, 2, seed=2)
    apply_filter_transfer(target, source=source, seed=0)
    src = kernels(source)
    # Depth fractions 0, 1 against 0, 1/3, 2/3, 1 -> source layers 0, 3.
    for t_kernel, s_index in zip(kernels(target), [0, 3], strict=True):
        rows = filter_rows(t_kernel)
        assert len({tuple(r) for r in rows}) == 8
        assert {tuple(r) for r in rows} <= {tuple(r) for r in filter_rows(src[s_index])}


def test_tie_goes_to_lower_source_layer():
    # Target fractions 0, 1/2, 1 against source 0, 1: 1/2 is a tie.
    source, target = make(8, 2, seed=1), make(8, 3, seed=2)
    apply_filter_transfer(target, source=source, seed=0)
    middle = {tuple(r) for r in filter_rows(kernels(target)[1])}
    assert middle == {tuple(r) for r in filter_rows(kernels(source)[0])}


def test_kernel_size_mismatch_raises():
    source, target = make(8, 2, kernel_size=5), make(8, 2, kernel_size=3)
    before = kernels(target)
    with pytest.raises(ValueError, match=r"block_1_depthwise_conv.*\(3, 3\).*\(5, 5\)"):
        apply_filter_transfer(target, source=source)
    for a, b in zip(before, kernels(target), strict=True):
        np.testing.assert_array_equal(a, b)


def test_biases_untouched():
    source, target = make(8, 2, seed=1), make(16, 4, seed=2)
    layers = [layer for layer, _ in find_kernels(target)]
    before = [np.array(keras.ops.convert_to_numpy(l.bias)) for l in layers if l.use_bias]
    apply_filter_transfer(target, source=source, seed=0)
    after = [np.array(keras.ops.convert_to_numpy(l.bias)) for l in layers if l.use_bias]
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bad_seed_raises():
    with pytest.raises(TypeError, match="`seed`"):
        apply_filter_transfer(make(8, 2), source=make(8, 2), seed="x")
    # NumPy refused -1 with "expected non-negative integer", naming nothing.
    with pytest.raises(ValueError, match=r"`seed` must be an int in \[0, 2\*\*32 - 1\]"):
        apply_filter_transfer(make(8, 2), source=make(8, 2), seed=-1)


def test_source_without_depthwise_convs_is_named():
    inputs = keras.Input((4,))
    dense = keras.Model(inputs, keras.layers.Dense(2)(inputs), name="dense_only")
    with pytest.raises(ValueError, match=r"`source` \(dense_only\) has no spatial depthwise"):
        apply_filter_transfer(make(8, 2), source=dense)
