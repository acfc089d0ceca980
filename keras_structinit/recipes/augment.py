"""What the recipes' training augmentation draws, and how one batch is transformed.

Both input streams (the native one, :mod:`keras_structinit.recipes.native`, and ``tf.data``,
:mod:`keras_structinit.recipes.data`) take a batch's draws from :func:`draw_batch` (NumPy, on the
host) and transform it with :func:`transform_batch` (:mod:`~keras_structinit.recipes.image_ops`
in a backend's ops), so the two streams draw from one distribution: with one seed they see the
same examples, crops, flips, ops, magnitudes, boxes and mixing weights.

Every draw is a stateless function of ``(seed, pass, position)``: a pass's order is
``numpy.random.default_rng([seed, pass, 0]).permutation(n)``; the batch at ``position`` in that
order draws from ``default_rng([seed, pass, 1, position])``. A stream that starts at any batch
(a resumed run) sees what an uninterrupted one would.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from keras_structinit.recipes import image_ops
from keras_structinit.recipes.rand_augment import RandAugmentForm, affine_rows, draw_ops, parse_rand_augment
from keras_structinit.utils import validation

#: timm's ``RandomErasing`` defaults (``timm/data/random_erasing.py``): area 2-33 % of the image,
#: log-uniform aspect ratio in [0.3, 1 / 0.3], up to 10 tries for a box that fits.
ERASE_AREA = (0.02, 1 / 3)
ERASE_LOG_RATIO = (math.log(0.3), math.log(1 / 0.3))
ERASE_TRIES = 10
#: torchvision's ``RandomResizedCrop.get_params``: up to 10 tries for a box inside the image.
CROP_TRIES = 10
#: The key of the crop draws (:func:`draw_crops`) beside :func:`draw_batch`'s streams.
CROP_STREAM = 3
#: ImageNet's channel mean and std (0-1 scale), the ImageNet recipe's normalization.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclasses.dataclass(frozen=True)
class Augmentation:
    """The training augmentation of a recipe run, in the order it runs.

    pad: zero padding before a random crop of the original size (0: no crop).
    flip: a horizontal flip with probability 1/2.
    rand_augment: a :class:`~keras_structinit.recipes.rand_augment.RandAugmentForm` or ``None``.
    random_erasing: probability that a box of an image becomes noise (timm's ``RandomErasing``,
        ``mode="pixel"``: per-pixel N(0, 1) after normalization).
    mixup_alpha, cutmix_alpha: Beta parameters of MixUp and CutMix per batch (timm's ``Mixup``,
        ``mode="batch"``: one of the two with probability 1/2 when both are on; 0: off).
    """

    pad: int = 0
    flip: bool = False
    rand_augment: RandAugmentForm | None = None
    random_erasing: float = 0.0
    mixup_alpha: float = 0.0
    cutmix_alpha: float = 0.0

    def __post_init__(self):
        validation.int_value(self.pad, "pad", minimum=0)
        validation.boolean(self.flip, "flip")
        object.__setattr__(self, "rand_augment", parse_rand_augment(self.rand_augment))
        for name in ("random_erasing", "mixup_alpha", "cutmix_alpha"):
            value = validation.optional(validation.non_negative_float, getattr(self, name), name) or 0.0
            object.__setattr__(self, name, float(value))
        if self.random_erasing > 1:
            raise ValueError(f"`random_erasing` is a probability in [0, 1]. Received: {self.random_erasing}")

    @property
    def mixes(self):
        return bool(self.mixup_alpha or self.cutmix_alpha)

    @property
    def native_rand_augment(self):
        """The RandAugment form :func:`transform_batch` runs (the Keras form runs as a Keras layer)."""
        form = self.rand_augment
        return form if form is not None and form.library != "keras" else None


def pass_order(seed, epoch_pass, count):
    """The order of the examples in pass ``epoch_pass`` of a run seeded ``seed``."""
    return np.random.default_rng([seed, epoch_pass, 0]).permutation(count)


def draw_batch(augmentation, seed, epoch_pass, position, count, size, stream=0):
    """The draws of the batch at ``position`` of pass ``epoch_pass``: a dict of NumPy arrays.

    ``offsets`` ``(B, 2)`` int32 and ``flips`` ``(B,)`` bool; per RandAugment step ``kernels``
    ``(S, B)`` int32, ``arguments`` ``(S, B)`` float32 and ``rows`` ``(S, B, 8)`` float32
    (:func:`~keras_structinit.recipes.rand_augment.affine_rows`); ``boxes`` ``(B, 4)`` int32 to
    erase (height 0: none) and ``noise_seed``; ``mix_weight`` and ``mix_box`` ``(4,)`` (CutMix's
    box; height 0: MixUp); ``keras_seed`` ``(2,)`` for the Keras RandAugment form. ``stream``: a
    further key, for a run that draws in more than one stream (the ImageNet recipe).
    """
    height, width = size
    rng = np.random.default_rng([seed, epoch_pass, 1 + stream, position])
    a = augmentation
    draws = {
        "offsets": rng.integers(0, 2 * a.pad + 1, (count, 2)).astype(np.int32),
        "flips": (rng.random(count) < 0.5) & a.flip,
    }
    form = a.native_rand_augment
    steps = draw_ops(form, rng, count, size) if form is not None else []
    draws["kernels"] = np.array([k for k, _ in steps], np.int32).reshape(len(steps), count)
    draws["arguments"] = np.array([v for _, v in steps], np.float32).reshape(len(steps), count)
    draws["rows"] = np.array([affine_rows(k, v, size) for k, v in steps], np.float32).reshape(
        len(steps), count, 8
    )
    draws["boxes"] = _erase_boxes(rng, a.random_erasing, count, height, width)
    draws["noise_seed"] = np.int64(rng.integers(0, 2**31 - 1))
    draws["mix_weight"], draws["mix_box"] = _mix(rng, a, height, width)
    draws["keras_seed"] = rng.integers(0, 2**31 - 1, 2).astype(np.int64)
    return draws


def draw_crops(seed, epoch_pass, position, count):
    """Uniforms ``(count, CROP_TRIES, 4)`` for :func:`resized_crop_box`, one row per try: area,
    log aspect ratio, top, left; keyed like :func:`draw_batch`."""
    rng = np.random.default_rng([seed, epoch_pass, 1 + CROP_STREAM, position])
    return rng.random((count, CROP_TRIES, 4))


def resized_crop_box(uniforms, height, width, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's ``RandomResizedCrop.get_params`` on the uniforms of :func:`draw_crops`:
    ``(top, left, h, w)`` of the first try whose box (area ``scale`` of the image's, aspect
    log-uniform in ``ratio``) fits; else the central crop with the aspect clamped to ``ratio``."""
    area = height * width
    log_ratio = np.log(ratio)
    for u_area, u_ratio, u_top, u_left in uniforms:
        target = area * (scale[0] + u_area * (scale[1] - scale[0]))
        aspect = math.exp(log_ratio[0] + u_ratio * (log_ratio[1] - log_ratio[0]))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return int(u_top * (height - h + 1)), int(u_left * (width - w + 1)), h, w
    if width / height < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif width / height > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        h, w = height, width
    return (height - h) // 2, (width - w) // 2, h, w


