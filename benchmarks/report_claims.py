"""Sub-claims as data (issue 79, points 3 and 4): what a report row counts, and how it is judged.

A row (:class:`Row`, declared in :mod:`benchmarks.report_rows`) lists every claim of the paper's
figure or table it reproduces (:class:`Claim`: :class:`Above`, :class:`Scripted`, :class:`Trend`,
:class:`GainAbove`), each with the paper's numbers and where they are, and the effect the summary
shows beside the paper's (:class:`Effect`: the baseline arm's level, the training budget and the
relative error reduction). Each sub-claim is computed from the entry's result JSON alone, its
difference judged by the t-test of :mod:`benchmarks.report_stats` (paired over seeds where the runs
pair, Welch's otherwise). A row is *yes* when every counted sub-claim holds, *partly* (naming the
ones that failed) when some do, *no* when none does and one goes the other way beyond noise,
*within noise* otherwise (:func:`verdict_of`). A sub-claim whose runs are not in the results is
listed as not measured and not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from benchmarks.bench_utils import CODE_SPREAD, Comparison, accuracy_of, by_seed, seed_differences
from benchmarks.report_stats import OUTCOME_WORDS, t_test


def accuracy(run):
    """The reported accuracy in points: the test part's (issue 79), the held-out images' in runs
    recorded before it (:func:`~benchmarks.bench_utils.accuracy_of`)."""
    return 100 * accuracy_of(run)


def probe(run):
    """The linear probe's accuracy at init, in points."""
    return 100 * run["probe_accuracy"]


def test_accuracy(run):
    """The data-aligned runs' test accuracy at their own budget, in points."""
    return 100 * run["accuracy"][str(run["iterations"])]["test"]


def fgsm(run):
    """Robust accuracy under the FGSM step, in points (``None`` where not measured)."""
    return 100 * run["fgsm_accuracy"] if "fgsm_accuracy" in run else None


def entropy(run):
    """The trained first layer's filter variance entropy."""
    return run["trained"]["first_layer_entropy"]


def _complete(run):
    done, planned = run.get("epochs_done"), run.get("epochs")
    return done is None or planned is None or done >= planned


#: A match value: the largest value of that field among the result's runs (its largest budget).
LARGEST = object()


def runs_of(data, match):
    """The complete runs of ``data`` whose fields equal ``match`` (a callable value: its test;
    :data:`LARGEST`: the field's largest value among the runs)."""
    runs = [r for r in data.get("runs", []) if _complete(r)]
    match = {
        k: max((r[k] for r in runs if k in r), default=None) if want is LARGEST else want
        for k, want in match.items()
    }

    def keep(run):
        return all(want(run.get(k)) if callable(want) else run.get(k) == want for k, want in match.items())

    return [r for r in runs if keep(r)]


def sample(data, match, value=accuracy, shift=0.0):
    """:func:`~benchmarks.bench_utils.by_seed` of the runs matching ``match`` (their ``value`` plus
    ``shift``)."""
    runs = [r for r in runs_of(data, match) if value(r) is not None]
    return {s: (v + shift, rs) for s, (v, rs) in by_seed(runs, value).items()}


class Outcome(NamedTuple):
    """A sub-claim's result: ``holds`` (``True``, ``False`` the other way beyond noise, ``None``
    within noise; ``measured`` False: its runs are not in the results), our figure and its test."""

    holds: bool | None
    ours: str
    test: str
    measured: bool = True
    comparison: Comparison | None = None

    @property
    def words(self):
        return OUTCOME_WORDS[self.holds] if self.measured else "not measured"


NOT_MEASURED = Outcome(None, "—", "—", measured=False)


def _figure(comparison, test):
    """``"+1.23 ± 0.45 (paired, 3 seeds)"``: the difference the test used."""
    n = test.n[0] if len(test.n) == 1 else " / ".join(str(k) for k in test.n)
    raw = comparison.paired_figure if test.kind == "paired" else comparison.unpaired
    return f"{comparison.text((raw[0], test.se))} ({test.kind}, {n} seeds)"


def judge(comparison):
    """:class:`Outcome` of a Comparison by the t rule."""
    test = t_test(comparison)
    return Outcome(test.ahead, _figure(comparison, test), test.text(), comparison=comparison)


