#!/usr/bin/env python
"""Wall time and result of ``structinit demo`` at its defaults (issue 59, point 9).

Runs the README's first command, ``structinit demo`` with no flag but ``--out`` (a temporary
folder), in a fresh process on Keras' default backend (TensorFlow, unless ``--backend``), times
it from start to exit, and records what it wrote to ``results.json`` (its configuration, the data
it found, each seed's final accuracy per init, the paired gap and the verdict it printed) beside
the wall time and the code that ran. The README quotes this record; the demo's bar is
:data:`BAR_MINUTES` on 2 quiet cores. ``--epochs``, ``--train-size`` and ``--seeds`` are passed
through (the suite's ``--smoke``; the entry itself passes none). ``--data`` runs the demo on those
images, as a user with CIFAR-10 at hand (or with internet, through the Keras cache) does: the
``demo_cifar10`` entry passes the shared CIFAR-10 training split (``--name`` names its results).

Usage::

    python -m benchmarks.demo --out benchmarks/results/cpu
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

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    SHARED_CIFAR10,
    Benchmark,
    code_provenance,
    package_root,
)

NAME = "demo"
#: Issue 59's bar for the demo's default: minutes on 2 quiet CPU cores.
BAR_MINUTES = 8
#: The demo's flags this script passes through when given.
PASSED = ("epochs", "train_size", "seeds")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    parser.add_argument("--name", default=NAME, help=f"the results' stem (default {NAME})")
    parser.add_argument("--data", type=Path, default=None, help="passed to the demo (default: none)")
    parser.add_argument(
        "--shared-cifar10",
        action="store_const",
        dest="data",
        const=SHARED_CIFAR10,
        help="--data the shared CIFAR-10 training split (../shared/datasets)",
    )
    parser.add_argument("--backend", choices=BACKENDS, default=None, help="default: Keras' own default")
    for flag in PASSED:
        parser.add_argument(f"--{flag.replace('_', '-')}", type=int, default=None)
    return parser.parse_args(argv)


def command(args, out):
    """The demo's command line: ``structinit demo`` with ``--out`` and the flags passed through."""
    line = [sys.executable, "-m", "keras_structinit.cli", "demo", "--out", str(out)]
    if getattr(args, "data", None) is not None:
        line += ["--data", str(args.data)]
    for flag in PASSED:
        if getattr(args, flag) is not None:
            line += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    return line


def _shown(line):
    """``line`` as the README writes it: ``structinit demo ...``, without the interpreter or paths."""
    rest, skip = [], False
    for part in line[4:]:
        if part == "--out" or skip:
            skip = part == "--out"
            continue
        rest.append(Path(part).name if os.path.isabs(part) else part)
    return " ".join(["structinit", "demo", *rest])


def _relative(description, path):
    """The demo's description of its data with ``path`` shown by its name (no machine's folders in a
    record)."""
    return description if path is None else description.replace(str(path.resolve()), path.name)


def render_markdown(data):
    gap = data["paired_gap"]
    lines = [
        f"# `{data['command']}`" + (" (its defaults)" if data["command"] == "structinit demo" else ""),
        "",
        f"`{data['command']}` on the {data['backend']} backend, {data['machine']['cores']} cores "
        f"({data['machine']['cpu']}), {data['date']}: {data['wall_seconds'] / 60:.1f} min from start to "
        f"exit (the bar: {BAR_MINUTES} min on 2 quiet cores). Script: `benchmarks/demo.py`.",
        "",
        f"Data: {data['data']}.",
        "",
        "| init (frozen filters) | seeds | final held-out accuracy per seed | mean | train time (s) |",
        "|---|---:|---|---:|---:|",
    ]
    for row in data["results"]:
        per_seed = ", ".join(f"{a:.4f}" for a in row["final_val_accuracies"])
        lines.append(
            f"| {row['init']} | {row['seeds']} | {per_seed} | {row['final_val_accuracy']:.4f} | "
            f"{row['train_seconds']:.1f} |"
        )
    gaps = ", ".join(f"{100 * g:+.2f}" for g in gap["gaps"])
    lines += ["", f"Per-seed gaps (points): {gaps}.", "", data["verdict"], ""]
    return "\n".join(lines)


