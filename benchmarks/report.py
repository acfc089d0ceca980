"""``benchmarks/REPORT.md`` from the suites' results JSON files alone.

For every suite folder under ``results/`` (``cpu``, ``gpu``; ``gpu-quick`` writes to ``gpu``) and
every benchmark of :data:`benchmarks.suite.SUITES` with a results file: a headline
(our numbers, the paper's, and whether the paper's direction reproduced),
the tables and the figures; and what changed, from each results file's ``changes``
(``[{"date": ..., "what": ...}]``: which runs were replaced, and why). Each comes from the
benchmark's script, which owns what it measured: ``headline(name, data)``, ``render_markdown(data)``
and ``FIGURES[figure](data, plt)``, and, where its verdict compares variants over seeds,
``comparisons(name, data)`` (:class:`~benchmarks.bench_utils.Comparison`: the paired and unpaired
figures of each difference, listed in the report's *Compared differences* with its t-test,
:mod:`benchmarks.report_stats`) and ``PAIRING`` (why the variants of one seed pair). The paper's
sub-claims each row counts, and the effect it shows beside the paper's, are declared as data in
:mod:`benchmarks.report_rows` and computed from the results by :mod:`benchmarks.report_claims`; a
row declared there takes its verdict from them (issue 79), any other keeps its script's. Entries
that repeat another's configuration and seeds (``Benchmark.repeats``) give the run-to-run spread.
Nothing is read from the Markdown files the scripts write, and nothing is typed in by hand.

Usage::

    python -m benchmarks.report        # the same as python -m benchmarks.run --report
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from typing import NamedTuple

from benchmarks import BENCH_DIR, RESULTS_DIR, report_stats
from benchmarks.bench_utils import (
    CIFAR10_TEST_SHA256,
    CODE_SPREAD,
    CODE_SPREAD_SOURCE,
    SESSION_HOURS,
    SPLIT_SEED,
    pairing_of,
    rerun_spread,
    split_note,
    verdict_of,
)
from benchmarks.report_claims import evaluate
from benchmarks.report_rows import ROWS
from benchmarks.run import code_records, stale_status
from benchmarks.suite import SUITES, folder_benchmarks

REPORT = BENCH_DIR / "REPORT.md"

#: Which training path each step-time entry times (issue 78): the recipes' measured settings, or
#: the path a user who writes ``compile()`` and ``fit`` takes.
RECIPE_PATH = "recipe path: `train_on_batch` on one fixed batch, compile mode chosen per backend"
TIMED_PATHS = {
    "torch_reference": RECIPE_PATH,
    "frozen_speed": RECIPE_PATH,
    "depthwise_speed": RECIPE_PATH,
    "convmixer_breakdown": RECIPE_PATH,
    "user_path": "user's path: `compile()` with Keras' defaults and a plain `fit(x, y, batch_size=128, "
    "epochs=1)` (default `verbose` and `shuffle`), step = epoch / steps; beside it the recipe path's "
    "step, timed in the same process",
}
#: Why an entry's bars can fail where the package does not control the cost (issue 78).
WHY_BARS = {
    "user_path": "Where the user's step is over 1.3x the recipe's, on TensorFlow: Keras' TensorFlow `fit` "
    "runs the step inside an outer `tf.function` over a `tf.data` iterator, slower than the "
    "`train_on_batch` call of the same compiled step (the same with Keras' own `DepthwiseConv2D`); a "
    "`train_on_batch` loop avoids it. Where the frozen speed-up is under 1.2x, on JAX: freezing removes "
    "only the depthwise kernels' gradient, ~13 % of a ConvMixer-128/6 k = 9 step's multiply-adds "
    "(the recipe path gains the same); see docs/models-and-recipes.md",
}


def script_module(script):
    """The benchmark script ``script`` (a file name in ``benchmarks/``, or a path) as a module."""
    path = BENCH_DIR / script
    if path.parent == BENCH_DIR:
        return importlib.import_module(f"benchmarks.{path.stem}")
    spec = importlib.util.spec_from_file_location(f"_benchmark_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------
# Headlines: (our numbers, did the paper's direction reproduce)
# ----------------------------------------------------------------------------


# ----------------------------------------------------------------------------
# Figures
# ----------------------------------------------------------------------------
def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ----------------------------------------------------------------------------
# Paired verdicts and the run-to-run spread
# ----------------------------------------------------------------------------
RULE = [
    "Whether the paper's direction reproduced is judged on every sub-claim of the paper's figure or "
    "table the row reproduces (declared as data, `benchmarks/report_rows.py`; each row's are listed "
    "in its section under *Sub-claims*, with the paper's numbers and where they are), and each "
    "difference is judged by a stated test: a two-sided t-test at 95 % at its own seed count "
    "(`benchmarks/report_stats.py`; t, degrees of freedom and p of each difference a script counts "
    "are listed under *Compared differences*):",
    "",
    "- **Paired t** where the two variants of one seed share the data order, the augmentation draws "
    "and the initial weights the variant does not change (each script's reason under *Pairing*), and "
    "both runs of every seed ran on one code: the per-seed differences d are the measurement, "
    "`t = mean(d) / (std(d, ddof=1) / sqrt(n))` with n - 1 degrees of freedom.",
    "- **Welch t** otherwise (two networks; different budgets; runs recorded before the input stream "
    "drew from (seed, pass, example) alone, 2026-11-26; a seed's runs on different code; fewer than 2 "
    "seeds): the difference of the means over `sqrt(var_1 / n_1 + var_2 / n_2)` (ddof 1), with "
    "the Welch-Satterthwaite degrees of freedom; where the two sides ran on different code, the "
    f"difference first moved toward 0 by the run-to-run spread, {CODE_SPREAD:g} points of accuracy "
    "(below). One run per side allows no test: within noise.",
    "- A difference is *beyond noise* when its two-sided p is below 0.05, and only then. A sub-claim "
    "*holds* when its difference is beyond noise the paper's way; a trend (a gain growing along k, E "
    "or a budget) when its last cell is beyond noise above its first and its mean does not fall at "
    "any step between.",
    "- A row is *yes* when every counted sub-claim holds, *partly* (naming the ones that failed) when "
    "some do, *no* when none does and one goes the other way beyond noise, *within noise* otherwise. "
    "Sub-claims marked *not counted* are shown, with the reason; a sub-claim whose runs are not in "
    "the results is *not measured*. Rows without declared sub-claims (timings, thresholds, no paper "
    "direction) keep their script's verdict.",
    "- Which images each accuracy comes from (issue 79): the CIFAR-10 entries split the shared "
    f"50,000 training images once (`bench_utils.cifar_split`) into a training part (40,000), a "
    "validation part (the stratified 10 %, seed 0, on which every default was chosen: mean shift "
    "b = 0.2, Eq. 5 over the listing, `blocks` resizing) and a *test part* of 5,000 images (500 a "
    f"class, seed {SPLIT_SEED}, sha256 of its sorted indices `{CIFAR10_TEST_SHA256[:16]}`) that "
    "chose nothing. Results recorded from then on report the test part (their config's `split` "
    "names every part by its digest; choices, such as a sweep's best b, are made on the validation "
    "part); results recorded before report the held-out images that also chose the defaults. Each "
    "section's *Numbers from* line says which.",
    "- Each accuracy row shows the baseline arm's level (test or held-out accuracy, as its section "
    "says; under FGSM for `lc_fgsm`), "
    "the training budget "
    "(training images x epochs; the teacher's besides where there is one) and the effect as a "
    "relative error reduction, `(error_baseline - error_method) / error_baseline`, beside the "
    "paper's at its own scale (the table it is from).",
    "",
    "Which code a run ran on: the commit it records (a run that resumed an entry on a later commit "
    "changing none of the entry's code records the earlier commit too, as `same_code_as`, and counts "
    "as run on it); for runs recorded before commits were (their "
    "entries list as `stale (no commit recorded)`), its sitting (recorded end times chained by gaps of "
    f"at most {SESSION_HOURS:g} hours), or the whole file where runs record no date. A row whose runs "
    "ran on a dirty tree, or whose commit was reconstructed afterwards, says so first in its *Ours* "
    "cell; a GPU row whose entry's code changed since (git, when the report was built) says *stale* "
    "there too; for the CPU rows, `python -m benchmarks.run --suite cpu --list` tells.",
]

#: The results folders of GPU suites: their rows say when the entry's code changed since they ran.
GPU_FOLDERS = ("gpu", "gpu-quick")
#: Headline cells given 5 seeds (0-4), as (entry, the cell in words); the other headline rows keep 3.
FIVE_SEED_CELLS = (
    ("covariance_convergence", "the covariance convergence pair at k 9, frozen"),
    ("lc_accuracy_fig1", "LC Fig. 1 at E = 8 and 16"),
    ("mimetic_sweep", "the mimetic shift on ConvNeXt at 2 epochs, every variant of the cell"),
    ("selection_five_seeds", "weight selection against random init, with a teacher of its own"),
)
#: Headline entries that keep 3 seeds (the sentence says what 5 would cost); none since the
#: selection pair runs 5 seeds in ``selection_five_seeds``.
THREE_SEED_HEADLINES = ()


class SeedCost(NamedTuple):
    """What seeds 3 and up cost a CPU result: their training minutes and run count, the entry's wall
    minutes, its processes and the day it was updated."""

    minutes: float
    runs: int
    wall: float
    jobs: int
    day: str
    threads: str | None = None


def _seed_cost(results_dir, name):
    """:class:`SeedCost` of the CPU result ``name`` (``None`` where it has no results file)."""
    path = results_dir / "cpu" / f"{name}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    extra = [run for run in data["runs"] if run["seed"] >= 3]
    run = data.get("suite_run") or {}
    return SeedCost(
        minutes=sum(r.get("train_time_s", 0.0) for r in extra) / 60,
        runs=len(extra),
        wall=run.get("wall_s", 0.0) / 60,
        jobs=run.get("jobs", 1),
        day=data.get("updated", "")[:10],
        threads=((data.get("machine") or {}).get("thread_env") or {}).get("OMP_NUM_THREADS"),
    )


def seeds_paragraph(results_dir):
    """The rule's sentence on seeds, its minutes read from the results it names."""
    cells = ", ".join(f"{words} (`{name}`)" for name, words in FIVE_SEED_CELLS)
    costs = []
    for name, _ in FIVE_SEED_CELLS:
        cost = _seed_cost(results_dir, name)
        if cost is None or not cost.runs:
            costs.append(f"`{name}`: seeds 3-4 not run yet")
            continue
        cores = (
            "one core each"
            if cost.jobs > 1
            else "one process of one thread"
            if cost.threads == "1"
            else "one process on every core"
        )
        costs.append(
            f"`{name}`: {cost.minutes:.1f} more minutes of training ({cost.runs} runs of seeds 3-4, "
            f"{cores}, within the entry's {cost.wall:.1f} wall minutes on {cost.jobs} process(es); "
            f"{cost.day})"
        )
    kept = []
    for name in THREE_SEED_HEADLINES:
        cost = _seed_cost(results_dir, name)
        if cost is not None:
            kept.append(
                f"about {cost.wall * 2 / 3:.0f} more wall minutes for `{name}` "
                f"({cost.wall:.0f} for 3 seeds in {cost.jobs} process(es))"
            )
    text = f"Seeds: 3 per cell, and 5 (0-4) in {len(FIVE_SEED_CELLS)} headline cells: {cells}. Their cost: "
    text += "; ".join(costs) + "."
    if kept:
        text += " The other headline rows keep 3 seeds: 5 would take " + " and ".join(kept)
        text += "; not run: this CPU's time for the issue went to "
        text += "re-running every stale entry on today's code first."
    return text


