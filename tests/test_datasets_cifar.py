"""Tests of keras_structinit.datasets.cifar: the CIFAR loaders, the Keras cache and its safety, the
demo's data (NumPy + Pillow only, any backend; Keras only where its cache is faked).

What the loaders read at run time (``cifar10_reachable``, ``_CIFAR10_ARCHIVE_SHA256``) is patched
on :mod:`keras_structinit.datasets.cifar`, where they are looked up."""

import hashlib
import io
import os
import pickle
import tarfile
import tempfile
import zipfile

import numpy as np
import pytest
from test_datasets_folders import _make_tree, _zip_tree

from keras_structinit import datasets
from keras_structinit.datasets import cifar

from conftest import SHARED_CIFAR10_ZIP, once_per_suite


def test_class_names():
    names = datasets.cifar10_class_names()
    assert names == sorted(names) and len(names) == 10
    assert names[0] == "airplane" and names[-1] == "truck"


def test_load_cifar10_from_dir_and_zip(tmp_path):
    root = tmp_path / "images"
    x_expected, y_expected = _make_tree(root)
    zip_path = _zip_tree(root, tmp_path / "tree.zip", "train/")
    for source in (root, str(root), zip_path):
        (x, y), (x_val, y_val) = datasets.load_cifar10(source)
        assert x.dtype == np.uint8 and y.dtype == np.uint8
        np.testing.assert_array_equal(x, x_expected)
        np.testing.assert_array_equal(y, y_expected)
        assert x_val.shape == (0, 32, 32, 3) and y_val.shape == (0,)


@pytest.mark.parametrize("column", [False, True])
def test_load_cifar10_npz(tmp_path, column):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(20, 32, 32, 3), dtype=np.uint8)
    y = np.arange(20) % 10
    path = tmp_path / "data.npz"
    np.savez(path, x=x, y=y[:, None] if column else y)
    (x_out, y_out), (x_val, _) = datasets.load_cifar10(path)
    np.testing.assert_array_equal(x_out, x)
    np.testing.assert_array_equal(y_out, y)
    assert y_out.dtype == np.uint8 and y_out.shape == (20,) and len(x_val) == 0


def test_non_32x32_images_are_rejected(tmp_path):
    _make_tree(tmp_path / "big", size=40)
    x, _, _ = datasets.read_image_folder(tmp_path / "big")  # fine as a folder
    assert x.shape == (12, 40, 40, 3)
    with pytest.raises(ValueError, match="source"):
        datasets.load_cifar10(tmp_path / "big")
    zip_path = _zip_tree(tmp_path / "big", tmp_path / "big.zip")
    with pytest.raises(ValueError, match="32x32"):
        datasets.load_cifar10(zip_path)


@once_per_suite("NumPy and Pillow only")
def test_shared_cifar10_zip(shared_cifar10):  # the session fixture of conftest.py
    ((x, y), (x_val, y_val)), seconds = shared_cifar10
    print(f"loaded {SHARED_CIFAR10_ZIP.name} in {seconds:.1f} s")
    assert x.shape == (45000, 32, 32, 3) and x_val.shape == (5000, 32, 32, 3)
    assert x.dtype == np.uint8 and y.dtype == np.uint8 and y_val.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(y, minlength=10), [4500] * 10)
    np.testing.assert_array_equal(np.bincount(y_val, minlength=10), [500] * 10)
    assert 0.45 < x.mean() / 255 < 0.50
    # Colour statistics of CIFAR-10: blue is the darkest channel on average.
    channel_means = x.reshape(-1, 3).mean(axis=0)
    assert channel_means[2] < channel_means[0]


def test_shared_cifar10_class_order():
    if not SHARED_CIFAR10_ZIP.is_file():
        pytest.skip(f"shared CIFAR-10 zip not found at {SHARED_CIFAR10_ZIP}")
    with zipfile.ZipFile(SHARED_CIFAR10_ZIP) as archive:
        folders = {n.rstrip("/").split("/")[-2] for n in archive.namelist() if not n.endswith("/")}
    assert sorted(folders) == datasets.cifar10_class_names()


# -- load_cifar, load_demo_data ------------------------------------------------


