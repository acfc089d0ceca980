#!/usr/bin/env python
"""Peak memory of the ImageNet recipe's input pipeline and training steps (issue 33).

Runs ``recipes.fit_imagenet`` with its defaults (batch 1024, 224 x 224 crops,
RandAugment, MixUp/CutMix) on an image set given as a zip (default: the shared
CIFAR-10 training split, 50,000 JPEGs, upsampled to 256 x 256 by the recipe)
for ``--steps`` steps of a small ConvMixer, in a child process whose resident
memory a watchdog samples every 0.2 s and kills above ``--limit-gb``. Records
the peak resident set size (the child's ``ru_maxrss``, and the watchdog's
highest sample), the wall time and what the pipeline holds.

The recipe used to shuffle 16 x batch resized float images (12.9 GB at the
defaults) and to compute both MixUp and CutMix per batch: a user's run on this
zip was killed at 24 GB. Issue 76 bounds every backend's peak at :data:`BOUND_GB`
(its reason in docs/models-and-recipes.md); each record keeps the machine's load
average at the child's start and end (the 2-core machine is shared).

``--all-backends`` (the CPU suite's entry) measures each installed backend in turn.

Usage::

    python -m benchmarks.imagenet_memory --backend jax [--steps 3] [--data ZIP]
    python -m benchmarks.imagenet_memory --all-backends --steps 2 --out benchmarks/results/cpu

Results go to ``<out>/imagenet_memory.json`` and ``.md`` (``<out>`` defaults
to ``benchmarks/results/cpu``).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_utils import (
    LOCAL_RESULTS,
    SHARED_CIFAR10,
    Benchmark,
    backend_parser,
    data_label,
    data_provenance,
    run_per_backend,
)

NAME = "imagenet_memory"
#: How the table names ``choose_pipeline``'s answer (records from before the native stream: tf.data).
STREAMS = {"native": "native", "tf": "tf.data"}
#: The peak resident memory ``fit_imagenet`` stays under at its defaults, every backend and stream (issue 76).
BOUND_GB = 8.0

_CHILD = """
import json, resource, sys, time
import keras
from keras_structinit import recipes
from keras_structinit.models import build_model
from keras_structinit.recipes.native import choose_pipeline
data, steps = sys.argv[1], int(sys.argv[2])
form = recipes.IMAGENET_DEFAULTS["rand_augment"]
print("CHILD_SETUP " + json.dumps({
    "pipeline": choose_pipeline("auto", recipe="imagenet", rand_augment=form), "rand_augment": form,
}), flush=True)
start = time.perf_counter()
history = recipes.fit_imagenet(
    lambda: build_model("convmixer-16/2", 10, (224, 224, 3), kernel_size=5, patch_size=14),
    data, 1, steps_per_epoch=steps, verbose=2)
print("CHILD_RESULT " + json.dumps({
    "seconds": time.perf_counter() - start,
    "ru_maxrss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    "loss": float(history.history["loss"][-1]),
    "backend": keras.backend.backend(), "keras": keras.__version__,
}), flush=True)
"""


def _rss_gb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def measure(backend, data, steps, limit_gb):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    start, load_start = time.perf_counter(), os.getloadavg()[0]
    log = tempfile.TemporaryFile(mode="w+")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(data), str(steps)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    peak, killed, last = 0.0, False, time.perf_counter()
    while child.poll() is None:
        peak = max(peak, _rss_gb(child.pid))
        if peak > limit_gb:
            child.kill()
            killed = True
            break
        if time.perf_counter() - last > 30:  # progress, also when not on a terminal
            elapsed = time.perf_counter() - start
            print(f"[{backend}] {elapsed:.0f} s, resident {peak:.2f} GB so far", flush=True)
            last = time.perf_counter()
        time.sleep(0.2)
    child.wait()
    log.seek(0)
    text = log.read()

    def reported(tag):
        lines = [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith(f"{tag} ")]
        return json.loads(lines[0]) if lines else None

    result, setup = reported("CHILD_RESULT"), reported("CHILD_SETUP")
    if result is None and not killed:
        raise RuntimeError(f"the training child failed:\n{text[-3000:]}")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "data": data_provenance(data),
        "steps": steps,
        "batch_size": 1024,
        "image_size": 224,
        "watchdog_peak_gb": round(peak, 2),
        "killed_above_gb": limit_gb if killed else None,
        "wall_seconds": round(time.perf_counter() - start, 1),
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        **(setup or {}),
        **({k: (round(v, 2) if isinstance(v, float) else v) for k, v in result.items()} if result else {}),
    }


def _form(record):
    """The RandAugment form a run trained with: its child's record; Keras' ``(2, 0.7)`` in records
    from before the papers' named forms; unknown for a child killed before it reported."""
    if "rand_augment" in record:
        return record["rand_augment"]
    return "(2, 0.7)" if "ru_maxrss_gb" in record else "-"


