"""Covariance transfer on CIFAR-10: a narrow ConvMixer initializes wider/deeper ones.

Reproduces, at a configurable budget, the transfer experiment of Trockman et
al. (ICLR 2023, Sec. 2 / App. A):

1. Train a narrow reference ConvMixer-32/8 (kernel 9, patch 2) with the
   default init and record the covariance of its depthwise filters with
   ``callbacks.RecordFilterCovariance`` (``--out/convmixer_32_8.npz``).
2. Train ConvMixer-128/8 (wider) and ConvMixer-128/16 (deeper), with spatial
   filters frozen (``freeze_spatial`` before ``compile``) and thawed, from three
   depthwise inits: the default (PyTorch's uniform, the package's default),
   ``apply_conv_covariance`` (preset ``cifar-p2``) and
   ``apply_covariance_transfer`` from the recorded bank.

Final validation accuracy (mean +- std over ``--seeds``) is printed as a
markdown table and written to ``--out/results.md``; ``--out/results.json``
holds the config, versions, backend, seeds and every run's numbers. The
validation set is 10% of the CIFAR-10 training split, held out per class;
``--val-size`` evaluates on a class-balanced subset of it (0 = all 5,000).

Smoke check on a CPU (too few steps for accuracies above chance):
    python examples/covariance_transfer.py --train-size 512 --epochs 1 \\
        --source-epochs 1 --seeds 0 --val-size 500 --targets wider

Full budget on a GPU machine (all 45,000 training images, full validation):
    KERAS_BACKEND=jax python examples/covariance_transfer.py --train-size 45000 \\
        --val-size 0 --source-epochs 50 --epochs 50 --seeds 0 1 2 --out ct_full
"""

import argparse
import json
import os
import sys
import time

import keras
import numpy as np

import keras_structinit as ks
from keras_structinit.callbacks import RecordFilterCovariance
from keras_structinit.covariance import FilterCovariance
from keras_structinit.datasets import load_demo_data
from keras_structinit.models import convmixer
from keras_structinit.recipes.training import channel_normalizer, compile_classifier
from keras_structinit.utils.io_utils import write_json, write_text
from keras_structinit.utils.reporting import format_table, machine_info, versions

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(REPO_ROOT, "..", "shared", "datasets", "cifar10-train-jpeg.zip")
TARGETS = {"ConvMixer-128/8 (wider)": (128, 8), "ConvMixer-128/16 (deeper)": (128, 16)}
INITS = ("default (PyTorch uniform)", "ConvCovariance (cifar-p2)", "covariance transfer")


SUMMARY_TABLE = (
    ("model", "model"),
    ("filters", "filters"),
    ("init", "init"),
    ("final val acc (mean ± std)", lambda r: f"{r['mean']:.4f} ± {r['std']:.4f}"),
    ("n", "n"),
)