def _figure_cells(comparison):
    n_hi, n_lo = comparison.unpaired[2]
    seeds = str(n_hi) if n_hi == n_lo else f"{n_hi} / {n_lo}"
    test = report_stats.t_test(comparison)
    t = "—" if test.t is None else "±inf" if abs(test.t) == float("inf") else f"{test.t:+.2f}"
    df = "—" if test.df is None else f"{test.df:g}" if float(test.df).is_integer() else f"{test.df:.1f}"
    p = "—" if test.p is None else "< 0.001" if test.p < 0.001 else f"{test.p:.3f}"
    return {
        "difference": comparison.label + ("" if comparison.counts else " (context)"),
        "seeds": seeds,
        "paired": comparison.text(comparison.paired_figure),
        "unpaired": comparison.text(comparison.unpaired),
        "judged": report_stats.judged(comparison),
        "t": t,
        "df": df,
        "p": p,
        "beyond": report_stats.OUTCOME_WORDS[test.ahead],
    }


def gpu_stale(bench, data):
    """``run.stale_status`` of a GPU result in words that do not count the changed files (so that the
    report does not change with every edit of the tree): ``"stale (code changed since C)"``, the
    other ``stale (...)`` texts as they are, or ``None``."""
    import re

    found = stale_status(bench, [data])
    return None if found is None else re.sub(r"\d+ file\(s\) changed", "code changed", found)


