"""The input streams' pixel ops on whole batches, written once in Keras' backend ops.

Every function takes ``K``, a ``keras.src.utils.backend_utils.DynamicBackend``: the native stream
passes the running backend (the ops run on the device, compiled per batch where the backend
compiles), the ``tf.data`` stream passes ``"tensorflow"`` whatever the Keras backend is, as Keras'
own preprocessing layers do inside ``tf.data``. So both streams run the same op definitions.

Images are float32 ``(B, H, W, C)`` holding uint8 values (0-255); every op returns whole
numbers in [0, 255], as the PIL and uint8-tensor ops of timm and torchvision do. The per-image
parameters are arrays drawn beforehand (:mod:`keras_structinit.recipes.augment`).
"""

from __future__ import annotations

from keras_structinit.recipes.rand_augment import BLENDS, KERNELS


def backend_ops(name=None):
    """The ops of backend ``name`` (default: Keras' backend), whatever Keras' global backend is."""
    from keras.src.utils.backend_utils import DynamicBackend

    return DynamicBackend(name)


def crop_and_flip(K, images, offsets, flips, pad):
    """Zero-pads ``pad`` pixels per side, then cuts each image's window at ``offsets`` ``(B, 2)``
    (row, column in [0, 2 pad]) and mirrors it left-right where ``flips`` ``(B,)`` is true; one
    gather (a flip alone: one select). ``images``: float32 ``(B, H, W, C)``."""
    np_, (count, height, width, channels) = K.numpy, images.shape
    if not pad:
        return np_.where(flips[:, None, None, None], np_.flip(images, axis=2), images)
    images = np_.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    padded_width = width + 2 * pad
    rows = np_.arange(height, dtype="int32")[None, :, None] + offsets[:, 0, None, None]
    columns = np_.arange(width, dtype="int32")[None, None, :]
    columns = np_.where(flips[:, None, None], width - 1 - columns, columns) + offsets[:, 1, None, None]
    flat = np_.reshape(rows * padded_width + columns, (count, height * width, 1))
    pixels = np_.reshape(images, (count, -1, channels))
    out = np_.take_along_axis(pixels, np_.broadcast_to(flat, (count, height * width, channels)), axis=1)
    return np_.reshape(out, (count, height, width, channels))


def _whole(K, images):
    return K.numpy.clip(K.numpy.round(images), 0.0, 255.0)


def affine(K, images, rows, fill, interpolation):
    """Each image resampled through its output-to-input map ``rows`` ``(B, 8)`` (the rows of
    ``keras.ops.image.affine_transform``: output pixel ``(x, y)`` reads input ``(a0 x + a1 y + a2,
    b0 x + b1 y + b2)``, pixel-index coordinates; ``c0``, ``c1`` unused), ``"nearest"`` or
    ``"bilinear"``, pixels from outside the image ``fill`` per channel; rounded to whole values.

    Written as gathers (one per neighbour) rather than ``affine_transform``, whose JAX form
    (``map_coordinates``) took 57 ms for a batch of 512 CIFAR images on one CPU core against
    a few ms here.
    """
    np_ = K.numpy
    count, height, width, channels = images.shape
    fill = K.core.convert_to_tensor(fill, "float32")
    ys = np_.arange(height, dtype="float32")[None, :, None]
    xs = np_.arange(width, dtype="float32")[None, None, :]
    r = [rows[:, i, None, None] for i in range(6)]
    src_x = r[0] * xs + r[1] * ys + r[2]  # (B, H, W)
    src_y = r[3] * xs + r[4] * ys + r[5]
    pixels = np_.reshape(images - fill, (count, height * width, channels))

    def sample(row, column):
        inside = (row >= 0) & (row <= height - 1) & (column >= 0) & (column <= width - 1)
        flat = K.core.cast(np_.clip(row, 0, height - 1) * width + np_.clip(column, 0, width - 1), "int32")
        flat = np_.reshape(flat, (count, height * width, 1))
        flat = np_.broadcast_to(flat, (count, height * width, channels))
        got = np_.reshape(np_.take_along_axis(pixels, flat, axis=1), (count, height, width, channels))
        return np_.where(inside[..., None], got, 0.0)

    if interpolation == "nearest":
        moved = sample(np_.round(src_y), np_.round(src_x))
    else:
        y0, x0 = np_.floor(src_y), np_.floor(src_x)
        wy, wx = (src_y - y0)[..., None], (src_x - x0)[..., None]
        moved = (1 - wy) * ((1 - wx) * sample(y0, x0) + wx * sample(y0, x0 + 1)) + wy * (
            (1 - wx) * sample(y0 + 1, x0) + wx * sample(y0 + 1, x0 + 1)
        )
    return _whole(K, moved + fill)


