"""Labelled images from files: ImageFolder trees (a directory or a ``.zip`` of one), ``.npz`` files
and arrays.

* :func:`read_image_folder` decodes any ``<class>/<image>`` tree into ``(x, y, class_names)``;
  :func:`list_image_folder` lists a directory's files without decoding them;
* :func:`rgb_image` converts one Pillow image to 8-bit RGB; images above :data:`MAX_IMAGE_PIXELS`
  are refused before they are decoded;
* a folder's images are read as regular files only, each of at most ``MAX_IMAGE_FILE_BYTES``: a
  FIFO, a device or a link that leads out of the folder is refused, unopened
  (:mod:`keras_structinit.utils.file_checks`); an ``.npz``'s headers are checked against its size first;
* :func:`load_labeled_images` reads ``(x, y)`` from an ``.npz`` or an image folder, or checks a
  tuple of arrays (labels below :data:`MAX_CLASSES`);
* :func:`arrays_digest` and :func:`source_digest` identify the data a run used.

NumPy plus Pillow (imported when an image is decoded).
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile

import numpy as np

from keras_structinit.utils import validation
from keras_structinit.utils.file_checks import (
    MAX_IMAGE_FILE_BYTES,
    check_image_file,
    check_zip_sizes,
    inside,
    npz_headers,
    read_image_file,
)
from keras_structinit.utils.io_utils import file_sha256

IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png", ".ppm", ".tif", ".tiff", ".webp")
#: The most pixels (width x height) of an image read whole into an array (:func:`read_image_folder`,
#: an ``.npz``'s ``x``): the CIFAR recipes train at the images' own size, and a 4000 x 4000 set of them
#: filled the memory. Larger images are refused before they are decoded; the ImageNet recipe, which
#: resizes each image as it reads it, takes them.
MAX_IMAGE_PIXELS = 1024 * 1024
#: The smallest images (height and width, pixels) the recipes train on: below 4 x 4 the zoo's models
#: fail to build or train (Keras' "Computed output size would be zero or negative" from a patch or
#: stride larger than the image; simple-cnn's two poolings need 4 x 4) and RandAugment's 3 x 3
#: smoothing (Sharpness) returns a 1 x 1 image as 2 x 2. A model may need more (its patch size and
#: strides): the zoo's builders check their own minimum as the model is built.
MIN_IMAGE_SIDE = 4
#: Labels are class indices below this: a label of 10**6 would ask for a model, and one-hot tables,
#: of a million classes (``np.eye(classes)`` alone holds ``classes ** 2`` floats: 400 MB at this cap).
MAX_CLASSES = 10_000
# Folder names treated as dataset splits: ``<root>/train/<class>/...`` is read
# from ``train`` when the root holds nothing but split folders.
_SPLIT_NAMES = ("test", "train", "val", "valid", "validation")


# --------------------------------------------------------------------------
# Image folders (directory or zip)
# --------------------------------------------------------------------------


def _import_pil():
    try:
        from PIL import Image
    except ImportError as err:  # pragma: no cover - pillow is a test dependency
        raise ImportError("Reading image files needs Pillow: `pip install pillow`.") from err
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
            len(train) == 1 and len(parents) == 1 and all(leaf in _SPLIT_NAMES for leaf in leaves.values())
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
        (rel, label) for label, class_name in enumerate(class_names) for rel in sorted(classes[class_name])
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
        raise ValueError(
            f"{where} holds {kind} pixels (Pillow mode {mode}), of no stated range: convert "
            "it to 8-bit (or 16-bit) RGB or grayscale first"
        )
    return image if mode == "RGB" else image.convert("RGB")


def _check_pixels(width, height, where):
    if width * height > MAX_IMAGE_PIXELS:
        side = int(MAX_IMAGE_PIXELS**0.5)
        raise ValueError(
            f"{where} is {width}x{height} pixels, above the {side}x{side} that images read whole into "
            "memory may hold (the CIFAR recipes train at the images' own size): resize them first, or "
            "train with the imagenet recipe on an ImageFolder directory, which resizes each image as it "
            "reads it"
        )


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
            raise ValueError(f"Could not decode image {rel!r} in {name}={source!r}: {_why(err)}") from err
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


def _why(err):
    """What is wrong with an image, in words that name no Python object: Pillow's "cannot identify
    image file <_io.BytesIO object at 0x...>" says only that it is no image it can read."""
    if type(err).__name__ == "UnidentifiedImageError":
        return "not an image Pillow can read (a corrupt file, or another format): remove or replace it"
    return str(err).split(" <_io.")[0]


