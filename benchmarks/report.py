"""``benchmarks/REPORT.md`` from the suites' results JSON files alone.

For every suite folder under ``results/`` (``cpu``, ``gpu``; ``gpu-quick`` writes to ``gpu``) and
every benchmark of :data:`benchmarks.suite.SUITES` with a results file: a headline
(our numbers, the paper's, and whether the paper's direction reproduced),
the tables and the figures; and what changed, from each results file's ``changes``
(``[{"date": ..., "what": ...}]``: which runs were replaced, and why). Each comes from the
benchmark's script, which owns what it measured: ``headline(name, data)``, ``render_markdown(data)``
and ``FIGURES[figure](data, plt)``; this module knows no benchmark. Nothing
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

from benchmarks import BENCH_DIR, RESULTS_DIR
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
    summary, sections, changes = [], [], []
    for suite, benches in folder_benchmarks(SUITES).items():
        state_path = results_dir / suite / "suite.json"
        state = json.loads(state_path.read_text())["benchmarks"] if state_path.exists() else {}
        for bench in benches:
            path = results_dir / suite / f"{bench.name}.json"
            if not path.exists():
                summary.append({"suite": suite, "name": bench.name, "ours": "not run", "paper": bench.paper,
                                "verdict": "", "runs": ""})
                continue
            data = json.loads(path.read_text())
            changes += [f"- `{suite}/{bench.name}`, {c['date']}: {c['what']}"
                        for c in data.get("changes", [])]
            script = script_module(bench.script)
            headline, verdict = (script.headline(bench.name, data) if hasattr(script, "headline")
                                 else ("", None))
            finished = state.get(bench.name)
            summary.append({
                "suite": suite, "name": f"[{bench.name}](#{suite}-{bench.name.replace('_', '-')})",
                "ours": headline, "paper": bench.paper,
                "verdict": verdict or "—",
                "runs": str(len(data.get("runs", []))) if "runs" in data else "—",
            })
            lines = [f"<a id=\"{suite}-{bench.name.replace('_', '-')}\"></a>",
                     f"## {suite}: {bench.name}", "", f"**{bench.title}.**", "",
                     f"Paper: {bench.paper}.", "", f"Ours: {headline or '—'}.", ""]
            if finished:
                lines += [f"Finished {finished['finished']} in {finished['wall_s'] / 60:.1f} min "
                          f"({finished['jobs']} process(es)); arguments: "
                          + "; then ".join(f"`{' '.join(a)}`" for a in [finished["args"],
                                                                      *finished.get("more_args", [])])
                          + ".", ""]
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
        "own scale, and whether the paper's direction reproduced: *yes* when every compared difference "
        "goes the paper's way by more than twice its standard error over seeds, *no* when one goes the "
        "other way by as much, *within noise* otherwise.",
        "",
        format_table(summary, [("Suite", "suite"), ("Benchmark", "name"), ("Ours", "ours"),
                               ("Paper", "paper"), ("Direction reproduced", "verdict"), ("Runs", "runs")]),
        "",
    ]
    if changes:  # each results file's own record of why its runs were replaced
        head += ["## What changed", "", *changes, ""]
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
