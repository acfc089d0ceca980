"""``benchmarks/REPORT.md`` from the suites' results JSON files alone.

For every suite folder under ``results/`` (``cpu``, ``gpu``) and every
benchmark of :data:`benchmarks.suite.SUITES` with a results file: a headline
(our numbers, the paper's, and whether the paper's direction reproduced, each
computed from the runs), the benchmark script's own tables (its
``render_markdown``) and a figure where one is defined. Nothing is read from
the Markdown files the scripts write, and nothing is typed in by hand.

Usage::

    python -m benchmarks.report        # the same as python -m benchmarks.run --report
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

import numpy as np

from benchmarks import BENCH_DIR, RESULTS_DIR
from benchmarks.suite import SUITES

from bench_utils import BACKENDS  # the benchmarks package put its folder on sys.path

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


def _ms(values, scale=1.0):
    values = scale * np.asarray(values, dtype=float)
    if values.size == 1:
        return f"{values[0]:.2f}"
    return f"{values.mean():.2f} ± {values.std(ddof=1):.2f}"


def _by(runs, field, value):
    return [r for r in runs if r.get(field) == value]


def _ahead(higher, lower=(0.0,)):
    """Whether ``higher`` beats ``lower`` (per-seed values): ``True`` when the difference of the
    means exceeds twice its standard error, ``False`` when it is as far the other way, ``None``
    (within noise) otherwise. A single value has no spread: its standard error counts as 0."""
    higher, lower = np.asarray(higher, float), np.asarray(lower, float)

    def var(x):
        return x.var(ddof=1) / x.size if x.size > 1 else 0.0

    diff, se = higher.mean() - lower.mean(), np.sqrt(var(higher) + var(lower))
    return True if diff > 2 * se else False if diff < -2 * se else None


def _verdict(checks):
    """``"yes"`` when every check holds beyond noise, ``"no"`` when one goes the other way beyond
    noise, ``"within noise"`` otherwise; ``None`` without checks."""
    if not checks:
        return None
    return "no" if False in checks else "yes" if all(checks) else "within noise"


def _seed_gaps(runs):
    """Frozen minus learnable held-out accuracy (points) per seed with both runs."""
    acc = {(r["seed"], r["frozen"]): r["val_accuracy"] for r in runs}
    return [100 * (acc[s, True] - acc[s, False]) for s, frozen in acc if frozen and (s, False) in acc]


# ----------------------------------------------------------------------------
# Headlines: (our numbers, did the paper's direction reproduce)
# ----------------------------------------------------------------------------
def _lc_fig1(data):
    models = list(dict.fromkeys(r["model"] for r in data["runs"]))
    expansions = {m: int(m.rsplit("x", 1)[1]) for m in models}
    gaps = {m: _seed_gaps(_by(data["runs"], "model", m)) for m in models}
    gaps = {m: g for m, g in gaps.items() if g}
    text = "; ".join(f"E = {expansions[m]}: {_ms(g)}" for m, g in gaps.items())
    ordered = sorted(gaps, key=expansions.get)
    checks = [_ahead(gaps[ordered[-1]], gaps[ordered[0]])] if len(ordered) >= 2 else []
    return f"gap frozen − learnable (points): {text}", _verdict(checks)


def _lc_fig3(data):
    from benchmarks.lc_accuracy import FIG3_MODELS

    gaps = {m: _seed_gaps(_by(data["runs"], "model", m))
            for m in dict.fromkeys(r["model"] for r in data["runs"])}
    gaps = {m: g for m, g in gaps.items() if g}
    text = "; ".join(f"{m}: {_ms(g)}" for m, g in gaps.items())
    without = [m for m in gaps if FIG3_MODELS[m][0].startswith("no 1x1")]
    with_1x1 = [m for m in gaps if m not in without]
    checks = [_ahead(gaps[w], gaps[n]) for w in with_1x1 for n in without]
    return f"gap frozen − learnable (points): {text}", _verdict(checks)


def _mimetic(data):
    cells = {}
    for r in data["runs"]:
        cells.setdefault((r["model"], r["epochs"]), {}).setdefault(r["variant"], []).append(r["val_accuracy"])
    parts, verdicts = [], []
    for (model, epochs), variants in cells.items():
        base = variants.get("mean-shift:0")
        shifts = {v: a for v, a in variants.items() if v.startswith("mean-shift:") and v != "mean-shift:0"}
        if not base or not shifts:
            continue
        best = max(shifts, key=lambda v: np.mean(shifts[v]))
        text = (f"{model}, {epochs} epochs: b = 0 {_ms(base, 100)} %, best {best} {_ms(shifts[best], 100)} %")
        verdicts.append(_ahead(shifts[best], base))
        combos = {v: a for v, a in variants.items() if v.startswith("conv-cov+")}
        if combos and "conv-cov" in variants:
            combo = max(combos, key=lambda v: np.mean(combos[v]))
            text += (f", conv-cov {_ms(variants['conv-cov'], 100)} %, {combo} {_ms(combos[combo], 100)} %")
            alone = variants.get(combo.split("+", 1)[1], base)
            verdicts += [_ahead(combos[combo], variants["conv-cov"]), _ahead(combos[combo], alone)]
        parts.append(text)
    return "; ".join(parts), _verdict(verdicts)


def _lc_speed(data):
    parts, verdicts = [], []
    for backend, entry in data.get("results", {}).items():
        rows = entry.get("rows", {})
        for expansion in dict.fromkeys(key.split("/")[0] for key in rows):
            base, frozen = rows.get(f"{expansion}/baseline"), rows.get(f"{expansion}/frozen")
            if not (base and frozen):
                continue
            speedup = base["forward_backward"]["median_s"] / frozen["forward_backward"]["median_s"]
            verdicts.append(speedup > 1)
            parts.append(f"{backend} {expansion}: frozen fwd+bwd {speedup:.2f}x faster")
    return "; ".join(parts), _verdict(verdicts)


def _per_backend(data):
    return [(b, data["results"][b]) for b in BACKENDS if b in data.get("results", {})]


def _depthwise_speed(data):
    parts, verdicts = [], []
    for backend, entry in _per_backend(data):
        for row in entry.get("model", {}).get("results", []):
            if row["layer"] == "package":
                compile_ = "XLA" if row["jit_compile"] else "default compile"
                parts.append(f"{backend} ({compile_}): {row['thawed']['median_s']:.2f} s/step thawed, "
                             f"frozen {row['frozen_speedup']:.2f}x faster")
                verdicts.append(row["frozen_speedup"] > 1)
    return "ConvMixer-128/6 step, package layer: " + "; ".join(parts), _verdict(verdicts)


def _init_cost(data):
    parts = [f"{backend} {entry['timings']['apply_conv_covariance']['median_s']:.3f} s "
             f"(reference + assign {entry['timings']['reference_sampling_assign']['median_s']:.3f} s)"
             for backend, entry in _per_backend(data)]
    return "apply_conv_covariance, ConvMixer-1536/24: " + "; ".join(parts), None


def _selection_speed(data):
    parts = [f"{backend} {entry['time']['median_s']:.2f} s, peak "
             f"{entry['tracemalloc_peak_bytes'] / entry['teacher_weight_bytes']:.2f}x the teacher's weights"
             for backend, entry in _per_backend(data)]
    return "select_weights ViT-B -> ViT-T: " + "; ".join(parts), None


def _alignment_cost(data):
    parts = [f"{backend} patch covariance {entry['timings']['patch_covariance']['median_s']:.1f} s "
             f"({entry['config']['images']:,} images), align 2 layers "
             f"{entry['timings']['align_conv_layers']['median_s']:.1f} s "
             f"({entry['config']['align_images']:,} images)" for backend, entry in _per_backend(data)]
    return "; ".join(parts), None


def _covariance(data):
    from benchmarks.covariance_accuracy import gains

    experiment = data["config"]["experiment"]
    inits = ("conv-cov", "conv-cov-listing") if experiment == "sigma" else ("conv-cov",)
    parts, verdicts = [], []
    for init in inits:
        cells = gains(data["runs"], init)
        parts += [f"{init} k={k} {epochs} ep. {'frozen' if frozen else 'thawed'}: {_ms(values)}"
                  for (k, epochs, frozen), values in cells.items()]
        if experiment == "kernel-size":  # the paper: the gain grows with k
            for frozen in (True, False):
                by_k = sorted((k, values) for (k, _, f), values in cells.items() if f == frozen)
                if len(by_k) >= 2:
                    verdicts.append(_ahead(by_k[-1][1], by_k[0][1]))
        elif experiment == "convergence":  # the paper: ConvCovariance ahead at every budget
            verdicts += [_ahead(values) for values in cells.values()]
    verdict = _verdict(verdicts) if experiment != "sigma" else None
    return "gain over the default init (points): " + "; ".join(parts), verdict


def _covariance_transfer(data):
    from benchmarks.covariance_transfer import headline_comparisons

    text, pairs = headline_comparisons(data)
    return text, _verdict([_ahead(higher, lower) for higher, lower in pairs])


def _selection(data):
    accs, probes = {}, {}
    for r in data["runs"]:
        accs.setdefault(r["variant"], []).append(r["val_accuracy"])
        probes.setdefault(r["variant"], []).append(r["probe_accuracy"])
    text = "; ".join(f"{v} {_ms(a, 100)} % (probe {_ms(probes[v], 100)})" for v, a in accs.items())
    # The paper: selection beats random init (fine-tuned and probed), consistent selection beats
    # inconsistent, and selection + distillation beats selection alone.
    pairs = [("uniform", "random_init"), ("uniform", "random_inconsistent"), ("uniform+distill", "uniform")]
    checks = [_ahead(accs[a], accs[b]) for a, b in pairs if a in accs and b in accs]
    if "uniform" in probes and "random_init" in probes:
        checks.append(_ahead(probes["uniform"], probes["random_init"]))
    return "held-out accuracy: " + text, _verdict(checks)


def _alignment(data):
    cells = {}
    for r in data["runs"]:
        for iterations, result in r["accuracy"].items():
            cells.setdefault((r["variant"], int(iterations)), []).append(result["test"])
    parts = [f"{variant} @{it}: {_ms(values, 100)} %" for (variant, it), values in sorted(cells.items())
             if variant in ("default", "aligned_2", "smallest_1")]
    verdicts = []
    for it in sorted({it for _, it in cells}):
        default = cells.get(("default", it))
        if default and ("aligned_2", it) in cells:  # the paper: 2 aligned layers above the default
            verdicts.append(_ahead(cells["aligned_2", it], default))
        if default and ("smallest_1", it) in cells:  # and the smallest eigenvectors below it
            verdicts.append(_ahead(default, cells["smallest_1", it]))
    return "held-out accuracy: " + "; ".join(parts), _verdict(verdicts)


HEADLINES = {
    "alignment_accuracy": _alignment,
    "covariance_kernel_size": _covariance,
    "covariance_convergence": _covariance,
    "covariance_sigma": _covariance,
    "covariance_transfer_groups": _covariance_transfer,
    "covariance_transfer_patch_kernel": _covariance_transfer,
    "lc_accuracy_fig1": _lc_fig1,
    "lc_accuracy_fig3": _lc_fig3,
    "mimetic_sweep": _mimetic,
    "selection_accuracy": _selection,
    "lc_speed": _lc_speed,
    "depthwise_speed": _depthwise_speed,
    "init_cost": _init_cost,
    "selection_speed": _selection_speed,
    "alignment_cost": _alignment_cost,
}


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


def _figure_lc_gap(data, plt):
    models = sorted(dict.fromkeys(r["model"] for r in data["runs"]), key=lambda m: int(m.rsplit("x", 1)[1]))
    points = [(int(m.rsplit("x", 1)[1]), _seed_gaps(_by(data["runs"], "model", m))) for m in models]
    points = [(e, g) for e, g in points if g]
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.errorbar([e for e, _ in points], [np.mean(g) for _, g in points],
                yerr=[np.std(g, ddof=1) if len(g) > 1 else 0 for _, g in points], marker="o", capsize=3)
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("LC expansion E")
    ax.set_ylabel("frozen − learnable (points)")
    ax.set_title("LCResNet-20-16xE (paper: rises to ≥ 0 near E = 8)", fontsize=9)
    return fig


def _figure_mimetic_b(data, plt):
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    cells = {}
    for r in data["runs"]:
        if r["variant"].startswith("mean-shift:"):
            b = float(r["variant"].split(":")[1])
            cells.setdefault((r["model"], r["epochs"]), {}).setdefault(b, []).append(100 * r["val_accuracy"])
    for (model, epochs), by_b in sorted(cells.items()):
        bs = sorted(by_b)
        ax.errorbar(bs, [np.mean(by_b[b]) for b in bs],
                    yerr=[np.std(by_b[b], ddof=1) if len(by_b[b]) > 1 else 0 for b in bs],
                    marker="o", capsize=3, label=f"{model}, {epochs} ep.")
    ax.set_xlabel("mean shift b")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("Mimetic MLP init (paper: b = 0 is a dip)", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def _figure_covariance_kernel(data, plt):
    from benchmarks.covariance_accuracy import PAPER_TABLE10, gains

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    cells = gains(data["runs"], "conv-cov")
    for frozen, color in ((True, "C0"), (False, "C1")):
        points = sorted((k, v) for (k, _, f), v in cells.items() if f == frozen)
        if points:
            ax.errorbar([k for k, _ in points], [np.mean(v) for _, v in points],
                        yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for _, v in points], marker="o",
                        capsize=3, color=color, label=f"ours, {'frozen' if frozen else 'thawed'}")
            ks = [k for k, _ in points if k in PAPER_TABLE10]
            ax.plot(ks, [PAPER_TABLE10[k][0 if frozen else 1] for k in ks], ls="--", color=color,
                    label=f"paper (20 ep.), {'frozen' if frozen else 'thawed'}")
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xlabel("kernel size k")
    ax.set_ylabel("ConvCovariance − default (points)")
    ax.legend(fontsize=7)
    return fig


def _figure_covariance_budget(data, plt):
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for (init, frozen), style in {("default", True): "C0--", ("conv-cov", True): "C0-",
                                  ("default", False): "C1--", ("conv-cov", False): "C1-"}.items():
        runs = [r for r in data["runs"] if r["init"] == init and r["frozen"] == frozen]
        budgets = sorted({r["epochs"] for r in runs})
        if budgets:
            accs = [[100 * r["val_accuracy"] for r in runs if r["epochs"] == e] for e in budgets]
            ax.errorbar(budgets, [np.mean(a) for a in accs],
                        yerr=[np.std(a, ddof=1) if len(a) > 1 else 0 for a in accs], fmt=style, marker="o",
                        capsize=3, label=f"{init}, {'frozen' if frozen else 'thawed'}")
    ax.set_xlabel("epochs (each a complete run)")
    ax.set_ylabel("held-out accuracy (%)")
    ax.legend(fontsize=7)
    return fig


def _bars(ax, series, labels):
    """Grouped bars with std error bars: ``series`` maps a legend label to one list of per-seed
    values (%) per entry of ``labels`` (an empty list leaves a gap)."""
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        x = np.arange(len(labels)) + (i - (len(series) - 1) / 2) * width
        ax.bar(x, [np.mean(v) if v else np.nan for v in values], width,
               yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for v in values], capsize=2, label=name)
    ax.set_xticks(np.arange(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.legend(fontsize=7)


def _figure_selection_methods(data, plt):
    variants = list(dict.fromkeys(r["variant"] for r in data["runs"]))
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    fields = (("fine-tuned", "val_accuracy"), ("linear probe at init", "probe_accuracy"))
    _bars(ax, {field: [[100 * r[key] for r in data["runs"] if r["variant"] == v] for v in variants]
               for field, key in fields}, variants)
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("Weight selection (paper: selection > random init, probe 13.5 -> 28.2)", fontsize=8)
    return fig


def _figure_transfer_groups(data, plt):
    from benchmarks.covariance_transfer import GROUPS, LETTERS, group_accuracies

    cells = group_accuracies(data["runs"])
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    _bars(ax, {("frozen" if frozen else "thawed"): [list(cells.get((g, frozen), {}).values()) for g in GROUPS]
               for frozen in (True, False) if any((g, frozen) in cells for g in GROUPS)},
          [f"{LETTERS[g]} {g}" for g in GROUPS])
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("Covariance transfer, Fig. 3's groups (paper: B, C, E above A)", fontsize=8)
    return fig


FIGURES = {"lc_gap": _figure_lc_gap, "mimetic_b": _figure_mimetic_b,
           "covariance_kernel": _figure_covariance_kernel, "covariance_budget": _figure_covariance_budget,
           "selection_methods": _figure_selection_methods, "transfer_groups": _figure_transfer_groups}


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
    summary, sections = [], []
    for suite, benches in SUITES.items():
        state_path = results_dir / suite / "suite.json"
        state = json.loads(state_path.read_text())["benchmarks"] if state_path.exists() else {}
        for bench in benches:
            path = results_dir / suite / f"{bench.name}.json"
            if not path.exists():
                summary.append({"suite": suite, "name": bench.name, "ours": "not run", "paper": bench.paper,
                                "verdict": "", "runs": ""})
                continue
            data = json.loads(path.read_text())
            headline, verdict = HEADLINES.get(bench.name, lambda d: ("", None))(data)
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
                fig = FIGURES[figure](data, plt)
                fig_path = results_dir / suite / "figures" / f"{bench.name}.png"
                fig_path.parent.mkdir(parents=True, exist_ok=True)
                fig.tight_layout()
                fig.savefig(fig_path, dpi=110)
                plt.close(fig)
                link = Path(os.path.relpath(fig_path, Path(report_path).parent)).as_posix()
                lines += [f"![{bench.name}]({link})", ""]
            lines += [_demote(script_module(bench.script).render_markdown(data)), ""]
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
