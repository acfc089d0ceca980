#!/usr/bin/env python
"""Frozen random vs learnable spatial filters on CIFAR-10: Fig. 1 and Fig. 3 of the LC-blocks paper.

Two experiments (Gavrikov & Keuper, "Rethinking 1x1 Convolutions" / "The
Power of Linear Combinations"), chosen by the first argument:

* ``fig1``: LCResNet-20-16xE (``keras_structinit.models.lcresnet``, every
  spatial conv an LC block: a 3x3 conv to E times the channels, then a 1x1 conv)
  for E in ``--expansions``, with frozen random spatial filters
  (``frozen=True``) and learnable ones (``frozen=False``). The paper: the
  frozen network's gap shrinks as E grows, breaks even near E = 8 and turns
  into a gain beyond (91.89 +- 0.10 % frozen vs 91.39 +- 0.29 % learnable at
  E = 128, 75 epochs).
* ``fig3``: off-the-shelf networks with every spatial (k x k, k > 1) conv
  frozen at its random init (``keras_structinit.freeze_spatial(model,
  which="all_spatial")``; 1x1 convs, norms and the head stay learnable)
  vs fully learnable. ``resnet18-gn`` (the package's pre-activation
  ResNet-18 with GroupNorm: 3x3 convs, no 1x1 convs but three projection
  shortcuts) against a network whose every spatial conv is followed by a
  1x1 conv: by default ``convmixer-256/8-k3`` (the package's ConvMixer-256/8,
  patch 2, with 3x3 depthwise convs, each followed by a 1x1 conv, as in
  MobileNet-v2-style separable blocks; kernel size 3 to match ResNet-18's, since
  the paper finds frozen large kernels lose more) or ``lcresnet-20-16x8``
  (learnable LC blocks frozen by ``freeze_spatial``). The paper: networks
  without 1x1 convs lose >= 16 points when frozen, bottleneck networks < 2.

Every (E or model, frozen, seed) is one complete training run through
``recipes.fit_cifar`` with the paper's recipe (App. C): SGD with Nesterov
momentum 0.9 and PyTorch's coupled L2 weight decay 0.01 (``optimizer="sgd"``),
learning rate 0.01 with cosine decay to 0 and no warmup, batch 256, label
smoothing 0.1, 4-pixel pad + random crop and horizontal flip, per-channel
normalization, no RandAugment; 75 epochs in the paper, ``--epochs`` here.
Data: the fixed split of the shared CIFAR-10 training images
(``bench_utils.load_split``): the networks train on ``--train-size`` of its
40,000-image training part and are evaluated after the last epoch on its test
part (5,000 images that chose nothing, or a fixed ``--test-size`` of them),
and on ``--validation-size`` of its validation part where asked (default none).

``--fgsm`` also measures each trained network's robust accuracy on the same
test images under one l_inf FGSM step of eps = 1/255 in pixel units
(``keras_structinit.fgsm_accuracy`` with the run's normalization), the paper's
Fig. 4, recorded per run (``fgsm_accuracy``) and shown beside the clean
accuracy; runs recorded without it show none.

``--batch-size`` / ``--learning-rate`` change the recipe's batch (256) and
peak learning rate (0.01) for CPU-sized budgets, where a few hundred steps are
all there is (the config records them). ``--eval-data`` also evaluates every
trained model on an external labelled set. Results are written after every run
(``<out>/lc_accuracy_<experiment>.json`` and ``.md``); a re-run skips finished
runs, so the script can be stopped and resumed, and ``--shard I/N`` runs one
of N interleaved parts of the plan (``python -m benchmarks.run`` merges them).

Usage::

    python -m benchmarks.lc_accuracy fig1 --backend torch
    python -m benchmarks.lc_accuracy fig3 --backend torch
    python -m benchmarks.lc_accuracy fig1 --epochs 1 --train-size 512 --test-size 500 \\
        --expansions 1 --seeds 0 --out /tmp/lc_smoke               # smoke test
    python -m benchmarks.lc_accuracy fig1 --fgsm --backend torch   # with Fig. 4's robust accuracy
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
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
    add_eval_data_argument,
    add_shard_argument,
    add_split_arguments,
    by,
    by_seed,
    check_split_arguments,
    code_provenance,
    data_provenance,
    external_accuracy,
    load_split,
    mean_std,
    ms,
    run_facts,
    seed_differences,
    seed_gaps,
    shard_of,
    split_accuracy,
    split_note,
    verdict_of,
)

NAME = "lc_accuracy"
# The paper's App. C recipe, as recipes.fit_cifar arguments.
RECIPE = {
    "optimizer": "sgd",
    "learning_rate": 0.01,
    "schedule": "cosine",
    "warmup_epochs": 0,
    "weight_decay": 0.01,
    "batch_size": 256,
    "label_smoothing": 0.1,
    "pad": 4,
    "rand_augment": None,
}
# Fig. 3 networks: name -> (what their spatial convs are followed by, builder arguments).
FIG3_MODELS = {
    "resnet18-gn": ("no 1x1 convs (3x3 convs; three 1x1 projection shortcuts)", ("resnet18_gn", {})),
    "convmixer-256/8-k3": (
        "every 3x3 depthwise conv followed by a 1x1 conv",
        ("convmixer", {"dim": 256, "depth": 8, "kernel_size": 3, "patch_size": 2}),
    ),
    "lcresnet-20-16x8": (
        "every 3x3 conv followed by a 1x1 conv (LC blocks, E = 8)",
        ("lcresnet", {"depth": 20, "width": 16, "expansion": 8, "frozen": False}),
    ),
}
# The paper's statements beside our numbers.
PAPER_FIG1 = {128: {True: "91.89 ± 0.10", False: "91.39 ± 0.29"}}
#: Fig. 4: l_inf FGSM at eps = 1/255 (pixel units), on the test images.
FGSM_EPSILON = 1 / 255
#: Images per FGSM gradient. The backward pass keeps every activation of the batch: on torch an
#: untrained LCResNet-20-16x8 peaks at 5.8 GB for a batch of 500 and 1.6 GB for 100 (one process,
#: 2026-11-29), and after training a process of the suite held 14.8 GB with 500 and was killed for
#: memory on the 24 GiB machine. In inference mode FGSM treats each image alone, so the batch
#: changes no result (beyond float rounding).
FGSM_BATCH = 100
PAPER_FIG3 = {
    "resnet18-gn": "loses >= 16 points (no 1x1 convs)",
    "convmixer-256/8-k3": "loses < 2 points (networks with 1x1 convs)",
    "lcresnet-20-16x8": "about break-even at E = 8 (Fig. 1)",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "experiment",
        choices=("fig1", "fig3"),
        help="fig1: LCResNet-20-16xE frozen vs learnable; "
        "fig3: freezing all spatial convs of off-the-shelf networks",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=SHARED_CIFAR10,
        help="CIFAR-10 training images (zip/dir/npz; default: the shared split)",
    )
    parser.add_argument(
        "--out", type=Path, default=LOCAL_RESULTS, help=f"directory of {NAME}_<experiment>.json / .md"
    )
    parser.add_argument(
        "--name",
        default=None,
        help=f"the results' file stem (default {NAME}_<experiment>): a suite entry's name",
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default=None, help="Keras backend (default: current KERAS_BACKEND)"
    )
    parser.add_argument("--epochs", type=int, default=10, help="epochs per run (paper: 75; default 10)")
    parser.add_argument(
        "--train-size",
        type=int,
        default=10000,
        help="training images, a fixed subset of the split's 40,000-image training part (default 10000)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=RECIPE["batch_size"],
        help=f"batch size (paper: {RECIPE['batch_size']}; a smaller one takes more "
        "steps in a CPU-sized budget)",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=RECIPE["learning_rate"],
        help=f"peak learning rate (paper: {RECIPE['learning_rate']})",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--fgsm",
        action="store_true",
        help="also measure the robust test accuracy under l_inf FGSM, eps = 1/255 "
        "in pixel units (the paper's Fig. 4)",
    )
    parser.add_argument(
        "--expansions",
        type=int,
        nargs="+",
        default=[1, 4, 8, 16],
        help="fig1: E of LCResNet-20-16xE (default 1 4 8 16)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=list(FIG3_MODELS),
        default=["resnet18-gn", "convmixer-256/8-k3"],
        help="fig3: networks (default resnet18-gn convmixer-256/8-k3)",
    )
    add_shard_argument(parser)
    add_split_arguments(parser)
    add_eval_data_argument(parser)
    args = parser.parse_args(argv)
    check_split_arguments(parser, args)
    prog = parser.prog
    if not args.data.exists():
        parser.exit(
            2,
            f"{prog}: error: --data {str(args.data)!r} does not exist; it should be the "
            "shared CIFAR-10 training split (../shared/datasets/cifar10-train-jpeg.zip)\n",
        )
    if args.learning_rate <= 0:
        parser.error(f"--learning-rate must be > 0; got {args.learning_rate}")
    for option, values in (
        ("--epochs", [args.epochs]),
        ("--train-size", [args.train_size]),
        ("--batch-size", [args.batch_size]),
        ("--expansions", args.expansions),
    ):
        if min(values) < 1:
            parser.error(f"{option} must be >= 1; got {values if len(values) > 1 else values[0]}")
    if min(args.seeds) < 0:
        parser.error(f"--seeds must be >= 0; got {args.seeds}")
    for option, values in (
        ("--seeds", args.seeds),
        ("--expansions", args.expansions),
        ("--models", args.models),
    ):
        if len(set(values)) != len(values):
            parser.error(f"{option} must be distinct; got {values}")
    return args


def _plan(args):
    """``[(name, frozen, seed)]`` of the runs asked for, seeds outermost."""
    names = [f"lcresnet-20-16x{e}" for e in args.expansions] if args.experiment == "fig1" else args.models
    return [(name, frozen, seed) for seed in args.seeds for name in names for frozen in (True, False)]


def build(experiment, name, frozen):
    """The network ``name``, its spatial filters frozen or not; returns ``(model, frozen paths)``."""
    from keras_structinit import freeze_spatial
    from keras_structinit.models import lcresnet, registry

    if experiment == "fig1":
        return lcresnet(20, 16, int(name.rsplit("x", 1)[1]), frozen=frozen), []
    builder, kwargs = FIG3_MODELS[name][1]
    model = registry.BUILDERS[builder](num_classes=10, input_shape=(32, 32, 3), **kwargs)
    return model, (freeze_spatial(model, which="all_spatial") if frozen else [])


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _accuracies(runs, name, frozen):
    return [100 * accuracy_of(r) for r in runs if r["model"] == name and r["frozen"] == frozen]


def _summary_rows(data):
    """One row per network: frozen and learnable accuracy (test part), the gap, the paper."""
    runs, rows = data["runs"], []
    fig1 = data["config"]["experiment"] == "fig1"
    for name in dict.fromkeys(r["model"] for r in runs):
        frozen, learnable = _accuracies(runs, name, True), _accuracies(runs, name, False)
        by_seed = {(r["seed"], r["frozen"]): accuracy_of(r) for r in runs if r["model"] == name}
        gaps = [
            100 * (by_seed[seed, True] - by_seed[seed, False])
            for seed, frozen_run in by_seed
            if frozen_run and (seed, False) in by_seed
        ]
        counts = {r["frozen"]: r["params"] for r in runs if r["model"] == name}
        minutes = [r["train_time_s"] / 60 for r in runs if r["model"] == name]
        expansion = int(name.rsplit("x", 1)[1]) if fig1 else None
        paper = PAPER_FIG1.get(expansion, {}) if fig1 else {}
        external = [
            100 * r["eval_data_accuracy"] for r in runs if r["model"] == name and "eval_data_accuracy" in r
        ]
        robust = {
            f: [
                100 * r["fgsm_accuracy"]
                for r in runs
                if r["model"] == name and r["frozen"] == f and "fgsm_accuracy" in r
            ]
            for f in (True, False)
        }
        rows.append(
            {
                "robust": " / ".join(mean_std(robust[f]) if robust[f] else "-" for f in (True, False)),
                "external": mean_std(external) if external else "",
                "model": name,
                "convs": "" if fig1 else FIG3_MODELS[name][0],
                "frozen": mean_std(frozen) if frozen else None,
                "learnable": mean_std(learnable) if learnable else None,
                "gap": mean_std(gaps) if gaps else None,
                "seeds": f"{len(frozen)} / {len(learnable)}",
                "params": " / ".join(f"{counts[f]['learnable']:,}" for f in (True, False) if f in counts),
                "minutes": f"{np.mean(minutes):.1f}",
                "paper": (
                    f"{paper[True]} / {paper[False]}" if paper else "" if fig1 else PAPER_FIG3.get(name, "")
                ),
            }
        )
    return rows


def render_markdown(data):
    from keras_structinit.utils.reporting import format_table

    cfg = data["config"]
    fig1 = cfg["experiment"] == "fig1"
    title = (
        "# LCResNet-20-16xE on CIFAR-10: frozen random vs learnable spatial filters (Fig. 1)"
        if fig1
        else "# Freezing all spatial convs: networks with and without 1x1 convs (Fig. 3)"
    )
    lines = [
        title,
        "",
        run_facts(data["machine"], data["versions"]),
        "",
        (
            f"Training: {cfg['train_size']:,} images of the shared CIFAR-10 training split's training "
            f"part, {cfg['epochs']} epoch(s) (the paper: 50,000 images, 75 "
            f"epochs); accuracy after the last epoch on the {split_note(cfg)}. Recipe (App. C) through "
            "`recipes.fit_cifar`: "
            + ", ".join(f"{k}={v}" for k, v in cfg["recipe"].items())
            + " (`sgd`: Nesterov momentum 0.9, PyTorch's coupled L2 weight decay; 4-pixel pad + "
            "crop, flip, per-channel normalization). Each (network, frozen, seed) is one complete run; "
            "seeds set the weights, the data order and the augmentation."
        ),
        "",
        (
            "*Frozen*: `lcresnet(..., frozen=True)` (frozen random spatial filters, PyTorch's default "
            "uniform init); *learnable*: `frozen=False`."
            if fig1
            else '*Frozen*: `keras_structinit.freeze_spatial(model, which="all_spatial")` before training '
            "(every conv kernel larger than 1x1 keeps its random init; 1x1 convs, norms and the head "
            "learn); *learnable*: nothing frozen."
        ),
        "",
        format_table(
            _summary_rows(data),
            [
                ("Network", "model"),
                *([] if fig1 else [("Spatial convs followed by", "convs")]),
                ("Frozen acc. %", "frozen", "", "right"),
                ("Learnable acc. %", "learnable", "", "right"),
                ("Gap frozen − learnable (points)", "gap", "", "right"),
                *(
                    [("--eval-data acc. % (all runs)", "external", "", "right")]
                    if any("eval_data_accuracy" in r for r in data["runs"])
                    else []
                ),
                *(
                    [("FGSM acc. % frozen / learnable (Fig. 4, eps 1/255)", "robust", "", "right")]
                    if any("fgsm_accuracy" in r for r in data["runs"])
                    else []
                ),
                ("Runs frozen / learnable", "seeds", "", "right"),
                ("Learnable params frozen / learnable", "params", "", "right"),
                ("Min per run", "minutes", "", "right"),
                ("Paper" + (" frozen / learnable %" if fig1 else ""), "paper"),
            ],
        ),
        "",
        (
            "Accuracies are mean ± std (ddof 1) over seeds; the gap is averaged over seeds with both "
            "runs. "
            + (
                "The paper (75 epochs, full training set): the frozen gap shrinks as E grows, "
                "breaks even near E = 8 and turns into a gain beyond; its E = 128 numbers are "
                "shown where that row is run."
                if fig1
                else "The paper (75 epochs): networks without 1x1 convs (e.g. ResNet-18) lose >= 16 "
                "points when all spatial convs are frozen, bottleneck networks with 1x1 convs "
                "lose < 2."
            )
        ),
        "",
        *(
            [
                "FGSM (`--fgsm`, the paper's Fig. 4): accuracy on the images of the clean accuracy after "
                "one l_inf FGSM step of eps = 1/255 in pixel units, taken before the per-channel "
                "normalization (`keras_structinit.fgsm_accuracy`); over the runs that measured it.",
                "",
            ]
            if any("fgsm_accuracy" in r for r in data["runs"])
            else []
        ),
    ]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    import keras

    from keras_structinit import fgsm_accuracy, recipes
    from keras_structinit.lc import parameter_counts
    from keras_structinit.recipes.progress import progress_callbacks
    from keras_structinit.utils.io_utils import write_text
    from keras_structinit.utils.reporting import machine_info, versions

    name = args.name or f"{NAME}_{args.experiment}"
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{name}.json"
    parts = load_split(
        args.data, train_size=args.train_size, validation_size=args.validation_size, test_size=args.test_size
    )
    (x, y), test = parts.train, parts.test
    recipe = dict(RECIPE, batch_size=args.batch_size, learning_rate=args.learning_rate)
    config = {
        "experiment": args.experiment,
        "epochs": args.epochs,
        "train_size": len(x),
        "test_size": len(test[0]),
        "recipe": recipe,
        "data": data_provenance(args.data),
        "split": parts.record,
        "backend": keras.backend.backend(),
    }
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    if data.get("config", config) != config:
        sys.exit(
            f"{NAME}: error: {json_path} holds runs of another configuration "
            f"({data['config']}); use another --out or move it away"
        )
    data.update(
        benchmark=name, config=config, machine=machine_info(), versions=versions(), code=code_provenance()
    )
    data.setdefault("runs", [])
    print(
        f"Data: {len(x):,} training / {len(test[0]):,} test images; backend {config['backend']}",
        flush=True,
    )

    done = {(r["model"], r["frozen"], r["seed"]) for r in data["runs"]}
    mine = shard_of(_plan(args), args.shard)
    plan = [run for run in mine if run not in done]
    print(f"{len(plan)} run(s) to do, {len(mine) - len(plan)} done already", flush=True)
    for i, (model_name, frozen, seed) in enumerate(plan, 1):
        label = f"[{i}/{len(plan)}] {model_name} {'frozen' if frozen else 'learnable'} seed {seed}"
        keras.utils.set_random_seed(seed)
        model, frozen_paths = build(args.experiment, model_name, frozen)
        counts = parameter_counts(model)
        print(f"{label}: {counts['learnable']:,} of {counts['total']:,} parameters learnable", flush=True)
        verbose, callbacks = progress_callbacks()
        start = time.perf_counter()
        history = recipes.fit_cifar(
            model,
            (x, y),
            args.epochs,
            eval_data=test,
            seed=seed,
            callbacks=callbacks,
            verbose=verbose,
            **recipe,
        )
        seconds = time.perf_counter() - start
        accuracy = history.eval_results["accuracy"]
        print(f"{label}: test accuracy {accuracy:.4f} after {seconds / 60:.1f} min", flush=True)
        external = {}
        if parts.validation is not None:
            external["val_accuracy"] = split_accuracy(model, history.normalization, parts.validation)
        if args.eval_data is not None:
            external = {
                "eval_data": data_provenance(args.eval_data),
                "eval_data_accuracy": external_accuracy(model, history.normalization, args.eval_data),
            }
            print(f"{label}: --eval-data accuracy {external['eval_data_accuracy']:.4f}", flush=True)
        if args.fgsm:
            external.update(
                fgsm_epsilon=FGSM_EPSILON,
                fgsm_accuracy=fgsm_accuracy(
                    model,
                    test,
                    FGSM_EPSILON,
                    normalization=history.normalization,
                    batch_size=FGSM_BATCH,
                ),
            )
            print(f"{label}: FGSM (eps 1/255) accuracy {external['fgsm_accuracy']:.4f}", flush=True)
        data["runs"].append(
            {
                "model": model_name,
                "frozen": frozen,
                "seed": seed,
                "test_accuracy": accuracy,
                "test_loss": history.eval_results["loss"],
                "train_accuracy": float(history.history["accuracy"][-1]),
                "train_loss": float(history.history["loss"][-1]),
                "train_time_s": seconds,
                "params": counts,
                "frozen_variables": len(frozen_paths),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "loadavg_1min": os.getloadavg()[0],
                "code": data["code"],
                **external,
            }
        )
        data["updated"] = data["runs"][-1]["date"]
        write_text(json_path, json.dumps(data, indent=2) + "\n")
        write_text(args.out / f"{name}.md", render_markdown(data))
    if data["runs"]:
        print(render_markdown(data))
    print(f"results: {json_path} and {name}.md", flush=True)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
#: How the variants of one seed pair in these runs (the report's pairing sentence).
PAIRING = (
    PAIRED_BY_SEED + "; `lcresnet(..., frozen=True)` and `frozen=False` draw the same initial "
    "weights (tests/test_benchmarks_determinism.py). A gap (frozen − learnable) is paired within "
    "its network; gaps of two networks are compared unpaired: their weights differ"
)
#: Why gaps of two networks are not paired.
ACROSS_NETWORKS = "two networks: only the data order and draws are shared"


def _expansion(model):
    return int(model.rsplit("x", 1)[1])


def _gaps(data, value=lambda r: 100 * accuracy_of(r), models=None):
    """``{model: by_seed sample of frozen − learnable}`` (``value`` of each run, default
    :func:`accuracy_of` in points) for the models with both, in recorded order."""
    runs = [r for r in data["runs"] if value(r) is not None]
    models = models or list(dict.fromkeys(r["model"] for r in runs))
    gaps = {}
    for model in models:
        mine = by(runs, "model", model)
        gap = seed_differences(
            by_seed(by(mine, "frozen", True), value), by_seed(by(mine, "frozen", False), value)
        )
        if gap:
            gaps[model] = gap
    return gaps


def _fig1_comparisons(data, value=lambda r: 100 * accuracy_of(r), what="", counts=True):
    """The paper's direction, the gap at the largest E above the gap at the smallest (counted), and
    each E's frozen against learnable (context: break-even near E = 8, a gain beyond)."""
    models = sorted(dict.fromkeys(r["model"] for r in data["runs"]), key=_expansion)
    gaps = _gaps(data, value, models)
    found = [m for m in models if m in gaps]
    out = []
    if len(found) >= 2:
        low, high = found[0], found[-1]
        out.append(
            Comparison(
                f"{what}gap at E = {_expansion(high)} − gap at E = {_expansion(low)}",
                gaps[high],
                gaps[low],
                data,
                paired=ACROSS_NETWORKS,
                counts=counts,
            )
        )
    for model in found:
        mine = by(data["runs"], "model", model)
        out.append(
            Comparison(
                f"{what}E = {_expansion(model)}: frozen − learnable",
                by_seed(by(mine, "frozen", True), value),
                by_seed(by(mine, "frozen", False), value),
                data,
                counts=False,
            )
        )
    return out


