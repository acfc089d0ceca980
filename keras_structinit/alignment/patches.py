"""Covariance of image patches, streamed in batches (pure NumPy, float64).

A patch is a ``kh x kw x C`` window of an ``(H, W, C)`` image at stride 1 with
VALID placement (``(H - kh + 1) * (W - kw + 1)`` patches per image), flattened
in the order of a Keras ``Conv2D`` kernel's first three axes::

    x_p[(i * kw + j) * C + c] = image[y + i, x + j, c]      # (kh, kw, C) row-major

so ``kernel[..., o].reshape(-1)`` and a patch are vectors of the same space,
and a conv's output at ``(y, x)`` is their dot product (plus bias). With ``n``
patches ``x_p`` and their mean ``mu``::

    Sigma_x = 1/n sum_p (x_p - mu)(x_p - mu)^T      (centered=True)
    Sigma_x = 1/n sum_p x_p x_p^T                   (centered=False)

Streaming: per batch, each image row is cut into its ``kw``-wide segments
``r`` (``kw * C`` values) and only the Gram blocks of row pairs at most
``kh - 1`` apart are accumulated (float64); the patch second moments are
window sums of those. That is about ``kh`` times fewer products than forming
every patch (~10 s for 30,000 CIFAR images and 5x5 patches on two cores).
Peak extra memory is about ``8 * batch_size * H * W * C * (kw + 1)`` bytes,
whatever the number of images (27 MB for batches of 256 CIFAR images and
``kw = 5``); with ``max_patches``, about ``32 * max_patches * kh * kw * C`` bytes
instead (a pending list of up to twice the subset, then its merge).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from keras_structinit.utils import validation

__all__ = ["extract_patches", "patch_covariance", "sorted_eigh"]

#: Images per batch of :func:`patch_covariance` when ``images`` is one array.
DEFAULT_BATCH_SIZE = 256


def _kernel_size_2d(kernel_size):
    kernel_size = validation.kernel_size(kernel_size)
    if len(kernel_size) != 2:
        raise ValueError(
            f"`kernel_size` must be an int or (kh, kw) for 2-D patches. Received: kernel_size={kernel_size!r}"
        )
    return kernel_size


def _as_batch(batch, name="images", dtype=np.float64):
    """A ``(N, H, W, C)`` array of ``dtype`` (``None``: as given); ``(images, labels)`` gives its images."""
    if isinstance(batch, (tuple, list)) and len(batch) == 2 and np.ndim(batch[0]) == 4:
        batch = batch[0]
    batch = np.asarray(batch)
    if batch.ndim != 4:
        raise ValueError(
            f"`{name}` must be images (N, H, W, C), channels last, or an iterable of such batches. "
            f"Received an array of shape {batch.shape}"
        )
    if not np.issubdtype(batch.dtype, np.number) or np.issubdtype(batch.dtype, np.complexfloating):
        raise TypeError(f"`{name}` must hold real numbers. Received dtype {batch.dtype}")
    return batch if dtype is None else batch.astype(dtype, copy=False)


def _check_fits(shape, kernel_size):
    kh, kw = kernel_size
    if kh > shape[1] or kw > shape[2]:
        raise ValueError(
            f"`kernel_size` {kernel_size} is larger than the images ({shape[1]}x{shape[2]}, height x "
            "width): no VALID patch fits."
        )


def extract_patches(images, kernel_size):
    """All stride-1 VALID patches: ``(N, H - kh + 1, W - kw + 1, kh * kw * C)`` float64.

    ``patches[n, y, x] = images[n, y:y + kh, x:x + kw, :].reshape(-1)``, the
    flatten order of a ``Conv2D`` kernel ``(kh, kw, C, filters)``. Memory is
    ``kh * kw`` times the images': meant for small inputs and checks;
    :func:`patch_covariance` never forms it.

    Example:
        >>> extract_patches(np.zeros((2, 8, 8, 3)), 3).shape
        (2, 6, 6, 27)
    """
    kernel_size = _kernel_size_2d(kernel_size)
    images = _as_batch(images)
    _check_fits(images.shape, kernel_size)
    windows = sliding_window_view(images, kernel_size, axis=(1, 2))  # (N, Hp, Wp, C, kh, kw)
    return windows.transpose(0, 1, 2, 4, 5, 3).reshape(windows.shape[:3] + (-1,))


def sorted_eigh(cov):
    """``(eigvals, eigvecs)`` of a symmetric matrix, eigenvalues descending.

    ``eigvecs[:, i]`` is the i-th eigenvector, its sign fixed so that its
    largest-magnitude entry is positive (deterministic across platforms).
    """
    cov = np.asarray(cov, dtype=np.float64)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or cov.size == 0:
        raise ValueError(f"`cov` must be a non-empty square matrix. Received an array of shape {cov.shape}")
    eigvals, eigvecs = np.linalg.eigh(0.5 * (cov + cov.T))
    eigvals, eigvecs = eigvals[::-1], eigvecs[:, ::-1]
    rows = np.argmax(np.abs(eigvecs), axis=0)
    signs = np.sign(eigvecs[rows, np.arange(eigvecs.shape[1])])
    return eigvals.copy(), eigvecs * np.where(signs == 0, 1.0, signs)


class _RowMoments:
    """Running sums of row-segment products, from which the patch moments follow.

    For images of height ``H``, ``segments[r]`` stacks the ``kw``-wide
    segments of row ``r`` of every image (``s = kw * C`` values each);
    ``gram[delta][r] = sum segments[r]^T segments[r + delta]`` over images and
    segment positions. Patch row ``i`` of a patch at ``y`` is image row
    ``y + i``, so the ``(i, i + delta)`` block of ``sum_p x_p x_p^T`` is
    ``sum_{y < Hp} gram[delta][y + i]``.
    """

    def __init__(self, kernel_size):
        self.kernel_size = kernel_size
        self.image_shape = None
        self.count = 0
        self.scale = 1.0  # the sums hold the moments of x / scale (see _power_of_two_scale)

    def update(self, batch):
        kh, kw = self.kernel_size
        scale = max(self.scale, _power_of_two_scale(batch))
        if scale != self.scale and self.image_shape is not None:
            ratio = self.scale / scale  # a power of two: exact
            self.row_sum *= ratio
            for gram in self.gram:
                gram *= ratio * ratio
        self.scale = scale
        if scale != 1.0:
            batch = batch / scale
        if self.image_shape is None:
            _check_fits(batch.shape, self.kernel_size)
            self.image_shape = batch.shape[1:]
            h, w, c = self.image_shape
            s = kw * c
            self.row_sum = np.zeros((h, s))
            self.gram = [np.zeros((h - delta, s, s)) for delta in range(kh)]
        elif batch.shape[1:] != self.image_shape:
            raise ValueError(
                f"All batches of `images` must have one image shape: {self.image_shape} first, "
                f"then {batch.shape[1:]}"
            )
        n, h, w, c = batch.shape
        segments = sliding_window_view(batch, kw, axis=2)  # (n, H, Wp, C, kw)
        # (H, s, n * Wp): per row, each segment a column; the Grams below are then "A B^T" products.
        segments = np.ascontiguousarray(segments.transpose(1, 4, 3, 0, 2)).reshape(h, kw * c, -1)
        self.row_sum += segments.sum(axis=2)
        for delta in range(kh):
            self.gram[delta] += np.matmul(segments[: h - delta], segments[delta:].transpose(0, 2, 1))
        self.count += n * (h - kh + 1) * (w - kw + 1)

    def moments(self):
        """``(sum_p x_p, sum_p x_p x_p^T)`` of ``x / scale`` in the (kh, kw, C) flatten order."""
        kh, _ = self.kernel_size
        rows = self.image_shape[0] - kh + 1
        s = self.row_sum.shape[1]
        first = np.concatenate([self.row_sum[i : i + rows].sum(axis=0) for i in range(kh)])
        second = np.zeros((kh, s, kh, s))
        for i in range(kh):
            for k in range(i, kh):
                block = self.gram[k - i][i : i + rows].sum(axis=0)
                second[i, :, k, :] = block
                second[k, :, i, :] = block.T
        return first, second.reshape(kh * s, kh * s)


class _Reservoir:
    """A uniform random subset of at most ``size`` patches of a stream.

    Every patch gets a key ``u ~ U(0, 1)`` in stream order from one
    ``numpy.random.Generator``; the ``size`` smallest keys are kept. The
    subset therefore depends on the seed and the patch order only, not on
    how the stream is cut into batches. Patches whose key is below the
    current threshold wait in a pending list, merged once it holds ``size``
    of them, so each patch is copied a bounded number of times.
    """

    def __init__(self, kernel_size, size, seed):
        self.kernel_size = kernel_size
        self.size = size
        self.rng = np.random.default_rng(seed)
        self.threshold = np.inf  # keys at or above it can no longer be kept
        self.keys, self.patches = [], []
        self.pending = 0
        self.image_shape = None

    def update(self, batch):
        if self.image_shape is None:
            _check_fits(batch.shape, self.kernel_size)
            self.image_shape = batch.shape[1:]
        elif batch.shape[1:] != self.image_shape:
            raise ValueError(
                f"All batches of `images` must have one image shape: {self.image_shape} first, "
                f"then {batch.shape[1:]}"
            )
        windows = sliding_window_view(batch, self.kernel_size, axis=(1, 2))  # a view, no copy
        grid = windows.shape[:3]
        keys = self.rng.random(grid[0] * grid[1] * grid[2])
        chosen = np.flatnonzero(keys < self.threshold)
        n_idx, y_idx, x_idx = np.unravel_index(chosen, grid)
        self.keys.append(keys[chosen])
        self.patches.append(windows[n_idx, y_idx, x_idx].transpose(0, 2, 3, 1).reshape(len(chosen), -1))
        self.pending += len(chosen)
        if self.pending >= 2 * self.size:
            self._merge()

    def _merge(self):
        keys, patches = np.concatenate(self.keys), np.concatenate(self.patches)
        if len(keys) > self.size:
            keep = np.argpartition(keys, self.size - 1)[: self.size]
            keys, patches = keys[keep], patches[keep]
            self.threshold = keys.max()
        self.keys, self.patches, self.pending = [keys], [patches], len(keys)

    @property
    def count(self):
        return min(self.pending, self.size)

    def moments(self):
        self._merge()
        (patches,) = self.patches
        self.scale = _power_of_two_scale(patches)
        if self.scale != 1.0:
            patches = patches / self.scale
        return patches.sum(axis=0), patches.T @ patches


# Values up to 2**100 (about 1e30) are summed as they are: their squares, summed over any
# feasible number of patches, stay far below float64's largest value (about 1.8e308).
_SAFE_MAGNITUDE = 2.0**100


def _power_of_two_scale(values):
    """1, or the power of two at or above ``max |values|`` when that exceeds ``_SAFE_MAGNITUDE``.

    Dividing by a power of two is exact, so data of ordinary magnitude gives
    the same sums as before, and huge finite data gives no overflow.
    """
    peak = float(np.max(np.abs(values), initial=0.0))
    return 1.0 if peak <= _SAFE_MAGNITUDE else 2.0 ** math.ceil(math.log2(peak))


def _check_finite(batch, offset, name):
    """``ValueError`` naming ``name`` and the first image holding NaN or inf."""
    finite = np.isfinite(batch).reshape(len(batch), -1).all(axis=1)
    if not finite.all():
        first = int(np.argmin(finite))
        nan = int(np.isnan(batch).sum())
        inf = int(np.isinf(batch).sum())
        raise ValueError(
            f"`{name}` must be finite: image {offset + first} holds NaN or inf ({nan} NaN and {inf} inf "
            f"value(s) in images {offset}..{offset + len(batch) - 1})"
        )


def _batches(images, batch_size):
    """Yields float64 ``(n, H, W, C)`` batches of an array or of an iterable of batches."""
    if hasattr(images, "shape"):
        images = _as_batch(images, dtype=None)  # converted batch by batch: memory stays bounded
        for start in range(0, len(images), batch_size):
            yield images[start : start + batch_size].astype(np.float64)
        return
    if isinstance(images, (str, bytes)) or not hasattr(images, "__iter__"):
        raise TypeError(
            "`images` must be an array (N, H, W, C) or an iterable of such batches. "
            f"Received: images of type {type(images).__name__}"
        )
    for batch in images:
        yield _as_batch(batch)


def patch_covariance(
    images, kernel_size, *, centered=True, max_patches=None, seed=0, batch_size=DEFAULT_BATCH_SIZE
):
    """Eigen-decomposition of the covariance ``Sigma_x`` of an image set's patches.

    Args:
        images: ``(N, H, W, C)`` images, channels last (anything ``np.asarray``
            takes), or an iterable of such batches (a generator, a
            ``tf.data.Dataset`` of image batches; an ``(images, labels)`` pair
            gives its images), all of one image shape. Values are used as
            given: scale them as the network's input is scaled.
        kernel_size: ``k`` or ``(kh, kw)``.
        centered: subtract the patch mean (the covariance) or not (the second
            moment ``E[x x^T]``).
        max_patches: ``None`` (every patch) or a uniform random subset of at
            most this many patches (keys drawn with ``seed`` in stream order,
            so the subset does not depend on ``batch_size``).
        seed: seed of the ``max_patches`` subset.
        batch_size: images per batch when ``images`` is one array (bounds the
            memory, see the module docstring).

    Returns:
        ``(eigvals, eigvecs)``: ``(d,)`` descending and ``(d, d)`` with
        ``eigvecs[:, i]`` the i-th eigenvector, ``d = kh * kw * C``, in the
        flatten order of a ``Conv2D`` kernel's ``(kh, kw, C)`` axes;
        ``Sigma_x = (eigvecs * eigvals) @ eigvecs.T``.

    Raises:
        ValueError: no images, images not 4-D, NaN or inf among them, a
            covariance beyond float64's range, or a kernel larger than them.
            Values beyond ``2**100`` are divided by a power of two while
            summing (exact), so large finite data does not overflow.

    Example:
        >>> batches = (x_train[i : i + 256] / 127.5 - 1.0 for i in range(0, len(x_train), 256))
        >>> eigvals, eigvecs = patch_covariance(batches, 5)   # uint8 CIFAR-10 scaled to [-1, 1]
        >>> eigvals[:4]   # about 12.3, 1.45, 1.18, 1.06 (Maennel et al., App. D.1)
    """
    kernel_size = _kernel_size_2d(kernel_size)
    validation.boolean(centered, "centered")
    max_patches = validation.optional(validation.positive_int, max_patches, "max_patches")
    batch_size = validation.positive_int(batch_size, "batch_size")
    validation.optional(validation.random_seed, seed, "seed")
    moments = _RowMoments(kernel_size) if max_patches is None else _Reservoir(kernel_size, max_patches, seed)
    offset = 0
    for batch in _batches(images, batch_size):
        _check_finite(batch, offset, "images")
        offset += len(batch)
        if len(batch):
            moments.update(batch)
    if moments.count == 0:
        raise ValueError("`images` holds no images: the patch covariance needs at least one.")
    first, second = moments.moments()
    mean = first / moments.count
    cov = second / moments.count
    if centered:
        cov = cov - np.outer(mean, mean)
    eigvals, eigvecs = sorted_eigh(cov)
    with np.errstate(over="ignore"):
        eigvals = eigvals * np.float64(moments.scale) ** 2
    if not np.isfinite(eigvals).all():
        raise ValueError(
            f"The patch covariance of `images` exceeds float64's range (values up to about "
            f"{moments.scale:.3g}): scale the images down, e.g. to [-1, 1]."
        )
    return eigvals, eigvecs
