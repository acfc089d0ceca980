"""Files bigger than they look (issue 74, point 3): sizes a file declares are checked before it is read.

A ``.keras`` whose weights file declares a dataset it never wrote, or whose config declares a layer
of 10**9 units; an ``.npz`` whose header declares 10**8 images; an image folder holding a link to
``/dev/zero`` or a FIFO: each is refused in one line naming the argument, before anything is
allocated (the loaders are replaced by ones that fail if they are reached).
"""

import contextlib
import io
import json
import os
import re
import resource
import signal
import zipfile

import keras
import numpy as np
import pytest

from keras_structinit import cli
from keras_structinit.datasets import folders
from keras_structinit.engine.freezing import load_frozen_model
from keras_structinit.models import spec as sources
from keras_structinit.selection.teachers import load_teacher
from keras_structinit.utils import model_files
from keras_structinit.utils.file_checks import check_image_file, read_image_file


def _tiny(path):
    """A ``.keras`` file of a Dense(10 -> 5): 220 bytes of variables."""
    keras.Sequential([keras.Input((10,)), keras.layers.Dense(5, name="dense")], name="tiny").save(path)
    return str(path)


def _rezipped(source, target, replace):
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info.filename, replace.get(info.filename, old.read(info)))
    return str(target)


def _never_written(tmp_path):
    """Issue 74's 17 KB file: the kernel's dataset declares 30000 x 30000 float32, chunked, unwritten."""
    import h5py

    source = _tiny(tmp_path / "source.keras")
    weights = io.BytesIO(zipfile.ZipFile(source).read("model.weights.h5"))
    with h5py.File(weights, "r+") as f:
        del f["layers/dense/vars/0"]
        f.create_dataset("layers/dense/vars/0", shape=(30000, 30000), dtype="float32", chunks=(1000, 1000))
    return _rezipped(source, tmp_path / "unwritten.keras", {"model.weights.h5": weights.getvalue()})


def _billion_units(tmp_path):
    """A config whose Dense has 10**9 units (a 10 x 10**9 kernel: 40 GB); the tiny model's weights."""
    source = _tiny(tmp_path / "source.keras")
    config = zipfile.ZipFile(source).read("config.json").decode()
    assert '"units": 5' in config
    big = config.replace('"units": 5', '"units": 1000000000')
    return _rezipped(source, tmp_path / "units.keras", {"config.json": big})


def _declared_images(tmp_path, count=10**8):
    """An ``.npz`` of 500 bytes whose ``x`` declares ``count`` 32 x 32 RGB images (286 GiB at 10**8)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (count, 32, 32, 3)}
    )
    labels = io.BytesIO()
    np.lib.format.write_array(labels, np.zeros(4, np.int64))
    path = tmp_path / "declared.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", header.getvalue())
        archive.writestr("y.npy", labels.getvalue())
    return str(path)


@pytest.fixture
def never_loaded(monkeypatch):
    """Keras' loaders fail if reached: a refusal must come before them."""

    def reached(*args, **kwargs):
        raise AssertionError("the file was loaded")

    monkeypatch.setattr(keras.saving, "load_model", reached)
    monkeypatch.setattr(np, "load", reached)


def _one_line(info):
    message = str(info.value)
    assert "\n" not in message.strip(), message
    return message


def _loaders():
    return [
        ("--model", lambda path: sources.load_model(path, name="--model")),
        ("`teacher`", load_teacher),
        ("`filepath`", load_frozen_model),
    ]


def test_a_weights_dataset_declared_but_never_written_is_refused_before_loading(tmp_path, never_loaded):
    path = _never_written(tmp_path)
    assert os.path.getsize(path) < 20_000
    for name, load in _loaders():
        with pytest.raises(ValueError) as info:
            load(path)
        message = _one_line(info)
        assert name in message and "'layers/dense/vars/0' declares (30000, 30000) float32" in message
        assert "never written or forged, not read" in message


def test_a_compressed_member_is_checked_as_a_stored_one(tmp_path, never_loaded):
    """A ``.keras`` zipped again with deflate: its weights file is read from a copy, not in place."""

    def deflated(path):
        target = str(path).replace(".keras", "-deflated.keras")
        with zipfile.ZipFile(path) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
            for info in old.infolist():
                new.writestr(info.filename, old.read(info))
        return target

    model_files.check_model_file(deflated(_tiny(tmp_path / "tiny.keras")), "--model")  # passes
    with pytest.raises(ValueError, match="'layers/dense/vars/0' declares .* never written"):
        model_files.check_model_file(deflated(_never_written(tmp_path)), "--model")


