"""``benchmarks/imagenet_memory.py``'s CPU suite entry: peak memory of ``fit_imagenet`` per backend."""

import pytest

from benchmarks import imagenet_memory
from benchmarks.suite import CPU

from conftest import once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entry itself")

DATA = {"name": "cifar10-train-jpeg.zip", "sha256": "c4e456da97c6" + "0" * 52}


def _entry(peak=None, killed=None):
    entry = {
        "date": "2026-11-29 11:00",
        "data": DATA,
        "steps": 2,
        "watchdog_peak_gb": peak or killed,
        "killed_above_gb": killed,
        "wall_seconds": 150.0,
        "rand_augment": "timm:m7-n2-mstd0.5-inc1",
        "pipeline": "native",
    }
    return entry | ({"ru_maxrss_gb": peak, "keras": "3.15.1"} if peak else {})


def test_the_entry_runs_every_backend_for_two_steps():
    (entry,) = [b for b in CPU if b.name == imagenet_memory.NAME]
    args = imagenet_memory.parse_args([*entry.args, "--out", "x"])
    assert args.all_backends and args.steps == 2 and args.limit_gb == 12 and entry.run_key is None
    assert imagenet_memory.BOUND_GB == 8.0 < args.limit_gb  # the watchdog stops a run past the bound


def test_missing_data_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as raised:
        imagenet_memory.parse_args(["--data", str(tmp_path / "none.zip"), "--out", str(tmp_path)])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "--data: 'none.zip' not found" in err and str(tmp_path) not in err


def test_the_headline_gives_each_backends_peak_or_its_kill():
    data = {"results": {"jax": _entry(peak=4.02), "torch": _entry(killed=8.0) | {"pipeline": "tf"}}}
    line, verdict = imagenet_memory.headline(imagenet_memory.NAME, data)
    assert verdict is None
    assert line.endswith("jax 4.02 GB (native), torch killed above 8.0 GB after 150 s (tf.data)")
    text = imagenet_memory.render_markdown(data)
    assert "Data: cifar10-train-jpeg.zip (sha256 c4e456da97c6)." in text
    assert "| jax | 2026-11-29 11:00 | 2 | timm:m7-n2-mstd0.5-inc1 | native | 4.02 | 4.02 |" in text
    assert "Bound: 8 GB" in text and "| 150.0 | 3.15.1 | yes | - |" in text  # under the bound; no load kept
    assert "| tf.data | killed | 8.0 | 150.0 | - | no | 3.1 / 5.6 |" in imagenet_memory.render(
        {"results": {"torch": _entry(killed=8.0) | {"pipeline": "tf", "load_average": [3.1, 5.6]}}}
    )
    older = {"date": "2026-11-25 18:11", "steps": 2, "ru_maxrss_gb": 4.02, "watchdog_peak_gb": 4.02}
    text = imagenet_memory.render({"results": {"jax": older | {"wall_seconds": 150.1}}})
    assert "| jax | 2026-11-25 18:11 | 2 | (2, 0.7) | tf.data | 4.02 |" in text  # before the native stream
