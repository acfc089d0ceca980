"""Tests of keras_structinit.datasets.folders: ImageFolder trees (directories, zips), .npz files and
labelled arrays (NumPy + Pillow only, any backend). The image-tree helpers here serve the other
tests/test_datasets_*.py files too."""

import zipfile

import numpy as np
import pytest

from keras_structinit import datasets

from conftest import png_header

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
    with pytest.raises(ValueError, match="broken.png") as info:
        datasets.read_image_folder(root)
    # Issue 76: the message ended in "<_io.BytesIO object at 0x...>"; it says what is wrong instead.
    assert "<_io." not in str(info.value) and "not an image Pillow can read" in str(info.value)


def test_decompression_bomb_is_a_one_line_value_error(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("train/a/0.png", png_header(20000, 20000))
        zf.writestr("train/b/0.png", png_header(20000, 20000))
    with pytest.raises(ValueError, match=r"Could not decode image 'train/a/0.png' .*decompression bomb"):
        datasets.read_image_folder(str(path))


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
