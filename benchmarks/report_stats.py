"""The report's test of a difference (issue 79, point 1): a two-sided Student t-test at 95 %.

Each difference a verdict counts (:class:`~benchmarks.bench_utils.Comparison`) is tested at its own
seed count: *paired* (a one-sample t-test of the per-seed differences, ``n - 1`` degrees of
freedom) where the comparison is judged paired (:attr:`Comparison.why_unpaired` is ``None``), and
*Welch's* t-test otherwise. Where the two sides ran on different code, the difference is first
moved toward 0 by the run-to-run spread (:attr:`Comparison.spread`). A difference is *beyond
noise* when its two-sided p is below 0.05. The tests and the t distribution are the package's
(:mod:`keras_structinit.utils.stats`, which the demo's verdict uses too); this module applies them
to the report's comparisons.
"""

from __future__ import annotations

from keras_structinit.utils.stats import paired_test, welch_test


def _values(side):
    return [value for value, _ in side.values()]


def t_test(comparison):
    """:class:`TTest` of a :class:`~benchmarks.bench_utils.Comparison`: paired where it is judged
    paired, Welch's otherwise (less its code spread where the sides ran on different code)."""
    if comparison.why_unpaired is None:
        return paired_test(comparison.differences)
    margin = comparison.spread if comparison.mixed_code else 0.0
    return welch_test(_values(comparison.higher), _values(comparison.lower), margin)


def ahead(comparison):
    """The t rule's outcome of ``comparison``: ``True``, ``False`` or ``None`` (within noise)."""
    return t_test(comparison).ahead


def judged(comparison):
    """How the test judged ``comparison``, in words (``"paired t"``, ``"Welch t (reason)"``)."""
    if comparison.why_unpaired is None:
        return "paired t"
    widened = (
        f"; moved {comparison.spread:g} toward 0: sides on different code"
        if comparison.mixed_code and comparison.spread
        else ""
    )
    return f"Welch t ({comparison.why_unpaired}{widened})"


#: The words of an outcome (``TTest.ahead``).
OUTCOME_WORDS = {True: "yes", False: "no (the other way)", None: "within noise"}
