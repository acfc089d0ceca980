#!/usr/bin/env python
"""Wall time and peak memory of weight selection from a ViT-B-sized teacher into a ViT-T.

Both models are the package's ViT built from config (teacher: width 768,
12 blocks, 12 heads; student: width 192, 12 blocks, 3 heads; patch 16 on
224x224 images, 1000 classes), randomly initialized and not timed. Timed:
``select_weights(student, teacher=teacher)`` with the defaults (uniform element
selection, first_n layers, flattened heads, head skipped), one warm-up and
``--repeats`` runs. Memory of a run: the peak of Python's allocations
(``tracemalloc``, NumPy's buffers included) and the growth of the process's
peak resident set over the warm-up's (``ru_maxrss``), both against the
teacher's weights in bytes. Goal (issue 11): under 5 s, peak under 1.5x the
teacher's weights.

Usage::

    python -m benchmarks.selection_speed                 # current KERAS_BACKEND
    python -m benchmarks.selection_speed --all-backends  # one subprocess each
"""

from __future__ import annotations

import datetime
import math
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    Benchmark,
    backend_parser,
    per_backend,
    run_per_backend,
    summarize,
)
from keras_structinit.utils.reporting import describe_machine, format_table, machine_info, versions

TEACHER = {"dim": 768, "depth": 12, "heads": 12}
STUDENT = {"dim": 192, "depth": 12, "heads": 3}


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def _vit(spec):
    import keras_structinit as ks

    return ks.models.vit(
        16, spec["dim"], spec["depth"], spec["heads"], num_classes=1000, input_shape=(224, 224, 3)
    )


def _maxrss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_backend(args):
    import keras

    from keras_structinit.selection import select_weights

    teacher, student = _vit(TEACHER), _vit(STUDENT)
    teacher_bytes = sum(math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in teacher.weights)
    paths = select_weights(student, teacher=teacher)  # warm-up
    rss_before = _maxrss_bytes()
    times, traced = [], []
    for _ in range(args.repeats):
        tracemalloc.start()
        start = time.perf_counter()
        select_weights(student, teacher=teacher)
        times.append(time.perf_counter() - start)
        traced.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    entry = {
        "date": datetime.date.today().isoformat(),
        "versions": versions(),
        "machine": machine_info(),
        "teacher": TEACHER,
        "student": STUDENT,
        "teacher_params": int(teacher.count_params()),
        "teacher_weight_bytes": teacher_bytes,
        "selected_variables": len(paths),
        "time": summarize(times),
        "tracemalloc_peak_bytes": max(traced),
        "rss_growth_bytes": _maxrss_bytes() - rss_before,
    }
    return keras.backend.backend(), entry


def render_markdown(data):
    rows = []
    for backend in BACKENDS:
        r = data["results"].get(backend)
        if r is None:
            continue
        rows.append(
            {
                "backend": backend,
                "time": f"{r['time']['mean_s']:.2f} ± {r['time']['std_s']:.2f}",
                "traced": r["tracemalloc_peak_bytes"] / r["teacher_weight_bytes"],
                "rss": r["rss_growth_bytes"] / r["teacher_weight_bytes"],
                "versions": f"keras {r['versions']['keras']}, {backend} {r['versions']['backend_version']}",
                "date": r["date"],
            }
        )
    table = format_table(
        rows,
        (
            ("backend", "backend"),
            ("select_weights (s), mean ± std", "time"),
            ("tracemalloc peak / teacher weights", "traced", ".2f"),
            ("peak RSS growth / teacher weights", "rss", ".2f"),
            ("versions", "versions"),
            ("date", "date"),
        ),
    )
    any_result = next(iter(data["results"].values()))
    machine = any_result["machine"]
    return (
        "# Weight selection: ViT-B-sized teacher -> ViT-T\n\n"
        f"Teacher {TEACHER} ({any_result['teacher_params']:,} parameters, "
        f"{any_result['teacher_weight_bytes'] / 2**20:.0f} MiB), student {STUDENT}; patch 16, 224x224, "
        f"1000 classes. `select_weights` defaults; {any_result['selected_variables']} variables selected. "
        "Goal: < 5 s, peak memory < 1.5x the teacher's weights.\n\n"
        f"{table}\n\n{describe_machine(machine)} Script: `benchmarks/selection_speed.py`.\n"
    )


def main(argv=None):
    run_per_backend(__file__, "selection_speed", parse_args, run_backend, render_markdown, argv)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
def _selection_speed(data):
    parts = [
        f"{backend} {entry['time']['median_s']:.2f} s, peak "
        f"{entry['tracemalloc_peak_bytes'] / entry['teacher_weight_bytes']:.2f}x the teacher's weights"
        for backend, entry in per_backend(data)
    ]
    return "select_weights ViT-B -> ViT-T: " + "; ".join(parts), None


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _selection_speed(data)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        Benchmark(
            name="selection_speed",
            script="selection_speed.py",
            args=("--all-backends",),
            title="Initialization cost: weight selection from a ViT-B-sized teacher into a ViT-T",
            paper="no number in the paper; the package's goal: < 5 s and < 1.5x the teacher's weights",
            minutes=3,
        ),
    ),
    # The gpu-quick tier ran this entry on an H100 host on 2026-11-26 (results/gpu/: 0.5 min for JAX
    # and torch); since then the tier's minutes go to the covariance pair (benchmarks/suite.py), and the
    # entry is the full GPU suite's, whose report keeps that result.
    "gpu": (
        Benchmark(
            name="selection_speed",
            script="selection_speed.py",
            args=("--all-backends",),
            title="Initialization cost: weight selection from a ViT-B-sized teacher into a ViT-T, on the "
            "GPU host",
            paper="no number in the paper; the package's goal: < 5 s and < 1.5x the teacher's weights",
            minutes=1,
        ),
    ),
}


if __name__ == "__main__":
    main()
