"""``benchmarks/inspect_speed.py``'s CPU suite entry: every backend, against issue 36's bar."""

import pytest

from benchmarks import inspect_speed
from benchmarks.suite import CPU

from conftest import once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entry itself")


def _result(first, cli):
    return {
        "seconds": [first, 2.0, 2.2],
        "cli_seconds": cli,
        "machine": {"cpu": "AMD EPYC", "cores": 2},
        "date": "2026-11-29T11:00:00+00:00",
    }


def test_the_entry_runs_every_backend():
    (entry,) = [b for b in CPU if b.name == inspect_speed.NAME]
    assert entry.run_key is None and inspect_speed.parse_args([*entry.args, "--out", "x"]).all_backends


@pytest.mark.parametrize("cli, within", [(19.9, "under"), (31.0, "over")])
def test_the_headline_holds_the_slowest_backend_against_the_bar(cli, within):
    data = {"results": {"jax": _result(5.1, cli), "torch": _result(5.9, 15.5)}}
    line, verdict = inspect_speed.headline(inspect_speed.NAME, data)
    assert verdict is None  # the bar is the package's, not a paper's
    assert "inspect(model) 5.9 s at its first call" in line and f"{cli:.1f} s in a fresh process" in line
    assert f"({within} the {inspect_speed.BAR_SECONDS} s bar)" in line
    assert "| jax | 5.1 | 2.1 ± 0.1 |" in inspect_speed.render_markdown(data)