@pytest.mark.parametrize(
    "make, phrase",
    [
        (lambda f: f.create_dataset("a", data=np.ones(8, "float32")), None),
        (lambda f: f.create_dataset("a", shape=(1024, 1024), dtype="float32"), "stores 0: never written"),
        (
            lambda f: f.create_dataset("a", shape=(8,), dtype="float32", external=[("/dev/zero", 0, 32)]),
            "kept",
        ),
        (lambda f: f.create_dataset("a", data=np.ones(300, "float32")), "declares 1200 bytes (1.17 KiB)"),
    ],
    ids=["small", "never-written", "external", "above-the-bound"],
)
def test_a_weights_file_of_keras_applications_is_checked_too(tmp_path, make, phrase):
    import h5py

    path = tmp_path / "w.weights.h5"
    with h5py.File(path, "w") as f:
        make(f)
    if phrase is None:
        model_files.check_weights_file(path, "--model", max_model_bytes=1000)
        return
    with pytest.raises(ValueError, match=re.escape(phrase)):
        model_files.check_weights_file(path, "--model", max_model_bytes=1000)


def _keras_state():
    from keras.src.backend.common import global_state

    recorded = global_state.get_global_attribute("uninitialized_variables")
    names = global_state.get_global_attribute("name_uid_map")
    return list(recorded or []), dict(names or {})


def test_a_config_of_a_billion_units_is_refused_before_anything_is_allocated(tmp_path, never_loaded):
    path = _billion_units(tmp_path)
    state = _keras_state()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for name, load in _loaders():
        with pytest.raises(ValueError) as info:
            load(path)
        message = _one_line(info)
        assert name in message and "its config's layers would create at least 40000000000 bytes" in message
        assert "above the bound of 4294967296 bytes" in message and "--max-model-bytes" in message
    # Counted in a stateless scope: the 40 GB kernel never existed, and Keras' records are as they were.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 512 * 1024  # KiB
    assert _keras_state() == state


def test_a_small_model_loads_and_the_bound_is_raised_by_the_argument_or_a_scope(tmp_path):
    path = _tiny(tmp_path / "tiny.keras")
    assert sources.load_model(path).count_params() == 55
    for load in (sources.load_model, load_teacher, load_frozen_model):
        with pytest.raises(ValueError, match="its weights file declares 220 bytes"):
            load(path, max_model_bytes=100)
        assert load(path, max_model_bytes="1KiB").count_params() == 55
    with model_files.max_model_bytes_scope(100), pytest.raises(ValueError, match="above the bound of 100"):
        sources.load_model(path)
    with model_files.max_model_bytes_scope(100):
        assert sources.load_model(path, max_model_bytes=220).count_params() == 55  # the argument wins
    assert model_files.model_bytes_bound() == model_files.MAX_MODEL_BYTES == 4 << 30


def test_the_config_alone_is_held_to_the_bound(tmp_path):
    """A config counted past the bound though its weights file is small (the weights check passes)."""
    path = _billion_units(tmp_path)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    total, error = model_files.config_variable_bytes(config, 1 << 50)  # no bound reached: counted whole
    assert (total, error) == (4_000_000_000 * 10 + 4_000_000_000, None)
    total, error = model_files.config_variable_bytes(config, 1000)
    assert total == 40_000_000_000 and type(error).__name__ == "_PastBound"


@pytest.mark.parametrize(
    "text, count",
    [(1, 1), ("4096", 4096), ("8GiB", 8 << 30), ("512 MiB", 512 << 20), ("1.5KiB", 1536), ("7b", 7)],
)
def test_the_bound_is_a_number_of_bytes_with_an_optional_unit(text, count):
    assert model_files.parse_bytes(text) == count


@pytest.mark.parametrize("bad", [0, -1, True, "8GB", "many", 1.5, None])
def test_a_bound_that_is_no_number_of_bytes_is_refused(bad):
    with pytest.raises(ValueError, match="`max_model_bytes` must be a positive number of bytes"):
        model_files.parse_bytes(bad)


