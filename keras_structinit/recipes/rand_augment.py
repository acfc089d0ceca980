"""RandAugment as the papers' code defines it: named forms, per-op magnitude tables, per-image draws.

Pure Python and NumPy (float64); the pixel ops live in :mod:`keras_structinit.recipes.image_ops`.

Forms (:func:`parse_rand_augment`):

* ``"timm:m9-n2-mstd0.5"`` (``-inc1`` or ``-inc0``, ``-mmaxM`` optional): timm's
  ``rand_augment_transform`` (``timm/data/auto_augment.py``: ``_RAND_TRANSFORMS``,
  ``_RAND_INCREASING_TRANSFORMS``, ``LEVEL_TO_ARG``, ``AugmentOp.__call__``). ``inc1`` takes the
  increasing op set, ``inc0`` (or no ``inc``) the plain one, as timm 1.0's parser reads it
  (``increasing = bool(int(val))``); the name a run records drops ``inc0``. Older timm read
  ``if bool(val)`` of the text, so that any ``inc`` section, ``inc0`` too, took the increasing set
  (timm 0.4.12, with which Xu et al. produced their results, does). ``n`` ops drawn with
  replacement from 15, each applied with probability 1/2 at a magnitude ``N(m, mstd)`` clipped to
  ``[0, mmax]`` (``mmax`` 10), mapped to the op's argument by its ``*_level_to_arg`` (level / 10 of the
  op's range: rotate 30 degrees, shear 0.3, translate 0.45 of the side, ...; rotations,
  shears and translations negated with probability 1/2). The weight-selection and ConvNeXt
  recipes use it.
* ``"torchvision:n2-m12"`` (``-b31`` optional): ``torchvision.transforms.RandAugment(num_ops=n,
  magnitude=m, num_magnitude_bins=b)`` (``torchvision/transforms/autoaugment.py``:
  ``RandAugment._augmentation_space`` and ``_apply_op``): ``n`` of 14 ops (Identity included),
  each always applied at bin ``m`` of its table, signed ops negated with probability 1/2.
  ConvMixer's CIFAR script (``locuslab/convmixer-cifar10``, ``train.py``:
  ``transforms.RandAugment(num_ops=args.ra_n, magnitude=args.ra_m)``) uses it: ``n2-m12`` is
  the command of its README's 92.5% run (``--ra-n=2 --ra-m=12``), not ``train.py``'s default
  (``--ra-n 1 --ra-m 8``, ``torchvision:n1-m8``). The covariance and mimetic papers name
  RandAugment without N or M (and the covariance paper used its own implementation); the
  package's CIFAR setups take the README's command.
* ``"keras:n2-f0.4"``: ``keras.layers.RandAugment(num_ops=n, factor=f)``, kept for the runs
  recorded with it (the ``tf`` input stream only). Keras' ``factor`` is a range per op, not a
  magnitude: ``factor=0.4`` rotates by up to 144 degrees.

A legacy pair ``(num_ops, factor)`` is the Keras form.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from keras_structinit.utils import validation

#: Every pixel op the forms use, in the order of the op indices the draws return.
KERNELS = (
    "identity",
    "auto_contrast",
    "equalize",
    "invert",
    "rotate",
    "posterize",
    "solarize",
    "solarize_add",
    "color",
    "contrast",
    "brightness",
    "sharpness",
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
)
#: The ops that move pixels (one affine map per image and step).
GEOMETRIC = ("rotate", "shear_x", "shear_y", "translate_x", "translate_y")
#: The ops that blend each image with a degenerate one (PIL's ``ImageEnhance``) by a factor.
BLENDS = ("color", "contrast", "brightness", "sharpness")

#: timm's ``_RAND_TRANSFORMS`` and ``_RAND_INCREASING_TRANSFORMS`` (``auto_augment.py``).
TIMM_OPS = (
    "AutoContrast",
    "Equalize",
    "Invert",
    "Rotate",
    "Posterize",
    "Solarize",
    "SolarizeAdd",
    "Color",
    "Contrast",
    "Brightness",
    "Sharpness",
    "ShearX",
    "ShearY",
    "TranslateXRel",
    "TranslateYRel",
)
TIMM_INCREASING_OPS = (
    "AutoContrast",
    "Equalize",
    "Invert",
    "Rotate",
    "PosterizeIncreasing",
    "SolarizeIncreasing",
    "SolarizeAdd",
    "ColorIncreasing",
    "ContrastIncreasing",
    "BrightnessIncreasing",
    "SharpnessIncreasing",
    "ShearX",
    "ShearY",
    "TranslateXRel",
    "TranslateYRel",
)
#: torchvision's ``RandAugment._augmentation_space`` keys, in its order.
TORCHVISION_OPS = (
    "Identity",
    "ShearX",
    "ShearY",
    "TranslateX",
    "TranslateY",
    "Rotate",
    "Brightness",
    "Color",
    "Contrast",
    "Sharpness",
    "Posterize",
    "Solarize",
    "AutoContrast",
    "Equalize",
)

_TIMM_LEVEL_DENOM = 10.0  # timm's _LEVEL_DENOM
_TIMM_TRANSLATE_PCT = 0.45  # timm's default hparams["translate_pct"]
#: timm fills with ``hparams["img_mean"]``: ``create_transform`` sets it to the ImageNet mean in 0-255.
TIMM_FILL = (124.0, 116.0, 104.0)
_KERNEL_OF = {
    "AutoContrast": "auto_contrast",
    "Equalize": "equalize",
    "Invert": "invert",
    "Rotate": "rotate",
    "Posterize": "posterize",
    "PosterizeIncreasing": "posterize",
    "Solarize": "solarize",
    "SolarizeIncreasing": "solarize",
    "SolarizeAdd": "solarize_add",
    "Color": "color",
    "ColorIncreasing": "color",
    "Contrast": "contrast",
    "ContrastIncreasing": "contrast",
    "Brightness": "brightness",
    "BrightnessIncreasing": "brightness",
    "Sharpness": "sharpness",
    "SharpnessIncreasing": "sharpness",
    "ShearX": "shear_x",
    "ShearY": "shear_y",
    "TranslateXRel": "translate_x",
    "TranslateYRel": "translate_y",
    "TranslateX": "translate_x",
    "TranslateY": "translate_y",
    "Identity": "identity",
}
_SIGNED_TIMM = (
    "Rotate",
    "ShearX",
    "ShearY",
    "TranslateXRel",
    "TranslateYRel",
    "ColorIncreasing",
    "ContrastIncreasing",
    "BrightnessIncreasing",
    "SharpnessIncreasing",
)
_SIGNED_TORCHVISION = (
    "ShearX",
    "ShearY",
    "TranslateX",
    "TranslateY",
    "Rotate",
    "Brightness",
    "Color",
    "Contrast",
    "Sharpness",
)


@dataclasses.dataclass(frozen=True)
class RandAugmentForm:
    """One RandAugment configuration (see the module docstring); ``str(form)`` is its name."""

    library: str  # "timm", "torchvision" or "keras"
    num_ops: int
    magnitude: float  # timm: level in [0, mmax]; torchvision: a bin index; keras: the factor
    magnitude_std: float = 0.0  # timm only (inf: uniform in [0, m])
    magnitude_max: float = _TIMM_LEVEL_DENOM  # timm only
    increasing: bool = False  # timm only
    num_bins: int = 31  # torchvision only

    def __str__(self):
        if self.library == "keras":
            return f"keras:n{self.num_ops}-f{self.magnitude:g}"
        if self.library == "torchvision":
            bins = "" if self.num_bins == 31 else f"-b{self.num_bins}"
            return f"torchvision:n{self.num_ops}-m{self.magnitude:g}{bins}"
        parts = [f"m{self.magnitude:g}", f"n{self.num_ops}"]
        if self.magnitude_std:
            parts.append(f"mstd{self.magnitude_std:g}")
        if self.magnitude_max != _TIMM_LEVEL_DENOM:
            parts.append(f"mmax{self.magnitude_max:g}")
        if self.increasing:
            parts.append("inc1")
        return "timm:" + "-".join(parts)

    @property
    def ops(self):
        """The library's op names, in its order."""
        if self.library == "timm":
            return TIMM_INCREASING_OPS if self.increasing else TIMM_OPS
        if self.library == "torchvision":
            return TORCHVISION_OPS
        return ()

    @property
    def interpolation(self):
        """torchvision's default NEAREST; timm draws BILINEAR or BICUBIC per op: bilinear here."""
        return "nearest" if self.library == "torchvision" else "bilinear"

    @property
    def fill(self):
        """The value of pixels an affine op moves in (per channel, 0-255)."""
        return TIMM_FILL if self.library == "timm" else (0.0, 0.0, 0.0)

    def argument(self, op, level, size):
        """The argument of ``op`` (a name of :attr:`ops`) at magnitude ``level`` for an image of
        ``size = (height, width)``, before any random sign: what the library passes to the op
        (degrees, a blend factor, bits kept, a threshold, pixels, a shear factor)."""
        if self.library == "timm":
            return _timm_argument(op, level, size)
        if self.library == "torchvision":
            return _torchvision_argument(op, int(level), self.num_bins, size)
        raise ValueError("the Keras form has no per-op table; keras.layers.RandAugment draws its own")

    def signed(self, op):
        """Whether the library negates ``op``'s argument with probability 1/2."""
        return op in (_SIGNED_TIMM if self.library == "timm" else _SIGNED_TORCHVISION)


