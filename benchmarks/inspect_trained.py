#!/usr/bin/env python
"""What training makes of filters, measured with ``keras_structinit.inspect`` (issue 36).

Two experiments, chosen by the first argument:

* ``sigma``: the covariance paper's observation that trained depthwise filters have a
  covariance of the closed form whose width grows with depth (Trockman et al., Fig. 5-6;
  the schedule of Eq. 11 was read off such models). A ConvMixer-128/8 with 9x9 filters and
  2x2 patches, PyTorch's default init (the paper's baseline, ``torch-default``), learnable
  filters, trained with the paper's CIFAR recipe (``paper_config("convcov")``: AdamW,
  triangular schedule, RandAugment) at a CPU budget; ``inspect`` fits ``sigma`` to every
  depthwise layer before and after training.
* ``entropy``: the LC paper's claim that frozen random filters stay more diverse than learned
  ones (Gavrikov & Keuper, Sec. 4.2, Fig. 6): LCResNet-20-16x8 frozen and learnable, trained
  with the paper's recipe (``paper_config("lc")``, App. C) at a CPU budget; the filter variance
  entropy of the first layer's combined filters (spatial x 1x1, Def. 3.1), raw and divided by
  the randomness threshold (the paper's Fig. 6 form), and its mean over all LC blocks.

Every (experiment, variant, seed) is one complete run on the fixed split of the shared CIFAR-10
training images (``bench_utils.load_split``, issue 79): ``--train-size`` images of its 40,000-image
training part; accuracy reported on its test part (5,000 images that chose nothing, or a fixed
``--test-size`` of them: the suite entries take 2,000, the size of the held-out subset they
evaluated before the split), and on ``--validation-size`` of its validation part where asked
(default none: nothing here is chosen). Results: ``<out>/inspect_<experiment>.json`` and ``.md``,
written after every run; a re-run skips finished runs; ``--shard I/N`` runs one of N parts.
``--figures`` also writes seed 0's ``inspect`` PNGs under ``<out>/figures/inspect_<experiment>/``.

Usage::

    python -m benchmarks.inspect_trained sigma --backend torch
    python -m benchmarks.inspect_trained entropy --backend torch
    python -m benchmarks.inspect_trained sigma --train-size 256 --epochs 1 --seeds 0 \\
        --test-size 200 --out /tmp/inspect_smoke                   # smoke test
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    PAIRED_BY_SEED,
    SHARED_CIFAR10,
    TRAIN_SEEDS,
    Benchmark,
    Comparison,
    accuracy_of,
    add_shard_argument,
    add_split_arguments,
    by_seed,
    check_split_arguments,
    data_provenance,
    load_split,
    mean_std,
    resumable_results,
    run_facts,
    shard_of,
    split_accuracy,
    split_note,
    verdict_of,
)

NAME = "inspect"
#: (model, build keywords, init, recipe) of each experiment; the variants are ``frozen`` values.
EXPERIMENTS = {
    "sigma": {
        "model": "convmixer-128/8",
        "kwargs": {"kernel_size": 9, "patch_size": 2},
        "init": "torch-default",
        "paper": "convcov",
        "variants": (False,),
    },
    "entropy": {
        "model": "lcresnet-20-16x8",
        "kwargs": {},
        "init": None,
        "paper": "lc",
        "variants": (True, False),
    },
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=tuple(EXPERIMENTS))
    parser.add_argument("--backend", choices=BACKENDS, help="Keras backend (default: current KERAS_BACKEND)")
    parser.add_argument(
        "--data",
        type=Path,
        default=SHARED_CIFAR10,
        help="CIFAR-10 training images (zip/dir/npz; default: the shared split)",
    )
    parser.add_argument("--train-size", type=int, default=5000)
    add_split_arguments(parser)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument(
        "--learning-rate", type=float, default=None, help="peak learning rate (default: the paper's)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--figures", action="store_true", help="write seed 0's inspect PNGs")
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    add_shard_argument(parser)
    args = parser.parse_args(argv)
    check_split_arguments(parser, args)
    return args


def accuracy_words(runs):
    """``"Test"`` where every run measured the split's test part, ``"Held-out"`` where none did
    (recorded before issue 79), else both."""
    tested = {"test_accuracy" in r for r in runs}
    return "Test/held-out" if len(tested) == 2 else "Held-out" if tested == {False} else "Test"


def _measure(report, experiment):
    """The run's fields from an :class:`InspectionReport`."""
    if experiment == "sigma":
        rows = [r for r in report.spatial if r["kind"] == "depthwise"]
        return {
            "sigma": [r["covariance_fit"]["sigma"] for r in rows],
            "rel_error": [r["covariance_fit"]["rel_error"] for r in rows],
            "structured": [r["covariance_fit"]["structured"] for r in rows],
            "depth_correlation": report.sigma_depth_correlation("depthwise"),
            "sigma_grows_with_depth": report.sigma_grows_with_depth,
        }
    from keras_structinit.lc import randomness_threshold

    rows = [r for r in report.spatial if r["kind"] == "lc"]
    first = rows[0]
    return {
        "first_layer_entropy": first["variance_entropy"],
        "first_layer_normalized": first["variance_entropy"] / randomness_threshold(first["filters"]),
        "mean_entropy": float(np.mean([r["variance_entropy"] for r in rows])),
        "entropy": [r["variance_entropy"] for r in rows],
    }


