"""Issue 65: bad data, replaced data, SIGTERM and full disks give one line, and nothing is trained on
the wrong thing. A run here is the tiny CIFAR recipe: 16 images, batches of 8, 1-3 epochs."""

import errno
import gc
import hashlib
import json
import os

import keras
import numpy as np
import pytest
from test_cli import write_tiny_cifar

from keras_structinit import cli, datasets
from keras_structinit.recipes import backup
from keras_structinit.utils import io_utils

from conftest import InterruptAtEpoch, run_cli_in_child

# The logic is the backend's only through `fit` (its callbacks, its signal handling): JAX and torch.
not_on_tensorflow = pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="backend-neutral file handling, checked on JAX and torch"
)

TRAIN = [
    "train",
    "--model",
    "simple-cnn",
    "--batch-size",
    "8",
    "--seed",
    "0",
    "--val-split",
    "0",
    "--rand-augment",
    "none",
]


def _argv(data, out, epochs=2):
    return [*TRAIN, "--epochs", str(epochs), "--data", str(data), "--out", str(out)]


def _tree(root):
    """Every path under ``root`` and its bytes, less the run's (empty) lock file."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
        if p.name != ".structinit.lock"
    }


def _one_line(err):
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


def _interrupted_run(tmp_path, monkeypatch, capsys, epochs=2):
    """``(data, out)``: a run of ``epochs`` interrupted after its first epoch (backed up)."""
    from keras_structinit.recipes import run

    data = write_tiny_cifar(tmp_path / "train.npz", 16, 0)
    out = tmp_path / "run"
    progress = run.progress_callbacks
    with monkeypatch.context() as patch:
        patch.setattr(
            run,
            "progress_callbacks",
            lambda *a, **k: (progress(*a, **k)[0], [*progress(*a, **k)[1], InterruptAtEpoch(1)]),
        )
        assert cli.main(_argv(data, out, epochs)) == 130
    line = _one_line(capsys.readouterr().err)  # the run's own line; the command adds none
    assert line.startswith("Interrupted in epoch 2/") and "--resume goes on from there" in line
    assert json.loads((out / "results.json").read_text())["status"] == "interrupted"
    return data, out


def test_an_interrupted_command_leaves_no_data_iterator_to_interpreter_exit(tmp_path, monkeypatch, capsys):
    """A fit that SIGTERM ends leaves its epoch iterator (on TensorFlow with a tf.data iterator over
    Python code) in reference cycles; ``structinit`` collects them before it returns, so interpreter
    exit does not destroy them (where one hung a SIGTERM'd run in CI, its main thread in no Python
    frame)."""
    from keras.src.trainers.epoch_iterator import EpochIterator

    import keras_structinit.recipes.progress as progress

    end = progress.ProgressLog.on_train_batch_end

    def on_train_batch_end(self, batch, logs=None):
        if self._epoch == 1 and batch == 0:  # what InterruptAtBatchEnd raises after SIGTERM
            raise progress.Terminated
        return end(self, batch, logs)

    monkeypatch.setattr(progress.ProgressLog, "on_train_batch_end", on_train_batch_end)
    data = write_tiny_cifar(tmp_path / "train.npz", 16, 0)
    gc.collect()
    gc.disable()  # no automatic collection: only the command's own counts
    try:
        assert cli.main(_argv(data, tmp_path / "run", epochs=3)) == 143
        assert [type(o).__name__ for o in gc.get_objects() if isinstance(o, EpochIterator)] == []
    finally:
        gc.enable()
    assert _one_line(capsys.readouterr().err).startswith("Terminated (SIGTERM) in epoch 2/3")


@not_on_tensorflow
def test_a_resume_on_other_data_or_a_tampered_backup_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """Point 1: the run records its data's SHA-256; a resume on other images at the same path (of the
    same count, or another) is one line, exit 2, and changes nothing. Point 4: so is a backup whose
    record was rewritten to fit its digest but not the run."""
    data, out = _interrupted_run(tmp_path, monkeypatch, capsys)
    recorded = json.loads((out / "results.json").read_text())["data_sha256"]
    assert len(recorded) == 64
    original = (tmp_path / "train.npz").read_bytes()
    for count, seed in ((16, 1), (24, 0)):  # same count, other pixels; another count
        write_tiny_cifar(tmp_path / "train.npz", count, seed)
        before = _tree(out)
        assert cli.main([*_argv(data, out), "--resume"]) == 2
        line = _one_line(capsys.readouterr().err)
        assert "the images differ from those the run in --out" in line and recorded[:12] in line, line
        assert _tree(out) == before
    (tmp_path / "train.npz").write_bytes(original)

    record_path = out / "backup" / "current" / "backup.json"
    weights_path = out / "backup" / "current" / "state.weights.h5"
    record, weights = json.loads(record_path.read_text()), weights_path.read_bytes()
    other = tmp_path / "other.weights.h5"
    keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]).save_weights(other)
    steps = record["steps_per_epoch"]
    tampered = {
        "beyond the run's 2": ({**record, "epoch": 9, "iterations": 9 * steps}, weights),
        "steps per epoch": ({**record, "steps_per_epoch": steps + 1, "iterations": steps + 1}, weights),
        "does not fit the run's model": (
            {**record, "sha256": hashlib.sha256(other.read_bytes()).hexdigest()},
            other.read_bytes(),
        ),
    }
    for phrase, (new_record, new_weights) in tampered.items():
        record_path.write_text(json.dumps(new_record))
        weights_path.write_bytes(new_weights)
        before = _tree(out)
        assert cli.main([*_argv(data, out), "--resume"]) == 2, phrase
        line = _one_line(capsys.readouterr().err)
        assert phrase in line, line
        assert _tree(out) == before, phrase  # results.json and log.csv put back as they were
    record_path.write_text(json.dumps(record))
    weights_path.write_bytes(weights)
    assert cli.main([*_argv(data, out), "--resume"]) == 0  # the data it was started on
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and results["data_sha256"] == recorded


def test_sigterm_mid_epoch_is_an_interrupt_exit_143_in_one_line_and_resumable(tmp_path):
    """Point 5 (every backend: where a signal lands is the backend's): SIGTERM in the second epoch
    stops at that batch's end, records the finished epoch (status interrupted) in one line, exits
    143, and ``--resume`` finishes the run."""
    data = write_tiny_cifar(tmp_path / "train.npz", 16, 0)
    out = tmp_path / "run"
    child = run_cli_in_child(
        tmp_path,
        """
        import os, signal
        import keras_structinit.recipes.progress as progress

        end = progress.ProgressLog.on_train_batch_end

        def on_train_batch_end(self, batch, logs=None):
            if self._epoch == 1 and batch == 0:  # in the second epoch: a scheduler's stop
                os.kill(os.getpid(), signal.SIGTERM)
            return end(self, batch, logs)

        progress.ProgressLog.on_train_batch_end = on_train_batch_end
        """,
        _argv(data, out, epochs=3),
    )
    assert child.returncode == 143, child.stdout[-2000:] + child.stderr[-8000:]  # a hang: stacks
    said = [
        line
        for line in child.stderr.splitlines()
        if "epoch" in line or "Traceback" in line or "structinit" in line
    ]
    assert len(said) == 1, said
    assert said[0].startswith("Terminated (SIGTERM) in epoch 2/3: 1 finished epoch(s)"), said
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "interrupted" and results["finished_epochs"] == 1
    assert not [p for p in out.rglob("*") if ".tmp-" in p.name or p.name == ".incoming"]
    assert cli.main([*_argv(data, out, epochs=3), "--resume"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and results["resumed_at_epoch"] == 1


def _png16(path, value):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((8, 8), value, np.uint16)).save(path)


def test_16_bit_grayscale_is_scaled_and_32_bit_pixels_are_refused(tmp_path):
    """Point 2: a 16-bit PNG read as pure white; now 0-65535 maps to 0-255 (round(v * 255 / 65535))."""
    from PIL import Image

    for label, value in (("a", 65535), ("b", 32896), ("c", 0)):
        _png16(tmp_path / "folder" / label / "0.png", value)
    x, y, _ = datasets.read_image_folder(tmp_path / "folder")
    assert x.dtype == np.uint8 and [int(v) for v in x[:, 0, 0, 0]] == [255, 128, 0]
    assert y.tolist() == [0, 1, 2]
    assert (x == x[:, :, :, :1]).all()  # gray in all three channels
    Image.fromarray(np.ones((8, 8), np.float32)).save(tmp_path / "folder" / "a" / "1.tif")
    with pytest.raises(ValueError, match=r"'a/1.tif' .* floating-point pixels") as info:
        datasets.read_image_folder(tmp_path / "folder", "--data")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("label", [-1, 10**6, 2**32 + 3])
def test_labels_that_are_no_class_index_are_refused(label):
    """Points 2 and 4: an int64 label of 2**32 + 3 became 3; -1 and 10**6 failed after training began."""
    x = np.zeros((4, 8, 8, 3), np.uint8)
    with pytest.raises(
        ValueError,
        match=rf"`data` labels must be class indices in \[0, 10000\). "
        rf"Received: labels in \[{min(label, 0)}, {max(label, 2)}\]",
    ):
        datasets.load_labeled_images((x, np.array([0, 1, 2, label], np.int64)), "data")


def test_images_far_above_the_limit_are_refused_before_they_are_decoded(tmp_path, monkeypatch):
    """Point 4: a 4000 x 4000 image set filled the memory; its headers refuse it, nothing decoded."""
    from PIL import Image, ImageFile

    for label in "ab":
        (tmp_path / "huge" / label).mkdir(parents=True)
        Image.new("RGB", (4000, 4000)).save(tmp_path / "huge" / label / "0.png")
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: pytest.fail("decoded"))
    with pytest.raises(ValueError, match=r"is 4000x4000 pixels, above the 1024x1024"):
        datasets.read_image_folder(tmp_path / "huge", "--data")
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 1, 3), np.uint8))  # an .npz's header is read first
    header = np.lib.format.header_data_from_array_1_0(np.zeros((2, 2000, 2000, 3), np.uint8))
    import io
    import zipfile

    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, header)
    stream.write(os.urandom(2 * 2000 * 2000 * 3))  # 24 MB of pixels, all there: only the size is wrong
    with zipfile.ZipFile(tmp_path / "huge.npz", "w") as archive:
        archive.writestr("x.npy", stream.getvalue())
        archive.writestr("y.npy", b"")
    with pytest.raises(ValueError, match=r"is 2000x2000 pixels"):
        datasets.load_labeled_images(str(tmp_path / "huge.npz"), "data")


def test_a_keras_bomb_is_refused_before_keras_reads_it(tmp_path):
    """Point 6: a 1 MB .keras file inflating to gigabytes cost 2.35 GB before Keras refused it."""
    import zipfile

    from keras_structinit.models.spec import load_model

    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("config.json", "w", force_zip64=True) as f:
            block = b" " * (1 << 20)
            for _ in range(70):  # 70 MiB of spaces, stored in ~70 KB
                f.write(block)
        archive.writestr("metadata.json", "{}")
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(ValueError, match=r"'config.json' inflates to 73400320 bytes, above the 67108864"):
        load_model(str(bomb), name="MODEL")
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model.weights.h5", b"\0" * (40 << 20))
    with pytest.raises(ValueError, match=r"'model.weights.h5' inflates .* a zip bomb, not read"):
        load_model(str(bomb), name="MODEL")
    from keras_structinit.engine.freezing import load_frozen_model

    with pytest.raises(ValueError, match=r"filepath.*'model.weights.h5' inflates .* a zip bomb, not read"):
        load_frozen_model(str(bomb))


def _weights_files(folder):
    return len(list(folder.rglob(backup.WEIGHTS))) if folder.exists() else 0


@not_on_tensorflow
def test_a_full_disk_is_one_line_recorded_and_resumable_with_two_backups_at_most(
    tmp_path, monkeypatch, capsys
):
    """Point 3: no room for epoch 3's backup, then for model.keras: exit 1, one line, results.json
    says "failed" (and where), no half-written file; the backup holds two copies of the weights at
    most; --resume then finishes the run."""
    from keras_structinit.engine import freezing

    data = write_tiny_cifar(tmp_path / "train.npz", 16, 0)
    out = tmp_path / "run"
    most, seen = [0], []

    def reached(point):
        most[0] = max(most[0], _weights_files(out / "backup"))
        seen.append(point)
        if point == "after_weights" and seen.count(point) == 3:  # epoch 3's weights written
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(backup, "reached", reached)
    assert cli.main(_argv(data, out, epochs=3)) == 1
    line = _one_line(capsys.readouterr().err)
    assert "No space left on device" in line and "--resume goes on from epoch 2" in line, line
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "failed" and results["last_backup_epoch"] == 2, results
    assert results["error"] == "OSError: [Errno 28] No space left on device"
    assert most[0] == 2 and _weights_files(out / "backup") == 1  # epoch 2; epoch 1 made room
    assert not (out / "backup" / ".incoming").exists()

    def no_room(model, path):
        with open(path, "wb") as f:
            f.write(b"PK half")
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(freezing, "save_portable", no_room)
    assert cli.main([*_argv(data, out, epochs=3), "--resume"]) == 1
    assert "No space left on device" in _one_line(capsys.readouterr().err)
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "failed" and results["failed_while"] == "writing the results"
    assert results["last_backup_epoch"] == 3 and most[0] == 2
    assert not (out / "model.keras").exists() and not [p for p in out.iterdir() if ".tmp-" in p.name]
    monkeypatch.undo()
    assert cli.main([*_argv(data, out, epochs=3), "--resume"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "finished" and len(results["metrics"]["loss"]) == 3
    assert not (out / "backup").exists()


def test_a_read_only_out_is_one_line_exit_2_and_nothing_written(tmp_path, monkeypatch, capsys):
    """Point 3: a read-only --out (as root, simulated: os.access and the lock file's creation say so)."""
    import os

    data = write_tiny_cifar(tmp_path / "train.npz", 16, 0)
    out = tmp_path / "ro"
    out.mkdir()
    access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode, **k: False if str(path) == str(out) else access(path, mode, **k)
    )
    assert cli.main(_argv(data, out)) == 2
    line = _one_line(capsys.readouterr().err)
    assert (
        line == f"structinit train: error: --out {str(out)!r} cannot be written (read-only): choose a "
        "folder this process may write"
    )
    monkeypatch.setattr(os, "access", access)

    def refused(self):
        raise OSError(errno.EROFS, "Read-only file system", self.lock_path)

    monkeypatch.setattr(io_utils.OutputLock, "acquire", refused)
    assert cli.main(_argv(data, out)) == 2
    assert "cannot be written (Read-only file system)" in _one_line(capsys.readouterr().err)
    assert list(out.iterdir()) == []