def _fgsm(run):
    return 100 * run["fgsm_accuracy"] if "fgsm_accuracy" in run else None


def comparisons(name, data):
    """The differences the entry ``name``'s verdict rests on (:class:`~benchmarks.bench_utils.Comparison`),
    context ones (``counts=False``) beside."""
    if data["config"]["experiment"] == "fig3":
        gaps = _gaps(data)
        without = [m for m in gaps if FIG3_MODELS[m][0].startswith("no 1x1")]
        return [
            Comparison(f"gap of {w} − gap of {n}", gaps[w], gaps[n], data, paired=ACROSS_NETWORKS)
            for w in gaps
            if w not in without
            for n in without
        ]
    if name == "lc_fgsm":  # Fig. 4: the robust gap shrinks as E grows; the clean one is Fig. 1's
        return _fig1_comparisons(data, _fgsm, "FGSM: ") + _fig1_comparisons(
            data, what="clean: ", counts=False
        )
    return _fig1_comparisons(data)


def _lc_fig1(data, name="lc_accuracy_fig1"):
    gaps = _gaps(data, models=sorted(dict.fromkeys(r["model"] for r in data["runs"]), key=_expansion))
    text = "; ".join(f"E = {_expansion(m)}: {ms([v for v, _ in g.values()])}" for m, g in gaps.items())
    return f"gap frozen − learnable (points): {text}", verdict_of(comparisons(name, data))


