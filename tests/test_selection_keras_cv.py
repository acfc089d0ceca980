"""Weight selection from KerasCV ResNetV2 backbones (the ``cv`` extra; KerasCV needs TensorFlow installed),
built from config with random weights, and a KerasCV teacher loaded from a local preset directory."""

import importlib.util

import numpy as np
import pytest

from keras_structinit.selection import load_teacher, select_weights

from conftest import assert_round_trip_in_process, to_numpy
from selection_helpers import indices_of, randomize, select_and_check, select_with_report

if importlib.util.find_spec("keras_cv") is None:
    pytest.skip(
        'KerasCV is not installed: pip install -e ".[cv]" to run the KerasCV adapter tests',
        allow_module_level=True,
    )
keras_cv = pytest.importorskip("keras_cv")

IMAGE = (16, 16, 3)


def cv_resnet(widths, blocks, block_type):
    return keras_cv.models.ResNetV2Backbone(
        stackwise_filters=list(widths),
        stackwise_blocks=list(blocks),
        stackwise_strides=[1, 2][: len(widths)],
        block_type=block_type,
        include_rescaling=False,
        input_shape=IMAGE,
    )


PAIRS = {
    "keras_cv_resnet_v2_bottleneck": (
        lambda: cv_resnet((16, 32), (2, 3), "block"),
        lambda: cv_resnet((8, 16), (2, 2), "block"),
    ),
    "keras_cv_resnet_v2_basic": (
        # basic blocks: the first stack has no projection shortcut, so its width is the stem's 64
        lambda: cv_resnet((64, 32), (2, 3), "basic_block"),
        lambda: cv_resnet((64, 16), (2, 2), "basic_block"),
    ),
}


@pytest.mark.parametrize("family", sorted(PAIRS))
def test_every_student_variable_is_the_teachers_slice(family, tmp_path):
    student = PAIRS[family][1]()
    report = select_and_check(randomize(PAIRS[family][0]()), student)
    assert report.family == family and report.skipped == []
    assert report.block_map == {"1": {1: 1, 2: 2}, "2": {1: 1, 2: 2}}  # first_n per stack, 1-based blocks
    x = np.random.default_rng(0).standard_normal((2, *IMAGE)).astype("float32")
    assert_round_trip_in_process(student, x, tmp_path, atol=1e-5)


def test_widths_are_consistent_across_preactivations_shortcuts_and_the_final_norm():
    teacher, student = (build() for build in PAIRS["keras_cv_resnet_v2_bottleneck"])
    report = select_with_report(student, teacher=teacher, element_selection="random", seed=3)
    out_2 = [  # the second stack's output width (4 x 32 -> 4 x 16)
        ("v2_stack_1_block1_0_conv/kernel", 3),
        ("v2_stack_1_block1_0_conv/bias", 0),
        ("v2_stack_1_block1_3_conv/kernel", 3),
        ("v2_stack_1_block2_use_preactivation_bn/gamma", 0),
        ("v2_stack_1_block2_1_conv/kernel", 2),
        ("post_bn/moving_mean", 0),
    ]
    out_1 = [
        ("v2_stack_0_block2_3_conv/bias", 0),
        ("v2_stack_1_block1_use_preactivation_bn/beta", 0),
        ("v2_stack_1_block1_1_conv/kernel", 2),
        ("v2_stack_1_block1_0_conv/kernel", 2),
    ]
    inner_2 = [
        ("v2_stack_1_block2_1_conv/kernel", 3),
        ("v2_stack_1_block2_1_bn/gamma", 0),
        ("v2_stack_1_block2_2_conv/kernel", 2),
        ("v2_stack_1_block2_2_conv/kernel", 3),
    ]
    for places, size in ((out_2, 64), (out_1, 32), (inner_2, 16)):
        found = indices_of(report, places)
        assert all(f == found[0] for f in found) and len(found[0]) == size
        assert found[0] != list(range(size))  # random selection, not a prefix
    assert indices_of(report, [("conv1_conv/kernel", 3)]) == ["all"]  # KerasCV's stem is always 64 wide


def test_a_local_keras_cv_preset_loads_as_a_teacher(tmp_path):
    from keras_cv.src.utils.preset_utils import save_to_preset  # KerasCV's own preset writer

    teacher = randomize(PAIRS["keras_cv_resnet_v2_basic"][0]())
    save_to_preset(teacher, str(tmp_path / "preset"))
    loaded = load_teacher(f"keras_cv:{tmp_path / 'preset'}")
    assert isinstance(loaded, keras_cv.models.ResNetV2Backbone)
    for a, b in zip(teacher.weights, loaded.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=a.path)
    select_and_check(loaded, PAIRS["keras_cv_resnet_v2_basic"][1]())


def test_basic_and_bottleneck_do_not_mix():
    names = "teacher is 'keras_cv_resnet_v2_bottleneck'.*'keras_cv_resnet_v2_basic'"
    with pytest.raises(ValueError, match=names):
        select_weights(
            PAIRS["keras_cv_resnet_v2_basic"][1](), teacher=PAIRS["keras_cv_resnet_v2_bottleneck"][0]()
        )