def structure_table(depths, initial, trained):
    """Markdown table of the source bank's structure per layer, at initialization → trained."""

    def change(key, spec):
        return lambda r: f"{r[2][key]:{spec}} → {r[3][key]:{spec}}"

    rows = [(i, d, a, t) for i, (d, a, t) in enumerate(zip(depths, initial, trained, strict=True), 1)]
    return format_table(
        rows,
        [
            ("source layer", lambda r: r[0]),
            ("depth", lambda r: r[1], ".2f"),
            ("tr(Σ) init → trained", change("total_variance", ".3f")),
            ("centre ratio init → trained", change("centre_ratio", ".2f")),
            ("top-eigenvalue share init → trained", change("top_eigen_share", ".3f")),
        ],
    )


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="CIFAR-10 zip / folder / npz")
    p.add_argument("--out", default="covariance_transfer_out")
    p.add_argument("--train-size", type=int, default=5000)
    p.add_argument(
        "--source-train-size",
        type=int,
        default=None,
        help="training images of the source model (default: --train-size); "
        "the targets use the first --train-size of them",
    )
    p.add_argument("--val-size", type=int, default=1000, help="0 = whole held-out 10%%")
    p.add_argument("--source-epochs", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--source-seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--filters", nargs="+", choices=("frozen", "thawed"), default=["frozen", "thawed"])
    p.add_argument(
        "--targets",
        nargs="+",
        choices=("wider", "deeper"),
        default=["wider", "deeper"],
        help="target models: wider = ConvMixer-128/8, deeper = ConvMixer-128/16",
    )
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse --out/progress.json (same config): skip the source and runs already done",
    )
    p.add_argument("--kernel-size", type=int, default=9)
    p.add_argument("--patch-size", type=int, default=2)
    args = p.parse_args(argv)
    for name in ("train_size", "source_epochs", "epochs", "batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.source_train_size is not None and args.source_train_size < args.train_size:
        p.error("--source-train-size must be >= --train-size")
    if args.val_size < 0:
        p.error("--val-size must be >= 0")
    return args


def balanced_subset(y, n, seed):
    """Indices of ``n`` examples (0: all), as equal per class as possible."""
    if n == 0 or n >= len(y):
        return np.arange(len(y))
    rng = np.random.default_rng(seed)
    # Rank each example within its shuffled class; take the lowest ranks first.
    rank = np.empty(len(y), dtype=np.int64)
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        rank[rng.permutation(members)] = np.arange(len(members))
    return np.sort(np.lexsort((rng.random(len(y)), rank))[:n])


def train_and_eval(dim, depth, data, args, epochs, seed, init=None, frozen=False, bank=None, callbacks=()):
    x, y, x_val, y_val = data
    keras.utils.set_random_seed(seed)
    model = convmixer(
        dim,
        depth,
        kernel_size=args.kernel_size,
        patch_size=args.patch_size,
        num_classes=10,
        input_shape=x.shape[1:],
    )
    if init == INITS[1]:
        ks.apply_conv_covariance(model, preset="cifar-p2", seed=seed)
    elif init == INITS[2]:
        ks.apply_covariance_transfer(model, bank=bank, seed=seed)
    if frozen:
        ks.freeze_spatial(model)
    compile_classifier(model, epochs * int(np.ceil(len(x) / args.batch_size)), args.lr, args.weight_decay)
    start = time.perf_counter()
    hist = model.fit(x, y, batch_size=args.batch_size, epochs=epochs, callbacks=list(callbacks), verbose=2)
    seconds = time.perf_counter() - start
    _, val_acc = model.evaluate(x_val, y_val, batch_size=256, verbose=0)
    return {
        "val_accuracy": float(val_acc),
        "train_loss": float(hist.history["loss"][-1]),
        "train_seconds": round(seconds, 1),
    }


def main(argv=None):
    args = parse_args(argv)
    if not os.path.exists(args.data):
        sys.exit(
            f"CIFAR-10 not found at {args.data!r}; pass --data PATH "
            "(a zip or folder of train/<class>/<i>.jpg, or an .npz with x, y)."
        )
    os.makedirs(args.out, exist_ok=True)
    pool = args.source_train_size or args.train_size
    # A random subset of `pool` images in random order: the targets take its first train_size.
    x_all, y_all, x_val, y_val, description = load_demo_data(args.data, pool, args.source_seed)
    x, y = x_all[: args.train_size], y_all[: args.train_size]
    keep = balanced_subset(y_val, args.val_size, args.source_seed)
    x_val, y_val = x_val[keep], y_val[keep]
    normalize = channel_normalizer(x)
    data = (normalize(x), y.astype("int32"), normalize(x_val), y_val.astype("int32"))
    source_data = (normalize(x_all), y_all.astype("int32")) + data[2:]
    print(
        f"Data: {description}; {len(x)} train / {len(x_val)} val images; backend {keras.backend.backend()}.",
        flush=True,
    )

    # Progress is saved after every run so a long study can be resumed.
    progress_path = os.path.join(args.out, "progress.json")
    # What the results depend on (options left unset do not count).
    study_config = {
        k: v
        for k, v in vars(args).items()
        if k not in ("resume", "seeds", "targets", "filters", "out") and v is not None
    }
    progress = {"config": study_config, "source": None, "runs": []}
    if args.resume and os.path.exists(progress_path):
        with open(progress_path) as f:
            saved = json.load(f)
        if saved["config"] != study_config:
            sys.exit(
                f"--resume: {progress_path} was written with a different config "
                f"({saved['config']}); use another --out or drop --resume."
            )
        progress = saved
        print(f"Resuming: {len(progress['runs'])} runs already done.", flush=True)

    # 1. Reference model and its filter-covariance bank.
    bank_path = os.path.join(args.out, "convmixer_32_8.npz")
    if progress["source"] is None or not os.path.exists(bank_path):
        print("\n=== source ConvMixer-32/8 ===", flush=True)
        progress["source"] = train_and_eval(
            32,
            8,
            source_data,
            args,
            args.source_epochs,
            args.source_seed,
            callbacks=[RecordFilterCovariance(bank_path)],
        )
        write_json(progress_path, progress)
    source = progress["source"]
    bank = FilterCovariance.load(bank_path)
    print(f"source val acc {source['val_accuracy']:.4f}; bank: {bank!r}", flush=True)

    # 2. Targets.
    runs = progress["runs"]
    done = {(r["model"], r["filters"], r["init"], r["seed"]) for r in runs}
    targets = {name: size for name, size in TARGETS.items() if name.split("(")[1][:-1] in args.targets}
    # Seeds outermost: a study cut short still has every cell for the seeds done.
    for seed in args.seeds:
        for model_name, (dim, depth) in targets.items():
            for frozen in [f == "frozen" for f in args.filters]:
                for init in INITS:
                    filters = "frozen" if frozen else "thawed"
                    if (model_name, filters, init, seed) in done:
                        continue
                    tag = f"{model_name} | {filters} | {init} | seed {seed}"
                    print(f"\n=== {tag} ===", flush=True)
                    r = train_and_eval(
                        dim, depth, data, args, args.epochs, seed, init=init, frozen=frozen, bank=bank
                    )
                    print(f"val acc {r['val_accuracy']:.4f}", flush=True)
                    runs.append(dict(model=model_name, filters=filters, init=init, seed=seed, **r))
                    write_json(progress_path, progress)

    summary = []
    for model_name in targets:
        for filters in args.filters:
            for init in INITS:
                accs = np.array(
                    [
                        r["val_accuracy"]
                        for r in runs
                        if (r["model"], r["filters"], r["init"]) == (model_name, filters, init)
                        and r["seed"] in args.seeds
                    ]
                )
                summary.append(
                    {
                        "model": model_name,
                        "filters": filters,
                        "init": init,
                        "mean": float(accs.mean()),
                        "std": float(accs.std()),
                        "n": len(accs),
                    }
                )
    # The source's bank after training next to the same model at initialization.
    structure = bank.structure()
    keras.utils.set_random_seed(args.source_seed)
    initial = FilterCovariance.from_model(
        convmixer(
            32,
            8,
            kernel_size=args.kernel_size,
            patch_size=args.patch_size,
            num_classes=10,
            input_shape=x.shape[1:],
        )
    ).structure()
    md = "\n".join(
        [
            "# Covariance transfer: ConvMixer-32/8 -> ConvMixer-128/8 and -128/16",
            "",
            (
                f"Data: {description}; {len(x)} training / {len(x_val)} validation images. "
                f"Backend {keras.backend.backend()}; seeds {args.seeds}; {args.epochs} epochs "
                f"(source: {args.source_epochs} epochs on {len(x_all)} images, "
                f"val acc {source['val_accuracy']:.4f})."
            ),
            (
                "The default init is PyTorch's default uniform (`TorchDefaultUniform`, the "
                "package's default); std is the population std over seeds."
            ),
            "",
            format_table(summary, SUMMARY_TABLE),
            "",
            (
                "Structure of the source bank (`FilterCovariance.structure()`), at initialization "
                "(PyTorch's uniform: i.i.d. pixels, centre ratio ~1; the top-eigenvalue share of an "
                "estimate from 32 filters is well above the population 1/81) and after training:"
            ),
            "",
            structure_table(bank.depth_fractions, initial, structure),
        ]
    )
    print("\n" + md, flush=True)
    write_text(os.path.join(args.out, "results.md"), md + "\n")
    write_json(
        os.path.join(args.out, "results.json"),
        {
            "config": vars(args),
            "data": description,
            "backend": keras.backend.backend(),
            "versions": versions(),
            "machine": machine_info(),
            "seeds": args.seeds,
            "sizes": {"train": len(x), "val": len(x_val)},
            "source": {
                "model": "ConvMixer-32/8",
                "bank": bank_path,
                "structure": structure,
                "structure_at_init": initial,
                **source,
            },
            "summary": summary,
            "runs": runs,
        },
    )
    print(f"\nWrote {args.out}/results.md and results.json", flush=True)


if __name__ == "__main__":
    main()
