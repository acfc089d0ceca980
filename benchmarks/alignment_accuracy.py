#!/usr/bin/env python
"""Data-aligned init on CIFAR-10: the paper's SimpleCNN after 100 and 1000 SGD iterations (issue 15).

Maennel et al. (NeurIPS 2020, App. E.3, Tables 2, 4 and 5) initialize the
first L conv layers of a small CNN from the leading eigenvectors of the
patch covariance of their input and report faster early training. Here, per
seed and variant, ``simple-cnn-e3`` (three 3x3 convs of 16 filters with ReLU,
one 3x3 max-pool with stride 2, Dense 512, the head; He-normal weights, zero
biases) is built, its first L convs are re-initialized by
``keras_structinit.alignment.align_conv_layers`` measured on a fixed random
subset of the training images (each layer on the activations of the aligned
layers before it), then it is trained with the paper's recipe (App. A.3)
through ``recipes.fit_cifar``: plain SGD with momentum 0.9, batch 256,
learning rate 0.002 divided by 3 at 1/3 and 2/3 of the run, no weight decay,
no augmentation (no crop, no flip), inputs scaled to [-1, 1]. Every budget of
``--iterations`` is a complete run with its own schedule (not a snapshot of a
longer run); accuracy on the test part of the fixed split (below) and on a
fixed 5,000-image subset of the training images is measured at its end.

Variants: ``default`` (no aligned layer), ``aligned_1``..``aligned_3`` (the
16 leading eigenvectors, flat ``tau = 1``: Table 2), ``smallest_1`` (the 16
smallest, the paper's control: Table 5) and ``sampled_1`` (filters sampled
from ``N(0, sum_i e_i e_i^T / 16)``: Table 4's form, scaled so that a filter's
expected squared norm is 1 like an eigenvector's). The data: the fixed split
of the shared CIFAR-10 training images (``bench_utils.load_split``): training
on its training part, accuracy (``test``) on its test part (5,000 images that
chose nothing, or a fixed ``--test-size``), and (``validation``) on
``--validation-size`` of its validation part where asked (default none). The App.
D.1 spectrum (5x5 patches of 30,000 images in [-1, 1]) is recorded beside.

Results are written after every run (``--out``/alignment_accuracy.json and
.md); a re-run skips finished (variant, seed, iterations) runs, so the script
can be stopped and resumed.

Usage::

    python -m benchmarks.alignment_accuracy --backend torch
    python -m benchmarks.alignment_accuracy --iterations 4 8 --train-size 512 --align-images 256 \\
        --seeds 0 --out /tmp/alignment_smoke                      # a smoke test
"""

from __future__ import annotations

import argparse
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
    add_eval_data_argument,
    add_shard_argument,
    add_split_arguments,
    by_seed,
    check_split_arguments,
    data_label,
    data_provenance,
    load_split,
    mean_std,
    ms,
    resumable_results,
    run_facts,
    shard_of,
    split_note,
    verdict_of,
)

NAME = "alignment_accuracy"

