"""Tests of keras_structinit.datasets (NumPy + Pillow only, any backend)."""

import hashlib
import io
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

import numpy as np
import pytest

from keras_structinit import datasets

from conftest import SHARED_CIFAR10_ZIP, once_per_suite, png_header

Image = pytest.importorskip("PIL.Image")

CLASSES = ["cat", "ant", "bee"]  # created unsorted on purpose
PER_CLASS = 4


def _pixels(label, index, size=32):
    """A distinct, deterministic RGB image for (class label, file index)."""
    rng = np.random.default_rng(100 * label + index)
    return rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)


def _make_tree(root, size=32, mode="RGB"):
    """<root>/<class>/<i>.png for CLASSES; returns the expected (x, y) in sorted order."""
    for name in CLASSES:
        label = sorted(CLASSES).index(name)
        (root / name).mkdir(parents=True)
        # Written in reverse so directory order differs from sorted order.
        for i in reversed(range(PER_CLASS)):
            image = Image.fromarray(_pixels(label, i, size))
            image.convert(mode).save(root / name / f"img_{i:02d}.png")
    (root / "README.txt").write_text("not an image")
    (root / "ant" / "notes.txt").write_text("ignored")
    x = np.stack([_pixels(k, i, size) for k in range(len(CLASSES)) for i in range(PER_CLASS)])
    y = np.repeat(np.arange(len(CLASSES)), PER_CLASS)
    return x, y


def _zip_tree(root, zip_path, prefix=""):
    with zipfile.ZipFile(zip_path, "w") as archive:
        for path in sorted(root.rglob("*"), reverse=True):
            rel = path.relative_to(root).as_posix()
            archive.write(path, prefix + rel)
    return zip_path


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "images"
    expected = _make_tree(root)
    return root, expected


def test_class_names():
    names = datasets.cifar10_class_names()
    assert names == sorted(names) and len(names) == 10
    assert names[0] == "airplane" and names[-1] == "truck"


def test_read_image_folder_directory(tree):
    root, (x_expected, y_expected) = tree
    x, y, class_names = datasets.read_image_folder(root)
    assert class_names == ["ant", "bee", "cat"]
    assert x.dtype == np.uint8 and x.shape == (12, 32, 32, 3)
    np.testing.assert_array_equal(x, x_expected)
    np.testing.assert_array_equal(y, y_expected)


@pytest.mark.parametrize("prefix", ["", "train/", "data/train/"])
def test_read_image_folder_zip(tree, tmp_path, prefix):
    root, (x_expected, y_expected) = tree
    zip_path = _zip_tree(root, tmp_path / "tree.zip", prefix)
    x, y, class_names = datasets.read_image_folder(str(zip_path))
    assert class_names == ["ant", "bee", "cat"]
    np.testing.assert_array_equal(x, x_expected)
    np.testing.assert_array_equal(y, y_expected)


def test_train_subdirectory_is_used(tmp_path):
    expected_x, expected_y = _make_tree(tmp_path / "root" / "train")
    # A sibling split folder is ignored in favour of train/.
    (tmp_path / "root" / "test" / "ant").mkdir(parents=True)
    Image.fromarray(_pixels(9, 9)).save(tmp_path / "root" / "test" / "ant" / "x.png")
    (x, y), (x_val, y_val) = datasets.load_cifar10(tmp_path / "root")
    np.testing.assert_array_equal(x, expected_x)
    np.testing.assert_array_equal(y, expected_y)
    assert y.dtype == np.uint8 and x_val.shape == (0, 32, 32, 3) and y_val.shape == (0,)


def test_grayscale_images_become_rgb(tmp_path):
    _make_tree(tmp_path / "gray", mode="L")
    x, _, _ = datasets.read_image_folder(tmp_path / "gray")
    assert x.shape == (12, 32, 32, 3)
    np.testing.assert_array_equal(x[..., 0], x[..., 2])


def test_load_cifar10_from_dir_and_zip(tree, tmp_path):
    root, (x_expected, y_expected) = tree
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


def test_npz_missing_arrays(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, images=np.zeros((2, 32, 32, 3), np.uint8))
    with pytest.raises(ValueError, match="'x' and 'y'"):
        datasets.load_cifar10(path)


