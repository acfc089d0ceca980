"""RandAugment forms: each op's argument against the reference libraries' tables, written as facts.

Sources: timm ``timm/data/auto_augment.py`` (``LEVEL_TO_ARG``, ``_RAND_TRANSFORMS``,
``AugmentOp.__call__``, ``rand_augment_ops``: prob 0.5) and torchvision
``torchvision/transforms/autoaugment.py`` (``RandAugment._augmentation_space``, ``_apply_op``).
"""

import math

import numpy as np
import pytest

from keras_structinit.recipes.rand_augment import (
    KERNELS,
    TIMM_INCREASING_OPS,
    TIMM_OPS,
    TORCHVISION_OPS,
    affine_rows,
    draw_ops,
    parse_rand_augment,
    parse_rand_augment_flag,
)

from conftest import once_per_suite

pytestmark = once_per_suite("pure NumPy tables and draws")

# timm at level 9 of 10 (rand-m9), image 32 x 32: its *_level_to_arg values.
TIMM_M9 = {
    "Rotate": 27.0,
    "Posterize": 3.0,
    "Solarize": 230.0,
    "SolarizeAdd": 99.0,
    "Color": 1.72,
    "Contrast": 1.72,
    "Brightness": 1.72,
    "Sharpness": 1.72,
    "ShearX": 0.27,
    "ShearY": 0.27,
    "TranslateXRel": 0.405 * 32,
    "TranslateYRel": 0.405 * 32,
    "AutoContrast": 0.0,
    "Equalize": 0.0,
    "Invert": 0.0,
}
# timm's increasing variants at level 9: 4 - int(3.6) bits, 256 - int(230.4), 0.81 either side of 1.
TIMM_INC_M9 = {"PosterizeIncreasing": 1.0, "SolarizeIncreasing": 26.0, "ColorIncreasing": 0.81}
# torchvision RandAugment(num_magnitude_bins=31) at bin 12 and bin 30, image 32 x 32.
TORCHVISION_BIN = {
    12: {
        "ShearX": 0.12,
        "ShearY": 0.12,
        "TranslateX": 150 / 331 * 32 * 12 / 30,
        "Rotate": 12.0,
        "Brightness": 0.36,
        "Color": 0.36,
        "Contrast": 0.36,
        "Sharpness": 0.36,
        "Posterize": 6.0,
        "Solarize": 153.0,
        "Identity": 0.0,
        "AutoContrast": 0.0,
        "Equalize": 0.0,
    },
    30: {"Rotate": 30.0, "ShearX": 0.3, "Posterize": 4.0, "Solarize": 0.0, "Brightness": 0.9},
    0: {"Rotate": 0.0, "Posterize": 8.0, "Solarize": 255.0},
}


def test_timm_tables_at_m9():
    form = parse_rand_augment("timm:m9-n2-mstd0.5")
    assert form.ops == TIMM_OPS and len(TIMM_OPS) == 15
    for op, want in TIMM_M9.items():
        assert form.argument(op, 9.0, (32, 32)) == pytest.approx(want), op
    inc = parse_rand_augment("timm:m9-n2-mstd0.5-inc1")
    for op, want in TIMM_INC_M9.items():
        assert inc.argument(op, 9.0, (32, 32)) == pytest.approx(want), op
    assert {op: form.signed(op) for op in ("Rotate", "ShearX", "TranslateXRel", "Color", "Solarize")} == {
        "Rotate": True,
        "ShearX": True,
        "TranslateXRel": True,
        "Color": False,
        "Solarize": False,
    }


def test_torchvision_tables():
    form = parse_rand_augment("torchvision:n2-m12")
    assert form.ops == TORCHVISION_OPS and len(TORCHVISION_OPS) == 14 and form.num_bins == 31
    for bin_index, table in TORCHVISION_BIN.items():
        for op, want in table.items():
            assert form.argument(op, bin_index, (32, 32)) == pytest.approx(want), (bin_index, op)
    # the table of posterize over all 31 bins: 8 - round(b / 7.5), halves to even
    bits = [form.argument("Posterize", b, (32, 32)) for b in range(31)]
    assert bits == [8 - round(b / 7.5) for b in range(31)] and bits[0] == 8 and bits[-1] == 4


def test_timm_rotation_never_exceeds_30_degrees_and_half_the_ops_are_skipped():
    form = parse_rand_augment("timm:m9-n2-mstd0.5")
    steps = draw_ops(form, np.random.default_rng(0), 200_000, (32, 32))
    kernel, argument = steps[0]
    rotations = argument[kernel == KERNELS.index("rotate")]
    assert np.abs(rotations).max() <= 30.0 + 1e-9
    assert np.abs(rotations).max() > 29.0  # N(9, 0.5) reaches the clip at 10 now and then
    # mean |angle| is 27 degrees (level 9) up to the clip's pull; both signs equally often
    assert np.abs(rotations).mean() == pytest.approx(27.0, abs=0.2)
    assert (rotations > 0).mean() == pytest.approx(0.5, abs=0.02)
    # each of 15 ops drawn with probability 1/15, applied with probability 1/2
    assert (kernel == KERNELS.index("identity")).mean() == pytest.approx(0.5, abs=0.01)
    assert len(rotations) / len(kernel) == pytest.approx(0.5 / 15, abs=0.003)