def test_an_npz_declaring_a_hundred_million_images_is_one_line_before_reading(tmp_path, never_loaded):
    path = _declared_images(tmp_path)
    with pytest.raises(ValueError) as info:
        folders.load_labeled_images(path, name="--data")
    message = _one_line(info)
    assert f"`--data` {path!r}: its array 'x' declares shape (100000000, 32, 32, 3) of uint8" in message
    assert "(307200000000 bytes), but the file holds 0 bytes for it" in message


def test_an_npz_whose_header_matches_its_size_still_loads(tmp_path):
    path = tmp_path / "ok.npz"
    np.savez(path, x=np.zeros((4, 8, 8, 3), np.uint8), y=np.arange(4))
    x, y = folders.load_labeled_images(str(path), name="--data")
    assert x.shape == (4, 8, 8, 3) and list(y) == [0, 1, 2, 3]
    np.savez_compressed(path, x=np.zeros((4, 8, 8, 3), np.uint8), y=np.arange(4))
    assert folders.load_labeled_images(str(path), name="--data")[0].shape == (4, 8, 8, 3)


def test_a_filter_covariance_bank_declaring_more_than_it_holds_is_refused(tmp_path, never_loaded):
    from keras_structinit.covariance import bank_io

    path = _declared_images(tmp_path)  # any .npz: its header is read before its keys
    with pytest.raises(ValueError) as info:
        bank_io.load(path)
    assert "`path` " in _one_line(info) and "declares shape (100000000, 32, 32, 3)" in str(info.value)


def _png(path):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((4, 4, 3), 7, np.uint8)).save(path)
    return path


def _folder(tmp_path):
    root = tmp_path / "images"
    _png(root / "cat" / "a.png")
    _png(root / "dog" / "b.png")
    return root


