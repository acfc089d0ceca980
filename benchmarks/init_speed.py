#!/usr/bin/env python
"""Wall time of ``initialize(model, "trunc-normal")`` against ``"torch-default"`` (issue 77.4).

``keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)`` (53 conv and
Dense kernels, 54 variables drawn): per form its first call in the process (what ``keras.random``
traced once per kernel shape on JAX: ~20 s for ``trunc-normal`` before issue 77) and its second,
each form in a fresh process per backend (so that neither warms the other), seed 0. Both forms now
draw every kernel in NumPy, once (:mod:`keras_structinit.baseline.sampling`). The bar: ``trunc-normal``
costs no more than ``torch-default``, first call included.

The recorded run (2-core CPU) shared the machine with other work, so its times carry that load.

Usage::

    python -m benchmarks.init_speed --all-backends --out benchmarks/results/cpu
    python -m benchmarks.init_speed --backend jax --out benchmarks/results/cpu
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.bench_utils import LOCAL_RESULTS, backend_parser, run_per_backend, script_command

NAME = "init_speed"
FORMS = ("trunc-normal", "torch-default")
SEED = 0
MODEL = "keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)"


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    parser.add_argument("--form", choices=FORMS, help=argparse_help())
    return parser.parse_args(argv)


def argparse_help():
    return "time one form in this process and print its JSON line (the parent runs one per form)"


def render_markdown(data):
    lines = [
        "# `initialize` on a MobileNetV2: `trunc-normal` against `torch-default`",
        "",
        f"{MODEL}, seed {SEED}; each form in a fresh process per backend. The bar (issue 77.4): "
        "`trunc-normal` costs no more than `torch-default`, first call included. The machine was "
        "shared with other work during the run.",
        "",
        "| Backend | Form | Kernels | First call (s) | Second call (s) | Machine | Date (UTC) |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for backend, r in sorted(data["results"].items()):
        for form in FORMS:
            f = r["forms"][form]
            lines.append(
                f"| {backend} | {form} | {f['kernels']} | {f['seconds'][0]:.3f} | {f['seconds'][1]:.3f} | "
                f"{r['machine']['cpu']}, {r['machine']['cores']} cores | {r['date']} |"
            )
    return "\n".join(lines) + "\n"


def time_form(form):
    """``{"kernels", "seconds": [first, second]}`` of ``initialize(model, form)`` in this process."""
    import keras

    from keras_structinit.methods import initialize

    model = keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        paths = initialize(model, form, seed=SEED)
        seconds.append(time.perf_counter() - start)
    return {"kernels": sum(p.endswith("kernel") for p in paths), "variables": len(paths), "seconds": seconds}


def run_backend(args):
    """``(backend, entry)``: each form timed in a child process of its own."""
    import keras

    from keras_structinit.utils.reporting import machine_info, versions

    launch, root = script_command(__file__)
    forms = {}
    for form in FORMS:
        done = subprocess.run(
            [*launch, "--backend", keras.backend.backend(), "--form", form],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        forms[form] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"[{keras.backend.backend()}] {form}: {forms[form]['seconds']}", flush=True)
    return keras.backend.backend(), {
        "forms": forms,
        "seed": SEED,
        "model": MODEL,
        "machine": machine_info(),
        "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.form is not None:
        if args.backend:
            os.environ["KERAS_BACKEND"] = args.backend
        print(json.dumps(time_form(args.form)), flush=True)
        return
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


if __name__ == "__main__":
    main()