def test_torchvision_draws_are_the_bin_with_a_random_sign():
    form = parse_rand_augment("torchvision:n2-m12")
    steps = draw_ops(form, np.random.default_rng(1), 50_000, (32, 32))
    assert len(steps) == 2
    kernel, argument = steps[1]
    rot = argument[kernel == KERNELS.index("rotate")]
    assert set(np.round(np.abs(rot), 9)) == {12.0}
    brightness = argument[kernel == KERNELS.index("brightness")]
    assert set(np.round(brightness, 9)) == {0.64, 1.36}  # 1 +- 0.36
    translate = argument[kernel == KERNELS.index("translate_x")]
    assert set(np.abs(translate)) == {5.0}  # int(150 / 331 * 32 * 12 / 30) = int(5.8)
    assert (kernel == KERNELS.index("identity")).mean() == pytest.approx(1 / 14, abs=0.01)


def test_affine_rows_rotate_about_the_centre_and_shift():
    rows = affine_rows(
        np.array([KERNELS.index("rotate"), KERNELS.index("translate_x"), 0]),
        np.array([90.0, 3.0, 5.0]),
        (5, 5),
    )
    a0, a1, a2, b0, b1, b2 = rows[0, :6]
    assert (a0 * 2 + a1 * 2 + a2, b0 * 2 + b1 * 2 + b2) == pytest.approx((2, 2))  # the centre stays
    assert (a0 * 4 + a1 * 2 + a2, b0 * 4 + b1 * 2 + b2) == pytest.approx((2, 0))  # a quarter turn
    np.testing.assert_allclose(rows[1], [1, 0, 3, 0, 1, 0, 0, 0])
    np.testing.assert_allclose(rows[2], [1, 0, 0, 0, 1, 0, 0, 0])  # not geometric: identity


def test_names_round_trip_and_bad_forms():
    for name in (
        "timm:m9-n2-mstd0.5",
        "timm:m7-n2-mstd0.5-inc1",
        "torchvision:n2-m12",
        "keras:n2-f0.4",
        "torchvision:n3-m5-b11",
    ):
        assert str(parse_rand_augment(name)) == name
    assert parse_rand_augment("timm:m9-mstd101").magnitude_std == math.inf  # timm: > 100 is uniform
    assert str(parse_rand_augment((2, 0.4))) == "keras:n2-f0.4"
    assert parse_rand_augment_flag("2,0.4") == parse_rand_augment("keras:n2-f0.4")
    assert parse_rand_augment_flag("none") is None and parse_rand_augment_flag("recipe") == "recipe"
    for bad in ("torchvision:n2-m31", "timm:m9-q3", "timm:", "keras:n2-f1.5", "timm:n0"):
        with pytest.raises(ValueError, match="rand_augment"):
            parse_rand_augment(bad)
    with pytest.raises(ValueError, match="--rand-augment"):
        parse_rand_augment_flag("2,abc")
    with pytest.raises(TypeError, match="rand_augment"):
        parse_rand_augment(3)


def test_inc0_is_the_plain_op_set_as_timms_parser_reads_it():
    """timm 1.0's ``rand_augment_transform``: ``increasing = bool(int(val))`` for an ``inc`` section,
    so ``inc0`` is the plain set (no ``inc`` at all the same); the recorded name drops it."""
    plain, inc0, inc1 = (parse_rand_augment(f"timm:m9-n2-mstd0.5{tail}") for tail in ("", "-inc0", "-inc1"))
    assert inc0 == plain and not inc0.increasing and inc0.ops == TIMM_OPS
    assert inc1.increasing and inc1.ops == TIMM_INCREASING_OPS
    assert str(inc0) == "timm:m9-n2-mstd0.5" and str(inc1) == "timm:m9-n2-mstd0.5-inc1"
    assert inc0.argument("Posterize", 9.0, (32, 32)) == 3.0  # the plain table: int(3.6) bits kept
    assert inc1.argument("PosterizeIncreasing", 9.0, (32, 32)) == 1.0
    for bad in ("timm:m9-inc", "timm:m9-inc2"):
        with pytest.raises(ValueError, match="rand_augment"):
            parse_rand_augment(bad)


def test_a_positive_rotation_turns_clockwise_the_opposite_of_pil():
    """The docstring's direction, measured: one lit pixel at the top centre of a 5 x 5 image, a
    quarter turn of +90 degrees through the streams' affine op (rows downward on screen)."""
    from PIL import Image

    from keras_structinit.recipes import image_ops

    image = np.zeros((1, 5, 5, 3), np.float32)
    image[0, 0, 2] = 255.0  # row 0, column 2: 12 o'clock

    def lit(angle):
        K = image_ops.backend_ops()
        rows = affine_rows(np.array([KERNELS.index("rotate")]), np.array([angle]), (5, 5)).astype(np.float32)
        out = image_ops.affine(
            K, K.core.convert_to_tensor(image), K.core.convert_to_tensor(rows), (0.0, 0.0, 0.0), "nearest"
        )
        return [tuple(map(int, p)) for p in np.argwhere(K.core.convert_to_numpy(out)[0, :, :, 0] > 0)]

    def pil_lit(angle):
        turned = Image.fromarray(image[0].astype(np.uint8)).rotate(angle)  # timm's and torchvision's op
        return [tuple(map(int, p)) for p in np.argwhere(np.asarray(turned)[:, :, 0] > 0)]

    assert lit(90.0) == [(2, 4)]  # 12 o'clock to 3 o'clock: clockwise
    assert pil_lit(90.0) == [(2, 0)]  # PIL: 12 o'clock to 9 o'clock, counter-clockwise
    assert lit(-90.0) == pil_lit(90.0) and lit(90.0) == pil_lit(-90.0)
    assert lit(180.0) == pil_lit(180.0) == [(4, 2)]