@contextlib.contextmanager
def _no_hang(seconds=120):
    """Fails the test instead of hanging it if a FIFO blocks (the check never opens it)."""

    def stuck(*_):
        raise AssertionError("blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "link-out"])
def test_an_image_folder_reads_regular_files_only(tmp_path, kind):
    root = _folder(tmp_path)
    bad = root / "dog" / "c.png"
    if kind == "dev-zero":
        bad.symlink_to("/dev/zero")
        phrase = "is a link that leads out of the folder (to '/dev/zero'): not read"
    elif kind == "fifo":
        os.mkfifo(bad)
        phrase = "is a FIFO, not a regular file: not read"
    else:
        bad.symlink_to(_png(tmp_path / "elsewhere" / "c.png"))
        phrase = "is a link that leads out of the folder"
    for read in (folders.read_image_folder, folders.list_image_folder, folders.load_labeled_images):
        with _no_hang(), pytest.raises(ValueError) as info:
            read(str(root), "--data")
        message = _one_line(info)
        assert f"Image 'dog/c.png' in --data={str(root)!r} " in message and phrase in message


def test_a_device_or_a_fifo_is_refused_unopened_even_when_named_directly(tmp_path):
    with pytest.raises(ValueError, match="^'zero' is a character device, not a regular file: not read$"):
        check_image_file("/dev/zero", "/dev", "'zero'")
    os.mkfifo(tmp_path / "swapped.png")  # put where a checked file was: the read does not wait on it
    with _no_hang(), pytest.raises(ValueError, match="is a FIFO, not a regular file"):
        read_image_file(str(tmp_path / "swapped.png"), "'swapped.png'")


def test_links_inside_the_folder_are_read_and_a_link_to_a_folder_above_is_skipped(tmp_path):
    root = _folder(tmp_path)
    (root / "dog" / "c.png").symlink_to(root / "cat" / "a.png")
    (root / "dog" / "loop").symlink_to(root)  # a cycle: not walked again
    x, y, classes = folders.read_image_folder(str(root), "--data")
    assert classes == ["cat", "dog"] and list(y) == [0, 1, 1] and x.shape == (3, 4, 4, 3)
    (root / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    _png(tmp_path / "elsewhere" / "d.png")
    with pytest.raises(ValueError, match="Folder 'out' in --data=.* is a link that leads out of the folder"):
        folders.read_image_folder(str(root), "--data")


def test_an_image_file_above_the_cap_is_refused_in_a_folder_and_in_a_zip(tmp_path, monkeypatch):
    root = _folder(tmp_path)
    size = os.path.getsize(root / "cat" / "a.png")
    with pytest.raises(ValueError, match=f"holds {size} bytes, above the {size - 1} an image file may hold"):
        check_image_file(str(root / "cat" / "a.png"), str(root), "Image 'cat/a.png'", limit=size - 1)
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in root.rglob("*.png"):
            z.write(path, path.relative_to(root).as_posix())
    monkeypatch.setattr(folders, "MAX_IMAGE_FILE_BYTES", size - 1)
    with pytest.raises(ValueError, match=r"Image 'cat/a.png' in --data=.* holds \d+ bytes, above the"):
        folders.read_image_folder(str(archive), "--data")


# --- the command line: one line, exit 2 ----------------------------------------------------------


def _cli(argv, capsys):
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1, (status, err)
    return err


def test_the_command_line_refuses_them_in_one_line(tmp_path, capsys, never_loaded):
    unwritten, units = _never_written(tmp_path), _billion_units(tmp_path)
    out = str(tmp_path / "out.keras")
    err = _cli(["init", unwritten, "--init", "torch-default", "--out", out], capsys)
    assert f"`MODEL` {unwritten!r}: its weights dataset 'layers/dense/vars/0'" in err
    err = _cli(["inspect", units, "--out", str(tmp_path / "report")], capsys)
    assert f"`MODEL` {units!r}: its config's layers would create at least" in err
    err = _cli(["select", "--teacher", unwritten, "--student", "vit-tiny", "--out", out], capsys)
    assert f"`teacher` {unwritten!r}: its weights dataset" in err
    err = _cli(["select", "--teacher", units, "--student", "vit-tiny", "--plan"], capsys)
    assert "its config's layers would create at least" in err and "--max-model-bytes" in err
    data = _declared_images(tmp_path)
    run = str(tmp_path / "run")
    err = _cli(["train", "--model", "simple-cnn", "--epochs", "1", "--data", data, "--out", run], capsys)
    assert f"--data {data!r}: its array 'x' declares shape (100000000, 32, 32, 3)" in err
    assert not os.path.exists(out) and not os.path.exists(run)


def test_train_refuses_a_model_or_a_teacher_that_declares_too_much(tmp_path, capsys, monkeypatch):
    from test_cli import write_tiny_cifar

    units, data, run = _billion_units(tmp_path), write_tiny_cifar(tmp_path / "d.npz", 16, 0), tmp_path / "run"
    monkeypatch.setattr(keras.saving, "load_model", lambda *a, **k: pytest.fail("the file was loaded"))
    train = ["train", "--epochs", "1", "--batch-size", "8", "--data", data, "--out", str(run)]
    err = _cli([*train, "--model", units], capsys)
    assert f"--model {units!r}: its config's layers would create at least" in err
    err = _cli([*train, "--model", "simple-cnn", "--distill-from", units], capsys)
    assert f"{units!r}: its config's layers would create at least" in err
    assert not run.exists()


def test_a_student_file_is_checked_as_a_teacher_is(tmp_path, capsys):
    units = _billion_units(tmp_path)
    err = _cli(["select", "--teacher", _tiny(tmp_path / "t.keras"), "--student", units, "--plan"], capsys)
    assert f"{units!r}: its config's layers would create at least" in err


def test_max_model_bytes_raises_the_bound_on_the_command_line(tmp_path, capsys, monkeypatch):
    model = _tiny(tmp_path / "tiny.keras")
    monkeypatch.setattr(model_files, "MAX_MODEL_BYTES", 100)  # the tiny model's 220 bytes are above it
    out = tmp_path / "out.keras"
    argv = ["init", model, "--init", "torch-default", "--out", str(out)]
    assert "above the bound of 100 bytes" in _cli(argv, capsys)
    assert "above the bound of 200 bytes" in _cli([*argv, "--max-model-bytes", "200"], capsys)
    assert cli.main([*argv, "--max-model-bytes", "1KiB"]) == 0 and out.exists()
    with pytest.raises(SystemExit):  # argparse's own one line, exit 2
        cli.main([*argv, "--max-model-bytes", "lots"])
    assert "expected a positive number of bytes (e.g. 8GiB), got 'lots'" in capsys.readouterr().err
    assert model_files.model_bytes_bound() == 100  # the flag's scope ended with the command