def _lc_fgsm(data):
    models = sorted(dict.fromkeys(r["model"] for r in data["runs"]), key=_expansion)
    parts = []
    for what, value in (("FGSM (eps 1/255)", _fgsm), ("clean", lambda r: 100 * accuracy_of(r))):
        gaps = _gaps(data, value, models)
        parts.append(
            f"{what}: "
            + "; ".join(f"E = {_expansion(m)} {ms([v for v, _ in g.values()])}" for m, g in gaps.items())
        )
    return ("gap frozen − learnable (points), " + "; ".join(parts), verdict_of(comparisons("lc_fgsm", data)))


def _lc_fig3(data):
    gaps = _gaps(data)
    text = "; ".join(f"{m}: {ms([v for v, _ in g.values()])}" for m, g in gaps.items())
    return f"gap frozen − learnable (points): {text}", verdict_of(comparisons("lc_accuracy_fig3", data))


def _figure_lc_gap(data, plt):
    models = sorted(dict.fromkeys(r["model"] for r in data["runs"]), key=lambda m: int(m.rsplit("x", 1)[1]))
    points = [(int(m.rsplit("x", 1)[1]), seed_gaps(by(data["runs"], "model", m))) for m in models]
    points = [(e, g) for e, g in points if g]
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.errorbar(
        [e for e, _ in points],
        [np.mean(g) for _, g in points],
        yerr=[np.std(g, ddof=1) if len(g) > 1 else 0 for _, g in points],
        marker="o",
        capsize=3,
    )
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("LC expansion E")
    ax.set_ylabel("frozen − learnable (points)")
    ax.set_title("LCResNet-20-16xE (paper: rises to ≥ 0 near E = 8)", fontsize=9)
    return fig


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    if name == "lc_fgsm":
        return _lc_fgsm(data)
    return (_lc_fig3 if data["config"]["experiment"] == "fig3" else _lc_fig1)(data)


