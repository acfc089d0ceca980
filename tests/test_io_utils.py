"""Atomic writes that leave nothing behind, and outputs that never replace an input (no Keras)."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from keras_structinit.utils import io_utils


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def test_atomic_path_replaces_on_success_and_cleans_on_error(tmp_path):
    target = tmp_path / "out.json"
    io_utils.write_text(target, "old")
    with pytest.raises(RuntimeError, match="boom"), io_utils.atomic_path(target) as tmp:
        assert os.path.basename(tmp).startswith(f".out.json.{os.getpid()}.tmp-") and tmp.endswith(".json")
        with open(tmp, "w") as f:
            f.write("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old" and _temporaries(tmp_path) == []
    with pytest.raises(KeyboardInterrupt), io_utils.atomic_path(target) as tmp:  # Ctrl-C
        raise KeyboardInterrupt
    assert _temporaries(tmp_path) == []
    io_utils.write_json(target, {"a": 1})
    assert target.read_text() == '{\n  "a": 1\n}\n' and _temporaries(tmp_path) == []


def test_previous_sigterm_handler_is_restored(tmp_path):
    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with io_utils.atomic_path(tmp_path / "x.txt") as tmp:
            assert signal.getsignal(signal.SIGTERM) is not mine
            open(tmp, "w").close()
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


_WRITER = textwrap.dedent("""
    import sys, time
    from keras_structinit.utils.io_utils import atomic_path
    with atomic_path(sys.argv[1]) as tmp:
        with open(tmp, "w") as f:
            f.write("half written")
        print(tmp, flush=True)
        time.sleep(120)
""")


def _start_writer(target):
    # SIGINT as at a terminal, also when the tests themselves run with it ignored (a background job of
    # a shell without job control: the child would inherit the ignore and never see Ctrl-C).
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    tmp = proc.stdout.readline().strip()
    assert os.path.exists(tmp), "the writer did not start its write"
    return proc, tmp


@pytest.mark.skipif(os.name != "posix", reason="signals as on POSIX")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_no_temporary_left_after_sigterm_or_sigint(tmp_path, signum):
    target = tmp_path / "student.keras"
    target.write_text("previous")
    proc, tmp = _start_writer(target)
    proc.send_signal(signum)
    returncode = proc.wait(timeout=60)
    assert returncode != 0  # SIGTERM: killed by the signal (-15); SIGINT: KeyboardInterrupt (1)
    if signum == signal.SIGTERM:
        assert returncode == -signal.SIGTERM
    assert not os.path.exists(tmp) and _temporaries(tmp_path) == []
    assert target.read_text() == "previous"


@pytest.mark.skipif(os.name != "posix", reason="signals as on POSIX")
def test_sigkill_temporary_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "student.keras"
    proc, tmp = _start_writer(target)
    proc.kill()
    proc.wait(timeout=60)
    assert _temporaries(tmp_path) == [os.path.basename(tmp)]  # SIGKILL cannot be caught
    # A temporary of another destination, and one of a live process, are not touched.
    other = tmp_path / f".other.keras.{os.getpid() + 0}.tmp-abc.keras"
    alive = tmp_path / f".student.keras.{os.getpid()}.tmp-live.keras"
    other.write_text("x")
    alive.write_text("x")
    io_utils.write_text(target, "new")
    assert target.read_text() == "new"
    assert _temporaries(tmp_path) == sorted([alive.name, other.name])


def test_check_output_refuses_inputs_and_existing_files(tmp_path):
    teacher = tmp_path / "t.keras"
    teacher.write_bytes(b"teacher")
    with pytest.raises(ValueError, match=r"`--out` .*t.keras' is an input of this run"):
        io_utils.check_output(str(teacher), "--out", overwrite=True, inputs=[None, 3, str(teacher)])
    # The same file under another name (a symlink) is the same input.
    link = tmp_path / "link.keras"
    link.symlink_to(teacher)
    with pytest.raises(ValueError, match="is an input of this run"):
        io_utils.check_output(link, "path", overwrite=True, inputs=[teacher])
    with pytest.raises(ValueError, match=r"`path` .* already exists; pass overwrite=True to replace it"):
        io_utils.check_output(teacher, "path")
    with pytest.raises(ValueError, match="pass --overwrite"):
        io_utils.check_output(teacher, "--out", hint="--overwrite")
    assert io_utils.check_output(teacher, "path", overwrite=True) == str(teacher)
    assert io_utils.check_output(tmp_path / "new.keras", "path") == str(tmp_path / "new.keras")
    assert teacher.read_bytes() == b"teacher"


def test_prepare_output_dir(tmp_path):
    out = tmp_path / "run"
    files = ("results.json", "log.csv")
    assert io_utils.prepare_output_dir(out, files, "--out") == str(out) and out.is_dir()
    (out / "results.json").write_text("{}")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"already holds the results of a run \(results.json\)"):
        io_utils.prepare_output_dir(out, files, "--out", hint="--overwrite")
    io_utils.prepare_output_dir(out, files, "--out", overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # the old run's files only
    data = out / "log.csv"
    data.write_text("input")
    with pytest.raises(ValueError, match="is an input of this run"):
        io_utils.prepare_output_dir(out, files, "--out", overwrite=True, inputs=[data])
    assert data.read_text() == "input"
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is not a folder"):
        io_utils.prepare_output_dir(tmp_path / "file", files, "--out")