def _labelled_npz(path, n=40, size=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
    x[:, 0, 0, 0] = np.arange(n)  # each image carries its index
    y = np.arange(n) % 4
    np.savez(path, x=x, y=y)
    return x, y


def test_load_cifar_sources_split_and_train_size(tmp_path):
    x, y = _labelled_npz(tmp_path / "d.npz", n=40, size=16)  # any image size
    for data in (str(tmp_path / "d.npz"), (x, y)):
        (xt, yt), (xv, yv) = datasets.load_cifar(data, validation_split=0.3, seed=1)
        assert len(xt) == 28 and len(xv) == 12 and yt.dtype == np.int32
        np.testing.assert_array_equal(np.bincount(yv), [3, 3, 3, 3])
        np.testing.assert_array_equal(yt, y[xt[:, 0, 0, 0]])
    (xs, ys), (xv2, _) = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=12)
    ids = xs[:, 0, 0, 0]
    assert len(xs) == 12 and np.all(np.diff(ids) > 0) and set(ids) <= set(xt[:, 0, 0, 0])
    np.testing.assert_array_equal(ys, y[ids])
    # The hold-out shrinks to the same fraction of the data used (issue 33): 12 * 0.3 / 0.7 = 5 images,
    # drawn per class from the same hold-out (3 per class here: round(3 * 5 / 12) = 1 of each class).
    vids = xv2[:, 0, 0, 0]
    assert len(xv2) == 4 and set(vids) <= set(xv[:, 0, 0, 0]) and not set(vids) & set(ids)
    np.testing.assert_array_equal(np.bincount(y[vids]), [1, 1, 1, 1])
    (xa, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=28)
    assert len(xa) == 28
    # The benchmarks keep one fixed evaluation set whatever the training size.
    (xf, _), (xvf, _) = datasets.load_cifar(
        (x, y), validation_split=0.3, seed=1, train_size=12, full_hold_out=True
    )
    np.testing.assert_array_equal(xf, xs)
    np.testing.assert_array_equal(xvf, xv)
    with pytest.raises(TypeError, match="full_hold_out"):
        datasets.load_cifar((x, y), validation_split=0.3, train_size=12, full_hold_out="yes")
    # More than the data holds is an error, never a silent cap.
    with pytest.raises(ValueError, match=r"at most the 28 training images .* Received: train_size=29"):
        datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=29)


def test_load_cifar_train_offset_gives_images_a_smaller_run_never_saw(tmp_path):
    """Maennel et al., App. A.1 step 2: the downstream set comes from the remainder of the upstream draw."""
    x, y = _labelled_npz(tmp_path / "d.npz", n=40, size=16)
    (up, _), (held, _) = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=12)
    (down, yd), (held_down, _) = datasets.load_cifar(
        (x, y), validation_split=0.3, seed=1, train_size=10, train_offset=12
    )
    (rest, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_offset=12)
    (whole, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1)
    up, down, rest = up[:, 0, 0, 0], down[:, 0, 0, 0], rest[:, 0, 0, 0]
    assert len(down) == 10 and not set(up) & set(down) and not set(up) & set(rest)
    assert set(up) | set(rest) == set(whole[:, 0, 0, 0]) and set(down) <= set(rest)
    assert not (set(held[:, 0, 0, 0]) | set(held_down[:, 0, 0, 0])) & (set(up) | set(rest))
    np.testing.assert_array_equal(yd, y[down])
    (zero, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=12, train_offset=0)
    np.testing.assert_array_equal(zero[:, 0, 0, 0], up)
    with pytest.raises(
        ValueError,
        match=r"`train_offset` \+ `train_size` must be at most the 28 .* "
        r"train_offset=20, train_size=9",
    ):
        datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=9, train_offset=20)
    with pytest.raises(ValueError, match="train_offset"):
        datasets.load_cifar((x, y), validation_split=0.3, train_offset=28)
    with pytest.raises(ValueError, match="train_offset"):
        datasets.load_cifar((x, y), train_offset=-1)
    with pytest.raises(TypeError, match="train_offset"):
        datasets.load_cifar((x, y), train_offset=2.0)


def test_load_cifar_bad_arguments(tmp_path):
    x, y = _labelled_npz(tmp_path / "d.npz")
    with pytest.raises(ValueError, match="dataset"):
        datasets.load_cifar((x, y), dataset="cifar1000")
    with pytest.raises(TypeError, match="dataset"):
        datasets.load_cifar((x, y), dataset=10)
    with pytest.raises(ValueError, match="train_size"):
        datasets.load_cifar((x, y), train_size=0)
    with pytest.raises(TypeError, match="validation_split"):
        datasets.load_cifar((x, y), validation_split="0.1")


