#!/usr/bin/env python
"""ConvCovariance on CIFAR-10 ConvMixers: kernel size, training budget, Gaussian width convention.

Three experiments of the covariance paper (Trockman et al., ICLR 2023),
chosen by the first argument, each comparing the model's default init
(PyTorch's uniform, the paper's baseline) with ``apply_conv_covariance``
(preset ``cifar-p2``) on ConvMixer-``--dim``/``--depth``, patch 2, with the
depthwise filters frozen (``freeze_spatial`` before training) and thawed:

* ``kernel-size``: k in ``--kernel-sizes`` (Table 10, 20 epochs: the gain,
  frozen / thawed, k = 3 -0.05 / -0.05, k = 7 +3.49 / +1.13, k = 9 +5.59 /
  +1.59, k = 15 +8.39 / +3.69 points);
* ``convergence``: k = 9 at every budget in ``--budgets`` (epochs; Fig. 8),
  each budget a complete run with its own full learning-rate cycle, not a
  snapshot of a longer run;
* ``sigma``: k = 9, Eq. 5's Gaussian ``exp(-d^2 / (2 sigma))`` (the package's
  convention) against the paper's Fig. 15 listing, which divides by
  ``sigma`` alone: ``exp(-d^2 / sigma)`` is Eq. 5 with every sigma of the
  schedule halved, i.e. ``sigma0, v_sigma, a_sigma`` of the preset halved
  (``conv-cov-listing``);
* ``augmentation``: the k = 9 frozen pair at ``--budgets`` with RandAugment off and with
  ``--rand-augment`` (default ``torchvision:n2-m12``, the form of ConvMixer's CIFAR command, which
  the paper trains with): whether ConvCovariance's verdict depends on the augmentation.

Recipe: ``recipes.fit_cifar`` defaults (the paper's: AdamW lr 0.01, weight
decay 0.01, triangular one-cycle schedule, pad-4 crop + flip), with
``--batch-size`` and RandAugment off unless ``--rand-augment`` (CPU-sized
runs). Data: the fixed split of the shared CIFAR-10 training images
(``bench_utils.load_split``): ``--train-size`` images of its 40,000-image
training part; accuracy reported on its test part (5,000 images that
chose nothing, or a fixed ``--test-size`` of them), and on
``--validation-size`` of its validation part where asked (default none).
Each (init, frozen, kernel size, epochs, seed[, RandAugment]) is one run; results are
written after every run (``<out>/covariance_<experiment>.json`` / ``.md``), a
re-run resumes, ``--shard I/N`` runs one part of the plan and ``--eval-data``
also evaluates on an external set. Where ``BENCH_DEADLINE`` (a Unix time) is set, a run stops at
the end of the epoch after which another would end past it, and is recorded with the epochs it
did (``epochs_done``; a resume runs it again in full); no run starts after it.

Usage::

    python -m benchmarks.covariance_accuracy kernel-size --backend torch
    python -m benchmarks.covariance_accuracy convergence --backend torch --budgets 1 2 4
    python -m benchmarks.covariance_accuracy sigma --backend torch --train-size 256 --epochs 1 \\
        --seeds 0 --dim 16 --depth 2 --test-size 200 --out /tmp/cov_smoke   # smoke test
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    BACKENDS,
    DEADLINE_EXIT,
    LOCAL_RESULTS,
    PAIRED_BY_SEED,
    SHARED_CIFAR10,
    TRAIN_SEEDS,
    Benchmark,
    Comparison,
    accuracy_of,
    add_eval_data_argument,
    add_rand_augment_argument,
    add_shard_argument,
    add_split_arguments,
    ahead,
    by_seed,
    check_split_arguments,
    data_provenance,
    deadline,
    eval_data_lines,
    fit_and_measure,
    load_split,
    mean_std,
    ms,
    past_deadline,
    rand_augment_text,
    resumable_results,
    run_facts,
    shard_of,
    split_note,
    verdict_of,
)
from keras_structinit.utils.arguments import PIPELINES

NAME = "covariance"
EXPERIMENTS = ("kernel-size", "convergence", "sigma", "augmentation")
#: The RandAugment form the ``augmentation`` experiment turns on when ``--rand-augment`` is not given:
#: the README command of ConvMixer's CIFAR script (the papers train with it; they state no N and M).
PAPER_RAND_AUGMENT = "torchvision:n2-m12"
PRESET = "cifar-p2"
# Table 10 of the paper (ConvMixer on CIFAR-10, 20 epochs): ConvCovariance's gain in points.
PAPER_TABLE10 = {3: (-0.05, -0.05), 7: (3.49, 1.13), 9: (5.59, 1.59), 15: (8.39, 3.69)}  # frozen, thawed


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=EXPERIMENTS)
    parser.add_argument("--data", type=Path, default=SHARED_CIFAR10)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    parser.add_argument("--backend", choices=BACKENDS, default=None)
    parser.add_argument("--dim", type=int, default=128, help="ConvMixer width (paper: 256)")
    parser.add_argument("--depth", type=int, default=8, help="ConvMixer depth (paper: 8)")
    parser.add_argument(
        "--kernel-sizes",
        type=int,
        nargs="+",
        default=[3, 7, 9, 15],
        help="kernel-size: k values (default 3 7 9 15); others use k = 9",
    )
    parser.add_argument("--epochs", type=int, default=2, help="epochs per run (kernel-size, sigma)")
    parser.add_argument(
        "--budgets",
        type=int,
        nargs="+",
        default=[1, 2, 4],
        help="convergence, augmentation: epochs of each complete run (default 1 2 4)",
    )
    parser.add_argument("--train-size", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=128, help="paper: 512")
    add_rand_augment_argument(parser)
    parser.add_argument("--frozen", choices=("both", "frozen", "thawed"), default="both")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--pipeline",
        choices=PIPELINES,
        default="auto",
        help="fit_cifar's input stream (default auto: native where TensorFlow is absent); "
        "the GPU entries take native, which needs no TensorFlow",
    )
    add_shard_argument(parser)
    add_split_arguments(parser)
    add_eval_data_argument(parser)
    args = parser.parse_args(argv)
    check_split_arguments(parser, args)
    if args.experiment == "augmentation" and args.rand_augment is None:
        args.rand_augment = PAPER_RAND_AUGMENT
    if not args.data.exists():
        parser.exit(2, f"{NAME}: error: --data {str(args.data)!r} does not exist\n")
    for option, values in (
        ("--dim", [args.dim]),
        ("--depth", [args.depth]),
        ("--epochs", [args.epochs]),
        ("--budgets", args.budgets),
        ("--train-size", [args.train_size]),
        ("--batch-size", [args.batch_size]),
    ):
        if min(values) < 1:
            parser.error(f"{option} must be >= 1; got {values if len(values) > 1 else values[0]}")
    if any(k < 1 or k % 2 == 0 for k in args.kernel_sizes):
        parser.error(f"--kernel-sizes must be odd and >= 1; got {args.kernel_sizes}")
    return args


def plan(args):
    """``[(init, frozen, kernel_size, epochs, seed, rand_augment)]`` of the experiment, seeds
    outermost; ``rand_augment`` is ``--rand-augment`` but in ``augmentation``, whose runs take it
    off (``None``) and on in turn."""
    frozen = {"both": (True, False), "frozen": (True,), "thawed": (False,)}[args.frozen]
    inits = ("default", "conv-cov") + (("conv-cov-listing",) if args.experiment == "sigma" else ())
    kernels = args.kernel_sizes if args.experiment == "kernel-size" else [9]
    budgets = args.budgets if args.experiment in ("convergence", "augmentation") else [args.epochs]
    augments = (None, args.rand_augment) if args.experiment == "augmentation" else (args.rand_augment,)
    return [
        (init, f, k, e, seed, augment)
        for seed in args.seeds
        for k in kernels
        for e in budgets
        for augment in augments
        for f in frozen
        for init in inits
    ]


def run_augment(run, config):
    """The RandAugment form a run trained with (``None``: off): its own field in ``augmentation``,
    else the config's."""
    return run["rand_augment"] if "rand_augment" in run else config.get("rand_augment")


