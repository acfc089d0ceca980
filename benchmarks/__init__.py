"""The package's benchmarks: scripts that measure it, the replication suites and their report.

Each ``benchmarks/<name>.py`` runs on its own (``python benchmarks/<name>.py
--help``); ``python -m benchmarks.run --suite cpu`` runs a suite of them
(:mod:`benchmarks.suite`) and rebuilds ``benchmarks/REPORT.md``
(:mod:`benchmarks.report`). The scripts import their helpers as the top-level
module ``bench_utils`` (a script's folder is on ``sys.path``); importing this
package puts the folder there too, so the scripts also import as modules.
"""

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"

if str(BENCH_DIR) not in sys.path:
    sys.path.append(str(BENCH_DIR))