def _timm_argument(op, level, size):
    height, width = size
    fraction = level / _TIMM_LEVEL_DENOM
    if op in ("AutoContrast", "Equalize", "Invert"):
        return 0.0
    if op == "Rotate":
        return fraction * 30.0
    if op == "Posterize":
        return float(int(fraction * 4))
    if op == "PosterizeIncreasing":
        return float(4 - int(fraction * 4))
    if op == "Solarize":
        return float(int(fraction * 256))
    if op == "SolarizeIncreasing":
        return float(256 - int(fraction * 256))
    if op == "SolarizeAdd":
        return float(int(fraction * 110))
    if op in ("Color", "Contrast", "Brightness", "Sharpness"):
        return fraction * 1.8 + 0.1
    if op.endswith("Increasing"):  # the enhance ops: 1 +- this, at least 0.1 (see _sign)
        return fraction * 0.9
    if op in ("ShearX", "ShearY"):
        return fraction * 0.3
    if op == "TranslateXRel":
        return fraction * _TIMM_TRANSLATE_PCT * width
    if op == "TranslateYRel":
        return fraction * _TIMM_TRANSLATE_PCT * height
    raise ValueError(f"unknown timm op {op!r}")


def _torchvision_argument(op, bin_index, num_bins, size):
    height, width = size

    def linspace(start, stop):
        return float(np.linspace(start, stop, num_bins)[bin_index])

    if op in ("Identity", "AutoContrast", "Equalize"):
        return 0.0
    if op in ("ShearX", "ShearY"):
        return linspace(0.0, 0.3)
    if op == "TranslateX":  # F.get_image_size: [width, height]
        return linspace(0.0, 150.0 / 331.0 * width)
    if op == "TranslateY":
        return linspace(0.0, 150.0 / 331.0 * height)
    if op == "Rotate":
        return linspace(0.0, 30.0)
    if op in ("Brightness", "Color", "Contrast", "Sharpness"):
        return linspace(0.0, 0.9)
    if op == "Posterize":  # 8 - (arange(b) / ((b - 1) / 4)).round(): torch.round halves to even, as round
        return float(8 - round(bin_index / ((num_bins - 1) / 4)))
    if op == "Solarize":
        return linspace(255.0, 0.0)
    raise ValueError(f"unknown torchvision op {op!r}")