def initialize(model, init, seed):
    """``default``: the builder's init; ``conv-cov``: Eq. 5's width; ``conv-cov-listing``: sigma / 2."""
    from keras_structinit import apply_conv_covariance
    from keras_structinit.covariance import PRESETS

    if init == "conv-cov":
        apply_conv_covariance(model, preset=PRESET, seed=seed)
    elif init == "conv-cov-listing":
        sigma0, v_sigma, a_sigma = (value / 2 for value in PRESETS[PRESET])
        apply_conv_covariance(model, preset=None, sigma0=sigma0, v_sigma=v_sigma, a_sigma=a_sigma, seed=seed)


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def complete(runs):
    """The runs that trained all their epochs (not cut short by ``BENCH_DEADLINE``)."""
    return [r for r in runs if r.get("epochs_done", r["epochs"]) >= r["epochs"]]


def _acc(runs, **match):
    return [100 * accuracy_of(r) for r in complete(runs) if all(r.get(k) == v for k, v in match.items())]


def gains(runs, init, **match):
    """``{(kernel_size, epochs, frozen): [init's accuracy minus default's, per seed with both (points)]}``
    of the runs that ``match`` (field values, e.g. ``rand_augment=None``)."""
    acc = {
        (r["kernel_size"], r["epochs"], r["frozen"], r["seed"], r["init"]): accuracy_of(r)
        for r in complete(runs)
        if all(r.get(k) == v for k, v in match.items())
    }
    cells = {}
    for (k, epochs, frozen, seed, which), value in acc.items():
        if which == init and (k, epochs, frozen, seed, "default") in acc:
            cells.setdefault((k, epochs, frozen), []).append(
                100 * (value - acc[k, epochs, frozen, seed, "default"])
            )
    return dict(sorted(cells.items(), key=lambda item: (item[0][0], item[0][1], not item[0][2])))


