"""Nothing lost when two runs meet (issue 58, point 1): the lock on an output is taken before
anything in it is removed or written, and a refused run names the holder and changes nothing."""

import json
import os
import subprocess
import sys
import textwrap
import time

import keras
import numpy as np
import pytest
from test_cli import write_tiny_cifar

from keras_structinit import cli
from keras_structinit.utils.io_utils import OutputInUse, OutputLock, check_unlocked

TRAIN = [
    "train",
    "--model",
    "simple-cnn",
    "--batch-size",
    "8",
    "--seed",
    "0",
    "--val-split",
    "0.25",
    "--rand-augment",
    "none",
]


def _tree(root):
    """Every file under ``root`` and its bytes (the lock file included)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _hold(tmp_path, path, folder):
    """A child process that holds ``OutputLock(path)`` until its stdin closes; returns it once held."""
    code = textwrap.dedent(f"""
        import sys
        from keras_structinit.utils.io_utils import OutputLock
        with OutputLock({str(path)!r}, "out", folder={folder}):
            print("held", flush=True)
            sys.stdin.read()
        """)
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "held"
    return child


def _release(child):
    child.stdin.close()
    assert child.wait(timeout=60) == 0


@pytest.mark.parametrize("folder", [True, False])
def test_a_held_output_is_refused_with_the_holders_pid_and_freed_when_it_ends(tmp_path, folder):
    path = tmp_path / ("out" if folder else "model.keras")
    child = _hold(tmp_path, path, folder)
    lock = OutputLock(path, "--out", folder=folder)
    try:
        before = _tree(tmp_path)
        for attempt in (
            lock.check,
            lock.acquire,
            lambda: check_unlocked(**{"folders" if folder else "files": [(path, "--out")]}),
        ):
            with pytest.raises(OutputInUse) as info:
                attempt()
            message = str(info.value)
            assert f"--out {str(path)!r} is in use by another process (process {child.pid})" in message
            assert "overwrite" not in message
        after = _tree(tmp_path)
    finally:
        _release(child)
    assert after == before  # the refused process changed nothing
    assert not os.path.exists(lock.lock_path)  # the holder removed its lock file
    with lock:  # free again
        assert open(lock.lock_path).read() == f"{os.getpid()}\n"
    assert not os.path.exists(lock.lock_path)
    if not folder:
        assert os.listdir(tmp_path) == []


def test_an_acquire_never_shares_the_lock_with_a_lock_file_removed_meanwhile(tmp_path, monkeypatch):
    """The holder removes its lock file on release: a process that opened the old file before then
    locks the new one, not the removed one."""
    import fcntl

    first = OutputLock(tmp_path, "out").acquire()
    stale = os.open(first.lock_path, os.O_RDWR)  # opened by a second process just before the release
    first.release()
    fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # it gets the removed file's lock...
    second = OutputLock(tmp_path, "out").acquire()  # ...which does not keep a third one out
    try:
        third = OutputLock(tmp_path, "out")
        with pytest.raises(OutputInUse):
            third.acquire()
    finally:
        second.release()
        os.close(stale)


def test_init_and_select_outputs_another_process_writes_are_refused_in_one_line(tmp_path, capsys):
    from keras_structinit.models import build_model

    teacher = tmp_path / "teacher.keras"
    build_model("convmixer-16/2").save(teacher)
    out = tmp_path / "model.keras"
    out.write_bytes(b"an earlier result")  # exists: the refusal must still name the holder, not --overwrite
    child = _hold(tmp_path, out, False)
    try:
        for argv in (
            ["init", "convmixer-8/1", "--init", "conv-cov", "--out", str(out)],
            ["select", "--teacher", str(teacher), "--student", "convmixer-8/1", "--out", str(out)],
        ):
            assert cli.main(argv) == 2
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and f"process {child.pid}" in err, err
            assert "--overwrite" not in err
    finally:
        _release(child)
    assert out.read_bytes() == b"an earlier result"


def _first_run(tmp_path, data, out, gate):
    """``structinit train`` in a child that pauses at the start of its second epoch until ``gate``
    exists (having written ``gate``.ready); returns the running process."""
    code = textwrap.dedent(f"""
        import os, time
        import keras
        import keras_structinit.recipes.run as run

        class Pause(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                if epoch == 1:
                    open({str(gate)!r} + ".ready", "w").close()
                    while not os.path.exists({str(gate)!r}):
                        time.sleep(0.05)

        progress = run.progress_callbacks
        run.progress_callbacks = lambda *a, **k: (progress(*a, **k)[0], [*progress(*a, **k)[1], Pause()])
        import sys
        from keras_structinit import cli
        sys.exit(cli.main({[*TRAIN, "--epochs", "3", "--data", data, "--out", str(out)]!r}))
        """)
    env = dict(os.environ, KERAS_BACKEND=keras.backend.backend())
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_a_second_run_into_a_running_runs_out_exits_2_and_changes_no_byte(tmp_path):
    """Two real processes: the second, with and without --overwrite, is refused in one line naming
    the first's pid while the first runs; --out is byte-identical; the first finishes whole."""
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out, gate = tmp_path / "run", tmp_path / "gate"
    first = _first_run(tmp_path, data, out, gate)
    try:
        deadline = time.monotonic() + 240
        while not os.path.exists(f"{gate}.ready"):
            assert first.poll() is None, first.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the first run never reached its second epoch"
            time.sleep(0.1)
        before = _tree(out)
        assert "log.csv" in before and "results.json" in before
        env = dict(os.environ, KERAS_BACKEND=keras.backend.backend())
        for extra in (["--overwrite"], []):
            argv = [*TRAIN, "--epochs", "3", "--data", data, "--out", str(out), *extra]
            second = subprocess.run(
                [sys.executable, "-m", "keras_structinit.cli", *argv],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            err = second.stderr.strip()
            assert second.returncode == 2, err[-3000:]
            assert len(err.splitlines()) == 1 and f"process {first.pid}" in err, err
            assert "--overwrite" not in err and "--resume" not in err, err
            assert _tree(out) == before
    finally:
        gate.touch()
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished"
    rows = (out / "log.csv").read_text().splitlines()
    assert [int(r.split(",")[0]) for r in rows[1:]] == [1, 2, 3]
    assert len(np.atleast_1d(results["metrics"]["loss"])) == 3


def test_run_execute_into_a_held_folder_is_refused_and_changes_nothing(tmp_path):
    from keras_structinit.recipes import RecipeConfig, Run
    from keras_structinit.recipes.run_files import RunRefused

    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"status": "running"}')
    (out / "log.csv").write_text("epoch,loss\n1,2.0\n")
    checked = Run("simple-cnn", RecipeConfig("cifar10", epochs=1, batch_size=8), data=data).check()
    child = _hold(tmp_path, out, True)
    try:
        before = _tree(out)
        with pytest.raises(RunRefused, match=rf"in use by another run \(process {child.pid}\)") as info:
            checked.execute(out, overwrite=True)
        assert "overwrite" not in str(info.value)
        assert _tree(out) == before
    finally:
        _release(child)


def test_inspect_into_a_folder_another_process_writes_is_refused_in_one_line(tmp_path, capsys):
    from keras_structinit.models import build_model

    model = tmp_path / "m.keras"
    build_model("convmixer-16/2").save(model)
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("an earlier report")
    child = _hold(tmp_path, out, True)
    try:
        before = _tree(out)
        assert cli.main(["inspect", str(model), "--out", str(out), "--overwrite"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"process {child.pid}" in err and "--overwrite" not in err, err
        assert _tree(out) == before
    finally:
        _release(child)
    assert cli.main(["inspect", str(model), "--out", str(out), "--overwrite"]) == 0  # free again
    assert (out / "report.md").read_text() != "an earlier report" and not (out / ".structinit.lock").exists()