def test_load_cifar_keras_cifar100(tmp_path, monkeypatch):
    import keras

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (20, 3, 32, 32), dtype=np.uint8)  # channels_first, as Keras may return
    y = (np.arange(20) % 100).reshape(-1, 1)
    monkeypatch.setattr(keras.datasets.cifar100, "load_data", lambda: ((x, y), (x[:2], y[:2])))
    (xt, yt), (xv, _) = datasets.load_cifar(None, "cifar100", validation_split=0.0)
    np.testing.assert_array_equal(xt, x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(yt, y[:, 0])
    assert yt.dtype == np.int32 and len(xv) == 0

    def offline():
        raise Exception("URL fetch failure")  # noqa: TRY002 - what keras.utils.get_file raises

    monkeypatch.setattr(keras.datasets.cifar100, "load_data", offline)
    with pytest.raises(RuntimeError, match="data=PATH"):
        datasets.load_cifar(None, "cifar100")


def test_load_demo_data_procedural_without_cifar(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no CIFAR-10 in this cache
    x, y, x_val, y_val, description = datasets.load_demo_data(None, 100, seed=0)
    assert "procedural" in description
    assert x.shape == (100, 32, 32, 3) and len(x_val) == 20 and len(y_val) == 20
    assert not np.array_equal(y, np.sort(y))  # random order
    with pytest.raises(TypeError, match="train_size"):
        datasets.load_demo_data(None, 10.0, seed=0)
    # Bounded before anything is generated (2,000,000 images would need ~24 GB).
    with pytest.raises(ValueError, match="at most 50000 .* Received: train_size=2000000"):
        datasets.load_demo_data(None, 2_000_000, seed=0)


def test_load_demo_data_downloads_cifar10_when_online(tmp_path, monkeypatch):
    """Issue 33: online, the demo fetches CIFAR-10 through keras.datasets; offline it says why not."""
    import keras

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert datasets.cifar10_reachable() is False  # STRUCTINIT_OFFLINE (set for the tests)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (200, 32, 32, 3), dtype=np.uint8)
    y = (np.arange(200) % 10).reshape(-1, 1).astype(np.uint8)
    calls = []

    def load_data():
        calls.append(1)
        return (x, y), (x[:10], y[:10])

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", load_data)
    monkeypatch.setattr(cifar, "cifar10_reachable", lambda timeout=3.0: True)
    xs, _, x_val, _, description = datasets.load_demo_data(None, 50, seed=0)
    assert calls and "CIFAR-10 training split from keras.datasets" in description
    assert len(xs) == 50 and len(x_val) == 20

    def failing():
        raise Exception("URL fetch failure")  # noqa: TRY002 - what keras.utils.get_file raises

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", failing)
    *_, description = datasets.load_demo_data(None, 50, seed=0)
    assert "procedural image set (the CIFAR-10 download failed: Could not load cifar10" in description
    monkeypatch.setattr(cifar, "cifar10_reachable", lambda timeout=3.0: False)
    *_, description = datasets.load_demo_data(None, 50, seed=0)
    assert "procedural image set (CIFAR-10 not found offline; pass --data PATH" in description


def test_load_demo_data_from_a_file_is_a_random_subset(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (100, 32, 32, 3), dtype=np.uint8)
    x[:, 0, 0, 0] = np.arange(100)
    np.savez(tmp_path / "c.npz", x=x, y=np.arange(100) % 10)
    xs, ys, x_val, _, description = datasets.load_demo_data(str(tmp_path / "c.npz"), 20, seed=0)
    assert "CIFAR-10" in description and len(xs) == 20 and len(x_val) == 10
    ids = xs[:, 0, 0, 0]
    assert not np.all(np.diff(ids.astype(int)) > 0)  # random order
    assert not set(ids) & set(x_val[:, 0, 0, 0])
    np.testing.assert_array_equal(ys, ids % 10)
    with pytest.raises(ValueError, match="at most the 90 training images"):
        datasets.load_demo_data(str(tmp_path / "c.npz"), 91, seed=0)


# -- Keras cache -------------------------------------------------------------


class _Payload:
    """Unpickling it creates ``marker``: stands for any code a planted pickle runs."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _cifar_batch_bytes(i, n=4, payload=None):
    rng = np.random.default_rng(i)
    batch = {
        b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
        b"labels": [int(v) for v in rng.integers(0, 10, size=n)],
        b"batch_label": b"training batch",
    }
    if payload is not None:
        batch[b"extra"] = payload
    return batch, pickle.dumps(batch, protocol=4)


def _fake_cifar_archive(datasets_dir, n=4, payload=None):
    """A cifar-10-python.tar.gz look-alike in the Keras cache; returns (its SHA-256, first batch)."""
    datasets_dir.mkdir(parents=True, exist_ok=True)
    archive = datasets_dir / "cifar-10-batches-py-target_archive"
    batches = [_cifar_batch_bytes(i, n, payload if i == 3 else None) for i in range(1, 6)]
    with tarfile.open(archive, "w:gz") as tar:
        for i, (_, data) in enumerate(batches, start=1):
            info = tarfile.TarInfo(f"cifar-10-batches-py/data_batch_{i}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(archive.read_bytes()).hexdigest(), batches[0][0]


def _plant_extracted_payload(datasets_dir, marker):
    folder = datasets_dir / "cifar-10-batches-py-target" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for i in range(1, 6):
        (folder / f"data_batch_{i}").write_bytes(pickle.dumps(_Payload(marker)))


def test_cifar10_cache_available(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert datasets.cifar10_cache_available() is False
    # Extracted batches are never read (anyone who can write the cache can plant them).
    _plant_extracted_payload(tmp_path / "datasets", tmp_path / "marker")
    assert datasets.cifar10_cache_available() is False
    (tmp_path / "datasets" / "cifar-10-batches-py-target_archive").write_bytes(b"")
    assert datasets.cifar10_cache_available() is True


def test_cifar10_cache_dir_falls_back_to_tmp(tmp_path, monkeypatch):
    # Like keras.utils.get_file: a home that is not writable (here: missing)
    # is replaced by <tmp>/.keras.
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "does-not-exist"))
    tmp = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    assert cifar._keras_datasets_dir() == os.path.join(tmp, ".keras", "datasets")
    assert isinstance(datasets.cifar10_cache_available(), bool)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert cifar._keras_datasets_dir() == str(tmp_path / "datasets")


def test_load_cifar10_from_a_verified_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    digest, first = _fake_cifar_archive(tmp_path / "datasets")
    monkeypatch.setattr(cifar, "_CIFAR10_ARCHIVE_SHA256", digest)
    (x, y), (x_val, _) = datasets.load_cifar10("keras")
    assert x.shape == (20, 32, 32, 3) and y.shape == (20,) and y.dtype == np.uint8
    np.testing.assert_array_equal(x[0, :, :, 0].reshape(-1), first[b"data"][0, :1024])
    np.testing.assert_array_equal(x[0, :, :, 2].reshape(-1), first[b"data"][0, 2048:])
    np.testing.assert_array_equal(y[:4], first[b"labels"])
    assert x_val.shape == (0, 32, 32, 3)


def _keras_offline(monkeypatch, calls):
    import keras

    def offline():
        calls.append("keras")
        raise Exception("URL fetch failure")  # noqa: TRY002 - what keras.utils.get_file raises

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", offline)


def test_planted_cifar10_cache_runs_no_code(tmp_path, monkeypatch):
    """Security: pickles planted in a shared Keras cache are never unpickled (issue 32)."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    marker = tmp_path / "marker"
    calls = []
    _keras_offline(monkeypatch, calls)
    # 1. Extracted batches that run code, no archive: left to Keras (which downloads).
    _plant_extracted_payload(tmp_path / "datasets", marker)
    with pytest.raises(RuntimeError, match="source=PATH"):
        datasets.load_cifar10()
    assert not marker.exists() and calls == ["keras"]
    # 2. A planted archive whose hash is not CIFAR-10's: not opened, left to Keras.
    _fake_cifar_archive(tmp_path / "datasets", payload=_Payload(marker))
    with pytest.raises(RuntimeError, match="source=PATH"):
        datasets.load_cifar10()
    assert not marker.exists() and calls == ["keras", "keras"]
    # 3. Even an archive that passed the hash check cannot name a callable.
    digest, _ = _fake_cifar_archive(tmp_path / "datasets", payload=_Payload(marker))
    monkeypatch.setattr(cifar, "_CIFAR10_ARCHIVE_SHA256", digest)
    with pytest.raises(pickle.UnpicklingError, match=r"refusing to load (io|builtins)\.open"):
        datasets.load_cifar10()
    assert not marker.exists()
    # 4. The demo, which looks at the cache first, runs nothing either.
    monkeypatch.setattr(cifar, "_CIFAR10_ARCHIVE_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="data=PATH"):
        datasets.load_demo_data(None, 10, seed=0)
    assert not marker.exists()


def test_keras_failure_is_wrapped(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    _keras_offline(monkeypatch, [])
    with pytest.raises(RuntimeError, match="source=PATH"):
        datasets.load_cifar10()
