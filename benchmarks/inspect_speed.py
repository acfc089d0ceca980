#!/usr/bin/env python
"""Wall time of ``keras_structinit.inspect`` and ``structinit inspect`` on a ConvNeXt-T (issue 36).

``keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)`` (28 M
parameters): ``inspect(model)`` without data, ``--repeats`` times in one process (the first call
includes tracing), and ``structinit inspect`` on the model saved as ``.keras`` in a fresh process
(loading, the report and its PNGs). The issue's bar: under 30 s on a 2-core CPU.

Usage::

    python -m benchmarks.inspect_speed --backend torch --out benchmarks/results/cpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_utils import BACKENDS, LOCAL_RESULTS, mean_std, stamp_code

NAME = "inspect_speed"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=BACKENDS, help="Keras backend (default: current KERAS_BACKEND)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    return parser.parse_args(argv)


def render_markdown(data):
    lines = [
        "# `inspect` on a ConvNeXt-T: wall time",
        "",
        "keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10), no data. "
        "The bar (issue 36): under 30 s on a 2-core CPU.",
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


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    import keras

    import keras_structinit as ks
    from keras_structinit.io_utils import write_text
    from keras_structinit.reporting import machine_info, versions

    model = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        report = ks.inspect(model)
        seconds.append(time.perf_counter() - start)
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
    backend = keras.backend.backend()
    json_path = args.out / f"{NAME}.json"
    data = json.loads(json_path.read_text()) if json_path.exists() else {"benchmark": NAME, "results": {}}
    data["results"][backend] = {
        "seconds": seconds,
        "cli_seconds": cli_seconds,
        "spatial_layers": len(report.spatial),
        "mlp_blocks": len(report.mlp),
        "machine": machine_info(),
        "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    stamp_code(data["results"][backend])
    stamp_code(data)
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(json_path, json.dumps(data, indent=2) + "\n")
    write_text(args.out / f"{NAME}.md", render_markdown(data))
    print(render_markdown(data))


if __name__ == "__main__":
    main()
