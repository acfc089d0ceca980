"""Labelled image datasets as NumPy arrays: every reader of the package.

* :func:`load_labeled_images` reads ``(x, y)`` from an ``.npz``, an image
  folder or a ``.zip`` of one, or checks a tuple of arrays.
* :func:`load_cifar` (CIFAR-10/100, any source, for the recipes) and
  :func:`load_cifar10` (strictly 32x32 CIFAR-10) add the Keras cache
  (``keras.datasets``) and a stratified validation hold-out
  (:func:`stratified_split`).
* :func:`load_demo_data` is CIFAR-10 when available, else
  :func:`procedural_images`, a labelled texture set that needs no download.
* :func:`read_image_folder` decodes any ``<class>/<image>`` tree (directory or
  zip) into ``(x, y, class_names)``.

Everything here is NumPy (plus Pillow for decoding images); no backend is
imported, and ``keras`` only when the Keras cache is used.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import socket
import tarfile
import tempfile
import zipfile

import numpy as np

from keras_structinit import validation
from keras_structinit.io_utils import check_zip_sizes, file_sha256

__all__ = [
    "CIFAR_DATASETS",
    "IMAGE_EXTENSIONS",
    "MAX_CLASSES",
    "MAX_IMAGE_PIXELS",
    "PROCEDURAL_CLASS_NAMES",
    "PROCEDURAL_DESCRIPTION",
    "PROCEDURAL_MAX_TRAIN_SIZE",
    "arrays_digest",
    "cifar10_cache_available",
    "cifar10_reachable",
    "cifar10_class_names",
    "load_cifar",
    "load_cifar10",
    "load_demo_data",
    "load_labeled_images",
    "procedural_images",
    "read_image_folder",
    "rgb_image",
    "source_digest",
    "stratified_split",
]

CIFAR_DATASETS = ("cifar10", "cifar100")

_CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
_CIFAR10_SHAPE = (32, 32, 3)
# The most procedural training images load_demo_data generates (CIFAR-10's 50,000).
PROCEDURAL_MAX_TRAIN_SIZE = 50_000
#: How a description of the embedded procedural images begins.
PROCEDURAL_DESCRIPTION = "the embedded procedural image set"
# keras.datasets.cifar10 downloads its archive to "<name>_archive" in the cache's datasets folder.
_CIFAR10_CACHE_NAME = "cifar-10-batches-py-target"
# SHA-256 of cifar-10-python.tar.gz, the value keras.datasets.cifar10.load_data checks.
_CIFAR10_ARCHIVE_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
_CIFAR10_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))

IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png", ".ppm", ".tif", ".tiff", ".webp")
#: The most pixels (width x height) of an image read whole into an array (:func:`read_image_folder`,
#: an ``.npz``'s ``x``): the CIFAR recipes train at the images' own size, and a 4000 x 4000 set of them
#: filled the memory. Larger images are refused before they are decoded; the ImageNet recipe, which
#: resizes each image as it reads it, takes them.
MAX_IMAGE_PIXELS = 1024 * 1024
#: Labels are class indices below this: a label of 10**6 would ask for a model, and one-hot tables,
#: of a million classes (``np.eye(classes)`` alone holds ``classes ** 2`` floats: 400 MB at this cap).
MAX_CLASSES = 10_000
# Folder names treated as dataset splits: ``<root>/train/<class>/...`` is read
# from ``train`` when the root holds nothing but split folders.
_SPLIT_NAMES = ("test", "train", "val", "valid", "validation")


def cifar10_class_names():
    """The 10 CIFAR-10 class names, in label order (which is also sorted order)."""
    return list(_CIFAR10_CLASSES)


# --------------------------------------------------------------------------
# Keras cache
# --------------------------------------------------------------------------


def _keras_datasets_dir():
    """The ``datasets`` folder ``keras.utils.get_file`` would use right now.

    Mirrors Keras 3: the home is ``$KERAS_HOME`` or ``~/.keras`` (``/tmp/.keras``
    when ``~`` is not writable); ``get_file`` switches to ``/tmp/.keras`` (or the
    system temp dir) when that home is not writable. Unlike Keras, which reads
    ``KERAS_HOME`` once at import, the environment is read on every call.
    """
    if "KERAS_HOME" in os.environ:
        home = os.environ.get("KERAS_HOME")
    else:
        base = os.path.expanduser("~")
        if not os.access(base, os.W_OK):
            base = "/tmp"
        home = os.path.join(base, ".keras")
    home = os.path.expanduser(home)
    if not os.access(home, os.W_OK):
        tmp = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
        home = os.path.join(tmp, ".keras")
    return os.path.join(home, "datasets")


def _cifar10_archive():
    return os.path.join(_keras_datasets_dir(), _CIFAR10_CACHE_NAME + "_archive")


def cifar10_cache_available():
    """Whether CIFAR-10 can be loaded from the Keras cache without a download.

    True when the archive that ``keras.datasets.cifar10.load_data()`` downloads
    (``<keras home>/datasets/cifar-10-batches-py-target_archive``) exists. Its
    SHA-256 is checked when it is read; one that does not match is downloaded
    again by Keras. The extracted batches beside it are never read: anyone who
    can write to the cache can write them (see :func:`_read_cifar10_archive`).
    """
    return os.path.isfile(_cifar10_archive())


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles plain containers and NumPy arrays only; any other global is refused.

    The CIFAR-10 batches are pickled dicts of bytes, lists of ints and one
    uint8 array. Pickle runs whatever callable a file names (``os.system``
    included); this reader resolves only the three names an array needs.
    """

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"): np.ndarray(0).__reduce__()[0],
        ("numpy._core.multiarray", "_reconstruct"): np.ndarray(0).__reduce__()[0],
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }

    def find_class(self, module, name):
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to load {module}.{name}: a CIFAR-10 batch holds only arrays, lists and bytes"
            ) from None