def code_note(data, stale=None):
    """``"*dirty tree: ...*"`` where the runs of the result ``data`` ran on a tree that differed from
    the commit they record, or record a commit reconstructed afterwards, and ``stale`` (a
    ``run.stale_status`` text: the entry's code changed since) where given; ``""`` otherwise."""
    records = [r for r in code_records(data) if r]
    dirty = sorted({r["commit"][:7] for r in records if r.get("dirty")})
    rebuilt = any(r.get("reconstructed") for r in records)
    if not dirty and not rebuilt and not stale:
        return ""
    said = [stale] if stale else []
    if dirty:
        said.append(f"dirty tree: ran on {', '.join(dirty)} plus uncommitted changes")
    if rebuilt:
        said.append("commit reconstructed afterwards from git history")
    return f"*{'; '.join(said)}*: "


def subclaim_lines(result, row):
    """The section's *Sub-claims* table of a row's :class:`~benchmarks.report_claims.RowResult`."""
    from keras_structinit.utils.reporting import format_table

    rows = [
        {
            "claim": claim.name + ("" if claim.counts else f" (not counted: {claim.note})"),
            "paper": claim.paper,
            "ours": outcome.ours,
            "test": outcome.test,
            "holds": outcome.words,
        }
        for claim, outcome in result.outcomes
    ]
    lines = [
        f"Sub-claims (the row's verdict: *{result.verdict or '—'}*; first minus second, the paper's "
        "direction positive; points unless said; two-sided t-test at 95 %):",
        "",
        format_table(
            rows,
            [
                ("Sub-claim", "claim"),
                ("Paper", "paper"),
                ("Ours: Δ ± SE", "ours"),
                ("Test", "test"),
                ("Beyond noise the paper's way", "holds"),
            ],
        ),
        "",
    ]
    return lines + [*(f"{note}" for note in row.notes), *([""] if row.notes else [])]