_FORM_RE = {
    "timm": re.compile(
        r"^(?:m(?P<m>\d+(?:\.\d+)?)|n(?P<n>\d+)|mstd(?P<mstd>\d+(?:\.\d+)?)|"
        r"mmax(?P<mmax>\d+(?:\.\d+)?)|inc(?P<inc>[01]))$"
    ),
    "torchvision": re.compile(r"^(?:n(?P<n>\d+)|m(?P<m>\d+)|b(?P<b>\d+))$"),
    "keras": re.compile(r"^(?:n(?P<n>\d+)|f(?P<f>\d+(?:\.\d+)?))$"),
}
FORMS_HELP = (
    "'timm:m9-n2-mstd0.5' (timm's rand-m9-n2-mstd0.5; -inc1 or -inc0, -mmax10 optional), "
    "'torchvision:n2-m12' (RandAugment(num_ops=2, magnitude=12); -b31 bins optional), "
    "'keras:n2-f0.4' (keras.layers.RandAugment(num_ops=2, factor=0.4)) or None"
)


def parse_rand_augment(value, name="rand_augment"):
    """A :class:`RandAugmentForm` (or ``None``) from its name, a form, ``None`` or a legacy
    ``(num_ops, factor)`` pair (the Keras form)."""
    if value is None or isinstance(value, RandAugmentForm):
        return value
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"`{name}` must be {FORMS_HELP}. Received: {name}={value!r}")
        num_ops = validation.positive_int(value[0], f"{name}[0]")
        factor = validation.fraction(value[1], f"{name}[1]")
        return RandAugmentForm("keras", num_ops, factor)
    if not isinstance(value, str):
        raise TypeError(
            f"`{name}` must be {FORMS_HELP}. Received: {name}={value!r} of type {type(value).__name__}"
        )
    library, _, rest = value.partition(":")
    if library not in _FORM_RE or not rest:
        raise ValueError(f"`{name}` must be {FORMS_HELP}. Received: {name}={value!r}")
    fields = {}
    for part in rest.split("-"):
        match = _FORM_RE[library].match(part)
        if not match:
            raise ValueError(
                f"`{name}`: {part!r} is not a {library} setting; the forms are {FORMS_HELP}. "
                f"Received: {name}={value!r}"
            )
        fields.update({k: v for k, v in match.groupdict().items() if v is not None})
    num_ops = int(fields.get("n", 2))
    if num_ops < 1:
        raise ValueError(f"`{name}` needs at least one op (n >= 1). Received: {name}={value!r}")
    if library == "keras":
        factor = float(fields.get("f", 0.5))
        if factor > 1:
            raise ValueError(f"`{name}`: Keras' factor is in [0, 1]. Received: {name}={value!r}")
        return RandAugmentForm("keras", num_ops, factor)
    if library == "torchvision":
        bins = int(fields.get("b", 31))
        magnitude = int(fields.get("m", 9))
        if bins < 2 or not 0 <= magnitude < bins:
            raise ValueError(
                f"`{name}`: torchvision's magnitude is a bin in [0, b) with b >= 2 "
                f"(b = {bins}). Received: {name}={value!r}"
            )
        return RandAugmentForm("torchvision", num_ops, magnitude, num_bins=bins)
    magnitude_std = float(fields.get("mstd", 0.0))
    return RandAugmentForm(
        "timm",
        num_ops,
        float(fields.get("m", 10)),
        magnitude_std=math.inf if magnitude_std > 100 else magnitude_std,
        magnitude_max=float(fields.get("mmax", _TIMM_LEVEL_DENOM)),
        increasing=fields.get("inc") == "1",
    )


