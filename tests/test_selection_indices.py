"""Selection index rules against an independent statement of them, and their errors."""

from fractions import Fraction

import numpy as np
import pytest

from keras_structinit.selection import element_indices, layer_indices
from keras_structinit.selection.indices import l1_indices, magnitude_elements

from conftest import once_per_suite

pytestmark = once_per_suite("index selection is NumPy")


def uniform_rule(t, s):
    """Alg. 1 of Xu et al. in plain Python: step t // s when s divides t, else the nearest
    integer (ties to even) to i (t - 1) / (s - 1) evaluated as NumPy's linspace does
    (i * step in float64, the last point exactly t - 1)."""
    if t % s == 0:
        return [i * (t // s) for i in range(s)]
    step = (t - 1) / (s - 1)
    return [round(i * step) for i in range(s - 1)] + [t - 1]


def test_float_ties_follow_numpy():
    # 11 * 25 / 22 = 12.5 exactly, but 11 * (25 / 22) = 12.500000000000002 in float64:
    # like round(np.linspace(...)), the rule gives 13 where exact arithmetic gives 12.
    assert round(Fraction(11 * 25, 22)) == 12
    assert element_indices(26, 23)[11] == 13


@pytest.mark.parametrize("t", range(1, 41))
def test_uniform_matches_the_rule_for_every_student_size(t):
    for s in range(1, t + 1):
        got = element_indices(t, s)
        assert got.dtype == np.int64
        assert got.tolist() == uniform_rule(t, s), (t, s)
        assert np.all(np.diff(got) > 0) and got[0] >= 0 and got[-1] < t


@pytest.mark.parametrize("t, s", [(384, 192), (768, 192), (1536, 768), (96, 48), (100, 30), (1000, 7)])
def test_uniform_on_model_sized_axes(t, s):
    assert element_indices(t, s).tolist() == uniform_rule(t, s)


def test_the_papers_example():
    teacher = np.arange(24).reshape(4, 6)
    rows, cols = element_indices(4, 2), element_indices(6, 3)
    assert rows.tolist() == [0, 2] and cols.tolist() == [0, 2, 4]
    np.testing.assert_array_equal(teacher[np.ix_(rows, cols)], [[0, 2, 4], [12, 14, 16]])


def test_consecutive_and_random():
    assert element_indices(10, 4, "consecutive").tolist() == [0, 1, 2, 3]
    a = element_indices(100, 20, "random", rng=3)
    assert len(set(a.tolist())) == 20 and np.all(np.diff(a) > 0) and a.max() < 100
    np.testing.assert_array_equal(a, element_indices(100, 20, "random", rng=np.random.default_rng(3)))
    assert not np.array_equal(a, element_indices(100, 20, "random", rng=4))
    # Every index is equally likely: counts over many draws are within sampling error.
    rng = np.random.default_rng(0)
    counts = np.bincount(
        np.concatenate([element_indices(10, 3, "random_inconsistent", rng=rng) for _ in range(3000)]),
        minlength=10,
    )
    np.testing.assert_allclose(counts / 3000, 0.3, atol=5 * np.sqrt(0.3 * 0.7 / 3000))


def test_layer_rules():
    assert layer_indices(12, 4).tolist() == [0, 1, 2, 3]
    assert layer_indices(12, 4, "last_n").tolist() == [8, 9, 10, 11]
    assert layer_indices(12, 4, "mid_n").tolist() == [4, 5, 6, 7]
    assert layer_indices(9, 6, "uniform").tolist() == [0, 2, 3, 5, 6, 8]  # round(1.6 i)
    assert layer_indices(5, 5, "uniform").tolist() == [0, 1, 2, 3, 4]


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"larger than the teacher along axis 1 of 'fc1': student_size=8"):
        element_indices(4, 8, what="axis 1 of 'fc1'")
    with pytest.raises(ValueError, match="method"):
        element_indices(4, 2, "stride")
    with pytest.raises(TypeError, match="teacher_size"):
        element_indices(4.0, 2)
    with pytest.raises(ValueError, match="student_size"):
        element_indices(4, 0)
    with pytest.raises(ValueError, match="larger than the teacher along the blocks"):
        layer_indices(3, 4)
    with pytest.raises(ValueError, match="method"):
        layer_indices(4, 2, "every_other")


def l1_rule(array, axis, s):
    """L1 structured pruning in plain Python: the ``s`` slices along ``axis`` whose entries have the
    largest sum of absolute values, ties to the lower index, in increasing order."""
    moved = np.moveaxis(np.asarray(array, dtype=np.float64), axis, 0)
    norms = [sum(abs(float(x)) for x in moved[i].ravel()) for i in range(moved.shape[0])]
    order = sorted(range(len(norms)), key=lambda i: (-norms[i], i))
    return sorted(order[:s])


def magnitude_rule(array, k):
    """Magnitude pruning in plain Python: the flat row-major positions of the ``k`` largest ``|w|``."""
    flat = [abs(float(x)) for x in np.asarray(array).ravel()]
    return sorted(sorted(range(len(flat)), key=lambda i: (-flat[i], i))[:k])


@pytest.mark.parametrize("shape", [(7,), (5, 6), (3, 3, 4, 8), (2, 4, 6)])
def test_l1_and_magnitude_match_their_rules(shape):
    rng = np.random.default_rng(len(shape))
    array = rng.standard_normal(shape)
    for axis, t in enumerate(shape):
        for s in {1, max(1, t // 2), t}:
            got = l1_indices(array, axis, s)
            assert got.dtype == np.int64 and got.tolist() == l1_rule(array, axis, s), (axis, s)
    for k in {1, array.size // 3, array.size}:
        got = magnitude_elements(array, (k,))
        assert got.tolist() == magnitude_rule(array, k)
    # Ties (equal norms) go to the lower index; the whole axis is the identity.
    assert l1_indices(np.ones((4, 3)), 0, 2).tolist() == [0, 1]
    assert magnitude_elements(np.ones((2, 2)), (1, 3)).tolist() == [0, 1, 2]


def test_l1_and_magnitude_agree_with_torch_prune():
    """PyTorch's ``ln_structured(n=1)`` and ``l1_unstructured`` keep the same slices and elements."""
    torch = pytest.importorskip("torch")
    from torch.nn.utils import prune

    rng = np.random.default_rng(0)
    array = rng.standard_normal((6, 10, 3)).astype("float32")
    for axis, s in ((0, 4), (1, 3), (2, 1)):
        module = torch.nn.Module()
        module.weight = torch.nn.Parameter(torch.from_numpy(array.copy()))
        prune.ln_structured(module, "weight", amount=array.shape[axis] - s, n=1, dim=axis)
        mask = np.moveaxis(module.weight_mask.numpy(), axis, 0).reshape(array.shape[axis], -1)
        assert np.flatnonzero(mask.any(axis=1)).tolist() == l1_indices(array, axis, s).tolist()
    module = torch.nn.Module()
    module.weight = torch.nn.Parameter(torch.from_numpy(array.copy()))
    prune.l1_unstructured(module, "weight", amount=array.size - 45)
    kept = np.flatnonzero(module.weight_mask.numpy().ravel())
    assert kept.tolist() == magnitude_elements(array, (5, 9)).tolist()


def test_value_methods_errors():
    with pytest.raises(ValueError, match="reads the teacher's values: use l1_indices"):
        element_indices(4, 2, "l1")
    with pytest.raises(ValueError, match="larger than the teacher along axis 1 of 'w'"):
        l1_indices(np.ones((2, 3)), 1, 4, what="axis 1 of 'w'")
    with pytest.raises(ValueError, match="out of range"):
        l1_indices(np.ones((2, 3)), 2, 1)
    with pytest.raises(ValueError, match="non-finite"):
        magnitude_elements([1.0, np.nan], (1,))
    with pytest.raises(ValueError, match="number of elements"):
        magnitude_elements(np.ones((2, 2)), (5,))