def _list_directory(path, source, name):
    """``_group_by_class`` of the image files under ``path``, each checked to be a regular file of
    at most ``MAX_IMAGE_FILE_BYTES`` inside the folder (``file_checks.check_image_file``); a link to a
    folder is followed when it stays inside, skipped when it leads back above itself (a cycle)."""
    root = os.path.realpath(path)
    rel_paths = []
    for folder, dirs, names in os.walk(path, followlinks=True):
        rel_folder = os.path.relpath(folder, path)
        real_folder = os.path.realpath(folder)
        kept = []
        for d in (d for d in dirs if not d.startswith(".")):
            if os.path.islink(os.path.join(folder, d)):
                real = os.path.realpath(os.path.join(folder, d))
                rel = d if rel_folder == "." else os.path.join(rel_folder, d).replace(os.sep, "/")
                if not inside(real, root):
                    raise ValueError(
                        f"Folder {rel!r} in {name}={source!r} is a link that leads out of the folder "
                        f"(to {real!r}): not read"
                    )
                if inside(real_folder, real):
                    continue  # a link to itself or above: a cycle
            kept.append(d)
        dirs[:] = kept
        for file_name in names:
            rel = file_name if rel_folder == "." else os.path.join(rel_folder, file_name)
            rel = rel.replace(os.sep, "/")
            if _is_image(rel):
                check_image_file(os.path.join(folder, file_name), root, f"Image {rel!r} in {name}={source!r}")
                rel_paths.append(rel)
    return _group_by_class(rel_paths, source, name)


def list_image_folder(source, name="source"):
    """The files of an image-classification directory, not decoded: ``(paths, labels, class_names)``.

    The layout, order and class names are those of :func:`read_image_folder`; images may differ
    in size. For a stream that decodes each image when it needs it (the ImageNet recipe's).
    """
    path = validation.path(source, name)
    if not os.path.isdir(path):
        raise ValueError(
            f"{validation.quoted(name)} must be a directory of <class>/<image> files. "
            f"Received: {name}={source!r}"
        )
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
            return read_image_file(os.path.join(path, *rel.split("/")), f"Image {rel!r} in {name}={source!r}")

        x = _decode_all(files, read_bytes, source, name)
    elif os.path.isfile(path) and zipfile.is_zipfile(path):
        check_zip_sizes(path, name, json_members=())  # read whole below: a bomb is refused unread
        with zipfile.ZipFile(path) as archive:
            rel_paths = [
                info.filename for info in archive.infolist() if not info.is_dir() and _is_image(info.filename)
            ]
            class_names, files = _group_by_class(rel_paths, source, name)
            for rel, _ in files:
                if archive.getinfo(rel).file_size > MAX_IMAGE_FILE_BYTES:
                    raise ValueError(
                        f"Image {rel!r} in {name}={source!r} holds {archive.getinfo(rel).file_size} bytes, "
                        f"above the {MAX_IMAGE_FILE_BYTES} an image file may hold"
                    )
            # Reading all members first, then decoding, measured ~8% faster
            # than interleaving the two.
            contents = {rel: archive.read(rel) for rel, _ in files}
        x = _decode_all(files, contents.__getitem__, source, name)
    elif not os.path.exists(path):
        raise FileNotFoundError(f"{validation.quoted(name)} does not exist: {name}={source!r}")
    elif path.lower().endswith(".zip"):
        raise ValueError(f"{validation.quoted(name)} is not a valid zip file: {name}={source!r}")
    else:
        raise ValueError(
            f"{validation.quoted(name)} must be a directory or a .zip file of <class>/<image> "
            f"files. Received: {name}={source!r}"
        )
    y = np.fromiter((label for _, label in files), dtype=np.int64, count=len(files))
    return x, y, class_names


# --------------------------------------------------------------------------
# Labelled arrays
# --------------------------------------------------------------------------


#: What an ``.npz`` of labelled images holds, and how to write one (said when a file is not one).
NPZ_FORM = "an .npz archive of uint8 images x (N, H, W, 3) and integer labels y: np.savez(path, x=x, y=y)"