#: Figures of the suite report, by the names suite entries list.
FIGURES = {"lc_gap": _figure_lc_gap}


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
LC_RECIPE_CPU = ("--train-size", "2000", "--epochs", "3", "--batch-size", "64", "--test-size", "2000")
SUITE = {
    "cpu": (
        Benchmark(
            name="lc_accuracy_fig1",
            script="lc_accuracy.py",
            # E = 16 added to 1, 4, 8 (issue 35); the runs of the smaller E are kept.
            args=(
                "fig1",
                "--backend",
                "torch",
                "--expansions",
                "1",
                "4",
                "8",
                "16",
                *LC_RECIPE_CPU,
                *TRAIN_SEEDS,
            ),
            # Issue 59 (point 5): the headline cells, E = 8 and 16, get seeds 3 and 4 too.
            more_args=(
                (
                    "fig1",
                    "--backend",
                    "torch",
                    "--expansions",
                    "8",
                    "16",
                    *LC_RECIPE_CPU,
                    "--seeds",
                    "3",
                    "4",
                ),
            ),
            title="LC blocks: LCResNet-20-16xE, frozen random vs learnable spatial filters (Fig. 1)",
            paper="the frozen gap shrinks as E grows, break-even near E = 8 (75 epochs); "
            "E = 128: 91.89 ± 0.10 % frozen vs 91.39 ± 0.29 % learnable",
            # 32.4 min on 2 processes (2026-11-29), seeds 3-4 at E = 8 and 16 included.
            minutes=33,
            run_key=("model", "frozen", "seed"),
            eval_data=True,
            figures=("lc_gap",),
        ),
        Benchmark(
            name="lc_accuracy_fig3",
            script="lc_accuracy.py",
            args=("fig3", "--backend", "torch", *LC_RECIPE_CPU, *TRAIN_SEEDS),
            title="LC blocks: freezing every spatial conv of networks with and without 1x1 convs (Fig. 3)",
            paper="networks without 1x1 convs lose >= 16 points when frozen, networks with them < 2",
            minutes=15,  # 14.3 min in 2 processes (2026-11-29)
            run_key=("model", "frozen", "seed"),
            eval_data=True,
        ),
        Benchmark(
            name="lc_fgsm",
            script="lc_accuracy.py",
            # Fig. 1's CPU configuration at E = 1 and 8 with each trained network's FGSM accuracy; the
            # same seeds as lc_accuracy_fig1, so the runs both hold measure the run-to-run spread.
            args=(
                "fig1",
                "--name",
                "lc_fgsm",
                "--fgsm",
                "--backend",
                "torch",
                "--expansions",
                "1",
                "8",
                *LC_RECIPE_CPU,
                *TRAIN_SEEDS,
            ),
            title="LC blocks: robust accuracy under one l_inf FGSM step (eps 1/255) of LCResNet-20-16xE, "
            "frozen vs learnable (Fig. 4)",
            paper="frozen LC networks' robust-accuracy gap shrinks as E grows, as the clean gap does "
            "(Fig. 4, 75 epochs)",
            minutes=17,  # 16.7 min in one process on 2 cores (2026-11-27)
            run_key=("model", "frozen", "seed"),
            eval_data=True,
            repeats="lc_accuracy_fig1",
        ),
    ),
    "gpu": (
        Benchmark(
            name="lc_accuracy_fig1",
            script="lc_accuracy.py",
            args=(
                "fig1",
                "--expansions",
                "1",
                "2",
                "4",
                "8",
                "16",
                "32",
                "64",
                "128",
                "--train-size",
                "45000",
                "--epochs",
                "75",
                *TRAIN_SEEDS,
            ),
            title="LC blocks: LCResNet-20-16xE, E = 1..128, the paper's recipe and budget (Fig. 1)",
            paper="E = 128: 91.89 ± 0.10 % frozen vs 91.39 ± 0.29 % learnable; break-even near E = 8",
            minutes=24 * 60,
            run_key=("model", "frozen", "seed"),
            eval_data=True,
            figures=("lc_gap",),
        ),
    ),
}


if __name__ == "__main__":
    main()