def _erase_boxes(rng, probability, count, height, width):
    """timm's ``RandomErasing._erase`` per image: with ``probability``, the first of
    :data:`ERASE_TRIES` boxes (area and log-ratio uniform) that fits inside, at a uniform place."""
    area = rng.uniform(*ERASE_AREA, (count, ERASE_TRIES)) * height * width
    aspect = np.exp(rng.uniform(*ERASE_LOG_RATIO, (count, ERASE_TRIES)))
    box_h = np.round(np.sqrt(area * aspect)).astype(np.int64)
    box_w = np.round(np.sqrt(area / aspect)).astype(np.int64)
    fits = (box_h < height) & (box_w < width)
    first = np.argmax(fits, axis=1)
    rows = np.arange(count)
    box_h, box_w = box_h[rows, first], box_w[rows, first]
    top = np.floor(rng.random(count) * (height - box_h + 1)).astype(np.int64)  # randint(0, H - h)
    left = np.floor(rng.random(count) * (width - box_w + 1)).astype(np.int64)
    erase = (rng.random(count) < probability) & fits.any(axis=1)
    return np.stack([top, left, np.where(erase, box_h, 0), np.where(erase, box_w, 0)], 1).astype(np.int32)


def _mix(rng, a, height, width):
    """timm's ``Mixup`` (``mode="batch"``, ``correct_lam=True``): ``(own-label weight, CutMix box)``."""
    none = (np.float32(1.0), np.zeros(4, np.int32))
    if not a.mixes:
        return none
    cutmix = a.cutmix_alpha > 0 and (a.mixup_alpha == 0 or rng.random() < 0.5)  # switch_prob 0.5
    alpha = a.cutmix_alpha if cutmix else a.mixup_alpha
    weight = float(rng.beta(alpha, alpha))
    if not cutmix:
        return np.float32(weight), np.zeros(4, np.int32)
    ratio = math.sqrt(1.0 - weight)
    cut_h, cut_w = int(height * ratio), int(width * ratio)
    cy, cx = int(rng.integers(0, height)), int(rng.integers(0, width))
    top, bottom = np.clip([cy - cut_h // 2, cy + cut_h // 2], 0, height)
    left, right = np.clip([cx - cut_w // 2, cx + cut_w // 2], 0, width)
    weight = 1.0 - (bottom - top) * (right - left) / float(height * width)
    return np.float32(weight), np.array([top, left, bottom - top, right - left], np.int32)


def transform_batch(K, augmentation, images, labels, draws, noise, mean, std, rand_augment=None):
    """One training batch: uint8-valued ``images`` ``(B, H, W, C)`` and one-hot ``labels`` through
    crop and flip, RandAugment (:attr:`Augmentation.native_rand_augment`), erasing, mixing and
    normalization with the ``draws`` of :func:`draw_batch` (as ``K`` tensors); ``noise``: N(0, 1)
    ``(B, H, W, C)`` for erasing (``None`` without it). ``rand_augment``: a function of the
    float32 images run in RandAugment's place (the Keras form's layer). Returns ``(images, labels)``:
    :func:`finish_batch` of :func:`augment_images`."""
    images = augment_images(K, augmentation, images, draws, rand_augment)
    return finish_batch(K, augmentation, images, labels, draws, noise, mean, std)


def augment_images(K, augmentation, images, draws, rand_augment=None):
    """The per-image half of :func:`transform_batch`: float32 0-255 images after crop, flip and
    RandAugment."""
    a = augmentation
    images = K.core.cast(images, "float32")
    if a.pad or a.flip:
        images = image_ops.crop_and_flip(K, images, draws["offsets"], draws["flips"], a.pad)
    form = a.native_rand_augment
    if rand_augment is not None:
        images = rand_augment(images)
    elif form is not None:
        for step in range(form.num_ops):
            images = image_ops.apply_step(
                K,
                images,
                draws["kernels"][step],
                draws["arguments"][step],
                draws["rows"][step],
                form.fill,
                form.interpolation,
            )
    return images


def finish_batch(K, augmentation, images, labels, draws, noise, mean, std):
    """Erasing, mixing and normalization of :func:`transform_batch` (``images`` float32 0-255)."""
    a = augmentation
    if a.random_erasing:
        fill = 255.0 * (
            K.core.convert_to_tensor(mean, "float32") + K.core.convert_to_tensor(std, "float32") * noise
        )
        images = image_ops.erase(K, images, draws["boxes"], fill)
    if a.mixes:
        images, labels = image_ops.mix(K, images, labels, draws["mix_weight"], draws["mix_box"])
    return image_ops.normalize(K, images, mean, std), labels
