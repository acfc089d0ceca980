#!/usr/bin/env python
"""Time to a one-line error: a mistake in a path or an init spec against an argparse error (issue 76).

Each case runs ``structinit`` in a fresh process, ``--repeats`` times, and records its wall time
until the exit status 2: an argparse error (``--epochs 0``, the reference), a missing ``--data``
folder, a missing ``--model`` file, an ``--init`` typo and a ``MODEL`` of ``init`` that does not
exist. These are checked before Keras and the backend are imported (``keras_structinit.cli.prechecks``);
the bar (issue 76, point 2): each within 2x of the argparse error's median.

Usage::

    python -m benchmarks.time_to_error --all-backends --out benchmarks/results/cpu
"""

from __future__ import annotations

import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_utils import LOCAL_RESULTS, Benchmark, backend_parser, run_per_backend

NAME = "time_to_error"
#: Issue 76's bar: each refusal within this factor of the argparse error's median time.
BAR_RATIO = 2.0
#: ``{case: structinit arguments}``; the first is the reference.
CASES = {
    "argparse error (--epochs 0)": ["train", "--model", "convmixer-8/2", "--epochs", "0"],
    "missing --data": ["train", "--model", "convmixer-8/2", "--data", "{tmp}/no_such_folder"],
    "missing --model file": ["train", "--model", "{tmp}/missing.keras"],
    "--init typo": ["train", "--model", "convmixer-8/2", "--init", "conv-covx"],
    "init: missing MODEL": ["init", "{tmp}/missing.keras", "--init", "default", "--out", "{tmp}/o.keras"],
}


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    return parser.parse_args(argv)


def time_case(arguments, repeats):
    """Wall seconds of each of ``repeats`` fresh ``python -m keras_structinit.cli ARGUMENTS`` (exit 2
    and one line on stderr required)."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "keras_structinit.cli", *arguments], capture_output=True, text=True
        )
        seconds.append(time.perf_counter() - start)
        lines = done.stderr.strip().splitlines()
        if done.returncode != 2 or len(lines) != 1:
            raise RuntimeError(f"{arguments}: exit {done.returncode}, stderr {done.stderr!r}")
    return seconds


def run_backend(args):
    """``(backend, entry)``: the median time of each case and its ratio to the argparse error."""
    from keras_structinit.utils.reporting import machine_info, versions

    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    cases = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, arguments in CASES.items():
            filled = [a.format(tmp=tmp) for a in arguments]
            seconds = time_case(filled, args.repeats)
            cases[case] = {"seconds": seconds, "median": statistics.median(seconds)}
            print(f"[{backend}] {case}: {cases[case]['median']:.2f} s", flush=True)
    reference = next(iter(cases.values()))["median"]
    for record in cases.values():
        record["ratio"] = record["median"] / reference
    return backend, {
        "cases": cases,
        "repeats": args.repeats,
        "machine": machine_info(),
        "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def render_markdown(data):
    lines = [
        "# Time to a one-line error",
        "",
        f"Median wall time of `structinit` in a fresh process until it exits 2, against an argparse "
        f"error; the bar (issue 76, point 2): within {BAR_RATIO:g}x of it.",
        "",
        "| Backend | Case | Median (s) | x argparse | Machine | Date (UTC) |",
        "|---|---|---:|---:|---|---|",
    ]
    for backend, r in sorted(data["results"].items()):
        for case, c in r["cases"].items():
            lines.append(
                f"| {backend} | {case} | {c['median']:.2f} | {c['ratio']:.2f} | "
                f"{r['machine']['cpu']}, {r['machine']['cores']} cores | {r['date']} |"
            )
    return "\n".join(lines) + "\n"


def headline(name, data):
    """The suite report's line: the slowest case's ratio against the bar; no verdict (the bar is the
    package's, not a paper's)."""
    worst = max(c["ratio"] for r in data["results"].values() for c in r["cases"].values())
    within = "within" if worst <= BAR_RATIO else "over"
    return f"slowest refusal {worst:.2f}x an argparse error ({within} the {BAR_RATIO:g}x bar)", None


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


SUITE = {
    "cpu": (
        Benchmark(
            name=NAME,
            script="time_to_error.py",
            args=("--all-backends",),
            title="Time to a one-line error (a path, a model file, an init spec) against an argparse error",
            paper=f"no claim in the papers; the bar of issue 76: within {BAR_RATIO:g}x an argparse error",
            minutes=1.0,
            estimated=True,
        ),
    ),
}


if __name__ == "__main__":
    main()