def arms(data):
    """``{rand_augment: complete runs}``: the runs of each RandAugment arm (one arm but in
    ``augmentation``: off first, then on)."""
    found = {}
    for r in complete(data["runs"]):
        found.setdefault(run_augment(r, data["config"]), []).append(r)
    return dict(sorted(found.items(), key=lambda item: item[0] is not None))


def summary_rows(data):
    rows = []
    for augment, runs in arms(data).items():
        cell_gains = {init: gains(runs, init) for init in ("conv-cov", "conv-cov-listing")}
        cells = dict.fromkeys((r["kernel_size"], r["epochs"], r["frozen"]) for r in runs)
        for k, epochs, frozen in sorted(cells, key=lambda c: (c[0], c[1], not c[2])):
            match = {"kernel_size": k, "epochs": epochs, "frozen": frozen}
            row = {"k": k, "epochs": epochs, "filters": "frozen" if frozen else "thawed"}
            row["RandAugment"] = rand_augment_text(augment)
            row["seeds"] = ", ".join(
                str(seed)
                for seed in sorted({r["seed"] for r in runs if all(r[k] == v for k, v in match.items())})
            )
            for init in ("default", "conv-cov", "conv-cov-listing"):
                values = _acc(runs, init=init, **match)
                row[init] = mean_std(values) if values else ""
                gain = cell_gains[init].get((k, epochs, frozen), []) if init != "default" else []
                row[f"gain {init}"] = mean_std(gain) if gain else ""
            paper = PAPER_TABLE10.get(k)
            row["paper"] = (
                f"{paper[0 if frozen else 1]:+.2f}"
                if paper and data["config"]["experiment"] == "kernel-size"
                else ""
            )
            rows.append(row)
    return rows


