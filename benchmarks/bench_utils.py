"""Helpers shared by the benchmark scripts: machine facts, statistics, output."""

from __future__ import annotations

import importlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

BACKENDS = ("tensorflow", "jax", "torch")


def _proc_field(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info():
    mem_kb = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor(),
        "cores": os.cpu_count(),
        "ram_gib": round(int(mem_kb.split()[0]) / 2**20, 1) if mem_kb else None,
        "os": platform.platform(),
        "thread_env": {
            k: os.environ[k]
            for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            if k in os.environ
        },
    }


def software_info(backend):
    import keras

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "keras": keras.__version__,
        "backend": backend,
        "backend_version": importlib.import_module(backend).__version__,
    }


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
            subprocess.run([sys.executable, str(Path(script).resolve()), "--backend", backend, *rest], check=True)
        return
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    backend, entry = run_backend(args)
    save_results(args.out, name, backend, entry, render_markdown)
