"""Student's t-test, two-sided at 95 %, in float64 without SciPy (internal).

What the package and its benchmarks call *beyond noise*: a difference whose two-sided p is below
:data:`ALPHA`, paired (a one-sample t-test of per-seed differences, ``n - 1`` degrees of freedom)
where the runs pair, Welch's otherwise (``sqrt(var_1 / n_1 + var_2 / n_2)`` with the
Welch-Satterthwaite degrees of freedom). The t distribution's CDF comes from the regularized
incomplete beta function, ``P(|T| >= t) = I_{df / (df + t^2)}(df / 2, 1 / 2)``, evaluated by its
continued fraction (modified Lentz); SciPy is no dependency of the package.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

#: The test's level: a difference is beyond noise when its two-sided p is below this.
ALPHA = 0.05
_EPS = 1e-15
_TINY = 1e-300
_MAX_TERMS = 10_000


def _beta_fraction(a, b, x):
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence for a={a}, b={b}, x={x}")


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (``a, b > 0``, ``0 <= x <= 1``)."""
    if a <= 0 or b <= 0:
        raise ValueError(f"betainc needs a, b > 0, got a={a}, b={b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, got {x}")
    if x in (0.0, 1.0):
        return float(x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t, df):
    """``P(|T| >= |t|)`` for Student's t with ``df > 0`` degrees of freedom (``t`` may be ±inf)."""
    if not df > 0:
        raise ValueError(f"the t distribution needs df > 0, got {df}")
    if math.isnan(t):
        raise ValueError("t is NaN")
    if math.isinf(t):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + t * t)))


def t_cdf(t, df):
    """``P(T <= t)`` for Student's t with ``df`` degrees of freedom."""
    tail = t_two_sided_p(t, df) / 2.0
    return 1.0 - tail if t > 0 else tail


def t_critical(df, level=1 - ALPHA):
    """The two-sided critical value: ``t`` with ``P(|T| >= t) = 1 - level`` (bisection)."""
    target, low, high = 1.0 - level, 0.0, 1.0
    while t_two_sided_p(high, df) > target:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if t_two_sided_p(mid, df) > target else (low, mid)
    return (low + high) / 2.0


class TTest(NamedTuple):
    """One difference's test. ``diff``: the difference the test used (paired: mean per-seed
    difference; Welch: difference of the means; moved toward 0 by ``margin``, the run-to-run
    spread where the sides ran on different code); ``se``: its standard error; ``t``, ``df``, ``p``
    (two-sided; ``df`` and ``p`` ``None`` where no test is possible: fewer than 2 values in all);
    ``kind``: ``"paired"`` or ``"Welch"``; ``n``: the seeds (paired) or the two sides' sizes."""

    diff: float
    se: float
    t: float | None
    df: float | None
    p: float | None
    kind: str
    n: tuple
    margin: float = 0.0

    @property
    def ahead(self):
        """``True`` beyond noise the first side's way, ``False`` the other way, ``None`` within noise."""
        if self.p is None or self.p >= ALPHA:
            return None
        return self.t > 0

    def text(self):
        """``"t = 2.77, df 2, p = 0.110"`` (``"no test (one run per side)"`` where none is possible)."""
        if self.p is None:
            return "no test (one run per side)"
        t = "±inf" if math.isinf(self.t) else f"{self.t:.2f}"
        df = f"{self.df:g}" if float(self.df).is_integer() else f"{self.df:.1f}"
        p = "< 0.001" if self.p < 0.001 else f"= {self.p:.3f}"
        return f"t = {t}, df {df}, p {p}"


def _t_and_p(diff, se, df):
    if df is None or df <= 0:
        return None, None
    if se == 0:
        return (math.copysign(math.inf, diff), 0.0) if diff else (0.0, 1.0)
    t = diff / se
    return t, t_two_sided_p(t, df)


def paired_test(differences):
    """A one-sample t-test of the per-seed ``differences`` against 0 (``n - 1`` degrees of freedom)."""
    d = np.asarray(differences, float)
    n = d.size
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    df = n - 1 if n > 1 else None
    t, p = _t_and_p(float(d.mean()), se, df)
    return TTest(float(d.mean()), se, t, df, p, "paired", (n,))


def welch_test(first, second, margin=0.0):
    """Welch's t-test of ``mean(first) - mean(second)``, the difference first moved toward 0 by
    ``margin`` (none left: t = 0). A side with one value adds no variance and no degrees of
    freedom; with one value on each side there is no test."""
    x, y = np.asarray(first, float), np.asarray(second, float)
    terms = [(v.var(ddof=1) / v.size, v.size - 1) for v in (x, y) if v.size > 1]
    se = math.sqrt(sum(term for term, _ in terms))
    if not terms:
        df = None
    elif se == 0:
        df = float(sum(k for _, k in terms))
    else:
        df = se**4 / sum(term**2 / k for term, k in terms)
    raw = float(x.mean() - y.mean())
    diff = math.copysign(max(abs(raw) - margin, 0.0), raw)
    t, p = _t_and_p(diff, se, df)
    return TTest(diff, se, t, df, p, "Welch", (x.size, y.size), margin)