def render_markdown(data):
    from keras_structinit.utils.reporting import format_table

    cfg = data["config"]
    sigma = cfg["experiment"] == "sigma"
    columns = [
        ("k", "k"),
        ("epochs", "epochs"),
        ("filters", "filters"),
        *([("RandAugment", "RandAugment")] if cfg["experiment"] == "augmentation" else []),
        ("default acc. %", "default"),
        ("conv-cov acc. %", "conv-cov"),
        ("gain (points)", "gain conv-cov"),
        ("seeds", "seeds"),
    ]
    if sigma:
        columns += [("listing width acc. %", "conv-cov-listing"), ("gain listing", "gain conv-cov-listing")]
    if cfg["experiment"] == "kernel-size":
        columns += [("paper gain, 20 epochs", "paper")]
    lines = [
        f"# ConvCovariance on CIFAR-10 ConvMixers: {cfg['experiment']}",
        "",
        run_facts(data["machine"], data["versions"]),
        "",
        f"ConvMixer-{cfg['dim']}/{cfg['depth']}, patch 2; `default` = PyTorch's uniform init (the model's "
        f"own), `conv-cov` = `apply_conv_covariance(preset={PRESET!r})` (Eq. 5: exp(-d^2 / (2 sigma)))"
        + (
            ", `conv-cov-listing` = the same with every sigma halved (exp(-d^2 / sigma), the paper's "
            "Fig. 15 listing)"
            if sigma
            else ""
        )
        + f". Recipe: `fit_cifar` (AdamW lr 0.01, weight decay 0.01, triangular schedule, pad-4 crop + "
        f"flip), batch {cfg['batch_size']}, RandAugment "
        + (
            f"off and {rand_augment_text(cfg['rand_augment'])} (the RandAugment column)"
            if cfg["experiment"] == "augmentation"
            else rand_augment_text(cfg["rand_augment"])
        )
        + f", input stream {cfg.get('pipeline', 'auto')}; "
        f"{cfg['train_size']:,} training images; accuracy on the {split_note(cfg)}. Every row is "
        "complete runs with their own schedule; mean ± std over the seeds of its *seeds* column (each "
        "cell's own: the issue-79 fix of a global seed list that overstated the thawed cells); gains "
        "are per seed.",
        "",
        format_table(summary_rows(data), columns),
        "",
    ]
    cut = [r for r in data["runs"] if r not in complete(data["runs"])]
    if cut:
        lines += [
            "Cut short by `BENCH_DEADLINE` (not in the table; a resume runs them again in full): "
            + "; ".join(
                f"{r['init']} k={r['kernel_size']} {'frozen' if r['frozen'] else 'thawed'} seed "
                f"{r['seed']}: {r['epochs_done']} of {r['epochs']} epochs, "
                f"{100 * accuracy_of(r):.2f} % after {r['train_time_s'] / 60:.1f} min"
                for r in cut
            )
            + ".",
            "",
        ]
    return "\n".join(lines + eval_data_lines(complete(data["runs"])))


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    import keras

    from keras_structinit import freeze_spatial
    from keras_structinit.models import convmixer

    parts = load_split(
        args.data, train_size=args.train_size, validation_size=args.validation_size, test_size=args.test_size
    )
    config = {
        "experiment": args.experiment,
        "dim": args.dim,
        "depth": args.depth,
        "train_size": len(parts.train[0]),
        "test_size": len(parts.test[0]),
        "batch_size": args.batch_size,
        "rand_augment": args.rand_augment,
        "data": data_provenance(args.data),
        "split": parts.record,
        **({"pipeline": args.pipeline} if args.pipeline != "auto" else {}),
    }
    data, save = resumable_results(
        args.out, f"{NAME}_{args.experiment.replace('-', '_')}", config, render_markdown
    )
    done = {
        (r["init"], r["frozen"], r["kernel_size"], r["epochs"], r["seed"], run_augment(r, config))
        for r in complete(data["runs"])
    }
    mine = shard_of(plan(args), args.shard)
    todo = [run for run in mine if run not in done]
    print(f"{len(todo)} run(s) to do, {len(mine) - len(todo)} done already", flush=True)
    stopped = False
    for i, (init, frozen, k, epochs, seed, augment) in enumerate(todo, 1):
        label = f"[{i}/{len(todo)}] k={k} {epochs} ep. {init} {'frozen' if frozen else 'thawed'} seed {seed}"
        if args.experiment == "augmentation":
            label += f" RandAugment {rand_augment_text(augment)}"
        if past_deadline(margin_s=30):
            print(
                f"BENCH_DEADLINE ({deadline():.0f}) reached: {len(todo) - i + 1} run(s) not started",
                flush=True,
            )
            stopped = True
            break
        keras.utils.set_random_seed(seed)
        model = convmixer(args.dim, args.depth, kernel_size=k, patch_size=2)
        initialize(model, init, seed)
        if frozen:
            freeze_spatial(model)
        _, measured = fit_and_measure(
            model,
            parts.train,
            parts.validation,
            epochs,
            batch_size=args.batch_size,
            seed=seed,
            rand_augment=augment,
            eval_data=args.eval_data,
            pipeline=args.pipeline,
            test=parts.test,
        )
        run = {"init": init, "frozen": frozen, "kernel_size": k, "epochs": epochs, "seed": seed}
        if args.experiment == "augmentation":
            run["rand_augment"] = augment
        run.update(measured)
        minutes = run["train_time_s"] / 60
        print(
            f"{label}: test accuracy {run['test_accuracy']:.4f} after {run['epochs_done']} epoch(s), "
            f"{minutes:.1f} min",
            flush=True,
        )
        data["runs"].append(run)
        save()
        stopped |= run["epochs_done"] < epochs
    print(render_markdown(data))
    if stopped:  # the runner keeps the saved runs but does not mark the entry finished
        raise SystemExit(DEADLINE_EXIT)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
def _monotone(by_k):
    means = [float(np.mean(values)) for _, values in by_k]
    return all(b >= a for a, b in zip(means, means[1:], strict=False))


def kernel_size_checks(by_k):
    """The checks of "the gain grows with k" (``by_k``: ``[(k, per-seed gains)]`` in k order): the
    largest k ahead of the smallest beyond noise, and the mean gain not falling at any step of k
    (a fall counts as within noise: the extremes alone would hide it)."""
    return [ahead(by_k[-1][1], by_k[0][1]), True if _monotone(by_k) else None]


#: How the variants of one seed pair in these runs (the report's pairing sentence).
PAIRING = (
    PAIRED_BY_SEED + "; `apply_conv_covariance(seed=seed)` re-draws the depthwise kernels only. "
    "Gains at two kernel sizes are compared unpaired: the networks differ"
)