def _spread_line(name, repeats, found, datas, setting):
    """The report's sentence on ``found`` (:func:`rerun_spread`) between ``datas`` (earlier, later)."""
    commits = [(d.get("code") or {}).get("commit") for d in datas]
    code = (
        "on different code"
        if None in commits
        else f"at one commit, {commits[0][:7]}"
        if commits[0] == commits[1]
        else f"at commits {commits[0][:7]} and {commits[1][:7]}"
    )
    runs = datas[1].get("runs", [])
    scored = "test" if runs and all("test_accuracy" in r for r in runs) else "held-out"
    said = (
        f"`{name}` repeats `{repeats}`'s configuration and seeds. Of the {found['runs']} runs both hold "
        f"(recorded {found['dates'][0]} and {found['dates'][1]}, {code}{setting}), "
    )
    if found["largest"] == 0:
        return said + f"every one has the same {scored} accuracy, bit for bit."
    said += (
        f"single runs moved by up to {found['largest']:.2f} points of {scored} accuracy (mean change "
        f"{found['mean']:+.2f}, sd {found['sd']:.2f}), the means over seeds of one variant by up to "
        f"{found['largest_mean']:.2f}"
    )
    return said + "."


def spread_lines(results_dir, folders):
    """The report's run-to-run spread: per entry that repeats another's configuration and seeds."""
    lines = []
    for suite, benches in folders.items():
        for bench in benches:
            if not bench.repeats:
                continue
            paths = [Path(results_dir) / suite / f"{name}.json" for name in (bench.repeats, bench.name)]
            if not all(path.exists() for path in paths):
                continue
            earlier, later = (json.loads(path.read_text()) for path in paths)
            repeated = next((b for b in benches if b.name == bench.repeats), None)
            # A run is its entry's run key; without one, its variant (where runs name one) and seed.
            key = (repeated.run_key if repeated else None) or tuple(
                f for f in ("variant", "seed") if all(f in r for r in later.get("runs", []))
            )
            found = rerun_spread(earlier, later, key)
            if found is None:
                continue
            machines = [d.get("machine") or {} for d in (earlier, later)]
            threads = [m.get("thread_env") for m in machines]
            cpus = [m.get("cpu") for m in machines]
            setting = (
                f"; thread settings {threads[0] or 'default'} and {threads[1] or 'default'}"
                if threads[0] != threads[1]
                else ""
            ) + (f"; CPUs {cpus[0]} and {cpus[1]}" if None not in cpus and cpus[0] != cpus[1] else "")
            lines += [""] if lines else []
            lines.append(
                _spread_line(f"{suite}/{bench.name}", bench.repeats, found, (earlier, later), setting)
            )
    if lines:
        lines += [
            "",
            "On one code and one CPU model a rerun is identical: `keras.utils.set_random_seed(seed)` before "
            "each run (Python, NumPy and the backend's seeds), the input stream's draws a function of (seed, "
            "pass, example) alone, and the same thread count (the suite sets `OMP_NUM_THREADS` and its kin "
            "to each process' cores) give bit-identical weights, losses and accuracies on PyTorch and JAX "
            "on a CPU, with no backend determinism flag (`tests/test_benchmarks_determinism.py`); another "
            "CPU model may round differently (its kernels use other vector instructions). Results that "
            "record their commit are compared paired on one code; the spread above is what a code, "
            "thread or CPU change moved. The margin added to a difference whose two sides ran on "
            f"different code, {CODE_SPREAD:g} points, is the largest shift of a variant's mean over its "
            f"seeds recorded between two codes: {CODE_SPREAD_SOURCE}.",
        ]
    return lines