def grayscale(K, images):
    """ITU-R 601 luma, ``L = 0.299 R + 0.587 G + 0.114 B``, rounded (PIL's ``convert("L")``)."""
    return K.numpy.round(0.299 * images[..., 0:1] + 0.587 * images[..., 1:2] + 0.114 * images[..., 2:3])


def smooth(K, images):
    """PIL's ``ImageFilter.SMOOTH`` ([[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13) inside the image, the
    border pixels as they are (the degenerate image of ``Sharpness``), rounded."""
    np_ = K.numpy
    height, width = images.shape[1:3]
    total = 4.0 * images[:, 1:-1, 1:-1]
    for dy in range(3):
        for dx in range(3):
            total = total + images[:, dy : dy + height - 2, dx : dx + width - 2]
    inner = np_.round(total / 13.0)
    return np_.pad(inner, ((0, 0), (1, 1), (1, 1), (0, 0))) + images * _border(K, height, width)


def _border(K, height, width):
    np_ = K.numpy
    rows = np_.arange(height)
    columns = np_.arange(width)
    inner = ((rows > 0) & (rows < height - 1))[:, None] & ((columns > 0) & (columns < width - 1))[None, :]
    return K.core.cast(~inner, "float32")[None, :, :, None]


def equalize(K, images):
    """Per image and channel histogram equalization, as PIL's ``ImageOps.equalize`` and
    torchvision's ``equalize``: with ``h`` the 256-bin histogram, ``step = floor((sum(h) - h[last
    occupied bin]) / 255)``, the table ``floor((cumsum(h)_before + floor(step / 2)) / step)``
    (clipped to 255); a channel with ``step = 0`` stays as it is. All histograms are one
    ``segment_sum``."""
    np_ = K.numpy
    count, height, width, channels = images.shape
    values = K.core.cast(images, "int32")
    offsets = (
        np_.arange(count, dtype="int32")[:, None, None, None] * channels + np_.arange(channels, dtype="int32")
    ) * 256
    ids = np_.reshape(values + offsets, (-1,))
    hist = K.math.segment_sum(np_.ones_like(ids, dtype="float32"), ids, num_segments=count * channels * 256)
    hist = np_.reshape(hist, (count, channels, 256))
    bins = np_.arange(256, dtype="float32")
    last = np_.max(np_.where(hist > 0, bins, -1.0), axis=-1, keepdims=True)
    last_count = np_.sum(np_.where(bins == last, hist, 0.0), axis=-1, keepdims=True)
    step = np_.floor((height * width - last_count) / 255.0)
    before = np_.cumsum(hist, axis=-1) - hist
    table = np_.clip(np_.floor((before + np_.floor(step / 2.0)) / np_.maximum(step, 1.0)), 0.0, 255.0)
    table = np_.where(step > 0, table, bins)  # (B, C, 256)
    per_channel = np_.reshape(np_.transpose(values, (0, 3, 1, 2)), (count, channels, -1))
    looked = np_.take_along_axis(table, per_channel, axis=-1)
    return np_.transpose(np_.reshape(looked, (count, channels, height, width)), (0, 2, 3, 1))


def auto_contrast(K, images):
    """Each channel stretched to [0, 255] from its own min and max (PIL's ``autocontrast`` with no
    cutoff; a constant channel stays as it is), rounded."""
    np_ = K.numpy
    low = np_.min(images, axis=(1, 2), keepdims=True)
    high = np_.max(images, axis=(1, 2), keepdims=True)
    scale = 255.0 / np_.maximum(high - low, 1.0)
    return np_.where(high > low, _whole(K, (images - low) * scale), images)