def to_record(form):
    """What a run records: the form's name, or ``None``."""
    return None if form is None else str(form)


def draw_ops(form, rng, count, size):
    """The per-image draws of ``form`` for ``count`` images of ``size = (height, width)``: a list,
    one ``(kernel, argument)`` pair of arrays ``(count,)`` per step: the op each image runs
    (an index into :data:`KERNELS`, ``identity`` where the library skips) and its signed
    argument (float64). ``rng``: a ``numpy.random.Generator``."""
    if form.library == "keras":
        raise ValueError("the Keras form is drawn by keras.layers.RandAugment (the tf input stream)")
    names = form.ops
    kernel_of = np.array([KERNELS.index(_KERNEL_OF[op]) for op in names])
    steps = []
    for _ in range(form.num_ops):
        chosen = rng.integers(0, len(names), count)  # with replacement, uniform (both libraries)
        sign = np.where(rng.random(count) < 0.5, -1.0, 1.0)
        if form.library == "timm":
            applied = rng.random(count) <= 0.5  # AugmentOp(prob=0.5): skipped if random() > prob
            level = np.full(count, form.magnitude)
            if math.isinf(form.magnitude_std):
                level = rng.uniform(0.0, form.magnitude, count)
            elif form.magnitude_std > 0:
                level = rng.normal(form.magnitude, form.magnitude_std, count)
            level = np.clip(level, 0.0, form.magnitude_max)
        else:
            applied = np.ones(count, bool)
            level = np.full(count, form.magnitude)
        argument = np.array([form.argument(names[c], lv, size) for c, lv in zip(chosen, level, strict=True)])
        signed = np.array([form.signed(names[c]) for c in chosen], bool)
        argument = np.where(signed, argument * sign, argument)
        increasing_enhance = np.array(
            [names[c].endswith("Increasing") and _KERNEL_OF[names[c]] in BLENDS for c in chosen], bool
        )
        # timm's _enhance_increasing_level_to_arg: max(0.1, 1 + (+-) level fraction * 0.9);
        # torchvision's enhance ops: 1 + (+-) magnitude.
        blend = np.isin(kernel_of[chosen], [KERNELS.index(b) for b in BLENDS])
        if form.library == "torchvision":
            argument = np.where(blend, 1.0 + argument, argument)
        argument = np.where(increasing_enhance, np.maximum(0.1, 1.0 + argument), argument)
        if form.library == "torchvision":  # _apply_op: translate=[int(magnitude), 0]
            translate = np.isin(kernel_of[chosen], [KERNELS.index(t) for t in ("translate_x", "translate_y")])
            argument = np.where(translate, np.trunc(argument), argument)
        kernel = np.where(applied, kernel_of[chosen], KERNELS.index("identity"))
        steps.append((kernel.astype(np.int32), np.where(applied, argument, 0.0)))
    return steps