def _read_cifar10_archive(path):
    """Training batches of the CIFAR-10 python archive at ``path``, NHWC; ``None`` if its hash differs.

    The archive is read in memory (nothing is extracted) once its SHA-256
    equals the published one, and each batch goes through
    :class:`_ArrayUnpickler`: a planted file runs no code.
    """
    if file_sha256(path) != _CIFAR10_ARCHIVE_SHA256:
        return None
    xs, ys = [], []
    with tarfile.open(path, "r:gz") as archive:
        for name in _CIFAR10_BATCHES:
            member = archive.extractfile(f"cifar-10-batches-py/{name}")
            batch = _ArrayUnpickler(io.BytesIO(member.read()), encoding="bytes").load()
            data = np.asarray(batch[b"data"])
            if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
                raise ValueError(f"{path}: {name} is not a CIFAR-10 batch (data {data.dtype} {data.shape})")
            xs.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            ys.append(np.asarray(batch[b"labels"], dtype=np.uint8).reshape(-1))
    return np.concatenate(xs), np.concatenate(ys)


def _load_keras_cifar(dataset, name):
    """``(x, y)`` of a ``keras.datasets`` CIFAR training split.

    CIFAR-10 is read from its cached archive when that matches the published
    hash (faster than Keras, which extracts it again and reads the test split
    too); otherwise, and for CIFAR-100, through ``keras.datasets``, which checks
    the hash and downloads again when it differs.
    """
    if dataset == "cifar10" and cifar10_cache_available():
        arrays = _read_cifar10_archive(_cifar10_archive())
        if arrays is not None:
            return arrays
    import keras

    try:
        (x, y), _ = getattr(keras.datasets, dataset).load_data()
    except Exception as err:
        raise RuntimeError(
            f"Could not load {dataset} through keras.datasets.{dataset}.load_data() "
            f"(is the machine offline?): {err}. Pass a local copy instead, e.g. "
            f"{name}=PATH with PATH a directory or .zip of <class>/<image> files "
            "or an .npz with arrays 'x' and 'y'."
        ) from err
    x = np.asarray(x, dtype=np.uint8)
    if x.shape[1:] == (3, 32, 32):  # image_data_format() == "channels_first"
        x = x.transpose(0, 2, 3, 1)
    return x, y


# --------------------------------------------------------------------------
# Image folders (directory or zip)
# --------------------------------------------------------------------------


def _import_pil():
    try:
        from PIL import Image
    except ImportError as err:  # pragma: no cover - pillow is a test dependency
        raise ImportError(
            "Reading image files needs Pillow: `pip install pillow`."
        ) from err
    return Image


def _is_image(rel_path):
    parts = rel_path.split("/")
    if any(p.startswith(".") or p == "__MACOSX" for p in parts):
        return False
    return parts[-1].lower().endswith(IMAGE_EXTENSIONS)


def _group_by_class(rel_paths, source, name):
    """Resolves ``<prefix>/<class>/<file>`` paths to ``(class_names, files)``.

    ``files`` is a list of ``(relative path, label)`` in class order, then file
    name order. All images must share one ``<prefix>``, except that a
    ``train`` prefix wins over sibling split folders (``test``, ``val``...).
    """
    groups = {}
    for rel in rel_paths:
        parts = rel.split("/")
        if len(parts) < 2:
            continue  # a file at the top level belongs to no class
        prefix = "/".join(parts[:-2])
        groups.setdefault(prefix, {}).setdefault(parts[-2], []).append(rel)
    if not groups:
        raise ValueError(
            f"No images found in the form <class>/<image> under {name}={source!r} "
            f"(image extensions: {', '.join(IMAGE_EXTENSIONS)})."
        )
    if len(groups) > 1:
        leaves = {p: p.rsplit("/", 1)[-1].lower() for p in groups}
        train = [p for p, leaf in leaves.items() if leaf == "train"]
        parents = {p.rsplit("/", 1)[0] if "/" in p else "" for p in groups}
        if not (
            len(train) == 1
            and len(parents) == 1
            and all(leaf in _SPLIT_NAMES for leaf in leaves.values())
        ):
            raise ValueError(
                f"Ambiguous image folder layout in {name}={source!r}: images are "
                f"found as <prefix>/<class>/<image> under several prefixes "
                f"{sorted(groups)}; expected a single one (or a 'train' folder "
                f"beside other split folders)."
            )
        groups = {train[0]: groups[train[0]]}
    (classes,) = groups.values()
    class_names = sorted(classes)
    files = [
        (rel, label)
        for label, class_name in enumerate(class_names)
        for rel in sorted(classes[class_name])
    ]
    return class_names, files


_SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N")


def rgb_image(image, where):
    """A Pillow ``image`` as an RGB image of 8-bit channels.

    16-bit grayscale (PNG, TIFF: modes ``I;16*``) is scaled to 0-255 (``round(v * 255 / 65535)``);
    Pillow's own ``convert("RGB")`` clips it, so that most pixels read as white. 32-bit integer and
    floating-point images (modes ``I`` and ``F``), whose range nothing states, are refused with a
    ``ValueError`` naming ``where`` (the image and the argument).
    """
    mode = image.mode
    if mode in _SIXTEEN_BIT:
        wide = np.asarray(image).astype(np.uint32)
        gray = ((wide * 255 + 32767) // 65535).astype(np.uint8)
        return _import_pil().fromarray(gray, "L").convert("RGB")
    if mode in ("I", "F"):
        kind = "32-bit integer" if mode == "I" else "floating-point"
        raise ValueError(f"{where} holds {kind} pixels (Pillow mode {mode}), of no stated range: convert "
                         "it to 8-bit (or 16-bit) RGB or grayscale first")
    return image if mode == "RGB" else image.convert("RGB")


def _check_pixels(width, height, where):
    if width * height > MAX_IMAGE_PIXELS:
        side = int(MAX_IMAGE_PIXELS ** 0.5)
        raise ValueError(
            f"{where} is {width}x{height} pixels, above the {side}x{side} that images read whole into "
            "memory may hold (the CIFAR recipes train at the images' own size): resize them first, or "
            "train with the imagenet recipe on an ImageFolder directory, which resizes each image as it "
            "reads it")


def _decode_all(files, read_bytes, source, name):
    """Decodes ``files`` to one uint8 array (N, H, W, 3); all sizes must agree.

    Each image's size is read from its header first: one above :data:`MAX_IMAGE_PIXELS` is
    refused before it is decoded. Serial on purpose: for small images most of the time goes to
    Pillow's Python-level header parsing, and decoding from a thread pool was measured
    slower (about 6 s instead of 4.5 s for 50,000 CIFAR JPEGs on 2 cores).
    """
    Image = _import_pil()
    x = None
    for i, (rel, _) in enumerate(files):
        where = f"Image {rel!r} in {name}={source!r}"
        try:
            with Image.open(io.BytesIO(read_bytes(rel))) as image:
                _check_pixels(*image.size, where)
                pixels = np.asarray(rgb_image(image, where))
        except (OSError, Image.DecompressionBombError) as err:  # the bomb: > 2x Pillow's pixel limit
            raise ValueError(
                f"Could not decode image {rel!r} in {name}={source!r}: {err}"
            ) from err
        if x is None:
            x = np.empty((len(files),) + pixels.shape, dtype=np.uint8)
        elif pixels.shape != x.shape[1:]:
            raise ValueError(
                f"Images in {name}={source!r} differ in size: {rel!r} is "
                f"{pixels.shape[1]}x{pixels.shape[0]} but {files[0][0]!r} is "
                f"{x.shape[2]}x{x.shape[1]} (width x height). Resize them first."
            )
        x[i] = pixels
    return x


def _list_directory(path, source, name):
    rel_paths = []
    for folder, dirs, names in os.walk(path, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel_folder = os.path.relpath(folder, path)
        for file_name in names:
            rel = file_name if rel_folder == "." else os.path.join(rel_folder, file_name)
            rel = rel.replace(os.sep, "/")
            if _is_image(rel):
                rel_paths.append(rel)
    return _group_by_class(rel_paths, source, name)


def list_image_folder(source, name="source"):
    """The files of an image-classification directory, not decoded: ``(paths, labels, class_names)``.

    The layout, order and class names are those of :func:`read_image_folder`; images may differ
    in size. For a stream that decodes each image when it needs it (the ImageNet recipe's).
    """
    path = validation.path(source, name)
    if not os.path.isdir(path):
        raise ValueError(f"`{name}` must be a directory of <class>/<image> files. "
                         f"Received: {name}={source!r}")
    class_names, files = _list_directory(path, source, name)
    paths = [os.path.join(path, *rel.split("/")) for rel, _ in files]
    labels = np.fromiter((label for _, label in files), dtype=np.int64, count=len(files))
    return paths, labels, class_names


def read_image_folder(source, name="source"):
    """Decodes an image-classification folder (directory or ``.zip``) to arrays.

    The layout is ``<root>/<class>/<image>``; a root holding only split
    folders (``train/``, ``test/``, ``val/``...) is read from its ``train/``.
    In a zip, the class folders are the parents of the image files, under a
    common prefix. Classes are the sorted class folder names (as in
    ``keras.utils.image_dataset_from_directory``) and images are ordered by
    class, then by file name. Hidden files and non-image files are ignored.
    Images are converted to RGB and must all have the same size. Zips are
    read in place (nothing is extracted).

    Args:
        source: path of the directory or ``.zip`` file.
        name: what error messages call ``source`` (e.g. ``"--data"``).

    Returns:
        ``(x, y, class_names)``: uint8 ``(N, H, W, 3)`` images, int64 labels
        ``(N,)`` indexing the list ``class_names``.
    """
    path = validation.path(source, name)
    if os.path.isdir(path):
        class_names, files = _list_directory(path, source, name)

        def read_bytes(rel):
            with open(os.path.join(path, *rel.split("/")), "rb") as f:
                return f.read()

        x = _decode_all(files, read_bytes, source, name)
    elif os.path.isfile(path) and zipfile.is_zipfile(path):
        check_zip_sizes(path, name, json_members=())  # read whole below: a bomb is refused unread
        with zipfile.ZipFile(path) as archive:
            rel_paths = [
                info.filename
                for info in archive.infolist()
                if not info.is_dir() and _is_image(info.filename)
            ]
            class_names, files = _group_by_class(rel_paths, source, name)
            # Reading all members first, then decoding, measured ~8% faster
            # than interleaving the two.
            contents = {rel: archive.read(rel) for rel, _ in files}
        x = _decode_all(files, contents.__getitem__, source, name)
    elif not os.path.exists(path):
        raise FileNotFoundError(f"`{name}` does not exist: {name}={source!r}")
    elif path.lower().endswith(".zip"):
        raise ValueError(f"`{name}` is not a valid zip file: {name}={source!r}")
    else:
        raise ValueError(
            f"`{name}` must be a directory or a .zip file of <class>/<image> "
            f"files. Received: {name}={source!r}"
        )
    y = np.fromiter((label for _, label in files), dtype=np.int64, count=len(files))
    return x, y, class_names


# --------------------------------------------------------------------------
# Labelled arrays
# --------------------------------------------------------------------------


def _npz_shape(path, key):
    """The shape an ``.npz``'s array ``key`` declares in its header (``None`` where it cannot be read
    so: ``np.load`` then says what is wrong)."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(f"{key}.npy") as f:
            version = np.lib.format.read_magic(f)
            reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            return reader(f)[0]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError):
        return None


def _read_npz(path, name):
    shape = _npz_shape(path, "x")
    if shape is not None and len(shape) == 4:
        _check_pixels(shape[2], shape[1], f"The images x in {name}={path!r}")  # before they are read
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in ("x", "y") if k not in data.files]
        if missing:
            raise ValueError(
                f"The .npz `{name}` must hold arrays 'x' and 'y'; missing {missing} "
                f"in {name}={path!r} (found {data.files})."
            )
        return data["x"], data["y"]


def _checked(x, y, name):
    """``(x, y)`` as uint8 ``(N, H, W, 3)`` images and int32 ``(N,)`` labels, or a ``ValueError``."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[-1] != 3:
        raise ValueError(
            f"`{name}` images must be uint8 pixels (0-255) of shape (N, H, W, 3); convert "
            f"them explicitly. Received: dtype={x.dtype}, shape={x.shape}"
        )
    if (
        not np.issubdtype(y.dtype, np.integer)
        or y.ndim not in (1, 2)
        or (y.ndim == 2 and y.shape[1] != 1)
        or len(y) != len(x)
    ):
        raise ValueError(
            f"`{name}` labels must be integers of shape (N,) or (N, 1) for the N={len(x)} "
            f"images. Received: dtype={y.dtype}, shape={y.shape}"
        )
    if y.size and (y.min() < 0 or y.max() >= MAX_CLASSES):  # before int32 could wrap 2**32 + 3 to 3
        raise ValueError(
            f"`{name}` labels must be class indices in [0, {MAX_CLASSES}). Received: "
            f"labels in [{int(y.min())}, {int(y.max())}]"
        )
    return x, y.reshape(-1).astype(np.int32)


def load_labeled_images(source, name="eval_data"):
    """Reads (or checks) a labelled image set.

    Args:
        source: a tuple ``(x, y)`` of arrays, or a path: an ``.npz`` with arrays
            ``x`` and ``y``, or an image folder (directory or ``.zip``, see
            :func:`read_image_folder`; images must share one size).
        name: the argument name that error messages give.

    Returns:
        ``(x, y)``: uint8 images ``(N, H, W, 3)`` and int32 labels ``(N,)``.
    """
    if isinstance(source, tuple) and len(source) == 2:
        x, y = source
    elif isinstance(source, (str, os.PathLike)):
        path = validation.path(source, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"`{name}` does not exist: {name}={source!r}")
        if os.path.isfile(path) and path.lower().endswith(".npz"):
            x, y = _read_npz(path, name)
        else:
            x, y, _ = read_image_folder(path, name)
    else:
        raise TypeError(
            f"`{name}` must be a path (an .npz with uint8 x and integer y, or an ImageFolder "
            f"directory/.zip) or a tuple (x, y) of arrays. Received: {name}={source!r} "
            f"of type {type(source).__name__}"
        )
    return _checked(x, y, name)


def arrays_digest(*arrays):
    """The SHA-256 (hex) of ``arrays`` in order: each one's dtype, shape and bytes (``None`` counts
    as absent). A run records it to refuse a resume on other data."""
    digest = hashlib.sha256()
    for array in arrays:
        if array is None:
            digest.update(b"None;")
            continue
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape};".encode())
        digest.update(array.reshape(-1).view(np.uint8))
    return digest.hexdigest()


def source_digest(source):
    """The SHA-256 (hex) of what a path of images holds, without decoding them: a file's bytes; a
    directory's image files by relative path and size (a run over a million images reads no pixel
    for it). ``None`` for ``None`` and for what is no local path (``tfds:NAME``)."""
    if source is None or not isinstance(source, (str, os.PathLike)) or not os.path.exists(source):
        return None
    if os.path.isfile(source):
        return file_sha256(source)
    entries = []
    for folder, _, names in os.walk(source, followlinks=True):
        for file_name in names:
            path = os.path.join(folder, file_name)
            rel = os.path.relpath(path, source).replace(os.sep, "/")
            if _is_image(rel):
                entries.append(f"{rel}\0{os.path.getsize(path)}\n")
    digest = hashlib.sha256()
    for entry in sorted(entries):
        digest.update(entry.encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------
# CIFAR
# --------------------------------------------------------------------------


def stratified_split(y, validation_split, seed=0):
    """Indices ``(train, val)`` holding out ``round(split * count)`` per class.

    Validation samples are drawn per class (classes in sorted order) with
    ``numpy.random.default_rng(seed)``; both index arrays are sorted, so the
    two subsets keep the source order.
    """
    validation_split = validation.rate(validation_split, "validation_split")
    y = np.asarray(y).reshape(-1)
    if validation_split == 0.0:
        return np.arange(len(y)), np.empty((0,), dtype=np.int64)
    rng = np.random.default_rng(seed)
    held_out = []
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        count = round(validation_split * len(members))
        held_out.append(rng.choice(members, size=count, replace=False))
    val = np.sort(np.concatenate(held_out)).astype(np.int64)
    mask = np.ones(len(y), dtype=bool)
    mask[val] = False
    return np.flatnonzero(mask), val


def _random_subset(count, size, seed):
    """Indices of ``size`` of ``count`` items (all when fewer) in random order, from ``default_rng(seed)``."""
    return np.random.default_rng(seed).permutation(count)[:size]


def _check_train_size(train_size, available, validation_split, train_offset=0):
    """``ValueError`` when ``train_offset + train_size`` asks for more images than the ``available`` ones."""
    held = f" after holding out {validation_split:g} for validation" if validation_split else ""
    if train_offset and train_offset + (train_size or 1) > available:
        raise ValueError(
            f"`train_offset` + `train_size` must be at most the {available} training images the data "
            f"holds{held}. Received: train_offset={train_offset}, train_size={train_size}")
    if train_size is not None and train_size > available:
        raise ValueError(
            f"`train_size` must be at most the {available} training images the data holds{held}. "
            f"Received: train_size={train_size}"
        )


def _split(x, y, validation_split, seed):
    train, val = stratified_split(y, validation_split, seed)
    return (x[train], y[train]), (x[val], y[val])


def _cifar_arrays(source, dataset, name):
    """Checked ``(x, y)`` from the Keras cache (``None`` or ``"keras"``) or :func:`load_labeled_images`."""
    if source is None or (isinstance(source, str) and source == "keras"):
        return _checked(*_load_keras_cifar(dataset, name), name)
    return load_labeled_images(source, name)


def load_cifar(data=None, dataset="cifar10", validation_split=0.1, seed=0, train_size=None, name="data", *,
               train_offset=0, full_hold_out=False):
    """CIFAR training images for a recipe, with a stratified validation hold-out.

    Args:
        data: ``None`` or ``"keras"`` (``keras.datasets.cifar10`` /
            ``cifar100`` training split; downloads when not cached), a tuple
            ``(x, y)`` of uint8 images and integer labels, or a path (an image
            folder or its ``.zip``, or an ``.npz`` with ``x``, ``y``; see
            :func:`load_labeled_images`). Images of any one size are accepted.
        dataset: ``"cifar10"`` or ``"cifar100"``: which Keras dataset ``None``
            stands for.
        validation_split: fraction in ``[0, 1)`` of each class held out
            (:func:`stratified_split`); the test split is never used.
        seed: seed of the hold-out and of the ``train_size`` subset.
        train_size: keep a random subset of this many training images (in
            source order), drawn after the hold-out; default all. More than
            the data holds after the hold-out is a ``ValueError``. The
            validation set shrinks with it, to the same fraction of the data
            used (``train_size = 500`` with ``validation_split = 0.1``: 56
            validation images, stratified), so that a short run does not
            spend its time validating.
        name: what error messages call ``data`` (e.g. ``"--data"``).
        train_offset: skip this many images of the seeded order the ``train_size`` subset is drawn
            from (default 0): with the same ``seed``, ``train_offset=N`` gives images that a run
            with ``train_size=N`` never saw (Maennel et al., App. A.1 step 2: upstream and
            downstream sets disjoint); the validation hold-out is apart from both.
        full_hold_out: keep the whole hold-out whatever ``train_size`` is (the benchmarks: one
            fixed evaluation set for every training size).

    Returns:
        ``(x, y), (x_val, y_val)``: uint8 images and int32 labels.
    """
    validation.one_of(dataset, "dataset", CIFAR_DATASETS)
    validation_split = validation.rate(validation_split, "validation_split")
    train_size = validation.optional(validation.positive_int, train_size, "train_size")
    train_offset = validation.int_value(train_offset, "train_offset", minimum=0)
    (x, y), held_out = _split(*_cifar_arrays(data, dataset, name), validation_split, seed)
    _check_train_size(train_size, len(x), validation_split, train_offset)
    if train_offset or (train_size is not None and train_size < len(x)):
        order = _random_subset(len(x), len(x), seed)
        keep = np.sort(order[train_offset: None if train_size is None else train_offset + train_size])
        x, y = x[keep], y[keep]
        train_size = len(keep)
        wanted = round(train_size * validation_split / (1.0 - validation_split))
        if 0 < wanted < len(held_out[1]) and not validation.boolean(full_hold_out, "full_hold_out"):
            _, pick = stratified_split(held_out[1], wanted / len(held_out[1]), seed + 1)
            held_out = (held_out[0][pick], held_out[1][pick])
    return (x, y), held_out


def load_cifar10(source=None, validation_split=0.0, seed=0):
    """Loads the CIFAR-10 training images, with an optional validation split.

    Args:
        source: where to read the training images:

            * ``None`` or ``"keras"``: ``keras.datasets.cifar10`` (its cache;
              downloads when not cached, see :func:`cifar10_cache_available`).
              Only the 50,000 training images are used; the test split is
              available from ``keras.datasets.cifar10.load_data()`` directly.
            * a directory of ``<class>/<image>`` files, optionally under
              ``train/`` (see :func:`read_image_folder`); labels follow the
              sorted class folder names, which for the standard folder names
              equals the CIFAR-10 label order (:func:`cifar10_class_names`).
            * a ``.zip`` of such a tree, read without extracting.
            * an ``.npz`` with arrays ``x`` (uint8, ``(N, 32, 32, 3)``) and
              ``y`` (integer labels, ``(N,)`` or ``(N, 1)``).

            Images must be 32x32 (they are not resized).
        validation_split: fraction in ``[0, 1)`` of each class held out of the
            training data as validation data (``round(fraction * count)``
            images per class).
        seed: seed of ``numpy.random.default_rng`` choosing the held-out images.

    Returns:
        ``(x_train, y_train), (x_val, y_val)``: uint8 images ``(N, 32, 32, 3)``
        and uint8 class indices ``(N,)``, in source order (class, then file name
        for folders). With ``validation_split=0`` the validation arrays are
        empty.
    """
    validation_split = validation.rate(validation_split, "validation_split")
    return _split(*_cifar10_arrays(source, "source"), validation_split, seed)


def _cifar10_arrays(source, name):
    """Checked 32x32 RGB images and uint8 labels of ``source`` (see :func:`load_cifar10`)."""
    x, y = _cifar_arrays(source, "cifar10", name)
    if x.shape[1:] != _CIFAR10_SHAPE:
        raise ValueError(
            f"CIFAR-10 images must be 32x32 RGB (N, 32, 32, 3); {name}={source!r} "
            f"holds images of shape {x.shape[1:]}."
        )
    if y.size and (y.min() < 0 or y.max() > 255):
        raise ValueError(f"Labels in {name}={source!r} must lie in [0, 255] to fit uint8.")
    return x, y.astype(np.uint8)


#: Where keras.datasets.cifar10 downloads from (probed before a download; see :func:`cifar10_reachable`).
_CIFAR10_HOST = ("www.cs.toronto.edu", 443)


def cifar10_reachable(timeout=3.0):
    """Whether CIFAR-10's download host answers within ``timeout`` seconds.

    ``False`` at once when the environment variable ``STRUCTINIT_OFFLINE``
    is set (the tests set it), and on any network error.
    """
    if os.environ.get("STRUCTINIT_OFFLINE"):
        return False
    try:
        socket.create_connection(_CIFAR10_HOST, timeout=timeout).close()
    except OSError:
        return False
    return True


def load_demo_data(data, train_size, seed, name="data"):
    """``(x_train, y_train, x_val, y_val, description)`` for the demo and the examples.

    ``data`` is a path accepted by :func:`load_cifar10` or ``None``: then
    CIFAR-10 from the Keras cache, else downloaded by ``keras.datasets`` when
    its host answers within a few seconds (:func:`cifar10_reachable`), else
    :func:`procedural_images` (offline). CIFAR-10 keeps 10% of each class for
    validation. The
    training arrays are a random subset of ``train_size`` images in random
    order, so any prefix is a random subset too. ``train_size`` may not exceed
    what the data holds (45,000 for CIFAR-10, ``PROCEDURAL_MAX_TRAIN_SIZE``
    generated images): a ``ValueError`` says so before anything is allocated.
    ``name`` is what error messages call ``data`` (e.g. ``"--data"``).
    """
    train_size = validation.positive_int(train_size, "train_size")
    arrays, why = None, "CIFAR-10 not found offline"
    if data is not None or cifar10_cache_available():
        arrays = _cifar10_arrays(data, name)
    elif cifar10_reachable():
        print("Downloading CIFAR-10 with keras.datasets (170 MB; pass --data PATH to use a local copy)",
              flush=True)
        try:
            arrays = _cifar10_arrays(None, name)
        except RuntimeError as err:
            why = f"the CIFAR-10 download failed: {str(err).splitlines()[0][:120]}"
    if arrays is not None:
        (x, y), (x_val, y_val) = _split(*arrays, 0.1, seed)
        _check_train_size(train_size, len(x), 0.1)
        description = f"CIFAR-10 training split from {data or 'keras.datasets'} (10% held out)"
    else:
        if train_size > PROCEDURAL_MAX_TRAIN_SIZE:
            raise ValueError(
                f"`train_size` must be at most {PROCEDURAL_MAX_TRAIN_SIZE} for the procedural image "
                f"set (as many as CIFAR-10's training split). Received: train_size={train_size}"
            )
        x, y = procedural_images(train_size + train_size // 5, seed=seed)
        x, x_val, y, y_val = x[:train_size], x[train_size:], y[:train_size], y[train_size:]
        description = f"{PROCEDURAL_DESCRIPTION} ({why}; pass --data PATH to use it)"
    keep = _random_subset(len(x), train_size, seed)
    return x[keep], y[keep], x_val, y_val, description


# --------------------------------------------------------------------------
# Procedural textures
# --------------------------------------------------------------------------


def _grating(u, v, p, angle):
    theta = angle + p["jitter"]
    along = u * np.cos(theta) + v * np.sin(theta)
    return np.sin(2 * np.pi * p["freq"] * along + p["phase"])


def _rotated(u, v, p):
    c, s = np.cos(p["jitter"]), np.sin(p["jitter"])
    return u * c + v * s, -u * s + v * c


def _checkerboard(u, v, p):
    a, b = _rotated(u, v, p)
    f = 2 * np.pi * p["freq"]
    return np.sin(f * a + p["phase"]) * np.sin(f * b + p["phase2"])


def _dot_lattice(u, v, p):
    a, b = _rotated(u, v, p)
    f = 2 * np.pi * p["freq"]
    return np.cos(f * a + p["phase"]) + np.cos(f * b + p["phase2"])


def _rings(u, v, p):
    r = np.hypot(u - p["cx"], v - p["cy"])
    return np.sin(2 * np.pi * p["freq"] * r + p["phase"])


def _spokes(u, v, p):
    angle = np.arctan2(v - p["cy"], u - p["cx"])
    return np.sin(p["arms"] * angle + p["phase"])


def _spiral(u, v, p):
    du, dv = u - p["cx"], v - p["cy"]
    r, angle = np.hypot(du, dv), np.arctan2(dv, du)
    return np.sin(2 * angle + 2 * np.pi * p["freq"] * r + p["phase"])


def _cross(u, v, p):
    a, b = _rotated(u - p["cx"], v - p["cy"], p)
    w = p["width"]
    return np.maximum(np.exp(-((a / w) ** 2)), np.exp(-((b / w) ** 2)))


def _blobs(u, v, p):
    # Two Gaussian spots at random places (cx, cy) and (cx2, cy2).
    w2 = (2.0 * p["width"]) ** 2
    first = np.exp(-((u - p["cx"]) ** 2 + (v - p["cy"]) ** 2) / w2)
    second = np.exp(-((u - p["cx2"]) ** 2 + (v - p["cy2"]) ** 2) / w2)
    return first + second


def _chevrons(u, v, p):
    a, b = _rotated(u - p["cx"], v, p)
    return np.sin(2 * np.pi * p["freq"] * (b + 0.5 * np.abs(a)) + p["phase"])


# Pattern families in label order; each maps (u, v, params) to a float field.
_PATTERNS = (
    ("grating_0", lambda u, v, p: _grating(u, v, p, 0.0)),
    ("grating_45", lambda u, v, p: _grating(u, v, p, np.pi / 4)),
    ("grating_90", lambda u, v, p: _grating(u, v, p, np.pi / 2)),
    ("grating_135", lambda u, v, p: _grating(u, v, p, 3 * np.pi / 4)),
    ("checkerboard", _checkerboard),
    ("rings", _rings),
    ("spokes", _spokes),
    ("cross", _cross),
    ("blobs", _blobs),
    ("chevrons", _chevrons),
    ("dot_lattice", _dot_lattice),
    ("spiral", _spiral),
)
PROCEDURAL_CLASS_NAMES = tuple(name for name, _ in _PATTERNS)


def _standardize(field):
    """Per-image zero mean and unit std (in place), far tails clipped."""
    field -= field.mean(axis=(1, 2), keepdims=True)
    field /= field.std(axis=(1, 2), keepdims=True) + np.float32(1e-3)
    return np.clip(field, -2.5, 2.5, out=field)


def procedural_images(num_samples, image_size=32, num_classes=10, seed=0):
    """Generates a labelled texture dataset, told apart by spatial structure.

    Class ``k`` is pattern family ``PROCEDURAL_CLASS_NAMES[k]``: gratings at
    four orientations, checkerboards, rings, spokes, crosses, blobs, chevrons,
    dot lattices and spirals. Each image draws its own frequency, phase,
    position and orientation jitter (+-18 degrees) of the pattern, adds a
    weaker distractor pattern of another class (up to 0.9 of its strength),
    shows the sum through a soft window at a random place, then applies a
    random contrast, colour tint, mean colour, illumination ramp and uniform
    pixel noise. Patterns are normalised per image, so mean colour and overall
    contrast carry no label information. Labels are balanced (counts differ
    by at most one) and in random order. Deterministic given ``seed``.

    Args:
        num_samples: number of images ``N``.
        image_size: side ``S`` of the square images.
        num_classes: number of classes, at most ``len(PROCEDURAL_CLASS_NAMES)``
            (12); the first ``num_classes`` families are used.
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        ``(x, y)``: uint8 images ``(N, S, S, 3)`` and uint8 labels ``(N,)``.
    """
    num_samples = validation.positive_int(num_samples, "num_samples")
    image_size = validation.positive_int(image_size, "image_size")
    num_classes = validation.positive_int(num_classes, "num_classes")
    if num_classes > len(_PATTERNS):
        raise ValueError(
            f"`num_classes` must be at most {len(_PATTERNS)} (the number of "
            f"pattern families). Received: num_classes={num_classes}"
        )
    rng = np.random.default_rng(seed)
    n, f32 = num_samples, np.float32

    y = rng.permutation(np.arange(n) % num_classes).astype(np.uint8)

    def draw(low, high):
        return rng.uniform(low, high, size=n).astype(f32)

    def shape_params():
        return {
            "freq": draw(1.5, 4.0),  # cycles across the image
            "phase": draw(0, 2 * np.pi),
            "phase2": draw(0, 2 * np.pi),
            "jitter": np.deg2rad(draw(-18, 18)),
            "cx": draw(-0.4, 0.4),
            "cy": draw(-0.4, 0.4),
            "cx2": draw(-0.7, 0.7),
            "cy2": draw(-0.7, 0.7),
            "width": draw(0.12, 0.3),
            "arms": rng.integers(3, 7, size=n).astype(f32),
        }

    # Pixel centres on [-1, 1]; v grows downwards, u to the right.
    axis = ((np.arange(image_size, dtype=f32) + 0.5) / image_size) * 2 - 1
    v_grid, u_grid = np.meshgrid(axis, axis, indexing="ij")
    u, v = u_grid[None], v_grid[None]

    def render(labels, params):
        out = np.empty((n, image_size, image_size), dtype=f32)
        for label in np.unique(labels):
            members = np.flatnonzero(labels == label)
            p = {k: val[members][:, None, None] for k, val in params.items()}
            out[members] = _PATTERNS[label][1](u, v, p)
        return _standardize(out)

    col = (slice(None), None, None)  # per-image scalar -> (n, 1, 1)
    # The class pattern, plus a weaker distractor from another family, seen
    # through a soft window at a random place.
    field = render(y, shape_params())
    other = (y + rng.integers(1, num_classes, size=n)) % num_classes if num_classes > 1 else y
    field += draw(0.0, 0.9)[col] * render(other, shape_params())
    window_x, window_y, window_w = draw(-0.5, 0.5), draw(-0.5, 0.5), draw(0.4, 1.5)
    field *= np.exp(
        -((u - window_x[col]) ** 2 + (v - window_y[col]) ** 2) / (2 * window_w[col] ** 2)
    )
    field = _standardize(field)

    contrast = draw(6, 30)
    tint = rng.uniform(0.25, 1.0, size=(n, 3)).astype(f32)
    mean_colour = rng.uniform(70, 185, size=(n, 3)).astype(f32)
    ramp_angle, ramp_size = draw(0, 2 * np.pi), draw(0, 30)
    noise_std = draw(10, 50)

    luminance = contrast[col] * field
    luminance += ramp_size[col] * (np.cos(ramp_angle)[col] * u + np.sin(ramp_angle)[col] * v)

    # Compose channels-first in place (few large temporaries), uniform noise
    # of standard deviation ``noise_std``.
    images = np.empty((n, 3, image_size, image_size), dtype=f32)
    rng.random(out=images, dtype=f32)
    images -= f32(0.5)
    images *= (noise_std * f32(np.sqrt(12.0)))[:, None, None, None]
    for c in range(3):
        images[:, c] += tint[:, c][col] * luminance
        images[:, c] += mean_colour[:, c][col]
    np.clip(np.rint(images, out=images), 0, 255, out=images)
    return images.transpose(0, 2, 3, 1).astype(np.uint8), y