def test_npz_pixels_must_be_uint8(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, x=np.zeros((2, 32, 32, 3), np.int64), y=np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="must be uint8"):
        datasets.load_cifar10(path)


@pytest.mark.parametrize("split", [0.1, 0.25, 0.5, 0.9])
def test_validation_split(tmp_path, split):
    counts = (10, 7, 3, 20)
    y = np.repeat(np.arange(len(counts)), counts)
    # Each image stores its own index in a pixel, to trace it through the split.
    ids = np.arange(len(y))
    x = np.zeros((len(y), 32, 32, 3), np.uint8)
    x[:, 0, 0, 0] = ids
    path = tmp_path / "data.npz"
    np.savez(path, x=x, y=y)

    def split_ids(seed):
        (xt, yt), (xv, yv) = datasets.load_cifar10(path, validation_split=split, seed=seed)
        tid, vid = xt[:, 0, 0, 0].astype(int), xv[:, 0, 0, 0].astype(int)
        np.testing.assert_array_equal(yt, y[tid])
        np.testing.assert_array_equal(yv, y[vid])
        return tid, vid

    train, val = split_ids(0)
    for k, n in enumerate(counts):
        assert np.sum(y[val] == k) == round(split * n)
        assert np.sum(y[train] == k) == n - round(split * n)
    assert not set(train) & set(val)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, val])), ids)
    assert np.all(np.diff(train) > 0) and np.all(np.diff(val) > 0)  # source order
    again_train, again_val = split_ids(0)
    np.testing.assert_array_equal(again_val, val)
    np.testing.assert_array_equal(again_train, train)
    others = [split_ids(seed)[1] for seed in (1, 2, 3)]
    assert any(not np.array_equal(other, val) for other in others)


def test_stratified_split_zero():
    train, val = datasets.stratified_split(np.array([0, 1, 1]), 0.0)
    np.testing.assert_array_equal(train, [0, 1, 2])
    assert val.shape == (0,)


@pytest.mark.parametrize(
    "split, error",
    [(1.0, ValueError), (-0.1, ValueError), (float("nan"), ValueError), (1.5, ValueError),
     ("a", TypeError), (None, TypeError), (True, TypeError)],
)
def test_bad_validation_split(tree, split, error):
    root, _ = tree
    with pytest.raises(error, match="validation_split"):
        datasets.load_cifar10(root, validation_split=split)