def _samples(data, init, runs=None):
    """``{(kernel_size, epochs, frozen): by_seed sample of accuracy (points, test part where
    measured)}`` of ``init`` among ``runs`` (default: all complete runs)."""
    groups = {}
    for r in complete(data["runs"]) if runs is None else runs:
        if r["init"] == init:
            groups.setdefault((r["kernel_size"], r["epochs"], r["frozen"]), []).append(r)
    return {cell: by_seed(rs) for cell, rs in groups.items()}


def comparisons(name, data):
    """``convergence``: ConvCovariance above the default at every (budget, frozen) cell;
    ``kernel-size``: the gain at the largest k above the gain at the smallest, frozen and thawed
    (the per-seed gains compared unpaired: two networks); ``sigma``: none (no direction);
    ``augmentation``: :func:`augmentation_comparisons`."""
    experiment, out = data["config"]["experiment"], []
    if experiment == "augmentation":
        return augmentation_comparisons(data)
    default, mine = _samples(data, "default"), _samples(data, "conv-cov")
    cells = [cell for cell in sorted(mine, key=lambda c: (c[0], c[1], not c[2])) if cell in default]

    def label(cell):
        return f"k={cell[0]} {cell[1]} ep. {'frozen' if cell[2] else 'thawed'}"

    if experiment == "convergence":
        out += [Comparison(f"{label(c)}: conv-cov − default", mine[c], default[c], data) for c in cells]
    elif experiment == "kernel-size":
        for frozen in (True, False):
            by_k = [c for c in cells if c[2] == frozen]
            if len(by_k) >= 2:
                low, high = by_k[0], by_k[-1]
                gain = {
                    c: {
                        s: (mine[c][s][0] - default[c][s][0], mine[c][s][1] + default[c][s][1])
                        for s in mine[c]
                        if s in default[c]
                    }
                    for c in (low, high)
                }
                out.append(
                    Comparison(
                        f"gain at {label(high)} − gain at k={low[0]}",
                        gain[high],
                        gain[low],
                        data,
                        paired="two networks: only the data order and draws are shared",
                    )
                )
    return out


def augmentation_comparisons(data):
    """ConvCovariance above the default in each RandAugment arm at every (budget, frozen) cell
    (counted), and, as context, its gain with RandAugment minus its gain without (per seed)."""
    out, gain = [], {}
    for augment, runs in arms(data).items():
        default, mine = _samples(data, "default", runs), _samples(data, "conv-cov", runs)
        for c in sorted(mine, key=lambda c: (c[0], c[1], not c[2])):
            if c in default:
                where = f"k={c[0]} {c[1]} ep. {'frozen' if c[2] else 'thawed'}"
                text = f"{where}, RandAugment {rand_augment_text(augment)}"
                out.append(Comparison(f"{text}: conv-cov − default", mine[c], default[c], data))
                gain.setdefault(c, {})[augment] = {
                    seed: (mine[c][seed][0] - default[c][seed][0], mine[c][seed][1] + default[c][seed][1])
                    for seed in mine[c]
                    if seed in default[c]
                }
    for c, by_arm in gain.items():
        if None in by_arm and len(by_arm) == 2:
            on = next(a for a in by_arm if a is not None)
            out.append(
                Comparison(
                    f"k={c[0]} {c[1]} ep. {'frozen' if c[2] else 'thawed'}: gain with RandAugment − gain "
                    "without",
                    by_arm[on],
                    by_arm[None],
                    data,
                    paired="the arms draw other augmentations",
                    counts=False,
                )
            )
    return out


def augmentation_line(data):
    """Whether ConvCovariance's verdict depends on RandAugment, in words: each arm's verdict
    (:func:`verdict_of` of its counted comparisons) and whether they agree."""
    found = {}
    for c in augmentation_comparisons(data):
        if c.counts:
            arm = c.label.split("RandAugment ", 1)[1].rsplit(": conv-cov − default", 1)[0]
            found.setdefault(arm, []).append(c)
    verdicts = {arm: verdict_of(cs) for arm, cs in found.items()}
    if len(verdicts) < 2:
        return "RandAugment arms incomplete: " + ", ".join(f"{a}: {v}" for a, v in verdicts.items())
    same = len(set(verdicts.values())) == 1
    return (
        "verdict per RandAugment arm: "
        + ", ".join(f"{arm}: {verdict}" for arm, verdict in verdicts.items())
        + (
            " (the verdict does not depend on RandAugment)"
            if same
            else " (the verdict depends on RandAugment)"
        )
    )


