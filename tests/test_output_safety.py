"""Nothing outside ``--out`` is touched, nothing is removed before every check passed (issue 74).

Point 1: a symbolic link (to a file outside ``--out``, or dangling) planted at any path a command
writes is refused in one line, never followed: its target stays byte for byte, a dangling one is
never created. Point 2: every refusal ``train`` can give, with ``--overwrite`` over a finished run,
leaves that run's files byte for byte. Point 4: a disk that refuses the lock names ``--out`` and
leaves no lock file.
"""

import errno
import os
import shutil
import stat

import pytest
from test_cli import write_tiny_cifar

from keras_structinit import cli
from keras_structinit.utils.io_utils import LOCK_FILE, OutputLock, OutputUnwritable, check_plain, open_plain

TRAIN = ["train", "--model", "simple-cnn", "--batch-size", "8", "--seed", "0", "--rand-augment", "none"]
TARGET_BYTES = b"the user's own file\n"


def _tree(root):
    """Every entry under ``root``: a file's bytes, a link's target (links are not followed)."""
    tree = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            tree[key] = ("link", os.readlink(path))
        elif path.is_file():
            tree[key] = path.read_bytes()
    return tree


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_cifar(tmp_path_factory.mktemp("data") / "train.npz", 48, 0)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, data):
    """A finished one-epoch run; tests copy it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert cli.main([*TRAIN, "--epochs", "2", "--data", data, "--out", str(out)]) == 0
    return out


def _plant(tmp_path, link, dangling):
    """A link at ``link`` to a file outside the output (``dangling``: to a path that does not exist)."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    target = outside / ("never-made" if dangling else "bashrc")
    if not dangling:
        target.write_bytes(TARGET_BYTES)
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    return target


def _assert_untouched(target, link, dangling):
    if dangling:
        assert not os.path.lexists(target), "the dangling link's target was created"
    else:
        assert target.read_bytes() == TARGET_BYTES
    assert os.path.islink(link), "the link was removed or replaced"


def _refused(capsys, argv, *words):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


# ------------------------------------------------ point 1: links planted where a command writes

FOLDER_WRITES = {
    "train": (
        LOCK_FILE,
        "log.csv",
        "results.json",
        "results.md",
        "model.keras",
        "learning_curves.png",
        "backup",
    ),
    "demo": (LOCK_FILE, "results.json", "results.md", "covariance.png", "filters.png", "learning_curves.png"),
    "inspect": (LOCK_FILE, "report.md", "report.json"),
}


def _command(command, tmp_path, data, out):
    if command == "train":
        return [*TRAIN, "--epochs", "1", "--data", data, "--out", str(out), "--overwrite"]
    if command == "demo":
        return ["demo", "--data", data, "--epochs", "1", "--seeds", "1", "--train-size", "24",
                "--out", str(out), "--overwrite"]  # fmt: skip
    return ["inspect", "simple-cnn", "--out", str(out), "--overwrite"]


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
@pytest.mark.parametrize(
    "command,name", [(c, n) for c, names in FOLDER_WRITES.items() for n in names], ids=lambda v: str(v)
)
def test_a_link_where_a_folder_command_writes_is_refused_never_followed(
    tmp_path, capsys, data, command, name, dangling
):
    out = tmp_path / "out"
    link = out / name
    target = _plant(tmp_path, link, dangling)
    before = _tree(tmp_path)
    _refused(capsys, _command(command, tmp_path, data, out), "symbolic link", name)
    assert _tree(tmp_path) == before
    _assert_untouched(target, link, dangling)


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
@pytest.mark.parametrize("command", ["init", "select"])
@pytest.mark.parametrize("which", ["out", "lock", "report"])
def test_a_link_where_init_or_select_writes_is_refused_never_followed(
    tmp_path, capsys, command, which, dangling
):
    out, report = tmp_path / "m.keras", tmp_path / "report.md"
    link = {"out": out, "lock": tmp_path / ".m.keras.structinit.lock", "report": report}[which]
    target = _plant(tmp_path, link, dangling)
    if command == "init":
        argv = ["init", "simple-cnn", "--init", "torch-default"]
    else:
        argv = ["select", "--teacher", "simple-cnn", "--student", "simple-cnn"]
    argv += ["--out", str(out), "--report", str(report), "--overwrite"]
    before = _tree(tmp_path)
    _refused(capsys, argv, "symbolic link")
    assert _tree(tmp_path) == before
    _assert_untouched(target, link, dangling)


def test_a_folder_at_a_file_output_is_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "m.keras"
    out.mkdir()
    (out / "kept").write_text("x")
    _refused(
        capsys, ["init", "simple-cnn", "--init", "torch-default", "--out", str(out), "--overwrite"], "folder"
    )
    assert (out / "kept").read_text() == "x"


def test_a_fifo_or_a_hard_link_at_the_lock_is_refused_without_blocking(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / LOCK_FILE)
    for attempt in (OutputLock(out, "--out").check, OutputLock(out, "--out").acquire):
        with pytest.raises(ValueError, match="is a FIFO"):
            attempt()
    assert stat.S_ISFIFO(os.lstat(out / LOCK_FILE).st_mode)
    os.remove(out / LOCK_FILE)
    mine = tmp_path / "mine.txt"
    mine.write_bytes(TARGET_BYTES)
    os.link(mine, out / LOCK_FILE)
    with pytest.raises(ValueError, match="hard links"):
        OutputLock(out, "--out").acquire()
    assert mine.read_bytes() == TARGET_BYTES


