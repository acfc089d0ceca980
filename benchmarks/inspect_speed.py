#!/usr/bin/env python
"""Wall time of ``keras_structinit.inspect`` and ``structinit inspect`` on a ConvNeXt-T (issue 36).

``keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)`` (28 M
parameters): ``inspect(model)`` without data, ``--repeats`` times in one process (the first call
includes tracing), and ``structinit inspect`` on the model saved as ``.keras`` in a fresh process
(loading, the report and its PNGs). The issue's bar: under 30 s on a 2-core CPU.

``--all-backends`` (the CPU suite's entry) runs each installed backend in its own process.

Usage::

    python -m benchmarks.inspect_speed --all-backends --out benchmarks/results/cpu
    python -m benchmarks.inspect_speed --backend torch --out benchmarks/results/cpu
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_utils import LOCAL_RESULTS, Benchmark, backend_parser, mean_std, run_per_backend

NAME = "inspect_speed"
#: Issue 36's bar: seconds on a 2-core CPU.
BAR_SECONDS = 30


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    return parser.parse_args(argv)


def render_markdown(data):
    lines = [
        "# `inspect` on a ConvNeXt-T: wall time",
        "",
        "keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10), no data. "
        f"The bar (issue 36): under {BAR_SECONDS} s on a 2-core CPU.",
        "",
        "| Backend | inspect(model), first call (s) | later calls (s) | structinit inspect, fresh "
        "process (s) | Machine | Date (UTC) |",
        "|---|---:|---:|---:|---|---|",
    ]
    for backend, r in sorted(data["results"].items()):
        lines.append(
            f"| {backend} | {r['seconds'][0]:.1f} | {mean_std(r['seconds'][1:], '.1f')} | "
            f"{r['cli_seconds']:.1f} | {r['machine']['cpu']}, {r['machine']['cores']} cores | "
            f"{r['date']} |"
        )
    return "\n".join(lines) + "\n"


def headline(name, data):
    """The suite report's line: the slowest backend's times against issue 36's bar; no verdict
    (the bar is the package's, not a paper's)."""
    results = data["results"].values()
    first = max(r["seconds"][0] for r in results)
    cli = max(r["cli_seconds"] for r in results)
    within = "under" if max(first, cli) < BAR_SECONDS else "over"
    return (
        f"slowest backend: inspect(model) {first:.1f} s at its first call, `structinit inspect` "
        f"{cli:.1f} s in a fresh process ({within} the {BAR_SECONDS} s bar)"
    ), None


def run_backend(args):
    """``(backend, entry)``: this process's timings of ``inspect`` and the CLI."""
    import keras

    import keras_structinit as ks
    from keras_structinit.utils.reporting import machine_info, versions

    model = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        report = ks.inspect(model)
        seconds.append(time.perf_counter() - start)
        print(f"inspect(model): {seconds[-1]:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "convnext_tiny.keras")
        model.save(path)
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "keras_structinit.cli",
                "inspect",
                path,
                "--out",
                os.path.join(tmp, "report"),
            ],
            check=True,
            capture_output=True,
            env=dict(os.environ),
        )
        cli_seconds = time.perf_counter() - start
    print(f"structinit inspect: {cli_seconds:.1f} s", flush=True)
    return keras.backend.backend(), {
        "seconds": seconds,
        "cli_seconds": cli_seconds,
        "spatial_layers": len(report.spatial),
        "mlp_blocks": len(report.mlp),
        "machine": machine_info(),
        "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


SUITE = {
    "cpu": (
        # A timing entry: run alone (no run_key), every backend in one entry.
        Benchmark(
            name=NAME,
            script="inspect_speed.py",
            args=("--all-backends",),
            title="Wall time of inspect(model) and of `structinit inspect` on a ConvNeXt-T, every backend",
            paper=f"no claim in the papers; the bar of issue 36: under {BAR_SECONDS} s on 2 CPU cores",
            minutes=1.1,  # 1.1 min on 2026-11-29
        ),
    ),
}


if __name__ == "__main__":
    main()