def affine_rows(kernel, argument, size):
    """``(count, 8)`` float64 rows of ``keras.ops.image.affine_transform`` (the output-to-input map)
    of the geometric ops among ``kernel`` (identity elsewhere), for images ``size = (height,
    width)``, in pixel-index coordinates.

    Rotate turns by ``argument`` degrees about the image centre, clockwise on screen (rows
    downward) for a positive angle: the opposite of PIL's ``Image.rotate`` and torchvision's
    ``rotate``, which turn counter-clockwise. Both libraries negate the angle with probability
    1/2, so the distribution of rotations is theirs. Shear X reads input ``x + s y`` (timm's
    ``(1, s, 0, 0, 1, 0)``, torchvision's ``tan(atan(s))`` about the origin); translate X reads
    input ``x + t`` (PIL's affine data; a random sign makes the two libraries' directions one
    distribution).
    """
    height, width = size
    count = len(kernel)
    rows = np.tile(np.array([1.0, 0, 0, 0, 1.0, 0, 0, 0]), (count, 1))
    k = np.asarray(kernel)
    a = np.asarray(argument, np.float64)
    rot = k == KERNELS.index("rotate")
    theta = np.deg2rad(a)
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    cos, sin = np.cos(theta), np.sin(theta)
    # input = R(theta) (output - centre) + centre, y pointing down: R(theta) turns counter-clockwise
    # on screen and the image moves by its inverse, clockwise (PIL's rotate(-theta)).
    rot_rows = np.stack(
        [
            cos,
            sin,
            cx - cos * cx - sin * cy,
            -sin,
            cos,
            cy + sin * cx - cos * cy,
            np.zeros(count),
            np.zeros(count),
        ],
        axis=1,
    )
    rows = np.where(rot[:, None], rot_rows, rows)
    sx = k == KERNELS.index("shear_x")
    rows[sx, 1] = a[sx]
    sy = k == KERNELS.index("shear_y")
    rows[sy, 3] = a[sy]
    tx = k == KERNELS.index("translate_x")
    rows[tx, 2] = a[tx]
    ty = k == KERNELS.index("translate_y")
    rows[ty, 5] = a[ty]
    return rows


def check_stream(value, pipeline, tensorflow_installed, name="rand_augment"):
    """``ValueError`` when ``value`` is the Keras form and the run's input stream cannot be
    ``tf.data`` (``pipeline="native"``, or ``"auto"`` without TensorFlow): only a Keras layer in
    ``tf.data`` applies it, and the native stream would drop it silently. Names the papers' forms."""
    form = parse_rand_augment(value, name)
    if form is None or form.library != "keras":
        return
    if pipeline == "tf" or (pipeline == "auto" and tensorflow_installed):
        return
    shown = repr(str(form)) if isinstance(value, (str, RandAugmentForm)) else f"{value!r} ({form})"
    where = "`pipeline`='native'" if pipeline == "native" else "this install (no TensorFlow)"
    raise ValueError(
        f"{validation.quoted(name)}={shown} is Keras' RandAugment (keras.layers.RandAugment), "
        f"which only the tf.data stream applies, and {where} trains on the native stream: "
        "use a paper's form, 'timm:m9-n2-mstd0.5-inc1' (weight selection) or "
        "'torchvision:n2-m12' (the command of the ConvMixer CIFAR script's README)"
    )


def parse_rand_augment_flag(text):
    """``--rand-augment``'s text: ``"recipe"`` (kept: the recipe's default), ``None`` for ``"none"``,
    a form's name, or ``"N,F"`` (the Keras form ``keras:nN-fF``, as recorded runs wrote it)."""
    if text in ("recipe", None):
        return "recipe"
    if text == "none":
        return None
    try:
        if "," in text and ":" not in text:
            ops, factor = text.split(",")
            return parse_rand_augment((int(ops), float(factor)), "--rand-augment")
        return parse_rand_augment(text, "--rand-augment")
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"--rand-augment must be a form ({FORMS_HELP}), 'none' or 'recipe'. Received: {text!r} ({err})"
        ) from None