def test_bad_sources(tmp_path):
    with pytest.raises(FileNotFoundError, match="source"):
        datasets.load_cifar10(tmp_path / "missing.zip")
    with pytest.raises(FileNotFoundError, match="source"):
        datasets.read_image_folder(tmp_path / "missing")
    other = tmp_path / "data.csv"
    other.write_text("1,2,3")
    with pytest.raises(ValueError, match="source"):
        datasets.load_cifar10(other)
    with pytest.raises(ValueError, match="source"):
        datasets.read_image_folder(other)
    with pytest.raises(TypeError, match="source"):
        datasets.load_cifar10(123)
    with pytest.raises(TypeError, match="source"):
        datasets.read_image_folder(["a"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="source"):
        datasets.load_cifar10(tmp_path / "empty")


def test_non_32x32_images_are_rejected(tmp_path):
    _make_tree(tmp_path / "big", size=40)
    x, _, _ = datasets.read_image_folder(tmp_path / "big")  # fine as a folder
    assert x.shape == (12, 40, 40, 3)
    with pytest.raises(ValueError, match="source"):
        datasets.load_cifar10(tmp_path / "big")
    zip_path = _zip_tree(tmp_path / "big", tmp_path / "big.zip")
    with pytest.raises(ValueError, match="32x32"):
        datasets.load_cifar10(zip_path)


def test_mixed_sizes_are_rejected(tree):
    root, _ = tree
    Image.fromarray(_pixels(0, 0, 31)).save(root / "bee" / "odd.png")
    with pytest.raises(ValueError, match="differ in size"):
        datasets.read_image_folder(root)


def test_ambiguous_layout_is_rejected(tree):
    root, _ = tree
    (root / "cat" / "nested").mkdir()
    Image.fromarray(_pixels(0, 0)).save(root / "cat" / "nested" / "x.png")
    with pytest.raises(ValueError, match="source"):
        datasets.read_image_folder(root)


def test_undecodable_image(tree):
    root, _ = tree
    (root / "ant" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="broken.png"):
        datasets.read_image_folder(root)


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


# -- load_labeled_images, load_cifar, load_demo_data -------------------------


def _labelled_npz(path, n=40, size=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
    x[:, 0, 0, 0] = np.arange(n)  # each image carries its index
    y = np.arange(n) % 4
    np.savez(path, x=x, y=y)
    return x, y


def test_load_labeled_images_reads_and_checks(tree, tmp_path):
    root, (x_expected, y_expected) = tree
    x, y = datasets.load_labeled_images(root)
    np.testing.assert_array_equal(x, x_expected)
    np.testing.assert_array_equal(y, y_expected)
    assert y.dtype == np.int32
    with pytest.raises(ValueError, match="`data` labels"):
        datasets.load_labeled_images((x, y.astype("float32")), name="data")
    with pytest.raises(ValueError, match="`data` images must be uint8"):
        datasets.load_labeled_images((x[..., :1], y), name="data")
    with pytest.raises(TypeError, match="`data` must be a path"):
        datasets.load_labeled_images([x, y], name="data")
    with pytest.raises(FileNotFoundError, match="data"):
        datasets.load_labeled_images(tmp_path / "missing.npz", name="data")


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
    (xf, _), (xvf, _) = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=12,
                                            full_hold_out=True)
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
    (down, yd), (held_down, _) = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=10,
                                                     train_offset=12)
    (rest, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_offset=12)
    (whole, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1)
    up, down, rest = up[:, 0, 0, 0], down[:, 0, 0, 0], rest[:, 0, 0, 0]
    assert len(down) == 10 and not set(up) & set(down) and not set(up) & set(rest)
    assert set(up) | set(rest) == set(whole[:, 0, 0, 0]) and set(down) <= set(rest)
    assert not (set(held[:, 0, 0, 0]) | set(held_down[:, 0, 0, 0])) & (set(up) | set(rest))
    np.testing.assert_array_equal(yd, y[down])
    (zero, _), _ = datasets.load_cifar((x, y), validation_split=0.3, seed=1, train_size=12, train_offset=0)
    np.testing.assert_array_equal(zero[:, 0, 0, 0], up)
    with pytest.raises(ValueError, match=r"`train_offset` \+ `train_size` must be at most the 28 .* "
                                         r"train_offset=20, train_size=9"):
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


def test_recipes_load_cifar_data_is_load_cifar():
    from keras_structinit import recipes

    assert recipes.load_cifar_data is datasets.load_cifar


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
    monkeypatch.setattr(datasets, "cifar10_reachable", lambda timeout=3.0: True)
    xs, _, x_val, _, description = datasets.load_demo_data(None, 50, seed=0)
    assert calls and "CIFAR-10 training split from keras.datasets" in description
    assert len(xs) == 50 and len(x_val) == 20

    def failing():
        raise Exception("URL fetch failure")  # noqa: TRY002 - what keras.utils.get_file raises

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", failing)
    *_, description = datasets.load_demo_data(None, 50, seed=0)
    assert "procedural image set (the CIFAR-10 download failed: Could not load cifar10" in description
    monkeypatch.setattr(datasets, "cifar10_reachable", lambda timeout=3.0: False)
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


def test_importing_datasets_imports_no_keras():
    code = "import sys, keras_structinit.datasets; assert 'keras' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


# -- Keras cache -------------------------------------------------------------


