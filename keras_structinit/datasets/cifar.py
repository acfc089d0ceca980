"""CIFAR-10/100 training images: the Keras cache, the download, and the loaders of the recipes and
the demo.

* :func:`load_cifar` (CIFAR-10/100, any source, for the recipes) and :func:`load_cifar10` (strictly
  32x32 CIFAR-10) read the Keras cache (``keras.datasets``) or any source
  :func:`~keras_structinit.datasets.load_labeled_images` takes, with a stratified validation
  hold-out (:func:`~keras_structinit.datasets.stratified_split`);
* :func:`cifar10_cache_available` and :func:`cifar10_reachable`: whether CIFAR-10 loads without a
  download, and whether its host answers;
* :func:`load_demo_data` is CIFAR-10 when available, else
  :func:`~keras_structinit.datasets.procedural_images`.

NumPy; ``keras`` is imported only when the Keras cache is read through ``keras.datasets``.
"""

from __future__ import annotations

import io
import os
import pickle
import socket
import tarfile
import tempfile

import numpy as np

from keras_structinit.datasets.folders import _checked, check_image_side, load_labeled_images
from keras_structinit.datasets.procedural import (
    PROCEDURAL_DESCRIPTION,
    PROCEDURAL_MAX_TRAIN_SIZE,
    procedural_images,
)
from keras_structinit.datasets.splits import _check_train_size, _random_subset, _split, stratified_split
from keras_structinit.utils import validation
from keras_structinit.utils.io_utils import file_sha256

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
# keras.datasets.cifar10 downloads its archive to "<name>_archive" in the cache's datasets folder.
_CIFAR10_CACHE_NAME = "cifar-10-batches-py-target"
# SHA-256 of cifar-10-python.tar.gz, the value keras.datasets.cifar10.load_data checks.
_CIFAR10_ARCHIVE_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
_CIFAR10_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))


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
# Loaders
# --------------------------------------------------------------------------


def _cifar_arrays(source, dataset, name):
    """Checked ``(x, y)`` from the Keras cache (``None`` or ``"keras"``) or :func:`load_labeled_images`."""
    if source is None or (isinstance(source, str) and source == "keras"):
        return _checked(*_load_keras_cifar(dataset, name), name)
    return load_labeled_images(source, name)


def load_cifar(
    data=None,
    dataset="cifar10",
    validation_split=0.1,
    seed=0,
    train_size=None,
    name="data",
    *,
    train_offset=0,
    full_hold_out=False,
):
    """CIFAR training images for a recipe, with a stratified validation hold-out.

    Args:
        data: ``None`` or ``"keras"`` (``keras.datasets.cifar10`` /
            ``cifar100`` training split; downloads when not cached), a tuple
            ``(x, y)`` of uint8 images and integer labels, or a path (an image
            folder or its ``.zip``, or an ``.npz`` with ``x``, ``y``; see
            :func:`load_labeled_images`). Images of any one size of at least
            :data:`~keras_structinit.datasets.folders.MIN_IMAGE_SIDE` (4) pixels a side are accepted.
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
    x, y = _cifar_arrays(data, dataset, name)
    check_image_side(x, name, data if isinstance(data, (str, os.PathLike)) else None)
    (x, y), held_out = _split(x, y, validation_split, seed)
    _check_train_size(train_size, len(x), validation_split, train_offset)
    if train_offset or (train_size is not None and train_size < len(x)):
        order = _random_subset(len(x), len(x), seed)
        keep = np.sort(order[train_offset : None if train_size is None else train_offset + train_size])
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
        print(
            "Downloading CIFAR-10 with keras.datasets (170 MB; pass --data PATH to use a local copy)",
            flush=True,
        )
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
