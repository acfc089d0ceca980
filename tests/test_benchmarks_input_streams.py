"""``benchmarks/input_streams.py``'s CPU suite entries (issue 59): the timings once per backend on one
core, the training comparison, and what the report says of each (no paper claim: no verdict)."""

import os

import pytest

from benchmarks import input_streams as streams
from benchmarks.suite import CPU

from conftest import once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entries itself")


def _row(stage, native, tf):
    return {"stage": stage, "native": [native, 1.0], "tf": None if tf is None else [tf, 1.0]}


def _timing_record(backend, full_native, full_tf):
    return {
        "backend": backend,
        "facts": "Machine: test.",
        "batches": 6,
        "repeats": 3,
        "cpu_affinity": [0],
        "data": "CIFAR-10 training images (10240, a seeded random subset)",
        "data_file": {"name": "cifar10-train-jpeg.zip", "sha256": "c4e456da97c6" + "0" * 52},
        "rows": [_row(name, 1000.0, 500.0) for name, _ in streams.STAGES[:3]]
        + [_row(streams.STAGES[3][0], full_native, full_tf)],
    }


def _training_record(native, tf):
    runs = []
    for seed, (a, b) in enumerate(zip(native, tf, strict=True)):
        for pipeline, accuracy in (("native", a), ("tf", b)):
            runs.append(
                {
                    "seed": seed,
                    "pipeline": pipeline,
                    "seconds": 100.0,
                    "val_accuracy": [0.1, accuracy],
                    "train_size": 5000,
                    "val_size": 555,
                }
            )
    return {
        "backend": "jax",
        "facts": "Machine: test.",
        "model": "convmixer-64/4",
        "epochs": 8,
        "seeds": list(range(len(native))),
        "data_file": {"name": "cifar10-train-jpeg.zip", "sha256": "c4e456da97c6" + "0" * 52},
        "runs": runs,
    }


def test_the_cpu_entries_time_every_backend_and_train_with_each_stream():
    entries = {b.name: b for b in CPU if b.script == "input_streams.py"}
    assert set(entries) == {streams.NAME, streams.TRAINING}
    assert entries[streams.NAME].run_key is None  # a timing entry runs alone
    timing = streams.parse_args([*entries[streams.NAME].args, "--out", "x"])
    assert timing.all_backends and not timing.training
    training = streams.parse_args([*entries[streams.TRAINING].args, "--out", "x"])
    assert training.training and training.backend == "jax" and training.epochs == 8


def test_all_backends_does_not_combine_with_training(capsys):
    with pytest.raises(SystemExit) as raised:
        streams.parse_args(["--all-backends", "--training", "--out", "x"])
    assert raised.value.code == 2
    assert "--all-backends" in capsys.readouterr().err


def test_each_backend_runs_in_its_own_process_on_one_core(monkeypatch):
    calls = []
    monkeypatch.setattr(streams, "installed_backends", lambda: ["jax", "torch"])
    monkeypatch.setattr(streams.subprocess, "run", lambda command, **kw: calls.append((command, kw)))
    streams.main(["--all-backends", "--batches", "2", "--out", "somewhere"])
    assert [c[c.index("--backend") + 1] for c, _ in calls] == ["jax", "torch"]
    for command, kw in calls:
        assert "--all-backends" not in command and command[-4:] == ["--batches", "2", "--out", "somewhere"]
        assert kw["env"]["OMP_NUM_THREADS"] == "1" and kw["check"]
        if hasattr(os, "sched_getaffinity"):
            assert kw["preexec_fn"] is not None  # pins the child to one core


def test_the_timing_headline_gives_each_backends_full_recipe_ratio():
    data = {"records": [_timing_record("jax", 4542.0, 1100.0), _timing_record("torch", 1903.0, 1102.0)]}
    line, verdict = streams.headline(streams.NAME, data)
    assert verdict is None
    assert "jax 4.13x" in line and "torch 1.73x" in line
    text = streams.render_markdown(data)
    assert "of cifar10-train-jpeg.zip (sha256 c4e456da97c6)" in text
    assert "| 4542 ± 1 | 1100 ± 1 | 4.13 |" in text


def test_the_training_file_renders_as_training_and_its_headline_gives_the_gaps():
    data = {"records": [_training_record([0.4468, 0.4450, 0.4613], [0.4468, 0.4440, 0.4613])]}
    line, verdict = streams.headline(streams.TRAINING, data)
    assert verdict is None
    assert line == "jax: native minus tf.data final held-out accuracy per seed +0.0000, +0.0010, +0.0000"
    text = streams.render_markdown(data)
    assert text.startswith("# The two input streams in training")
    assert "5000 CIFAR-10 training images of cifar10-train-jpeg.zip (sha256 c4e456da97c6)" in text