def apply_step(K, images, kernel, argument, rows, fill, interpolation):
    """One RandAugment step: each image ``i`` through op ``KERNELS[kernel[i]]`` with ``argument[i]``
    (``rows``: the affine maps of the geometric ops, identity elsewhere).

    The geometric ops are one affine transform of the batch; the blend ops (``color``,
    ``contrast``, ``brightness``, ``sharpness``) one blend of each image with its op's degenerate
    image (``degenerate + factor (image - degenerate)``, PIL's ``ImageEnhance``); the others
    are computed for the batch and kept where drawn.
    """
    np_ = K.numpy
    index = {name: i for i, name in enumerate(KERNELS)}
    kernel = kernel[:, None, None, None]
    value = argument[:, None, None, None]
    out = affine(K, images, rows, fill, interpolation)
    gray = grayscale(K, images)
    mean = np_.round(np_.mean(gray, axis=(1, 2, 3), keepdims=True))
    degenerate = np_.where(kernel == index["brightness"], 0.0, images)
    degenerate = np_.where(kernel == index["color"], gray, degenerate)
    degenerate = np_.where(kernel == index["contrast"], mean, degenerate)
    degenerate = np_.where(kernel == index["sharpness"], smooth(K, images), degenerate)
    is_blend = kernel == index[BLENDS[0]]
    for name in BLENDS[1:]:
        is_blend = is_blend | (kernel == index[name])
    blended = _whole(K, degenerate + value * (images - degenerate))
    out = np_.where(is_blend, blended, out)
    out = np_.where(kernel == index["invert"], 255.0 - images, out)
    step = np_.power(2.0, 8.0 - value)  # posterize: keep the top `value` bits
    out = np_.where(kernel == index["posterize"], images - np_.mod(images, step), out)
    out = np_.where(kernel == index["solarize"], np_.where(images >= value, 255.0 - images, images), out)
    out = np_.where(
        kernel == index["solarize_add"],
        np_.where(images < 128.0, np_.minimum(images + value, 255.0), images),
        out,
    )
    out = np_.where(kernel == index["auto_contrast"], auto_contrast(K, images), out)
    return np_.where(kernel == index["equalize"], equalize(K, images), out)


def erase(K, images, boxes, noise):
    """Random erasing: where ``boxes`` ``(B, 4)`` (top, left, height, width; height 0: none) cover an
    image, its pixels become ``noise`` (the same shape as ``images``)."""
    np_ = K.numpy
    height, width = images.shape[1:3]
    rows = np_.arange(height, dtype="int32")[None, :, None, None]
    columns = np_.arange(width, dtype="int32")[None, None, :, None]
    top, left = boxes[:, 0, None, None, None], boxes[:, 1, None, None, None]
    inside = (
        (rows >= top)
        & (rows < top + boxes[:, 2, None, None, None])
        & (columns >= left)
        & (columns < left + boxes[:, 3, None, None, None])
    )
    return np_.where(inside, noise, images)


def mix(K, images, labels, weight, box):
    """MixUp or CutMix of each image with the batch's mirror (the last image with the first, as
    timm's ``Mixup`` pairs them): ``box`` ``(4,)`` (top, left, height, width) pastes the partner's
    box (CutMix, box height 0: MixUp); ``weight`` (a scalar) is the share of each image's own
    label (and, for MixUp, of its pixels)."""
    np_ = K.numpy
    partner, partner_labels = np_.flip(images, axis=0), np_.flip(labels, axis=0)
    height, width = images.shape[1:3]
    rows = np_.arange(height, dtype="int32")[:, None, None]
    columns = np_.arange(width, dtype="int32")[None, :, None]
    inside = (rows >= box[0]) & (rows < box[0] + box[2]) & (columns >= box[1]) & (columns < box[1] + box[3])
    cutmix = box[2] > 0
    mixed = np_.where(cutmix, np_.where(inside, partner, images), weight * images + (1.0 - weight) * partner)
    return mixed, weight * labels + (1.0 - weight) * partner_labels


def normalize(K, images, mean, std):
    """``(images / 255 - mean) / std``, float32."""
    mean = K.core.convert_to_tensor(mean, "float32")
    std = K.core.convert_to_tensor(std, "float32")
    return (images / 255.0 - mean) / std
