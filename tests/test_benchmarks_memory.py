"""benchmarks/bench_utils.py's memory beside time (issue 62): ``StepMemory`` and its table cells."""

import numpy as np

from benchmarks import bench_utils, lc_speed

from conftest import once_per_suite

pytestmark = once_per_suite("the resident set of this process is measured without a backend")

MB = 1e6


def test_a_200_mb_array_inside_the_block_shows_as_growth():
    with bench_utils.StepMemory("torch") as idle:
        pass
    with bench_utils.StepMemory("torch") as memory:
        block = np.ones(200_000_000 // 8)  # written: every page resident
        del block
    record = memory.record
    assert record["kind"] == "cpu_rss" and record["device_peak_bytes"] is None
    assert record["rss_growth_bytes"] - idle.record["rss_growth_bytes"] >= 150 * MB
    assert record["rss_peak_bytes"] >= record["rss_before_bytes"] + 150 * MB
    # The block freed its array: the resident set is back below the peak it reached.
    assert bench_utils.rss_bytes() < record["rss_before_bytes"] + 150 * MB
    # A later block without the array grows little, and the process peak is kept.
    with bench_utils.StepMemory("torch") as later:
        pass
    assert later.record["rss_growth_bytes"] < 100 * MB
    assert later.record["rss_peak_bytes"] >= record["rss_peak_bytes"]
    assert bench_utils.peak_rss_bytes() >= record["rss_peak_bytes"]


def test_the_cells_of_cpu_gpu_and_older_rows():
    cpu = {"kind": "cpu_rss", "rss_peak_bytes": 2.5e9, "rss_growth_bytes": 0.25e9}
    assert bench_utils.memory_cell(cpu) == "2.50 (+0.25)"
    assert bench_utils.memory_cell({"kind": "gpu", "device_peak_bytes": 3e9}) == "3.00 GPU"
    assert bench_utils.memory_cell(None) == "" and bench_utils.memory_cell({}) == ""
    header, cell, _, align = bench_utils.memory_column(lambda row, mode: row[mode], ("thawed", "frozen"))
    assert header == f"{bench_utils.MEMORY_HEADER}: thawed / frozen" and align == "right"
    assert cell({"thawed": {"memory": cpu}, "frozen": {"memory": cpu}}) == "2.50 (+0.25) / 2.50 (+0.25)"
    assert cell({"thawed": {}, "frozen": {}}) == ""  # a row recorded before issue 62


def test_lc_speed_uses_the_shared_helpers_and_keeps_its_cell():
    assert lc_speed.device_memory is bench_utils.device_memory
    assert (
        lc_speed.peak_rss_bytes is bench_utils.peak_rss_bytes and lc_speed.rss_bytes is bench_utils.rss_bytes
    )
    assert bench_utils.device_memory("torch") is None or bench_utils.device_memory("torch")[1]() >= 0
    memory = {"kind": "cpu_rss", "forward_backward_peak_rss_mib": 812.4, "forward_backward_growth_mib": 301.6}
    assert lc_speed._memory_cell(memory) == "812 (+302)"