# ----------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------
def verdict_change_lines(verdicts, calls, by_t=()):
    """*What changed*'s part on the verdict rule of issue 79: the counted differences whose call the
    t-test changed (``calls``: ``(suite, name, Comparison)``), the rows whose verdict over their
    script's counted differences it changed (``by_t``: ``(suite, name, by 2 SE, by t)``), and the
    rows whose verdict changed in all (``verdicts``: ``(suite, name, the script's, by every
    sub-claim)``)."""
    if not (verdicts or calls or by_t):
        return []
    lines = ["### Verdicts by the t-test and every sub-claim (issue 79)", ""]
    if calls:
        lines += [
            "Counted differences whose call changed from twice the standard error (the rule until "
            "issue 79) to the two-sided t-test at 95 %:",
            "",
        ]
        for suite, name, c in calls:
            test = report_stats.t_test(c)
            lines.append(
                f"- `{suite}/{name}`, {c.label}: {report_stats.OUTCOME_WORDS[c.ahead_2se]} by 2 SE "
                f"({c.text(c.paired_figure if c.why_unpaired is None else c.unpaired)}), "
                f"{report_stats.OUTCOME_WORDS[test.ahead]} "
                f"by the t-test ({test.kind}, {test.text()})."
            )
        lines.append("")
    if by_t:
        lines += [
            "Row verdicts over the script's counted differences alone that the t-test changed (*yes* "
            "when all are beyond noise the paper's way, *no* when one goes the other way, as before):",
            "",
            *(f"- `{suite}/{name}`: {old} → {new}." for suite, name, old, new in by_t),
            "",
        ]
    if verdicts:
        lines += [
            "Row verdicts that changed (the verdict over the script's counted differences by twice their "
            "standard error, against every sub-claim of the paper's figure or table by the t-test):",
            "",
            *(f"- `{suite}/{name}`: {old or '—'} → {new}." for suite, name, old, new in verdicts),
            "",
        ]
    return lines


def _demote(markdown, levels=2):
    return "\n".join("#" * levels + line if line.startswith("#") else line for line in markdown.splitlines())