@dataclass(frozen=True)
class Claim:
    """A sub-claim: ``name`` (short, as the summary names a failed one), ``paper`` (the paper's
    numbers and where), ``counts`` (``False``: shown, not counted; ``note`` says why)."""

    name: str
    paper: str
    counts: bool = True
    note: str = ""

    def measure(self, data, compared):
        raise NotImplementedError


@dataclass(frozen=True)
class Above(Claim):
    """The runs matching ``higher`` above those matching ``lower`` (``value`` of each; ``shift``
    added to the higher side: "loses less than 2 points" is ``frozen + 2 > learnable``)."""

    higher: dict = field(default_factory=dict)
    lower: dict = field(default_factory=dict)
    value: Callable = accuracy
    paired: bool | str = True
    shift: float = 0.0
    spread: float = CODE_SPREAD
    spec: str = ".2f"

    def comparison(self, data):
        hi = sample(data, self.higher, self.value, self.shift)
        lo = sample(data, self.lower, self.value)
        if not hi or not lo:
            return None
        return Comparison(self.name, hi, lo, data, paired=self.paired, spread=self.spread, spec=self.spec)

    def measure(self, data, compared):
        found = self.comparison(data)
        return NOT_MEASURED if found is None else judge(found)


@dataclass(frozen=True)
class Scripted(Claim):
    """The script's own counted difference of this ``label`` (``comparisons(name, data)``)."""

    label: str = ""

    def comparison(self, data, compared=()):
        return next((c for c in compared if c.label == self.label), None)

    def measure(self, data, compared):
        found = self.comparison(data, compared)
        return NOT_MEASURED if found is None else judge(found)


def _gains(data, cell, value):
    """Per-seed ``higher - lower`` of ``cell`` (``(higher match, lower match)``)."""
    return seed_differences(sample(data, cell[0], value), sample(data, cell[1], value))


@dataclass(frozen=True)
class Trend(Claim):
    """A gain that grows along ``cells`` (each ``(higher match, lower match)``, in the paper's
    order): the gain at the last cell measured above the gain at the first (a t-test of the per-seed
    gains, unpaired: ``paired`` says why), and the mean gain not falling at any step between. A fall
    leaves the claim within noise (the extremes alone would hide it)."""

    cells: tuple = ()
    steps: tuple = ()
    value: Callable = accuracy
    paired: bool | str = "two networks: only the data order and draws are shared"

    def measure(self, data, compared):
        found = [
            (step, g)
            for step, cell in zip(self.steps, self.cells, strict=True)
            if (g := _gains(data, cell, self.value))
        ]
        if len(found) < 2:
            return NOT_MEASURED
        (first, low), (last, high) = found[0], found[-1]
        extremes = Comparison(f"{self.name}: {last} − {first}", high, low, data, paired=self.paired)
        outcome = judge(extremes)
        means = [float(np.mean([v for v, _ in g.values()])) for _, g in found]
        falls = [step for (step, _), a, b in zip(found[1:], means, means[1:], strict=False) if b < a]
        path = ", ".join(f"{step} {m:+.2f}" for (step, _), m in zip(found, means, strict=True))
        ours = f"{last} − {first}: {outcome.ours}; mean gain {path}"
        holds = outcome.holds
        if falls and holds:
            holds = None
            ours += f" (falls at {', '.join(falls)})"
        return Outcome(holds, ours, outcome.test, comparison=extremes)


@dataclass(frozen=True)
class GainAbove(Claim):
    """The per-seed gain of ``first`` (``(higher match, lower match)``) above that of ``second``,
    compared unpaired (``paired`` says why)."""

    first: tuple = ()
    second: tuple = ()
    value: Callable = accuracy
    paired: bool | str = "different budgets: each a run of its own schedule"

    def measure(self, data, compared):
        a, b = _gains(data, self.first, self.value), _gains(data, self.second, self.value)
        if not a or not b:
            return NOT_MEASURED
        return judge(Comparison(self.name, a, b, data, paired=self.paired))


# ----------------------------------------------------------------------------
# Effect size and budget (point 4)
# ----------------------------------------------------------------------------
def error_reduction(baseline, method):
    """Relative error reduction, in %: ``(error_baseline - error_method) / error_baseline``."""
    return 100 * (method - baseline) / (100 - baseline)


