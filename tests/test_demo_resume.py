"""A stopped demo keeps what finished and resumes to the uninterrupted numbers (issue 76, point 1)."""

import json

import keras
import pytest
from test_cli import write_tiny_cifar

from keras_structinit import cli
from keras_structinit.cli import demo
from keras_structinit.recipes.progress import Terminated

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        keras.backend.backend() == "tensorflow",
        reason="backend-independent code: runs on JAX and torch only, to keep CI short",
    ),
]

ARGS = ["--epochs", "1", "--seeds", "1", "--train-size", "32"]


def _demo(data, out, *extra):
    return cli.main(["demo", "--data", data, "--out", str(out), *ARGS, *extra])


def _stop_at(monkeypatch, call, error):
    """``train_one`` raises ``error`` when called the ``call``-th time (a signal during that run)."""
    real, calls = demo.train_one, []

    def train_one(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(demo, "train_one", train_one)


def _read(out):
    return json.loads((out / "results.json").read_text())


def _without_time(rows):
    return [{k: v for k, v in row.items() if k != "train_seconds"} for row in rows]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_cifar(tmp_path_factory.mktemp("data") / "train.npz", 64, 0)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data):
    out = tmp_path_factory.mktemp("whole") / "demo"
    assert _demo(data, out) == 0
    return _read(out)


def test_a_stopped_demo_records_its_finished_runs_and_resumes_to_the_same_numbers(
    tmp_path, monkeypatch, capsys, data, uninterrupted
):
    out = tmp_path / "demo"
    _stop_at(monkeypatch, 2, Terminated)  # SIGTERM once the first run (default init) finished
    assert _demo(data, out) == 143
    said = capsys.readouterr().err
    assert "Terminated (SIGTERM): 1 of 2 runs finished" in said and "--resume" in said
    record = _read(out)
    assert record["status"] == "interrupted"
    assert [(r["init"], r["seed"], r["history"]) for r in record["runs"]] == [
        (r["init"], r["seed"], r["history"]) for r in uninterrupted["runs"][:1]
    ]  # its history, as the whole demo's first run
    assert (out / "results.md").read_text().startswith("Interrupted: 1 of 2 runs finished")

    monkeypatch.undo()
    trained, real = [], demo.train_one
    monkeypatch.setattr(demo, "train_one", lambda *a, **k: trained.append(a[0]) or real(*a, **k))
    assert _demo(data, out, "--resume") == 0
    assert len(trained) == 1  # only the missing run
    resumed = _read(out)
    assert resumed["status"] == "finished"
    assert _without_time(resumed["results"]) == _without_time(uninterrupted["results"])
    for key in ("paired_gap", "histories", "verdict"):
        assert resumed[key] == uninterrupted[key], key
    assert [r["history"] for r in resumed["runs"]] == [r["history"] for r in uninterrupted["runs"]]
    assert all((out / p.replace("\\", "/").split("/")[-1]).exists() for p in resumed["plots"])


@pytest.mark.parametrize("error,status", [(KeyboardInterrupt, 130), (Terminated, 143)], ids=["int", "term"])
def test_a_demo_stopped_before_a_run_finished_leaves_out_as_it_was(
    tmp_path, monkeypatch, capsys, data, error, status
):
    out = tmp_path / "demo"
    _stop_at(monkeypatch, 1, error)
    assert _demo(data, out) == status
    assert "before a run finished: nothing recorded" in capsys.readouterr().err
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []


def test_resume_is_refused_without_an_interrupted_demo_or_with_other_settings(
    tmp_path, monkeypatch, capsys, data
):
    out = tmp_path / "demo"
    assert _demo(data, out, "--resume") == 2
    assert "holds no interrupted demo" in capsys.readouterr().err
    _stop_at(monkeypatch, 2, KeyboardInterrupt)
    assert _demo(data, out) == 130
    monkeypatch.undo()
    before = (out / "results.json").read_bytes()
    argv = ["demo", "--data", data, "--out", str(out), "--epochs", "2", "--seeds", "1", "--train-size", "32"]
    assert cli.main([*argv, "--resume"]) == 2
    assert "other settings (epochs)" in capsys.readouterr().err
    assert (out / "results.json").read_bytes() == before
