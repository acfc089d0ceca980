"""Helpers shared by the benchmark scripts: statistics, output, the per-backend runner.

Machine facts and versions come from :mod:`keras_structinit.reporting`
(``machine_info``, ``versions``); import it only after ``KERAS_BACKEND`` is set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BACKENDS = ("tensorflow", "jax", "torch")
WARMUP = 2  # untimed calls before the timed ones
MIN_REPEATS = 3  # timed calls a time budget may not cut below


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


def time_calls(fn, repeats, budget=None, sync=lambda out: out, warmup=WARMUP):
    """``warmup`` untimed calls of ``sync(fn())``, then up to ``repeats`` timed.

    With a ``budget``, the number of timed calls is cut so they fit in ``budget``
    seconds (as estimated from the last warm-up), but not below
    ``min(MIN_REPEATS, repeats)``.
    Returns the summary (with ``repeats`` and the warm-up times ``warmup_s``)
    and the last output.
    """
    warmup_times, out = [], None
    for _ in range(warmup):
        start = time.perf_counter()
        out = sync(fn())
        warmup_times.append(time.perf_counter() - start)
    n = repeats
    if budget is not None and warmup_times:
        n = max(min(MIN_REPEATS, repeats), min(repeats, int(budget // max(warmup_times[-1], 1e-9))))
    times = []
    for _ in range(n):
        start = time.perf_counter()
        out = sync(fn())
        times.append(time.perf_counter() - start)
    return {**summarize(times), "repeats": n, "warmup_s": [round(t, 6) for t in warmup_times]}, out


def mean_std(values, spec=".2f"):
    """``mean ± std`` (ddof 1) over seeds; a single value is shown alone, not as ``± 0``."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return f"{values[0]:{spec}}"
    return f"{values.mean():{spec}} ± {values.std(ddof=1):{spec}}"


def timing_cell(stats, cap, spec, scale=1.0):
    """``stats``' median (times ``scale``) formatted with ``spec``, marked ``*`` when it
    has fewer than ``cap`` timed calls (cut by the time budget)."""
    capped = "*" if stats["repeats"] < cap else ""
    return f"{stats['median_s'] * scale:{spec}}{capped}"


def loadavg_cell(loadavg):
    """``"start / end"`` of a recorded 1-minute load average."""
    return f"{loadavg['start']:.2f} / {loadavg['end']:.2f}"


def runs_table(rows, part_header, columns):
    """The Markdown table of a benchmark's runs.

    ``rows``: tuples ``(backend, part, software, entry)``, where ``software``
    holds ``keras`` and ``backend_version`` and ``entry`` has ``date`` and
    ``loadavg_1min``. ``columns`` (``format_table`` columns of such a tuple)
    go between the versions and the load average.
    """
    from keras_structinit.reporting import format_table  # no keras import

    return format_table(rows, [
        ("Backend", lambda r: r[0]),
        (part_header, lambda r: r[1]),
        ("Date (UTC)", lambda r: r[3]["date"]),
        ("Keras", lambda r: r[2]["keras"]),
        ("Backend version", lambda r: r[2]["backend_version"]),
        *columns,
        ("1-min load avg (start / end)", lambda r: loadavg_cell(r[3]["loadavg_1min"])),
    ])


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


def resumable_results(out_dir, name, config, render_markdown):
    """``(data, save)`` of a resumable benchmark's ``<out_dir>/<name>.json``.

    ``data`` holds the earlier ``runs`` (none at first), with ``config``,
    backend, machine and versions refreshed; a file holding another
    ``config`` exits with a message. ``save()`` stamps the time and rewrites
    the JSON and ``<name>.md`` (``render_markdown(data)``). Call after
    ``KERAS_BACKEND`` is set.
    """
    import datetime

    import keras

    from keras_structinit.io_utils import write_text
    from keras_structinit.reporting import machine_info, versions

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    if data.get("config", config) != config:
        sys.exit(f"{name}: error: {json_path} holds runs of another configuration; move it away")
    data.update(benchmark=name, config=config, backend=keras.backend.backend(), machine=machine_info(),
                versions=versions())
    data.setdefault("runs", [])

    def save():
        data["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        write_text(json_path, json.dumps(data, indent=2) + "\n")
        write_text(out_dir / f"{name}.md", render_markdown(data))

    return data, save