def _check_npz_archive(path, name):
    """``ValueError`` naming ``name`` for a file named ``.npz`` that is no zip archive: a single array
    saved with ``np.save`` (which ``np.load`` returns as a bare array), or a truncated or corrupt file
    (whose end, the zip's directory, is missing)."""
    if zipfile.is_zipfile(path):
        return
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic == b"\x93NUMPY":
        raise ValueError(
            f"{validation.quoted(name)} {path!r} is a single .npy array (np.save's), not {NPZ_FORM}"
        )
    raise ValueError(
        f"{validation.quoted(name)} {path!r} is not a zip archive (truncated or corrupt?); "
        f"it must be {NPZ_FORM}"
    )


def _read_npz(path, name):
    _check_npz_archive(path, name)
    headers = npz_headers(path, name)  # each array's declared bytes against what the file holds
    shape = headers["x"][0] if "x" in headers else None
    if shape is not None and len(shape) == 4:
        _check_pixels(shape[2], shape[1], f"The images x in {name}={path!r}")  # before they are read
    try:
        with np.load(path, allow_pickle=False) as data:
            files = data.files
            arrays = [data[k] for k in ("x", "y") if k in files]
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:  # a member cut short, damaged
        first = (str(err).strip().splitlines() or ["no detail"])[0]
        raise ValueError(
            f"{validation.quoted(name)} {path!r} cannot be read ({type(err).__name__}: {first}); it must "
            f"be {NPZ_FORM}"
        ) from None
    missing = [k for k in ("x", "y") if k not in files]
    if missing:
        raise ValueError(
            f"The .npz {validation.quoted(name)} must hold arrays 'x' and 'y'; missing {missing} "
            f"in {name}={path!r} (found {files})."
        )
    return arrays


def _checked(x, y, name, source=None):
    """``(x, y)`` as uint8 ``(N, H, W, 3)`` images and int32 ``(N,)`` labels, or a ``ValueError``
    (naming ``source``, the path they were read from, if given)."""
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim == 4 and len(x) == 0:
        where = validation.quoted(name) + ("" if source is None else f" {os.fspath(source)!r}")
        raise ValueError(
            f"{where} holds no images (x of shape {x.shape}): it needs at least one labelled image"
        )
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[-1] != 3:
        raise ValueError(
            f"{validation.quoted(name)} images must be uint8 pixels (0-255) of shape (N, H, W, 3); convert "
            f"them explicitly. Received: dtype={x.dtype}, shape={x.shape}"
        )
    if (
        not np.issubdtype(y.dtype, np.integer)
        or y.ndim not in (1, 2)
        or (y.ndim == 2 and y.shape[1] != 1)
        or len(y) != len(x)
    ):
        raise ValueError(
            f"{validation.quoted(name)} labels must be integers of shape (N,) or (N, 1) for the N={len(x)} "
            f"images. Received: dtype={y.dtype}, shape={y.shape}"
        )
    if y.size and (y.min() < 0 or y.max() >= MAX_CLASSES):  # before int32 could wrap 2**32 + 3 to 3
        raise ValueError(
            f"{validation.quoted(name)} labels must be class indices in [0, {MAX_CLASSES}). Received: "
            f"labels in [{int(y.min())}, {int(y.max())}]"
        )
    return x, y.reshape(-1).astype(np.int32)


def check_image_side(x, name, source=None, minimum=MIN_IMAGE_SIDE):
    """``ValueError`` naming ``name`` (and ``source``, the path it was read from) when the images ``x``
    ``(N, H, W, 3)`` are smaller than ``minimum`` x ``minimum`` pixels (:data:`MIN_IMAGE_SIDE`):
    before a model is built for them."""
    height, width = x.shape[1:3]
    if min(height, width) < minimum:
        where = validation.quoted(name) + ("" if source is None else f" {os.fspath(source)!r}")
        raise ValueError(
            f"{where} holds images of {width}x{height} pixels (width x height), below the "
            f"{minimum}x{minimum} a model is trained on (its patches and strides need room): "
            "resize them first"
        )


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
            raise FileNotFoundError(f"{validation.quoted(name)} does not exist: {name}={source!r}")
        if os.path.isfile(path) and path.lower().endswith(".npz"):
            x, y = _read_npz(path, name)
        else:
            x, y, _ = read_image_folder(path, name)
        return _checked(x, y, name, source)
    else:
        raise TypeError(
            f"{validation.quoted(name)} must be a path (an .npz with uint8 x and integer y, or an "
            f"ImageFolder directory/.zip) or a tuple (x, y) of arrays. Received: {name}={source!r} "
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
