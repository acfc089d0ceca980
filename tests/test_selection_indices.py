"""Selection index rules against an independent statement of them, and their errors."""

from fractions import Fraction

import numpy as np
import pytest

from keras_structinit.selection import element_indices, layer_indices

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
    counts = np.bincount(np.concatenate([element_indices(10, 3, "random_inconsistent", rng=rng)
                                         for _ in range(3000)]), minlength=10)
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