def build_report(results_dir=RESULTS_DIR, report_path=REPORT, figures=True):
    """The text of REPORT.md (at ``report_path``, which its figure links are relative to);
    figures are written under ``<results>/<suite>/figures/``."""
    import os

    from keras_structinit.utils.reporting import format_table

    results_dir = Path(results_dir)
    plt = _pyplot() if figures else None
    summary, sections, changes, compared, pairing = [], [], [], [], {}
    # What issue 79's rule changed: counted differences, row verdicts by the scripts' differences
    # alone, and row verdicts by every sub-claim.
    verdicts, calls, by_t = [], [], []
    folders = folder_benchmarks(SUITES)
    for suite, benches in folders.items():
        state_path = results_dir / suite / "suite.json"
        state = json.loads(state_path.read_text())["benchmarks"] if state_path.exists() else {}
        for bench in benches:
            path = results_dir / suite / f"{bench.name}.json"
            if not path.exists():
                summary.append(
                    {
                        "suite": suite,
                        "name": bench.name,
                        "ours": "not run",
                        "paper": bench.paper,
                        "verdict": "",
                        "baseline": "",
                        "budget": "",
                        "effect": "",
                        "paired": "",
                        "runs": "",
                    }
                )
                continue
            data = json.loads(path.read_text())
            changes += [
                f"- `{suite}/{bench.name}`, {c['date']}: {c['what']}" for c in data.get("changes", [])
            ]
            script = script_module(bench.script)
            headline, verdict = (
                script.headline(bench.name, data) if hasattr(script, "headline") else ("", None)
            )
            finished = state.get(bench.name)
            found = list(script.comparisons(bench.name, data)) if hasattr(script, "comparisons") else []
            link = f"[{bench.name}](#{suite}-{bench.name.replace('_', '-')})"
            # Issue 79 (point 7): a GPU row cannot be re-run here, so one whose code changed since it
            # ran says so in the summary (a CPU row is re-run by the suite instead).
            note = code_note(data, gpu_stale(bench, data) if suite in GPU_FOLDERS else None)
            compared += [{"suite": suite, "name": link, **_figure_cells(c)} for c in found]
            calls += [(suite, bench.name, c) for c in found if c.counts and c.ahead_2se != c.ahead]
            by_rule = (verdict_of([c.ahead_2se for c in found if c.counts]), verdict_of(found))
            if by_rule[0] != by_rule[1]:
                by_t.append((suite, bench.name, *by_rule))
            if found and hasattr(script, "PAIRING"):
                pairing[Path(bench.script).name] = script.PAIRING
            row = ROWS.get(bench.name)
            result = evaluate(row, data, found) if row else None
            if result is not None and result.verdict is not None:
                before = by_rule[0] if found else verdict
                if result.verdict != before:
                    verdicts.append((suite, bench.name, before, result.verdict))
                verdict = result.verdict
            effect = result.effect if result is not None else None
            summary.append(
                {
                    "suite": suite,
                    "name": link,
                    "ours": note
                    + (f"[{TIMED_PATHS[bench.name]}] " if bench.name in TIMED_PATHS else "")
                    + (headline or ""),
                    "paper": bench.paper,
                    "verdict": verdict or "—",
                    "baseline": effect.baseline if effect else "—",
                    "budget": effect.budget if effect else "—",
                    "effect": effect.effect if effect else "—",
                    "paired": pairing_of(found),
                    "runs": str(len(data.get("runs", []))) if "runs" in data else "—",
                }
            )
            lines = [
                f'<a id="{suite}-{bench.name.replace("_", "-")}"></a>',
                f"## {suite}: {bench.name}",
                "",
                f"**{bench.title}.**",
                "",
                f"Paper: {bench.paper}.",
                "",
                f"Ours: {note}{headline or '—'}.",
                "",
            ]
            if bench.name in TIMED_PATHS:
                lines += [f"Path timed: the {TIMED_PATHS[bench.name]}.", ""]
            if bench.name in WHY_BARS:
                lines += [f"{WHY_BARS[bench.name]}.", ""]
            config = data.get("config")
            if isinstance(config, dict) and ("split" in config or "held_out" in config):
                lines += [f"Numbers from: the {split_note(config)}.", ""]
            if result is not None:
                lines += subclaim_lines(result, row)
            if finished:
                lines += [
                    f"Finished {finished['finished']} in {finished['wall_s'] / 60:.1f} min "
                    f"({finished['jobs']} process(es)); arguments: "
                    + "; then ".join(
                        f"`{' '.join(a)}`" for a in [finished["args"], *finished.get("more_args", [])]
                    )
                    + "."
                    + (f" {finished['note']}" if finished.get("note") else ""),
                    "",
                ]
            for figure in bench.figures if plt is not None else ():
                fig = script.FIGURES[figure](data, plt)
                fig_path = results_dir / suite / "figures" / f"{bench.name}.png"
                fig_path.parent.mkdir(parents=True, exist_ok=True)
                fig.tight_layout()
                fig.savefig(fig_path, dpi=110)
                plt.close(fig)
                link = Path(os.path.relpath(fig_path, Path(report_path).parent)).as_posix()
                lines += [f"![{bench.name}]({link})", ""]
            lines += [_demote(script.render_markdown(data)), ""]
            sections.append("\n".join(lines))
    head = [
        "# Replication report",
        "",
        "Generated by `python -m benchmarks.run` (or `python -m benchmarks.report`) from the JSON files "
        "under `benchmarks/results/<suite>/` alone; do not edit by hand. Each row: our measurement at the "
        "suite's scale (see `benchmarks/suite.py` and each section's arguments), the paper's number at its "
        "own scale, whether the paper's direction reproduced, and whether that verdict rests on paired "
        "differences.",
        "",
        *RULE,
        "",
        seeds_paragraph(results_dir),
        "",
        format_table(
            summary,
            [
                ("Suite", "suite"),
                ("Benchmark", "name"),
                ("Ours", "ours"),
                ("Paper", "paper"),
                ("Baseline", "baseline"),
                ("Budget", "budget"),
                ("Error cut: ours / paper", "effect"),
                ("Direction reproduced", "verdict"),
                ("Paired", "paired"),
                ("Runs", "runs"),
            ],
        ),
        "",
    ]
    if compared:
        head += [
            "## Compared differences",
            "",
            "Each difference an entry's script counts (and its context ones), the paper's direction "
            "positive (first minus second; points of held-out accuracy unless the row says "
            "otherwise): the mean per-seed difference ± its standard error over the seeds both sides "
            "hold (*paired*), the difference of the means ± its standard error (*unpaired*), the test "
            "(paired t or Welch t, and why), its t, degrees of freedom and two-sided p, and the "
            "outcome: beyond noise only where p < 0.05. The row verdicts rest on the sub-claims of "
            "each section, which use these same tests.",
            "",
            format_table(
                compared,
                [
                    ("Suite", "suite"),
                    ("Benchmark", "name"),
                    ("Difference", "difference"),
                    ("Seeds", "seeds"),
                    ("Paired Δ ± SE", "paired", "", "right"),
                    ("Unpaired Δ ± SE", "unpaired", "", "right"),
                    ("Test", "judged"),
                    ("t", "t", "", "right"),
                    ("df", "df", "", "right"),
                    ("p", "p", "", "right"),
                    ("Beyond noise", "beyond"),
                ],
            ),
            "",
            "### Pairing",
            "",
            *(f"- `{script}`: {text}." for script, text in sorted(pairing.items())),
            "",
        ]
    spread = spread_lines(results_dir, folders)
    if spread:
        head += ["## Run-to-run spread", "", *spread, ""]
    if changes or verdicts or calls or by_t:  # each results file's own record of why its runs were replaced
        head += ["## What changed", ""]
        if changes:
            head += [
                *changes,
                "",
                "Each entry is what its results file recorded when its runs were replaced or added; a "
                "verdict it names is the one of its day (before 2026-11-28: unpaired differences only; "
                "until issue 79, *beyond noise* meant beyond twice the standard error, not the t-test).",
                "",
            ]
        head += verdict_change_lines(verdicts, calls, by_t)
    return "\n".join(head + sections)


def write_report(results_dir=RESULTS_DIR, path=None):
    """Writes REPORT.md (atomically) and returns its path: ``benchmarks/REPORT.md`` for the
    package's results, ``<results_dir>/REPORT.md`` for any other folder; for the package's results,
    also the evidence table the package ships (:func:`benchmarks.report_evidence.write_table`)."""
    from benchmarks.report_evidence import write_table
    from keras_structinit.utils.io_utils import write_text

    ours = Path(results_dir).resolve() == RESULTS_DIR
    if path is None:
        path = REPORT if ours else Path(results_dir) / "REPORT.md"
    write_text(path, build_report(results_dir, path))
    if ours:
        write_table(results_dir)
    return path


if __name__ == "__main__":
    print(write_report())