def render(data):
    lines = [
        "# ImageNet recipe: peak memory on a zip of 50,000 images",
        "",
        "`recipes.fit_imagenet` defaults (batch 1024, 224 x 224, RandAugment, MixUp or CutMix), "
        "ConvMixer-16/2 (patch 14), `steps_per_epoch` steps, measured on the project's 2-core CPU "
        "machine (no GPU). Script: `benchmarks/imagenet_memory.py`. Data: "
        + ", ".join(sorted({data_label(r.get("data")) for r in data["results"].values() if r.get("data")}))
        + f". Bound: {BOUND_GB:g} GB (docs/models-and-recipes.md). Load: the machine's 1-minute load "
        "average at the run's start and end (other work shares its 2 cores).",
        "",
        "| backend | date (UTC) | steps | RandAugment | input stream | peak RSS (ru_maxrss, GB) "
        f"| watchdog peak (GB) | wall (s) | Keras | under {BOUND_GB:g} GB | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, r in sorted(data["results"].items()):
        lines.append(
            f"| {backend} | {r['date']} | {r['steps']} | {_form(r)} | "
            f"{STREAMS.get(r.get('pipeline', 'tf'), '-')} | "
            f"{r.get('ru_maxrss_gb', 'killed')} | "
            f"{r['watchdog_peak_gb']} | {r['wall_seconds']} | {r.get('keras', '-')} | "
            f"{_under(r)} | {' / '.join(map(str, r.get('load_average', ['-'])))} |"
        )
    return "\n".join(lines) + "\n"


def _under(record):
    """Whether a run stayed under :data:`BOUND_GB` (its highest of ``ru_maxrss`` and the watchdog's)."""
    peak = max(record.get("ru_maxrss_gb") or float("inf"), record["watchdog_peak_gb"])
    return "yes" if peak <= BOUND_GB else "no"


def render_markdown(data):
    return render(data)


def headline(name, data):
    """The suite report's line: each backend's peak resident memory and the input stream ``auto``
    chose there; no verdict (no paper claim)."""
    parts = []
    for backend, r in sorted(data["results"].items()):
        peak = r.get("ru_maxrss_gb")
        stream = f" ({STREAMS[r['pipeline']]})" if r.get("pipeline") in STREAMS else ""
        parts.append(
            f"{backend} {peak} GB{stream}"
            if peak is not None
            else f"{backend} killed above {r['killed_above_gb']} GB after {r['wall_seconds']:.0f} s{stream}"
        )
    return f"peak resident memory of fit_imagenet at its defaults (bound {BOUND_GB:g} GB): " + ", ".join(
        parts
    ), None


def parse_args(argv=None):
    parser = backend_parser(__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED_CIFAR10)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"--data: {args.data.name!r} not found; pass --data ZIP (an image zip or folder)")
    return args


def run_backend(args):
    """``(backend, entry)``: the measurement of one backend (a child process of its own)."""
    backend = args.backend or os.environ.get("KERAS_BACKEND", "tensorflow")
    entry = measure(backend, args.data, args.steps, args.limit_gb)
    print(json.dumps(entry), flush=True)
    return backend, entry


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)
    return 0


SUITE = {
    "cpu": (
        # Run alone (no run_key): the watchdog's peak is the whole machine's to take.
        Benchmark(
            name=NAME,
            script="imagenet_memory.py",
            # The watchdog's limit at 12 GB of the machine's 24 (shared): 1.5 x the bound.
            args=("--all-backends", "--steps", "2", "--limit-gb", "12"),
            title="Peak resident memory of fit_imagenet at its defaults (batch 1024, 224 x 224) on a zip of "
            "50,000 JPEGs, 2 steps of a ConvMixer-16/2, every backend",
            paper="no claim in the papers; issue 33: a run on this zip was killed at 24 GB before the "
            "recipe's shuffle buffer was bounded",
            # 14.3 min on 2026-12-02 (2-core, shared: load 2-7), TensorFlow's native stream 8.7 of them.
            minutes=14.3,
        ),
    ),
}


if __name__ == "__main__":
    sys.exit(main())