# variant -> align_conv_layers options (None: the model's own He-normal init).
VARIANTS = {
    "default": None,
    "aligned_1": {"num_layers": 1},
    "aligned_2": {"num_layers": 2},
    "aligned_3": {"num_layers": 3},
    "smallest_1": {"num_layers": 1, "components": "smallest"},
    "sampled_1": {"num_layers": 1, "mode": "sample", "scale": 0.25},
}
# The paper's numbers beside ours (Table 2: 0-3 aligned layers; Table 5: the
# smallest eigenvectors). Table 4 (sampled filters) is not transcribed here.
PAPER = {
    "default": {100: ".31", 1000: ".53"},
    "aligned_1": {100: ".29", 1000: ".55"},
    "aligned_2": {100: ".37", 1000: ".56"},
    "aligned_3": {100: ".43", 1000: ".59"},  # Table 2's test row (.44 is its train row)
    "smallest_1": {100: ".15"},
}
PAPER_D1_SPECTRUM = [12.3, 1.45, 1.18, 1.06, 0.37, 0.32, 0.28, 0.23, 0.128, 0.126, 0.115, 0.096]
RECIPE = {
    "batch_size": 256,
    "learning_rate": 0.002,
    "optimizer": "sgd_momentum",
    "weight_decay": 0.0,
    "schedule": "step",
    "rand_augment": None,
    "pad": 0,
    "flip": False,
    "normalization": "symmetric",
}
TRAIN_PROBE = 5000  # training images whose accuracy is measured at each checkpoint


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=SHARED_CIFAR10, help="CIFAR-10 training images (zip/dir/npz)"
    )
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    parser.add_argument(
        "--iterations",
        type=int,
        nargs="+",
        default=[100, 1000],
        help="budgets (SGD steps): each one a complete run with its own schedule",
    )
    parser.add_argument("--train-size", type=int, default=None, help="training images (default: all 45,000)")
    parser.add_argument(
        "--align-images",
        type=int,
        default=10_000,
        help="training images whose patch covariance aligns the layers",
    )
    parser.add_argument("--spectrum-images", type=int, default=30_000, help="images of the App. D.1 spectrum")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--backend", choices=BACKENDS, default=None)
    add_shard_argument(parser)
    add_split_arguments(parser)
    add_eval_data_argument(parser)
    args = parser.parse_args(argv)
    check_split_arguments(parser, args)
    if not args.data.exists():
        parser.exit(2, f"{NAME}: error: --data {str(args.data)!r} does not exist\n")
    if min(args.iterations) < 1:
        parser.exit(2, f"{NAME}: error: --iterations must be positive\n")
    return args


def scaled(x):
    """uint8 images to [-1, 1], as the recipe's ``normalization="symmetric"``."""
    return (x / 127.5 - 1.0).astype("float32")


def d1_spectrum(x, count):
    """Top eigenvalues of the covariance of 5x5 patches of ``count`` random images in [-1, 1]."""
    from keras_structinit.alignment import patch_covariance

    pick = np.sort(np.random.default_rng(0).choice(len(x), min(count, len(x)), replace=False))
    start = time.perf_counter()
    eigvals, _ = patch_covariance((x[pick[i : i + 256]] / 127.5 - 1.0 for i in range(0, len(pick), 256)), 5)
    return {
        "images": len(pick),
        "eigvals": [round(float(v), 4) for v in eigvals[:12]],
        "seconds": round(time.perf_counter() - start, 1),
    }


def accuracy(model, data):
    logits = model.predict(scaled(data[0]), batch_size=500, verbose=0)
    return float(np.mean(logits.argmax(-1) == data[1]))


