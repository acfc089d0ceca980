"""The package's benchmarks: scripts that measure it, the replication suites and their report.

Each script runs from the repository root as a module (``python -m benchmarks.<name>
--help``); ``python -m benchmarks.run --suite cpu`` runs a suite of them
(:mod:`benchmarks.suite`) and rebuilds ``benchmarks/REPORT.md`` (:mod:`benchmarks.report`).
Shared helpers live in :mod:`benchmarks.bench_utils`.
"""

from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