def headline(name, data):
    """The report's line: the paired gap the demo printed and its wall time against the bar; no
    verdict (the demo's default data is not the paper's)."""
    gap, error = data["paired_gap"]["mean"], data["paired_gap"]["standard_error"]
    seeds = data["results"][0]["seeds"]
    minutes = data["wall_seconds"] / 60
    within = "under" if minutes < BAR_MINUTES else "over"
    spread = f" ± {100 * error:.2f}" if error is not None else ""
    where = data["data"].split(" (")[0]
    return (
        f"{data['backend']}, {seeds} seeds per init: ConvCovariance − default {100 * gap:+.2f}{spread} "
        f"points (paired) on {where}; {minutes:.1f} min ({within} the {BAR_MINUTES}-minute bar)"
    ), None


def main(argv=None):
    from keras_structinit.utils.io_utils import write_text

    args = parse_args(argv)
    if args.data is not None and not args.data.exists():
        print(f"[demo] skipped: --data {args.data} not found", flush=True)
        return 0
    code = code_provenance()  # the code the demo's process imports as it starts, not after its run
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    if args.backend:
        env["KERAS_BACKEND"] = args.backend
    with tempfile.TemporaryDirectory() as tmp:
        line = command(args, Path(tmp) / "demo")
        print(f"[demo] {_shown(line)}", flush=True)
        start = time.perf_counter()
        subprocess.run(line, check=True, env=env, cwd=package_root())
        wall = time.perf_counter() - start
        demo = json.loads((Path(tmp) / "demo" / "results.json").read_text())
    data = {
        "benchmark": args.name,
        "command": _shown(line),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": round(wall, 1),
        "code": code,
        **{k: demo[k] for k in ("backend", "versions", "machine", "config", "results")},
        "data": _relative(demo["data"], args.data),
        **{k: demo[k] for k in ("paired_gap", "verdict", "histories")},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / f"{args.name}.json", json.dumps(data, indent=2) + "\n")
    write_text(args.out / f"{args.name}.md", render_markdown(data))
    print(f"[demo] {wall / 60:.1f} min; wrote {args.out / args.name}.json and .md", flush=True)


SUITE = {
    "cpu": (
        # A timing entry: run alone (no run_key), on Keras' default backend as the README's command.
        Benchmark(
            name=NAME,
            script="demo.py",
            title="`structinit demo` at its defaults: 3 paired seeds per init, frozen-filter ConvMixer, "
            "default init vs ConvCovariance, and its wall time",
            paper="Sec. 4.1, Fig. 3: frozen-filter ConvMixers on CIFAR-10 gain 0.6-5.0 points at 20 epochs "
            f"with ConvCovariance; the demo's bar (issue 59): {BAR_MINUTES} min on 2 quiet cores",
            minutes=6.3,  # 6.3 min on 2026-12-01 (2-core Intel Xeon)
            smoke_args=("--epochs", "1", "--train-size", "64", "--seeds", "2"),
            depends=(
                "keras_structinit/covariance",
                "keras_structinit/cli/demo.py",  # the demo itself, which other entries leave out
                "keras_structinit/cli",
                "keras_structinit/engine/freezing.py",
                "keras_structinit/baseline",
                "keras_structinit/initializers",
            ),
        ),
        # What a user with CIFAR-10 at hand (or internet, through the Keras cache) sees: the same
        # command with --data the shared training split; the README quotes it first (issue 76).
        Benchmark(
            name="demo_cifar10",
            script="demo.py",
            args=("--name", "demo_cifar10", "--shared-cifar10"),
            title="`structinit demo --data <CIFAR-10 training split>`: 3 paired seeds per init, "
            "frozen-filter ConvMixer, default init vs ConvCovariance",
            paper="Sec. 4.1, Fig. 3: frozen-filter ConvMixers on CIFAR-10 gain 0.6-5.0 points at 20 epochs "
            "with ConvCovariance",
            minutes=12.0,
            estimated=True,
            depends=(
                "keras_structinit/covariance",
                "keras_structinit/cli/demo.py",
                "keras_structinit/cli",
                "keras_structinit/engine/freezing.py",
                "keras_structinit/baseline",
                "keras_structinit/initializers",
                "keras_structinit/datasets",
            ),
        ),
    ),
}


if __name__ == "__main__":
    sys.exit(main())