def run_one(variant, seed, iterations, train, held_out, align_images, eval_data=None, validation=None):
    """One complete run of ``iterations`` SGD steps (its own step schedule), measured on ``held_out``
    (the test part: ``test``); ``eval_data``: ``None`` or an external ``(x, y)`` also evaluated;
    ``validation``: ``None`` or the validation images, also evaluated (``validation``)."""
    import keras

    import keras_structinit as ks

    keras.utils.set_random_seed(seed)
    model = ks.models.build_model("simple-cnn-e3")
    start = time.perf_counter()
    paths = []
    if VARIANTS[variant] is not None:
        paths = ks.align_conv_layers(model, images=align_images, seed=seed, **VARIANTS[variant])
    align_seconds = time.perf_counter() - start
    probe = np.random.default_rng(seed).choice(len(train[0]), min(TRAIN_PROBE, len(train[0])), replace=False)
    start = time.perf_counter()
    ks.recipes.fit_cifar(
        model, train, 1, steps_per_epoch=iterations, seed=seed, verbose=0, num_classes=10, **RECIPE
    )
    result = {"train": accuracy(model, (train[0][probe], train[1][probe])), "test": accuracy(model, held_out)}
    if validation is not None:
        result["validation"] = accuracy(model, validation)
    if eval_data is not None:
        result["eval_data"] = accuracy(model, eval_data)
    print(f"  {iterations} iterations: train {result['train']:.4f}, test {result['test']:.4f}", flush=True)
    return {
        "variant": variant,
        "seed": seed,
        "iterations": iterations,
        "aligned": paths,
        "align_time_s": round(align_seconds, 2),
        "train_time_s": round(time.perf_counter() - start, 1),
        "accuracy": {str(iterations): result},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def render_markdown(data):
    from keras_structinit.utils.reporting import format_table

    cfg = data["config"]
    iterations = cfg["iterations"]
    lines = [
        "# Data-aligned init on CIFAR-10 (issue 15)",
        "",
        run_facts(data["machine"], data["versions"]),
        "",
        "Model: `simple-cnn-e3` (Maennel et al., App. E.3). Recipe (App. A.3) through `fit_cifar`: "
        + ", ".join(f"{k}={v}" for k, v in cfg["recipe"].items())
        + f". Data: {data_label(cfg['data'])}, {cfg['train_size']} training images; accuracy on the "
        f"{split_note(cfg)}. "
        "Alignment "
        f"measured on {cfg['align_images']} random training images. Accuracy at the end of complete runs of "
        f"{iterations} SGD iterations (each with its own schedule): test and a fixed "
        f"{min(TRAIN_PROBE, cfg['train_size'])}-image training subset (train); seeds "
        f"{sorted({r['seed'] for r in data['runs']})}; "
        "mean ± std.",
        "",
    ]
    columns = [("init", "variant"), ("options", "options")]
    external = any("eval_data" in r["accuracy"].get(str(it), {}) for r in data["runs"] for it in iterations)
    for it in iterations:
        columns += [(f"train @{it}", f"train_{it}"), (f"test @{it}", f"test_{it}")]
        columns += [(f"--eval-data @{it}", f"eval_data_{it}")] if external else []
    columns += [("seeds", "n")] + [(f"paper test @{it}", f"paper_{it}") for it in (100, 1000)]
    rows = []
    for variant in VARIANTS:
        runs = [r for r in data["runs"] if r["variant"] == variant]
        if not runs:
            continue
        row = {
            "variant": variant,
            "n": len({r["seed"] for r in runs}),
            "options": ", ".join(f"{k}={v}" for k, v in (VARIANTS[variant] or {}).items()) or "He-normal",
        }
        for it in iterations:
            for split in ("train", "test", "eval_data"):
                values = [
                    r["accuracy"][str(it)][split] for r in runs if split in r["accuracy"].get(str(it), {})
                ]
                row[f"{split}_{it}"] = mean_std(values, ".3f") if values else ""
        for it in (100, 1000):
            row[f"paper_{it}"] = PAPER.get(variant, {}).get(it, "")
        rows.append(row)
    lines += [format_table(rows, columns), ""]
    spectrum = data.get("spectrum")
    if spectrum:
        lines += [
            f"App. D.1 spectrum (5x5 patches of {spectrum['images']} training images in [-1, 1], centred, "
            f"{spectrum['seconds']} s):",
            "",
            format_table(
                [
                    {"k": i + 1, "ours": v, "paper": p}
                    for i, (v, p) in enumerate(zip(spectrum["eigvals"], PAPER_D1_SPECTRUM, strict=True))
                ],
                (("k", "k"), ("ours", "ours"), ("paper", "paper")),
            ),
            "",
        ]
    return "\n".join(lines + [f"- {note}" for note in data.get("notes", [])] + [""])


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    parts = load_split(
        args.data, train_size=args.train_size, validation_size=args.validation_size, test_size=args.test_size
    )
    train, held_out = parts.train, parts.test
    config = {
        "iterations": sorted(args.iterations),
        "train_size": len(train[0]),
        "align_images": min(args.align_images, len(train[0])),
        "recipe": dict(RECIPE),
        "data": data_provenance(args.data),
        "split": parts.record,
    }
    data, save = resumable_results(args.out, NAME, config, render_markdown)
    data["seeds"] = args.seeds
    data.setdefault(
        "notes",
        [
            "One complete run per (variant, seed, iterations), each with its own step schedule.",
            "sampled_1 scales the samples by 1/4 (expected squared filter norm 1, as an eigenvector's).",
        ],
    )
    print(f"Data: {len(train[0])} training / {len(held_out[0])} test images", flush=True)
    if "spectrum" not in data:
        data["spectrum"] = d1_spectrum(train[0], args.spectrum_images)
        print(f"App. D.1 spectrum: {data['spectrum']['eigvals']}", flush=True)
        save()
    pick = np.sort(np.random.default_rng(0).choice(len(train[0]), config["align_images"], replace=False))
    align_images = scaled(train[0][pick])
    done = {(r["variant"], r["seed"], r["iterations"]) for r in data["runs"]}
    plan = [
        (variant, seed, iterations)
        for seed in args.seeds
        for variant in args.variants
        for iterations in config["iterations"]
    ]
    mine = shard_of(plan, args.shard)
    todo = [run for run in mine if run not in done]
    print(f"{len(todo)} run(s) to do, {len(mine) - len(todo)} done already", flush=True)
    eval_data = None
    if args.eval_data is not None:
        from keras_structinit.datasets import load_labeled_images

        eval_data = load_labeled_images(str(args.eval_data), name="--eval-data")
    for variant, seed, iterations in todo:
        print(f"[{variant} seed {seed}, {iterations} iterations]", flush=True)
        run = run_one(variant, seed, iterations, train, held_out, align_images, eval_data, parts.validation)
        if eval_data is not None:
            run["eval_data"] = data_provenance(args.eval_data)
        data["runs"].append(run)
        save()
    print(render_markdown(data))


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
#: How the variants of one seed pair in these runs (the report's pairing sentence).
PAIRING = (
    PAIRED_BY_SEED + "; `align_conv_layers(seed=seed)` replaces the aligned layers' kernels "
    "only, and the training probe's images are drawn from the seed"
)


def _test_accuracy(runs):
    """``{(variant, iterations): by_seed sample of test accuracy (points)}``."""
    groups = {}
    for r in runs:
        for iterations in r["accuracy"]:
            groups.setdefault((r["variant"], int(iterations)), []).append(r)
    return {
        (variant, it): by_seed(rs, lambda r, it=it: 100 * r["accuracy"][str(it)]["test"])
        for (variant, it), rs in sorted(groups.items())
    }


def comparisons(name, data):
    """At each budget, 2 aligned layers above the default, and the default above the smallest
    eigenvectors (the paper's control), in points."""
    cells, out = _test_accuracy(data["runs"]), []
    for it in sorted({it for _, it in cells}):
        if ("default", it) not in cells:
            continue
        if ("aligned_2", it) in cells:
            out.append(
                Comparison(f"@{it}: aligned_2 − default", cells["aligned_2", it], cells["default", it], data)
            )
        if ("smallest_1", it) in cells:
            out.append(
                Comparison(
                    f"@{it}: default − smallest_1", cells["default", it], cells["smallest_1", it], data
                )
            )
    return out


def _alignment(data):
    cells = _test_accuracy(data["runs"])
    parts = [
        f"{variant} @{it}: {ms([v for v, _ in sample.values()])} %"
        for (variant, it), sample in cells.items()
        if variant in ("default", "aligned_2", "smallest_1")
    ]
    which = "test-part accuracy" if data["config"].get("split") else "held-out accuracy"
    return which + ": " + "; ".join(parts), verdict_of(comparisons("alignment_accuracy", data))


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _alignment(data)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        Benchmark(
            name="alignment_accuracy",
            script="alignment_accuracy.py",
            # Every row of docs/data-aligned.md's table (1 and 3 aligned layers and sampled filters
            # beside the three the headline compares): 33 min on 2 processes, 2026-11-29.
            args=(
                "--backend",
                "torch",
                "--variants",
                "default",
                "aligned_1",
                "aligned_2",
                "aligned_3",
                "smallest_1",
                "sampled_1",
                *TRAIN_SEEDS,
            ),
            title="Data-aligned init: SimpleCNN with 0-3 aligned layers, sampled filters and the "
            "smallest-eigenvector control, 100 and 1000 SGD iterations (Tables 2, 4 and 5)",
            paper="test accuracy @100 / @1000: default .31 / .53, 1 aligned layer .29 / .55, 2 aligned "
            "layers .37 / .56, 3 aligned layers .43 / .59; smallest eigenvectors .15 @100",
            minutes=33,
            run_key=("variant", "seed", "iterations"),
            eval_data=True,
        ),
    ),
}


if __name__ == "__main__":
    main()