def _summary(data):
    runs, experiment = data["runs"], data["config"]["experiment"]
    lines = []
    if experiment == "sigma":
        if not runs:
            return lines
        before = np.array([r["init"]["sigma"] for r in runs])
        after = np.array([r["trained"]["sigma"] for r in runs])
        errors = np.array([r["trained"]["rel_error"] for r in runs])
        lines += [
            "| Depthwise layer | sigma at init | sigma trained | fit error trained | Paper's schedule "
            "(cifar-p2) |",
            "|---|---:|---:|---:|---:|",
        ]
        from keras_structinit.covariance import depth_fractions, resolve_schedule, variance_schedule

        preset = resolve_schedule("cifar-p2")
        schedule = [variance_schedule(d, *preset) for d in depth_fractions(after.shape[1])]
        for i in range(after.shape[1]):
            lines.append(
                f"| {i + 1} | {mean_std(before[:, i], '.3f')} | {mean_std(after[:, i], '.3f')} | "
                f"{mean_std(errors[:, i], '.3f')} | {schedule[i]:.3f} |"
            )
        corr = [r["trained"]["depth_correlation"] for r in runs]
        grows = sum(bool(r["trained"]["sigma_grows_with_depth"]) for r in runs)
        structured = int(np.sum([r["trained"]["structured"] for r in runs]))
        lines += [
            "",
            f"Spearman correlation of the trained sigma with depth (all layers): {mean_std(corr)}. "
            f"Layers the closed form describes (fit error <= 0.5): {structured} of {after.size}; "
            f"`inspect` finds sigma growing with depth over them in {grows} of {len(runs)} runs. "
            f"{accuracy_words(runs)} accuracy {mean_std([100 * accuracy_of(r) for r in runs])} %.",
            "",
        ]
        return lines
    lines += [
        "| Spatial filters | First layer H (init) | First layer H trained | H / threshold trained | "
        f"Mean H over LC blocks trained | {accuracy_words(runs)} acc. % | Runs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for frozen in (True, False):
        mine = [r for r in runs if r["frozen"] == frozen]
        if mine:
            lines.append(
                f"| {'frozen' if frozen else 'learnable'} | "
                f"{mean_std([r['init']['first_layer_entropy'] for r in mine], '.3f')} | "
                f"{mean_std([r['trained']['first_layer_entropy'] for r in mine], '.3f')} | "
                f"{mean_std([r['trained']['first_layer_normalized'] for r in mine], '.3f')} | "
                f"{mean_std([r['trained']['mean_entropy'] for r in mine], '.3f')} | "
                f"{mean_std([100 * accuracy_of(r) for r in mine])} | {len(mine)} |"
            )
    return lines + [""]


def render_markdown(data):
    c, experiment = data["config"], data["config"]["experiment"]
    title = {
        "sigma": "Trained ConvMixer-128/8 (9x9): does the fitted sigma grow with depth? (covariance "
        "paper, Fig. 5-6)",
        "entropy": "Trained LCResNet-20-16x8: filter variance entropy, frozen vs learnable (LC paper, "
        "Sec. 4.2, Fig. 6)",
    }[experiment]
    paper = {
        "sigma": "the paper reads its schedule off trained ConvMixers: the covariance widens with depth "
        "(sigma_0 0.08, v_sigma 0.37, a_sigma 2.9 for 2x2 patches, Sec. 4.2)",
        "entropy": "trained with learnable filters the first layer's H is balanced; frozen random "
        "filters stay more diverse (higher H) at every expansion, 75 epochs",
    }[experiment]
    lines = [
        f"# {title}",
        "",
        run_facts(data["machine"], data["versions"]),
        "",
        f"Model `{c['model']}` {c['model_kwargs'] or ''}, init `{c['init'] or 'the builder default'}`; "
        f"recipe `paper_config({c['paper']!r})` with {c['epochs']} epoch(s), batch {c['batch_size']}, "
        f"learning rate {c['learning_rate']} (the paper: {c['paper_recipe']}). "
        + (
            f"Data: {c['train_size']:,} images of the training part of the shared CIFAR-10 training "
            f"split; accuracy on the {split_note(c)}. "
            if "split" in c
            else f"Data: {c['train_size']:,} images of the shared CIFAR-10 training split, held-out "
            f"accuracy on {c['held_out_size']:,} ({c['held_out']}). "  # recorded before issue 79
        )
        + "Each row is mean ± std (ddof 1) over seeds; each seed is one complete run. "
        "Measured with `keras_structinit.inspect` before and after training.",
        "",
        *_summary(data),
        f"The paper: {paper}.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    import keras

    import keras_structinit as ks
    from keras_structinit.recipes.progress import progress_callbacks

    spec = EXPERIMENTS[args.experiment]
    recipe = ks.recipes.paper_config(spec["paper"])
    overrides = {"epochs": args.epochs, "batch_size": args.batch_size}
    if args.learning_rate is not None:
        overrides["learning_rate"] = args.learning_rate
    config = {
        "experiment": args.experiment,
        "model": spec["model"],
        "model_kwargs": spec["kwargs"],
        "init": spec["init"],
        "paper": spec["paper"],
        "train_size": args.train_size,
        "data": data_provenance(args.data),
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": overrides.get("learning_rate", recipe.learning_rate),
        "paper_recipe": f"{recipe.epochs} epochs, batch {recipe.batch_size}, learning rate "
        f"{recipe.learning_rate}",
    }
    name = f"{NAME}_{args.experiment}"
    parts = load_split(
        args.data, train_size=args.train_size, validation_size=args.validation_size, test_size=args.test_size
    )
    config["test_size"] = len(parts.test[0])
    config["split"] = parts.record  # issue 79: the test part (its digest) chose nothing
    data, save = resumable_results(args.out, name, config, render_markdown)
    x, y = parts.train
    done = {(r["frozen"], r["seed"]) for r in data["runs"]}
    mine = shard_of([(frozen, seed) for frozen in spec["variants"] for seed in args.seeds], args.shard)
    plan = [run for run in mine if run not in done]
    print(f"{name}: {len(plan)} run(s) to do, {len(mine) - len(plan)} done already", flush=True)
    for i, (frozen, seed) in enumerate(plan, 1):
        label = f"[{i}/{len(plan)}] {spec['model']} {'frozen' if frozen else 'learnable'} seed {seed}"
        keras.utils.set_random_seed(seed)
        kwargs = dict(spec["kwargs"], frozen=frozen) if args.experiment == "entropy" else spec["kwargs"]
        model = ks.models.build_model(spec["model"], 10, (32, 32, 3), **kwargs)
        if spec["init"]:
            ks.initialize(model, spec["init"], seed=seed)
        before = _measure(ks.inspect(model), args.experiment)
        verbose, callbacks = progress_callbacks()
        start = time.perf_counter()
        history = ks.recipes.fit_cifar(
            model,
            (x, y),
            config=dataclasses.replace(recipe, **overrides),
            eval_data=parts.test,
            seed=seed,
            callbacks=callbacks,
            verbose=verbose,
        )
        seconds = time.perf_counter() - start
        report = ks.inspect(model)
        if args.figures and seed == 0:
            report.figures(
                args.out / "figures" / f"{name}_{'frozen' if frozen else 'learnable'}", overwrite=True
            )
        run = {
            "frozen": frozen,
            "seed": seed,
            "test_accuracy": history.eval_results["accuracy"],
            **(
                {"val_accuracy": split_accuracy(model, history.normalization, parts.validation)}
                if parts.validation is not None
                else {}
            ),
            "train_time_s": seconds,
            "init": before,
            "trained": _measure(report, args.experiment),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "loadavg_1min": os.getloadavg()[0],
        }
        print(f"{label}: test accuracy {run['test_accuracy']:.4f} after {seconds / 60:.1f} min", flush=True)
        data["runs"].append(run)
        save()
    print(render_markdown(data))
    print(f"results: {args.out / name}.json and .md", flush=True)


#: How the variants of one seed pair in these runs (the report's pairing sentence).
PAIRING = (
    PAIRED_BY_SEED + "; `lcresnet(..., frozen=True)` and `frozen=False` draw the same initial "
    "weights (tests/test_benchmarks_determinism.py)"
)


def comparisons(name, data):
    """``inspect_entropy``: the first layer's variance entropy of frozen filters above learned ones
    (the paper: frozen random filters stay more diverse); ``inspect_sigma``: none (a correlation
    against a threshold, not a difference)."""
    if name != "inspect_entropy":
        return []
    runs = data["runs"]
    entropy = {
        f: by_seed([r for r in runs if r["frozen"] == f], lambda r: r["trained"]["first_layer_entropy"])
        for f in (True, False)
    }
    if not (entropy[True] and entropy[False]):
        return []
    return [
        Comparison(
            "first-layer H: frozen − learnable", entropy[True], entropy[False], data, spread=0.0, spec=".3f"
        )
    ]


def headline(name, data):
    """``(our numbers, verdict)`` for the suite report."""
    runs = data["runs"]
    if not runs:
        return None, None
    if name == "inspect_sigma":
        corr = [r["trained"]["depth_correlation"] for r in runs]
        errors = [e for r in runs for e in r["trained"]["rel_error"]]
        verdict = "yes" if min(corr) >= 0.5 else "no" if max(corr) < 0.5 else "within noise"
        return (
            f"Spearman(sigma, depth) trained {mean_std(corr)}; fit errors {min(errors):.2f}-"
            f"{max(errors):.2f} (the closed form fits loosely at this budget)",
            verdict,
        )
    frozen = [r["trained"]["first_layer_entropy"] for r in runs if r["frozen"]]
    learnable = [r["trained"]["first_layer_entropy"] for r in runs if not r["frozen"]]
    if not (frozen and learnable):
        return None, None
    return (
        f"first-layer H frozen {mean_std(frozen, '.3f')} vs learnable {mean_std(learnable, '.3f')}",
        verdict_of(comparisons(name, data)),
    )


INSPECT_CPU = ("--backend", "torch", "--figures", *TRAIN_SEEDS)
#: The sigma runs at 5,000 images x 5 epochs, batch 128 (~8 min each on one core); the entropy
#: runs at lc_accuracy_fig1's budget (2,000 images x 3 epochs, batch 64), whose accuracies they repeat.
#: Both report accuracy on a fixed 2,000 of the split's 5,000 test images (issue 79), as many as the
#: held-out subset they evaluated before it, once at the end of each run: the same cost.
SIGMA_CPU = ("--train-size", "5000", "--epochs", "5", "--batch-size", "128", "--test-size", "2000")
ENTROPY_CPU = ("--train-size", "2000", "--epochs", "3", "--batch-size", "64", "--test-size", "2000")
SUITE = {
    "cpu": (
        Benchmark(
            name="inspect_sigma",
            script="inspect_trained.py",
            args=("sigma", *SIGMA_CPU, *INSPECT_CPU),
            title="Inspect: fitted sigma of a trained ConvMixer-128/8's depthwise filters over depth",
            paper="the covariance widens with depth (Fig. 5-6, Sec. 4.2)",
            minutes=10,  # 9.3 min in 2 processes (2026-11-29)
            run_key=("frozen", "seed"),
            depends=("keras_structinit/covariance", "keras_structinit/engine/freezing.py"),
        ),
        Benchmark(
            name="inspect_entropy",
            script="inspect_trained.py",
            args=("entropy", *ENTROPY_CPU, *INSPECT_CPU),
            title="Inspect: filter variance entropy of a trained LCResNet-20-16x8, frozen vs learnable",
            paper="frozen random filters stay more diverse than learned ones (Sec. 4.2, Fig. 6)",
            minutes=6,  # 5.8 min in 2 processes (2026-11-29)
            run_key=("frozen", "seed"),
            depends=("keras_structinit/lc", "keras_structinit/engine/freezing.py"),
        ),
    ),
}

if __name__ == "__main__":
    main()