def _covariance(data):

    experiment = data["config"]["experiment"]
    if experiment == "augmentation":
        parts = [
            f"RandAugment {rand_augment_text(augment)}, k={k} {epochs} ep. "
            f"{'frozen' if frozen else 'thawed'}: {ms(values)}"
            for augment, runs in arms(data).items()
            for (k, epochs, frozen), values in gains(runs, "conv-cov").items()
        ]
        verdict = verdict_of(augmentation_comparisons(data))
        return (
            "gain over the default init (points): " + "; ".join(parts) + "; " + augmentation_line(data),
            verdict,
        )
    inits = ("conv-cov", "conv-cov-listing") if experiment == "sigma" else ("conv-cov",)
    parts, verdicts = [], list(comparisons(data.get("benchmark", ""), data))
    for init in inits:
        cells = gains(data["runs"], init)
        parts += [
            f"{init} k={k} {epochs} ep. {'frozen' if frozen else 'thawed'}: {ms(values)}"
            for (k, epochs, frozen), values in cells.items()
        ]
        if experiment == "kernel-size":  # the paper: the gain grows with k, at every step
            for frozen in (True, False):
                by_k = sorted((k, values) for (k, _, f), values in cells.items() if f == frozen)
                if len(by_k) >= 2:
                    verdicts.append(True if _monotone(by_k) else None)
                    parts.append(
                        f"{'frozen' if frozen else 'thawed'}: mean gain "
                        f"{'grows' if _monotone(by_k) else 'does not grow'} with k at every step"
                    )
    verdict = verdict_of(verdicts) if experiment != "sigma" else None
    return "gain over the default init (points): " + "; ".join(parts), verdict


def _figure_covariance_kernel(data, plt):

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    cells = gains(data["runs"], "conv-cov")
    for frozen, color in ((True, "C0"), (False, "C1")):
        points = sorted((k, v) for (k, _, f), v in cells.items() if f == frozen)
        if points:
            ax.errorbar(
                [k for k, _ in points],
                [np.mean(v) for _, v in points],
                yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for _, v in points],
                marker="o",
                capsize=3,
                color=color,
                label=f"ours, {'frozen' if frozen else 'thawed'}",
            )
            ks = [k for k, _ in points if k in PAPER_TABLE10]
            ax.plot(
                ks,
                [PAPER_TABLE10[k][0 if frozen else 1] for k in ks],
                ls="--",
                color=color,
                label=f"paper (20 ep.), {'frozen' if frozen else 'thawed'}",
            )
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xlabel("kernel size k")
    ax.set_ylabel("ConvCovariance − default (points)")
    ax.legend(fontsize=7)
    return fig


def _figure_covariance_budget(data, plt):
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for (init, frozen), style in {
        ("default", True): "C0--",
        ("conv-cov", True): "C0-",
        ("default", False): "C1--",
        ("conv-cov", False): "C1-",
    }.items():
        runs = [r for r in data["runs"] if r["init"] == init and r["frozen"] == frozen]
        budgets = sorted({r["epochs"] for r in runs})
        if budgets:
            accs = [[100 * accuracy_of(r) for r in runs if r["epochs"] == e] for e in budgets]
            ax.errorbar(
                budgets,
                [np.mean(a) for a in accs],
                yerr=[np.std(a, ddof=1) if len(a) > 1 else 0 for a in accs],
                fmt=style,
                marker="o",
                capsize=3,
                label=f"{init}, {'frozen' if frozen else 'thawed'}",
            )
    ax.set_xlabel("epochs (each a complete run)")
    ax.set_ylabel("accuracy (%), test part (held-out before issue 79)")
    ax.legend(fontsize=7)
    return fig


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _covariance(data)


