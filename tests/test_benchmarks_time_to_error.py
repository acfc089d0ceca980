"""``benchmarks/time_to_error.py``: its cases are refused in one line before Keras is imported."""

import subprocess
import sys

import pytest

from benchmarks import time_to_error
from benchmarks.suite import CPU

from conftest import once_per_suite

pytestmark = once_per_suite("the checks run before any backend is imported")


def test_the_entry_runs_every_backend():
    (entry,) = [b for b in CPU if b.name == time_to_error.NAME]
    assert entry.run_key is None and time_to_error.parse_args([*entry.args, "--out", "x"]).all_backends


@pytest.mark.parametrize("case", [c for c in time_to_error.CASES if "argparse" not in c])
def test_each_case_is_refused_before_keras_is_imported(case, tmp_path):
    """The refusal comes from ``keras_structinit.cli.prechecks``: the process never imports Keras."""
    arguments = [a.format(tmp=tmp_path) for a in time_to_error.CASES[case]]
    code = (
        "import sys; from keras_structinit import cli\n"
        f"status = cli.main({arguments!r})\n"
        "assert status == 2, status\n"
        "assert 'keras' not in sys.modules, 'Keras was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_headline_holds_the_slowest_case_against_the_bar():
    cases = {
        "a": {"median": 1.0, "ratio": 1.0, "seconds": [1.0]},
        "b": {"median": 2.5, "ratio": 2.5, "seconds": []},
    }
    data = {"results": {"jax": {"cases": cases, "machine": {"cpu": "x", "cores": 2}, "date": "d"}}}
    line, verdict = time_to_error.headline(time_to_error.NAME, data)
    assert verdict is None and "2.50x" in line and "over the 2x bar" in line
    assert "| jax | b | 2.50 | 2.50 |" in time_to_error.render_markdown(data)
