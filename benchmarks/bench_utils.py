"""Helpers shared by the benchmark scripts: statistics, output, the per-backend runner.

Machine facts and versions come from :mod:`keras_structinit.reporting`
(``machine_info``, ``versions``); import it only after ``KERAS_BACKEND`` is set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

BACKENDS = ("tensorflow", "jax", "torch")


# ----------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------
def summarize(times):
    times = np.asarray(times)
    return {
        "times_s": [round(float(t), 6) for t in times],
        "median_s": float(np.median(times)),
        "mean_s": float(times.mean()),
        "std_s": float(times.std(ddof=1)) if times.size > 1 else 0.0,
    }


def timing_cell(stats, cap, spec, scale=1.0):
    """``stats``' median (times ``scale``) formatted with ``spec``, marked ``*`` when it
    has fewer than ``cap`` timed calls (cut by the time budget)."""
    capped = "*" if stats["repeats"] < cap else ""
    return f"{stats['median_s'] * scale:{spec}}{capped}"


def loadavg_cell(loadavg):
    """``"start / end"`` of a recorded 1-minute load average."""
    return f"{loadavg['start']:.2f} / {loadavg['end']:.2f}"


def backend_parser(description):
    """An ``ArgumentParser`` with the ``--backend`` / ``--all-backends`` choice."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--backend", choices=BACKENDS,
                       help="Keras backend (default: current KERAS_BACKEND)")
    which.add_argument("--all-backends", action="store_true",
                       help="run every backend, one subprocess each")
    return parser


def save_results(out_dir, name, backend, entry, render_markdown):
    """Merges ``entry`` into ``<out_dir>/<name>.json`` under ``backend`` (parts of
    an earlier entry not re-run are kept) and re-renders ``<name>.md``."""
    from keras_structinit.io_utils import write_text  # after KERAS_BACKEND is set

    out_dir = Path(out_dir)
    json_path = out_dir / f"{name}.json"
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    data["benchmark"] = name
    old = data.setdefault("results", {}).get(backend, {})
    data["results"][backend] = {**old, **entry}
    write_text(json_path, json.dumps(data, indent=2) + "\n")
    write_text(out_dir / f"{name}.md", render_markdown(data))
    print(f"[{backend}] wrote {json_path} and {name}.md", flush=True)


def run_per_backend(script, name, parse_args, run_backend, render_markdown, argv=None):
    """A benchmark's ``main``: with ``--all-backends`` re-runs ``script`` once per
    backend in a subprocess; otherwise sets ``KERAS_BACKEND`` (before Keras is
    imported), runs ``run_backend(args)`` and saves its entry."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.all_backends:
        rest = [a for a in argv if a != "--all-backends"]
        for backend in BACKENDS:
            command = [sys.executable, str(Path(script).resolve()), "--backend", backend, *rest]
            subprocess.run(command, check=True)
        return
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    backend, entry = run_backend(args)
    save_results(args.out, name, backend, entry, render_markdown)