#: Figures of the suite report, by the names suite entries list.
FIGURES = {"covariance_kernel": _figure_covariance_kernel, "covariance_budget": _figure_covariance_budget}


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
# ConvMixer-128/6 (k = 9 unless swept, patch 2), no RandAugment, accuracy on a fixed 2,000 of the
# test part's 5,000 images (bench_utils.load_split; the validation part is not evaluated). The sigma
# entry trains on 4,000 images at batch 128; the kernel-size and convergence entries, with four
# kernel sizes or three budgets, on 2,000 images at batch 64: the same number of steps (62 in
# 2 epochs) for half the compute, which keeps them near 30 minutes.
COV_MODEL = ("--backend", "torch", "--dim", "128", "--depth", "6")
COV_SIGMA = (*COV_MODEL, "--train-size", "4000", "--batch-size", "128", "--test-size", "2000")
COV_SMALL = (*COV_MODEL, "--train-size", "2000", "--batch-size", "64", "--test-size", "2000")
# epochs_done: a run cut short by BENCH_DEADLINE and the full run of it later are both kept.
COV_KEY = ("init", "frozen", "kernel_size", "epochs", "seed", "epochs_done")
# The paper's scale (ConvMixer-256/8, 45,000 images, batch 512, RandAugment; 20 epochs in Table 10),
# on JAX (the fastest backend measured on an H100: results/gpu/depthwise_speed.md) with the native
# input stream (a GPU image has no TensorFlow): the GPU suite and its quick tier share it, so one's
# runs count for the other.
COV_PAPER = (
    "--backend",
    "jax",
    "--pipeline",
    "native",
    "--dim",
    "256",
    "--depth",
    "8",
    "--train-size",
    "45000",
    "--batch-size",
    "512",
    "--rand-augment",
    "torchvision:n2-m12",
)
COV_GPU = ("kernel-size", *COV_PAPER, "--epochs", "20")
# --smoke (python -m benchmarks.run --suite gpu-quick --smoke): the same arguments, then these, which
# argparse lets win: a ConvMixer-16/2 on 256 images for 2 epochs, on a CPU in about a minute.
COV_SMOKE = (
    "--dim",
    "16",
    "--depth",
    "2",
    "--train-size",
    "256",
    "--batch-size",
    "32",
    "--test-size",
    "128",
)
SUITE = {
    "cpu": (
        Benchmark(
            name="covariance_kernel_size",
            script="covariance_accuracy.py",
            args=("kernel-size", *COV_SMALL, "--epochs", "2", *TRAIN_SEEDS),
            title="ConvCovariance's gain vs kernel size, frozen and thawed ConvMixer (Table 10)",
            paper="gain at 20 epochs, frozen / thawed: k=3 -0.05 / -0.05, k=7 +3.49 / +1.13, "
            "k=9 +5.59 / +1.59, k=15 +8.39 / +3.69 points",
            minutes=19,  # 18.8 min in 2 processes (2026-11-29)
            run_key=COV_KEY,
            eval_data=True,
            figures=("covariance_kernel",),
        ),
        Benchmark(
            name="covariance_convergence",
            script="covariance_accuracy.py",
            # Budget 8 (248 steps) added to 1, 2, 4 (issue 35: the row's budget); the runs of the
            # shorter budgets are kept, since each budget is a complete run of its own.
            args=("convergence", *COV_SMALL, "--budgets", "1", "2", "4", "8", *TRAIN_SEEDS),
            # Issue 59 (point 5): the headline pair, frozen k 9, gets seeds 3 and 4 too.
            more_args=(
                ("convergence", *COV_SMALL, "--budgets", "1", "2", "4", "8", "--frozen", "frozen")
                + ("--seeds", "3", "4"),
            ),
            title="ConvCovariance vs default init at several budgets, each a complete run (Fig. 8)",
            paper="ConvCovariance converges faster; the gap is largest for short budgets",
            # 26.9 min in 2 processes, seeds 3-4 frozen included (2026-11-29).
            minutes=27,
            run_key=COV_KEY,
            eval_data=True,
            figures=("covariance_budget",),
        ),
        # Issue 79 (point 6): paper 000 trains with RandAugment, these entries without. The k = 9
        # frozen pair at 2 and 8 epochs, RandAugment off and torchvision:n2-m12 (the form of ConvMixer's
        # CIFAR command), 5 seeds (the seed count fixed before it runs): 40 runs, 200 epochs. Estimate,
        # not measured: covariance_convergence's frozen runs took 24 s (2 epochs) and 88 s (8 epochs)
        # each with 2 processes on 2 cores (2026-11-29), so the RandAugment-off arm takes 10 x (24 + 88)
        # s = 18.7 min of process time; RandAugment on the CPU input stream is taken to add 30 % to a
        # run (24 min), both arms ~43 min of process time, ~21.5 min wall in 2 processes; if
        # RandAugment doubled a run it would be ~28 min.
        Benchmark(
            name="covariance_augmentation",
            script="covariance_accuracy.py",
            args=(
                "augmentation",
                *COV_SMALL,
                "--budgets",
                "2",
                "8",
                "--frozen",
                "frozen",
                "--rand-augment",
                "torchvision:n2-m12",
                "--seeds",
                "0",
                "1",
                "2",
                "3",
                "4",
            ),
            title="ConvCovariance vs default init, k = 9 frozen, 2 and 8 epochs, RandAugment off and on "
            "(paper 000 trains with it): does the verdict depend on it?",
            paper="ConvCovariance converges faster (Fig. 8), trained with RandAugment (ConvMixer's CIFAR "
            "recipe)",
            minutes=22,
            estimated=True,
            run_key=(*COV_KEY, "rand_augment"),
            eval_data=True,
            smoke_args=(
                "augmentation",
                *COV_SMALL,
                "--budgets",
                "1",
                "--frozen",
                "frozen",
                "--seeds",
                "0",
                *COV_SMOKE,
            ),
        ),
        Benchmark(
            name="covariance_sigma",
            script="covariance_accuracy.py",
            args=("sigma", *COV_SIGMA, "--epochs", "2", *TRAIN_SEEDS),
            title="Gaussian width convention: Eq. 5's exp(-d^2/(2 sigma)) vs the listing's exp(-d^2/sigma)",
            paper="Eq. 5 is the text's definition; the listing (Fig. 15) divides by sigma",
            minutes=9,  # 8.9 min in 2 processes (2026-11-29)
            run_key=COV_KEY,
            eval_data=True,
        ),
    ),
    "gpu": (
        Benchmark(
            name="covariance_kernel_size",
            script="covariance_accuracy.py",
            args=(*COV_GPU, "--kernel-sizes", "3", "7", "9", "15", *TRAIN_SEEDS),
            title="ConvCovariance on ConvMixer-256/8 (patch 2), k = 3..15, 20 epochs, frozen and thawed "
            "(Fig. 3's headline at k = 9, Table 10)",
            paper="k = 9: 84.97 -> 90.56 % frozen, 89.26 -> 90.85 % thawed; "
            "Table 10 gains as in the CPU suite",
            minutes=8 * 60,
            run_key=COV_KEY,
            eval_data=True,
            figures=("covariance_kernel",),
        ),
        Benchmark(
            name="covariance_convergence",
            script="covariance_accuracy.py",
            args=("convergence", *COV_PAPER, "--budgets", "5", "10", "20", *TRAIN_SEEDS),
            title="ConvCovariance vs default init on ConvMixer-256/8 (patch 2, k = 9) at 5, 10 and 20 "
            "epochs, each a complete run, frozen and thawed (Fig. 8 at the paper's scale)",
            paper="ConvCovariance converges faster; at 20 epochs 84.97 -> 90.56 % frozen, 89.26 -> 90.85 % "
            "thawed (Fig. 3)",
            minutes=2 * 60,  # 36 runs, 420 epochs of 87 steps at ~0.2 s a step (estimate, see below)
            estimated=True,
            run_key=COV_KEY,
            eval_data=True,
            figures=("covariance_budget",),
        ),
    ),
    # The covariance pair (default vs conv-cov, frozen 9x9 filters) at the paper's scale in one GPU
    # loan, cut to what fits. Estimate, not measured: XLA's cost analysis of the jitted train step
    # (compiled on this CPU) gives 690 GFLOP a step for ConvMixer-256/8 at batch 512, frozen (707
    # thawed), 15.2x the 45.5 GFLOP of ConvMixer-128/6 at batch 128, whose frozen step took 15 ms on
    # one H100 (JAX, results/gpu/depthwise_speed.md): 3.0 TFLOP/s, 4.5% of the H100's published
    # 67 TFLOP/s FP32 (at which the step would take 10 ms). At that efficiency: 0.23 s a step, so a
    # 20-epoch run (1,740 steps) ~7 min and the pair ~14.6 min with start-up (does not fit); at 5
    # epochs (435 steps, 1.7 min, + ~0.5 min to build and compile each run, + ~0.3 min to read the
    # data) the pair takes ~4.6 min. The step time it records is the check: if the pair at 5 epochs
    # takes under ~1.5 min, the 20-epoch pair (part of the GPU suite's covariance_kernel_size)
    # fits a loan of its own.
    "gpu-quick": (
        Benchmark(
            name="covariance_convergence",
            script="covariance_accuracy.py",
            args=("convergence", *COV_PAPER, "--budgets", "5", "--frozen", "frozen", "--seeds", "0"),
            title="ConvCovariance vs default init on ConvMixer-256/8 (patch 2, k = 9, frozen), 5 epochs, "
            "1 seed (Fig. 3's pair at a quarter of its budget; part of the GPU entry)",
            paper="84.97 -> 90.56 % (frozen, k = 9, 20 epochs); ConvCovariance's lead is larger at short "
            "budgets (Fig. 8)",
            minutes=4.6,
            estimated=True,
            run_key=COV_KEY,
            eval_data=True,
            smoke_args=(
                "convergence",
                *COV_PAPER,
                "--budgets",
                "2",
                "--frozen",
                "frozen",
                "--seeds",
                "0",
                *COV_SMOKE,
            ),
        ),
    ),
}


if __name__ == "__main__":
    main()