def _thousands(n):
    return f"{n:,}"


def images_by_epochs(data, runs):
    """``"2,000 × 4 ep."``: training images times epochs of ``runs`` (the config's sizes), with the
    teacher's budget where the config records one."""
    config = data.get("config", {})
    images = config.get("train_size", config.get("student_train_size"))
    epochs = sorted({r["epochs"] for r in runs if "epochs" in r}) or [
        config.get("epochs", config.get("student_epochs"))
    ]
    text = f"{_thousands(images)} × {'/'.join(str(e) for e in epochs)} ep."
    if "teacher_train_size" in config:
        text += f" (teacher {_thousands(config['teacher_train_size'])} × {config['teacher_epochs']} ep.)"
    elif "teacher_epochs" in config:
        text += f" (teacher {config['teacher_epochs']} ep. on the whole training split)"
    return text


def steps_by_batch(data, runs):
    """``"100 steps × 256 = 25,600 images"``: SGD iterations of ``runs`` times the recipe's batch."""
    batch = data["config"]["recipe"]["batch_size"]
    (steps,) = {r["iterations"] for r in runs}
    return f"{steps} steps × {batch} = {_thousands(steps * batch)} images"


@dataclass(frozen=True)
class Effect:
    """The effect a summary row shows: the sub-claim ``claim``'s two sides (``reverse``: its lower
    side is the method, its higher the baseline), the budget of their runs (``budget(data, runs)``)
    and the paper's ``(baseline, method)`` accuracy (``None``: no number in the paper's text) at
    ``where``."""

    claim: str
    paper: tuple | None
    where: str
    budget: Callable = images_by_epochs
    reverse: bool = False


class EffectCells(NamedTuple):
    baseline: str
    budget: str
    effect: str


@dataclass(frozen=True)
class Row:
    """A row's declared sub-claims, its effect and notes (what the paper states that no sub-claim
    counts, and why)."""

    claims: tuple
    effect: Effect | None = None
    notes: tuple = ()


class RowResult(NamedTuple):
    outcomes: list  # [(Claim, Outcome)]
    verdict: str
    effect: EffectCells | None


def verdict_of(outcomes):
    """The row's verdict from its ``[(claim, outcome)]``: *yes*, *partly (k of n hold; failed:
    ...)*, *no* or *within noise*; ``None`` where no counted sub-claim was measured."""
    counted = [(c, o) for c, o in outcomes if c.counts and o.measured]
    if not counted:
        return None
    held = [c for c, o in counted if o.holds is True]
    if len(held) == len(counted):
        return "yes"
    if held:
        failed = "; ".join(
            c.name + (" (the other way)" if o.holds is False else "")
            for c, o in counted
            if o.holds is not True
        )
        return f"partly ({len(held)} of {len(counted)} hold; failed: {failed})"
    return "no" if any(o.holds is False for _, o in counted) else "within noise"


def _effect_cells(row, data, outcomes):
    effect = row.effect
    found = next((o for c, o in outcomes if c.name == effect.claim), None)
    if found is None or found.comparison is None:
        return None
    c = found.comparison
    seeds = c.seeds
    sides = [float(np.mean([side[s][0] for s in seeds])) for side in (c.higher, c.lower)]
    method, baseline = sides[::-1] if effect.reverse else sides
    runs = [r for side in (c.higher, c.lower) for s in seeds for r in side[s][1]]
    ours = f"{error_reduction(baseline, method):+.1f} %"
    if effect.paper is None:
        paper = f"— ({effect.where})"
    else:
        base, meth = effect.paper
        paper = f"{error_reduction(base, meth):+.1f} % ({base:g} → {meth:g}, {effect.where})"
    return EffectCells(f"{baseline:.2f} %", effect.budget(data, runs), f"{ours} / {paper}")


def evaluate(row, data, compared):
    """:class:`RowResult` of the declared :class:`Row` ``row`` on the result ``data``; ``compared``
    is the entry script's ``comparisons(name, data)`` (what :class:`Scripted` claims name)."""
    outcomes = [(claim, claim.measure(data, compared)) for claim in row.claims]
    effect = _effect_cells(row, data, outcomes) if row.effect else None
    return RowResult(outcomes, verdict_of(outcomes), effect)
