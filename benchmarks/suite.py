"""The replication suites: which benchmark scripts run, at which scale, against which claim.

A :class:`~benchmarks.bench_utils.Benchmark` names a script of this folder, the
arguments that set its scale in a suite, and what the paper reports. Each script
declares its own entries (``SUITE = {"cpu": (...), "gpu": (...)}``); this module
collects them, scripts in name order, so a new benchmark is one file. :mod:`benchmarks.run` runs the
entries of ``SUITES[suite]``; each writes ``results/<suite>/<name>.json``
(``name`` is the stem the script writes under ``--out``), from which
:mod:`benchmarks.report` builds ``REPORT.md``.

Scale of the CPU suite: every entry is sized to run in at most ~30 minutes on
2 CPU cores (two processes of one core each where the runs can be split).
Training entries use the shared CIFAR-10 training split with their own
stratified held-out 10% (seed 0) and 3 seeds. Where a paper's batch is too
large for a few hundred CPU steps, the entry takes a smaller batch and says so.

The selection entry cannot be split across processes (every student reads the
teacher it trains first), so it runs as one process with every core.

The GPU suite takes days; a GPU is lent here for about 15 minutes at a time, start-up and
idle time included, at most 10 minutes a command. The ``gpu-quick`` tier holds what fits
:data:`GPU_QUICK_MINUTES` on one H100, run by ``scripts/gpu_quick.sh`` on an image without
Keras or TensorFlow (CONTRIBUTING.md, "Benchmarks on a GPU"); ``--smoke`` runs each entry at
tiny sizes on a CPU first. Its entries' ``minutes`` (``estimated=True`` where not yet measured;
``--list`` marks them) and how each was found are beside each entry. At present:

* ``covariance_convergence`` (covariance_accuracy.py): the covariance pair, default vs
  ``conv-cov``, frozen 9x9 filters, at the paper's scale but 5 epochs, on JAX: ~4.6 min
  (estimate: the step's FLOPs from XLA's cost analysis on this CPU, at the efficiency the H100
  reached on a smaller ConvMixer; 20 epochs would take ~14.6 min, more than a loan);
* ``input_share`` (input_streams.py): the native input stream's share of that model's step, ~1 min
  (estimate);
* room for ~3 min: a plain-PyTorch reference ConvMixer timed beside the package's model (~1-2 min)
  and a frozen-vs-thawed step table (~1 min), entries being added in other scripts.

The speed entries that ran on 2026-11-26 (``depthwise_speed``, ``lc_speed``,
``selection_speed``: 5.7 min, ``results/gpu/``) stay in the GPU suite only. The tier writes to
``results/gpu/`` (:data:`FOLDERS`): its training entry is a part of the GPU suite's (same
configuration, fewer runs), so a later full GPU run resumes from it.
"""

from __future__ import annotations

import importlib

from benchmarks import BENCH_DIR
from benchmarks.bench_utils import TRAIN_SEEDS, Benchmark

__all__ = [
    "CPU",
    "DEFAULT_JOBS",
    "FOLDERS",
    "GPU",
    "GPU_QUICK",
    "GPU_QUICK_FIRST",
    "GPU_QUICK_MINUTES",
    "SUITES",
    "TRAIN_SEEDS",
    "Benchmark",
    "folder_benchmarks",
]

#: The results folder (under ``results/``) of each suite.
FOLDERS = {"cpu": "cpu", "gpu": "gpu", "gpu-quick": "gpu"}
#: Minutes of one H100 the ``gpu-quick`` entries may take together (their ``minutes`` add up to at
#: most this): a 15-minute loan less the machine's start, the transfers and the wheels' install
#: (~2 min), a margin for a second try's start, and a 10-minute limit per command.
GPU_QUICK_MINUTES = 9
#: The ``gpu-quick`` entries ``scripts/gpu_quick.sh`` runs first, in this order (the rest follow in
#: the suite's order): the headline, before anything can run out of time.
GPU_QUICK_FIRST = ("covariance_convergence",)


def _collect():
    """``{suite: (Benchmark, ...)}`` from every script of this folder that declares ``SUITE``."""
    suites = {suite: [] for suite in FOLDERS}
    for path in sorted(BENCH_DIR.glob("*.py")):
        if "\nSUITE = " not in path.read_text():
            continue
        for suite, entries in importlib.import_module(f"benchmarks.{path.stem}").SUITE.items():
            suites[suite] += entries
    return {suite: tuple(entries) for suite, entries in suites.items()}


def folder_benchmarks(suites):
    """``{folder: (Benchmark, ...)}``: the entries of ``suites`` (``{suite: entries}``) whose results
    each folder holds, one per name (the first suite's entry of a name)."""
    out = {}
    for suite, benches in suites.items():
        folder = out.setdefault(FOLDERS.get(suite, suite), {})
        for bench in benches:
            folder.setdefault(bench.name, bench)
    return {folder: tuple(benches.values()) for folder, benches in out.items()}


SUITES = _collect()
CPU, GPU, GPU_QUICK = SUITES["cpu"], SUITES["gpu"], SUITES["gpu-quick"]
# Processes per splittable benchmark unless --jobs says otherwise (None: one per CPU core).
DEFAULT_JOBS = {"cpu": None, "gpu": 1, "gpu-quick": 1}
