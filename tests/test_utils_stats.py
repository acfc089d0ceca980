"""The t-test of ``keras_structinit.utils.stats``: the t distribution against the tables' critical
values, its closed forms and (where SciPy is installed) ``scipy.stats``; the paired and Welch tests
by hand."""

import math

import numpy as np
import pytest

from keras_structinit.utils import stats

from conftest import once_per_suite

pytestmark = once_per_suite("the t distribution: no backend")

#: Two-sided 95 % critical values of Student's t (any statistics table).
CRITICAL_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 30: 2.042}


@pytest.mark.parametrize("df, critical", sorted(CRITICAL_95.items()))
def test_critical_values_of_the_tables(df, critical):
    assert round(stats.t_critical(df), 3) == critical
    # The rounded table value sits at p = 0.05 to the precision of its last digit.
    assert stats.t_two_sided_p(critical, df) == pytest.approx(0.05, abs=2e-4)
    assert stats.t_two_sided_p(critical * 1.01, df) < 0.05 < stats.t_two_sided_p(critical * 0.99, df)
    assert (
        round(stats.t_critical(df, level=0.99), 2)
        == {1: 63.66, 2: 9.92, 3: 5.84, 4: 4.60, 5: 4.03, 9: 3.25, 10: 3.17, 30: 2.75}[df]
    )


def test_closed_forms_of_the_t_distribution():
    for t in (-40.0, -3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 7.0, 1e3):
        # df = 1 is the Cauchy distribution, df = 2 has an algebraic CDF.
        assert stats.t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, rel=1e-12, abs=1e-15)
        assert stats.t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), rel=1e-12, abs=1e-15)
        assert stats.t_cdf(t, 3.5) + stats.t_cdf(-t, 3.5) == pytest.approx(1.0, abs=1e-14)
    # Large df: the normal distribution (two-sided p at 1.96 is 0.0500).
    assert stats.t_two_sided_p(1.959964, 1e7) == pytest.approx(0.05, abs=1e-6)
    assert stats.t_two_sided_p(0.0, 4) == 1.0 and stats.t_two_sided_p(math.inf, 4) == 0.0


def test_incomplete_beta_identities():
    for x in (1e-9, 0.01, 0.3, 0.5, 0.77, 0.999):
        assert stats.betainc(1, 1, x) == pytest.approx(x, rel=1e-13)
        assert stats.betainc(3.5, 1, x) == pytest.approx(x**3.5, rel=1e-12)
        assert stats.betainc(1, 2.5, x) == pytest.approx(1 - (1 - x) ** 2.5, rel=1e-12)
        assert stats.betainc(2.3, 0.5, x) == pytest.approx(1 - stats.betainc(0.5, 2.3, 1 - x), abs=1e-14)
    assert stats.betainc(2, 3, 0.0) == 0.0 and stats.betainc(2, 3, 1.0) == 1.0
    with pytest.raises(ValueError):
        stats.betainc(0, 1, 0.5)
    with pytest.raises(ValueError):
        stats.t_two_sided_p(1.0, 0)


def test_the_t_distribution_against_scipy():
    scipy_stats = pytest.importorskip(
        "scipy.stats", reason="SciPy is no dependency: the cross-check runs where it is"
    )
    for df in (0.7, 1, 1.6, 2, 2.4, 3, 4, 5.8, 9, 30, 500):
        for t in np.concatenate([np.linspace(-30, 30, 241), [1e-6, 1e4]]):
            want = 2 * scipy_stats.t.sf(abs(t), df)
            assert stats.t_two_sided_p(float(t), df) == pytest.approx(want, rel=1e-9, abs=1e-300)
        assert stats.t_critical(df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-10)


def test_paired_and_welch_tests_by_hand():
    d = [2.5, 3.0, 3.2]
    test = stats.paired_test(d)
    se = np.std(d, ddof=1) / math.sqrt(3)
    assert (test.diff, test.se, test.df, test.kind, test.n) == (
        pytest.approx(np.mean(d)),
        pytest.approx(se),
        2,
        "paired",
        (3,),
    )
    assert test.t == pytest.approx(np.mean(d) / se) and test.ahead is True
    assert test.text() == f"t = {np.mean(d) / se:.2f}, df 2, p = {test.p:.3f}"
    x, y = [60.0, 61.0, 62.0, 63.0], [57.9, 57.0, 56.1]
    test = stats.welch_test(x, y)
    vx, vy = np.var(x, ddof=1) / 4, np.var(y, ddof=1) / 3
    df = (vx + vy) ** 2 / (vx**2 / 3 + vy**2 / 2)
    assert test.df == pytest.approx(df) and test.t == pytest.approx(
        (np.mean(x) - np.mean(y)) / math.sqrt(vx + vy)
    )
    assert test.text().startswith(f"t = {test.t:.2f}, df {df:.1f}, p ")
    # The code spread moves the difference toward 0 before the test; none left: t = 0.
    moved = stats.welch_test(x, y, margin=1.0)
    assert moved.diff == pytest.approx(np.mean(x) - np.mean(y) - 1.0) and moved.p > test.p
    assert stats.welch_test(x, y, margin=10.0).t == 0.0
    # One run per side: no test, within noise; no spread with a difference: p = 0.
    assert stats.welch_test([1.0], [0.0]).p is None
    assert stats.welch_test([1.0], [0.0]).ahead is None
    assert stats.welch_test([1.0], [0.0]).text() == "no test (one run per side)"
    flat = stats.paired_test([1.0, 1.0, 1.0])
    assert flat.p == 0.0 and flat.ahead is True and flat.text() == "t = ±inf, df 2, p < 0.001"