def test_decompression_bomb_is_a_one_line_value_error(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("train/a/0.png", png_header(20000, 20000))
        zf.writestr("train/b/0.png", png_header(20000, 20000))
    with pytest.raises(ValueError, match=r"Could not decode image 'train/a/0.png' .*decompression bomb"):
        datasets.read_image_folder(str(path))


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
    assert datasets._keras_datasets_dir() == os.path.join(tmp, ".keras", "datasets")
    assert isinstance(datasets.cifar10_cache_available(), bool)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert datasets._keras_datasets_dir() == str(tmp_path / "datasets")


def test_load_cifar10_from_a_verified_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    digest, first = _fake_cifar_archive(tmp_path / "datasets")
    monkeypatch.setattr(datasets, "_CIFAR10_ARCHIVE_SHA256", digest)
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
    monkeypatch.setattr(datasets, "_CIFAR10_ARCHIVE_SHA256", digest)
    with pytest.raises(pickle.UnpicklingError, match=r"refusing to load (io|builtins)\.open"):
        datasets.load_cifar10()
    assert not marker.exists()
    # 4. The demo, which looks at the cache first, runs nothing either.
    monkeypatch.setattr(datasets, "_CIFAR10_ARCHIVE_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="data=PATH"):
        datasets.load_demo_data(None, 10, seed=0)
    assert not marker.exists()


def test_keras_failure_is_wrapped(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    _keras_offline(monkeypatch, [])
    with pytest.raises(RuntimeError, match="source=PATH"):
        datasets.load_cifar10()


# -- Procedural images -------------------------------------------------------


def test_procedural_images_basics():
    start = time.perf_counter()
    x, y = datasets.procedural_images(10000, seed=3)
    elapsed = time.perf_counter() - start
    assert x.shape == (10000, 32, 32, 3) and x.dtype == np.uint8
    assert y.shape == (10000,) and y.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(y), [1000] * 10)
    assert elapsed < 10  # about 0.7 s on 2 busy cores; generous for CI
    x2, y2 = datasets.procedural_images(10000, seed=3)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    x3, _ = datasets.procedural_images(10000, seed=4)
    assert not np.array_equal(x, x3)


@pytest.mark.parametrize("size, classes, n", [(16, 12, 25), (48, 3, 7), (1, 1, 1)])
def test_procedural_images_shapes(size, classes, n):
    x, y = datasets.procedural_images(n, image_size=size, num_classes=classes, seed=0)
    assert x.shape == (n, size, size, 3) and y.shape == (n,)
    counts = np.bincount(y, minlength=classes)
    assert counts.max() - counts.min() <= 1 and y.max() < classes


def test_procedural_images_not_separable_by_colour():
    x, y = datasets.procedural_images(4000, seed=0)
    x = x.astype(np.float64)
    for stat in (x.mean(axis=(1, 2, 3)), x.std(axis=(1, 2, 3)), x.mean(axis=(1, 2))[:, 0]):
        class_means = np.array([stat[y == k].mean() for k in range(10)])
        within = np.mean([stat[y == k].std() for k in range(10)])
        assert class_means.std() < 0.25 * within, (class_means, within)


def test_procedural_images_have_spatial_structure():
    # Each class differs from the others in its mean power spectrum.
    x, y = datasets.procedural_images(2000, seed=0)
    gray = x.astype(np.float64).mean(axis=-1)
    gray -= gray.mean(axis=(1, 2), keepdims=True)
    power = np.abs(np.fft.fft2(gray)) ** 2
    spectra = np.stack([power[y == k].mean(axis=0).ravel() for k in range(10)])
    spectra /= np.linalg.norm(spectra, axis=1, keepdims=True)
    similarity = spectra @ spectra.T
    off_diagonal = similarity[~np.eye(10, dtype=bool)]
    assert off_diagonal.max() < 0.95


@pytest.mark.parametrize(
    "kwargs, name, error",
    [
        ({"num_samples": 0}, "num_samples", ValueError),
        ({"num_samples": 2.0}, "num_samples", TypeError),
        ({"num_samples": True}, "num_samples", TypeError),
        ({"num_samples": 4, "image_size": 0}, "image_size", ValueError),
        ({"num_samples": 4, "image_size": "32"}, "image_size", TypeError),
        ({"num_samples": 4, "num_classes": 0}, "num_classes", ValueError),
        ({"num_samples": 4, "num_classes": 13}, "num_classes", ValueError),
    ],
)
def test_procedural_images_bad_arguments(kwargs, name, error):
    with pytest.raises(error, match=name):
        datasets.procedural_images(**kwargs)
