"""``benchmarks/REPORT.md`` from the suites' results JSON files alone.

For every suite folder under ``results/`` (``cpu``, ``gpu``; ``gpu-quick`` writes to ``gpu``) and
every benchmark of :data:`benchmarks.suite.SUITES` with a results file: a headline
(our numbers, the paper's, and whether the paper's direction reproduced),
the tables and the figures; and what changed, from each results file's ``changes``
(``[{"date": ..., "what": ...}]``: which runs were replaced, and why). Each comes from the
benchmark's script, which owns what it measured: ``headline(name, data)``, ``render_markdown(data)``
and ``FIGURES[figure](data, plt)``, and, where its verdict compares variants over seeds,
``comparisons(name, data)`` (:class:`~benchmarks.bench_utils.Comparison`: the paired and unpaired
figures of each difference, listed in the report's *Compared differences*) and ``PAIRING`` (why the
variants of one seed pair); this module knows no benchmark. Entries that repeat another's
configuration and seeds (``Benchmark.repeats``) give the run-to-run spread. Nothing
is read from the Markdown files the scripts write, and nothing is typed in
by hand.

Usage::

    python -m benchmarks.report        # the same as python -m benchmarks.run --report
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from typing import NamedTuple

from benchmarks import BENCH_DIR, RESULTS_DIR
from benchmarks.bench_utils import CODE_SPREAD, CODE_SPREAD_SOURCE, SESSION_HOURS, pairing_of, rerun_spread
from benchmarks.suite import SUITES, folder_benchmarks

REPORT = BENCH_DIR / "REPORT.md"


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
    "Whether the paper's direction reproduced is judged on every difference the row compares (each "
    "listed under *Compared differences*, with its paired and its unpaired figure):",
    "",
    "- **Paired** where the two variants of one seed share the data order, the augmentation draws and "
    "the initial weights the variant does not change (each script's reason under *Pairing*), and both "
    "runs of every seed ran on one code: the per-seed differences d are the measurement, their mean "
    "against twice its standard error, `std(d, ddof=1) / sqrt(n)`.",
    "- **Unpaired** otherwise (two networks; runs recorded before the input stream drew from (seed, "
    "pass, example) alone, 2026-11-26; a seed's runs on different code; fewer than 2 seeds): the "
    "difference of the means against twice its standard error, `sqrt(var_1 / n_1 + var_2 / n_2)` "
    f"(ddof 1); where the two sides ran on different code, plus the run-to-run spread, {CODE_SPREAD:g} "
    "points of accuracy (below).",
    "- *yes* when every counted difference goes the paper's way by more than its margin, *no* when "
    "one goes the other way by as much, *within noise* otherwise. Differences marked *context* are "
    "shown, not counted. A single run per side has no spread: its margin is 0.",
    "",
    "Which code a run ran on: the commit it records (a run that resumed an entry on a later commit "
    "changing none of the entry's code records the earlier commit too, as `same_code_as`, and counts "
    "as run on it); for runs recorded before commits were (their "
    "entries list as `stale (no commit recorded)`), its sitting (recorded end times chained by gaps of "
    f"at most {SESSION_HOURS:g} hours), or the whole file where runs record no date.",
]

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
        cores = "one core each" if cost.jobs > 1 else "one process on every core"
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
    verdict = {True: "yes", False: "no (the other way)", None: "within noise"}[comparison.ahead]
    return {
        "difference": comparison.label + ("" if comparison.counts else " (context)"),
        "seeds": seeds,
        "paired": comparison.text(comparison.paired_figure),
        "unpaired": comparison.text(comparison.unpaired),
        "judged": comparison.judged,
        "beyond": verdict,
    }


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
    said = (
        f"`{name}` repeats `{repeats}`'s configuration and seeds. Of the {found['runs']} runs both hold "
        f"(recorded {found['dates'][0]} and {found['dates'][1]}, {code}{setting}), "
    )
    if found["largest"] == 0:
        return said + "every one has the same held-out accuracy, bit for bit."
    said += (
        f"single runs moved by up to {found['largest']:.2f} points of held-out accuracy (mean change "
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
def _demote(markdown, levels=2):
    return "\n".join("#" * levels + line if line.startswith("#") else line for line in markdown.splitlines())


def build_report(results_dir=RESULTS_DIR, report_path=REPORT, figures=True):
    """The text of REPORT.md (at ``report_path``, which its figure links are relative to);
    figures are written under ``<results>/<suite>/figures/``."""
    import os

    from keras_structinit.reporting import format_table

    results_dir = Path(results_dir)
    plt = _pyplot() if figures else None
    summary, sections, changes, compared, pairing = [], [], [], [], {}
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
            compared += [{"suite": suite, "name": link, **_figure_cells(c)} for c in found]
            if found and hasattr(script, "PAIRING"):
                pairing[Path(bench.script).name] = script.PAIRING
            summary.append(
                {
                    "suite": suite,
                    "name": link,
                    "ours": headline,
                    "paper": bench.paper,
                    "verdict": verdict or "—",
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
                f"Ours: {headline or '—'}.",
                "",
            ]
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
            "Each difference a verdict rests on, the paper's direction positive (first minus second; "
            "points of held-out accuracy unless the row says otherwise): the mean per-seed difference "
            "± its standard error over the seeds both sides hold (*paired*), the difference of the "
            "means ± its standard error (*unpaired*), which of them the verdict used, and the outcome.",
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
                    ("Judged", "judged"),
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
    if changes:  # each results file's own record of why its runs were replaced
        head += [
            "## What changed",
            "",
            *changes,
            "",
            "Each entry is what its results file recorded when its runs were replaced or added; a "
            "verdict it names is the one of its day (before 2026-11-28: unpaired differences only).",
            "",
        ]
    return "\n".join(head + sections)


def write_report(results_dir=RESULTS_DIR, path=None):
    """Writes REPORT.md (atomically) and returns its path: ``benchmarks/REPORT.md`` for the
    package's results, ``<results_dir>/REPORT.md`` for any other folder."""
    from keras_structinit.io_utils import write_text

    if path is None:
        path = REPORT if Path(results_dir).resolve() == RESULTS_DIR else Path(results_dir) / "REPORT.md"
    write_text(path, build_report(results_dir, path))
    return path


if __name__ == "__main__":
    print(write_report())
