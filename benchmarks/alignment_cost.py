#!/usr/bin/env python
"""Wall time of data-aligned initialization on the whole CIFAR-10 training split.

Two measurements per backend, on the shared split's 50,000 images scaled to
[-1, 1] (loaded once, not timed):

* ``patch_covariance``: the covariance of every 5x5x3 patch of the 50,000
  images (28 x 28 patches each, 39.2M patches in all) and its eigen-
  decomposition, ``alignment.patch_covariance(images, 5)`` (NumPy, float64;
  the same work on every backend);
* ``align_conv_layers``: the full data-aligned init of the first two conv
  layers of the package's SimpleCNN (``simple-cnn-e3``, Maennel et al.'s
  Table 2 setting) from ``--align-images`` images (10,000, as in
  ``alignment_accuracy.py``): the image patch covariance for layer 1, then
  the forward pass of the images through the aligned layer 1 and the patch
  covariance of its activations (5x5 patches of 64 channels, d = 1,600) for
  layer 2, which dominates.

One untimed warm-up on 1,000 images, then ``--repeats`` timed runs. The data
is the shared CIFAR-10 training split (``--data``); without it the script
exits with a message.

Usage::

    python -m benchmarks.alignment_cost --all-backends   # one subprocess per backend
    python -m benchmarks.alignment_cost --backend jax --images 5000 --repeats 1   # quick
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from pathlib import Path

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    SHARED_CIFAR10,
    Benchmark,
    backend_parser,
    data_label,
    data_provenance,
    loadavg_cell,
    per_backend,
    run_per_backend,
    summarize,
)
from keras_structinit.utils.reporting import describe_machine, format_table, machine_info, versions

NAME = "alignment_cost"
KERNEL_SIZE = 5  # the SimpleCNN's first kernel (Maennel et al., App. D.1)
METHODS = {
    "patch_covariance": "patch_covariance(images, 5): covariance + eigh",
    "align_conv_layers": "align_conv_layers(simple-cnn-e3, images, num_layers=2): both layers",
}


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=SHARED_CIFAR10, help="CIFAR-10 training images (zip/dir/npz)"
    )
    parser.add_argument("--images", type=int, default=50_000, help="images used (default: all 50,000)")
    parser.add_argument(
        "--align-images", type=int, default=10_000, help="images of the align_conv_layers measurement"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if min(args.images, args.align_images) < 1:
        parser.error("--images and --align-images must be >= 1")
    if not args.data.exists():
        parser.exit(
            2,
            f"{NAME}: error: --data {str(args.data)!r} does not exist (the shared CIFAR-10 "
            "training split); nothing measured\n",
        )
    return args


def run_backend(args):
    import keras

    import keras_structinit as ks
    from keras_structinit.alignment import patch_covariance
    from keras_structinit.datasets import load_cifar10

    (x, _), _ = load_cifar10(str(args.data))
    images = (x[: args.images] / 127.5 - 1.0).astype("float32")
    backend = keras.backend.backend()
    load_start = os.getloadavg()[0]
    model = ks.models.build_model("simple-cnn-e3")

    def align(batch):
        return ks.align_conv_layers(model, images=batch, num_layers=2, seed=0)

    timings = {}
    for name, fn, count in (
        ("patch_covariance", lambda batch: patch_covariance(batch, KERNEL_SIZE), None),
        ("align_conv_layers", align, args.align_images),
    ):
        fn(images[:1000])  # warm-up: traces, thread pools, first allocations
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            fn(images[:count])
            times.append(time.perf_counter() - start)
        timings[name] = summarize(times)
        print(f"[{backend}] {name}: median {timings[name]['median_s']:.2f} s", flush=True)
    eigvals, _ = patch_covariance(images, KERNEL_SIZE)
    return backend, {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "loadavg_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "software": versions(),
        "config": {
            "images": len(images),
            "align_images": len(images[: args.align_images]),
            "kernel_size": KERNEL_SIZE,
            "model": "simple-cnn-e3",
            "num_layers": 2,
            "repeats": args.repeats,
            "patches": len(images) * (images.shape[1] - KERNEL_SIZE + 1) ** 2,
            # Which data, by name and content digest (never its path): issue 79, point 7.
            "data": data_provenance(args.data),
        },
        "timings": timings,
        # Not a timing: the spectrum's head (App. D.1 reports about 12.3, 1.45, 1.18, 1.06).
        "top_eigenvalues": [round(float(v), 4) for v in eigvals[:4]],
    }


def render_markdown(data):
    results = {b: data["results"][b] for b in BACKENDS if b in data["results"]}
    first = next(iter(results.values()))
    cfg, machine = first["config"], first["machine"]
    rows = [
        (backend, label, entry["timings"][name])
        for backend, entry in results.items()
        for name, label in METHODS.items()
    ]
    timings = format_table(
        rows,
        [
            ("Backend", lambda r: r[0]),
            ("Method", lambda r: r[1]),
            ("Median (s)", lambda r: r[2]["median_s"], ".2f", "right"),
            ("Mean ± std (s)", lambda r: f"{r[2]['mean_s']:.2f} ± {r[2]['std_s']:.2f}", "", "right"),
            ("Images", lambda r: cfg["align_images" if r[1].startswith("align") else "images"], ",", "right"),
        ],
    )
    software = format_table(
        results.items(),
        [
            ("Backend", lambda r: r[0]),
            ("Date (UTC)", lambda r: r[1]["date"]),
            ("Keras", lambda r: r[1]["software"]["keras"]),
            ("Backend version", lambda r: r[1]["software"]["backend_version"]),
            ("Top eigenvalues", lambda r: ", ".join(f"{v:.2f}" for v in r[1]["top_eigenvalues"])),
            ("1-min load avg (start / end)", lambda r: loadavg_cell(r[1]["loadavg_1min"])),
        ],
    )
    return "\n".join(
        [
            "# Initialization cost: data-aligned init on CIFAR-10",
            "",
            f"{cfg['images']:,} training images in [-1, 1]"
            + (f" ({data_label(cfg['data'])})" if cfg.get("data") else "")
            + f", {cfg['patches']:,} patches of "
            f"{cfg['kernel_size']}x{cfg['kernel_size']}x3; one warm-up on 1,000 images, then "
            f"{cfg['repeats']} timed runs. Generated by `benchmarks/alignment_cost.py`.",
            "",
            describe_machine(machine),
            "",
            timings,
            "",
            "`align_conv_layers` includes both layers' patch covariances and the forward pass of every "
            "image through the aligned first layer (the second layer's input).",
            "",
            software,
            "",
        ]
    )


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
def _alignment_cost(data):
    parts = [
        f"{backend} patch covariance {entry['timings']['patch_covariance']['median_s']:.1f} s "
        f"({entry['config']['images']:,} images), align 2 layers "
        f"{entry['timings']['align_conv_layers']['median_s']:.1f} s "
        f"({entry['config']['align_images']:,} images)"
        for backend, entry in per_backend(data)
    ]
    return "; ".join(parts), None


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _alignment_cost(data)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        Benchmark(
            name="alignment_cost",
            script="alignment_cost.py",
            args=("--all-backends", "--repeats", "2"),
            title="Initialization cost: patch covariance of the 50,000 CIFAR-10 training images, and "
            "data-aligned init of a SimpleCNN's first two layers",
            paper="no number in the paper (App. D.1 gives the spectrum: about 12.3, 1.45, 1.18, 1.06)",
            minutes=3,  # 2.3 min on 2026-11-29
        ),
    ),
}


if __name__ == "__main__":
    sys.exit(main())
