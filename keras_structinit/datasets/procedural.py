"""The embedded procedural image set: :func:`procedural_images`, a labelled texture set that needs no
download (what :func:`~keras_structinit.datasets.load_demo_data` falls back to offline).

NumPy only.
"""

from __future__ import annotations

import numpy as np

from keras_structinit.utils import validation

# The most procedural training images load_demo_data generates (CIFAR-10's 50,000).
PROCEDURAL_MAX_TRAIN_SIZE = 50_000
#: How a description of the embedded procedural images begins.
PROCEDURAL_DESCRIPTION = "the embedded procedural image set"


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


# Indexes a per-image scalar as (n, 1, 1), to broadcast over an image.
_COL = (slice(None), None, None)


def _pixel_grid(image_size):
    """``(u, v)``, each ``(1, S, S)``: pixel centres on [-1, 1]; v grows downwards, u to the right."""
    axis = ((np.arange(image_size, dtype=np.float32) + 0.5) / image_size) * 2 - 1
    v_grid, u_grid = np.meshgrid(axis, axis, indexing="ij")
    return u_grid[None], v_grid[None]


def _shape_params(draw, rng, n):
    """Each image's pattern parameters (the families read those they use)."""
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
        "arms": rng.integers(3, 7, size=n).astype(np.float32),
    }


def _render(labels, params, u, v):
    """Image ``i``: the pattern family ``labels[i]`` at ``params[...][i]``, standardized."""
    out = np.empty((len(labels), u.shape[-2], u.shape[-1]), dtype=np.float32)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        p = {k: val[members][:, None, None] for k, val in params.items()}
        out[members] = _PATTERNS[label][1](u, v, p)
    return _standardize(out)


def _texture_field(rng, draw, y, num_classes, u, v):
    """The class pattern, plus a weaker distractor from another family, seen through a soft window
    at a random place; standardized."""
    n, col = len(y), _COL
    field = _render(y, _shape_params(draw, rng, n), u, v)
    other = (y + rng.integers(1, num_classes, size=n)) % num_classes if num_classes > 1 else y
    field += draw(0.0, 0.9)[col] * _render(other, _shape_params(draw, rng, n), u, v)
    window_x, window_y, window_w = draw(-0.5, 0.5), draw(-0.5, 0.5), draw(0.4, 1.5)
    field *= np.exp(-((u - window_x[col]) ** 2 + (v - window_y[col]) ** 2) / (2 * window_w[col] ** 2))
    return _standardize(field)


def _compose(rng, draw, field, u, v):
    """uint8 images ``(n, S, S, 3)``: ``field`` at a random contrast, colour tint, mean colour and
    illumination ramp, plus uniform pixel noise."""
    n, col, f32 = len(field), _COL, np.float32
    contrast = draw(6, 30)
    tint = rng.uniform(0.25, 1.0, size=(n, 3)).astype(f32)
    mean_colour = rng.uniform(70, 185, size=(n, 3)).astype(f32)
    ramp_angle, ramp_size = draw(0, 2 * np.pi), draw(0, 30)
    noise_std = draw(10, 50)

    luminance = contrast[col] * field
    luminance += ramp_size[col] * (np.cos(ramp_angle)[col] * u + np.sin(ramp_angle)[col] * v)

    # Compose channels-first in place (few large temporaries), uniform noise
    # of standard deviation ``noise_std``.
    images = np.empty((n, 3) + field.shape[1:], dtype=f32)
    rng.random(out=images, dtype=f32)
    images -= f32(0.5)
    images *= (noise_std * f32(np.sqrt(12.0)))[:, None, None, None]
    for c in range(3):
        images[:, c] += tint[:, c][col] * luminance
        images[:, c] += mean_colour[:, c][col]
    np.clip(np.rint(images, out=images), 0, 255, out=images)
    return images.transpose(0, 2, 3, 1).astype(np.uint8)


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
    n = num_samples

    y = rng.permutation(np.arange(n) % num_classes).astype(np.uint8)

    def draw(low, high):
        return rng.uniform(low, high, size=n).astype(np.float32)

    u, v = _pixel_grid(image_size)
    field = _texture_field(rng, draw, y, num_classes, u, v)
    return _compose(rng, draw, field, u, v), y