def test_open_plain_refuses_a_link_swapped_in_after_the_check(tmp_path, monkeypatch):
    target = _plant(tmp_path, tmp_path / "log.csv", dangling=False)
    monkeypatch.setattr("keras_structinit.utils.io_utils.check_plain", lambda *a, **k: None)  # lose the race
    with pytest.raises(ValueError, match="symbolic link"):
        open_plain(tmp_path / "log.csv", "a", "log.csv")
    assert target.read_bytes() == TARGET_BYTES
    check_plain(tmp_path / "missing", "x")  # nothing there: fine


# ------------------------------------------------ point 2: check everything, then delete

REFUSALS = {
    "warmup past the epochs": ["--epochs", "3", "--schedule", "cosine", "--warmup-epochs", "99"],
    "warmup without cosine": ["--epochs", "3", "--schedule", "step", "--warmup-epochs", "1"],
    "init typo": ["--epochs", "1", "--init", "conv-cvo"],
    "init that acts on nothing": ["--epochs", "1", "--init", "conv-cov"],
    "missing data": ["--epochs", "1", "--data", "MISSING.npz"],
    "missing eval data": ["--epochs", "1", "--eval-data", "MISSING.npz"],
    "missing model file": ["--epochs", "1", "--model", "MISSING.keras"],
    "unknown model": ["--epochs", "1", "--model", "no-such-net"],
    "missing teacher": ["--epochs", "1", "--distill-from", "MISSING.keras"],
    "resume and overwrite": ["--epochs", "1", "--resume"],
    "train size above the data": ["--epochs", "1", "--train-size", "100000"],
    "no weight decay with sgd": ["--epochs", "1", "--optimizer", "sgd", "--no-weight-decay", "bias"],
    "bad label smoothing": ["--epochs", "1", "--label-smoothing", "1.5"],
    "batch above the data": ["--epochs", "1", "--batch-size", "1000"],
}


def test_a_batch_above_the_training_images_is_one_line(tmp_path, capsys, data):
    """Issue 76, point 5: --batch-size 1000 on 54 images trained one short step an epoch, unsaid."""
    argv = [*TRAIN, "--epochs", "1", "--data", data, "--out", str(tmp_path / "run"), "--batch-size", "1000"]
    err = _refused(capsys, argv, "--batch-size 1000 is above the")
    assert "training images of --data: pass a --batch-size of at most" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("extra", REFUSALS.values(), ids=REFUSALS.keys())
def test_every_refusal_with_overwrite_leaves_a_finished_run_whole(
    tmp_path, capsys, data, finished_run, extra
):

    out = tmp_path / "run"
    shutil.copytree(finished_run, out, symlinks=True)
    before = _tree(out)
    argv = [*TRAIN, "--data", data, "--out", str(out), "--overwrite", *extra]
    try:
        status = cli.main(argv)
    except SystemExit as stop:  # argparse's own refusal
        status = stop.code
    assert status == 2, capsys.readouterr()
    assert _tree(out) == before
    capsys.readouterr()


# ------------------------------------------------ point 4: a disk that refuses the lock


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_disk_that_refuses_the_lock_names_out_and_leaves_no_lock(tmp_path, monkeypatch, code):
    out = tmp_path / "out"
    real_write = os.write

    def refuse(fd, data):
        if data.strip().isdigit():  # the pid going into the lock file
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", refuse)
    with pytest.raises(OutputUnwritable) as info:
        OutputLock(out, "--out").acquire()
    assert str(info.value).startswith(f"--out {str(out)!r} cannot be written ({os.strerror(code)})")
    assert info.value.errno == code
    assert not out.exists()  # neither the lock file nor the folder it made


# ------------------------------------------------ point 4: SIGTERM while writing leaves nothing behind

_WRITING_SELECT = """
import sys, time
import keras
from keras_structinit import cli

real_save = keras.Model.save

def save_slowly(self, path, *args, **kwargs):
    real_save(self, path, *args, **kwargs)  # the temporary is whole: now hold still until SIGTERM
    print("writing", flush=True)
    time.sleep(600)

keras.Model.save = save_slowly
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", ["select", "init"])
def test_sigterm_while_writing_leaves_no_temporary_and_no_lock(tmp_path_factory, command):
    import signal
    import subprocess
    import sys

    tmp_path = tmp_path_factory.mktemp("out")
    if command == "init":
        argv = ["init", "simple-cnn", "--init", "torch-default"]
    else:
        teacher = str(tmp_path_factory.mktemp("teacher") / "teacher.keras")
        assert cli.main(["init", "simple-cnn", "--init", "torch-default", "--out", teacher]) == 0
        argv = ["select", "--teacher", teacher, "--student", "simple-cnn"]
    argv += ["--out", str(tmp_path / "m.keras"), "--report", str(tmp_path / "report.md")]
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITING_SELECT, *argv], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        for line in child.stdout:
            if line.strip() == "writing":
                break
        assert any(p.name.startswith(".m.keras.") for p in tmp_path.iterdir())  # the temporary, the lock
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        child.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_lock_holder_ended_by_sigterm_leaves_no_lock_file(tmp_path):
    import signal
    import subprocess
    import sys

    code = f"""
from keras_structinit.utils.io_utils import OutputLock
with OutputLock({str(tmp_path / "out")!r}, "--out"):
    print("held", flush=True)
    import time; time.sleep(600)
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        assert (tmp_path / "out" / LOCK_FILE).exists()
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        child.kill()
    assert not (tmp_path / "out").exists()  # the lock file, and the folder it made
