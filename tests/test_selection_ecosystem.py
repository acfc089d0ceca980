"""Weight selection from ecosystem models: KerasHub ViT and ResNet, keras.applications ConvNeXt, and across
libraries (a KerasHub ViT into the package's ViT and back). All built from config with random weights."""

import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.selection import select_weights

from conftest import assert_round_trip_in_process, to_numpy
from selection_helpers import indices_of, randomize, select_and_check, select_with_report

keras_hub = pytest.importorskip("keras_hub")

IMAGE = (16, 16, 3)


def hub_vit(dim, layers, heads, image=IMAGE):
    return keras_hub.models.ViTBackbone(
        image_shape=image, patch_size=4, num_layers=layers, num_heads=heads, hidden_dim=dim, mlp_dim=2 * dim
    )


def hub_resnet(widths, blocks, block_type, stem=16):
    return keras_hub.models.ResNetBackbone(
        input_conv_filters=[stem],
        input_conv_kernel_sizes=[3],
        stackwise_num_filters=list(widths),
        stackwise_num_blocks=list(blocks),
        stackwise_num_strides=[1, 2][: len(widths)],
        block_type=block_type,
        image_shape=IMAGE,
    )


def app_convnext(dims, depths, name):
    from keras.src.applications.convnext import ConvNeXt  # the generic builder (private; pinned Keras range)

    return ConvNeXt(
        depths=list(depths),
        projection_dims=list(dims),
        input_shape=(32, 32, 3),
        weights=None,
        classes=5,
        name=name,
        include_preprocessing=False,
        classifier_activation=None,
    )


def package_vit(dim, depth, heads, image=IMAGE):
    return ks.models.vit(4, dim, depth, heads, num_classes=5, input_shape=image, mlp_ratio=2)


PAIRS = {
    "keras_hub_vit": (lambda: hub_vit(32, 4, 4), lambda: hub_vit(16, 2, 2)),
    "keras_hub_resnet_bottleneck": (
        lambda: hub_resnet((64, 32), (2, 3), "bottleneck_block"),
        lambda: hub_resnet((64, 16), (1, 2), "bottleneck_block", stem=8),
    ),
    "keras_hub_resnet_basic": (
        lambda: hub_resnet((64, 32), (2, 2), "basic_block", stem=64),
        lambda: hub_resnet((64, 16), (1, 1), "basic_block", stem=64),
    ),
    "keras_convnext": (
        lambda: app_convnext((16, 32, 32, 64), (2, 2, 3, 2), "teacher"),
        lambda: app_convnext((8, 16, 16, 32), (1, 1, 2, 1), "student"),
    ),
    "keras_hub_vit -> vit": (lambda: hub_vit(32, 4, 4), lambda: package_vit(16, 2, 2)),
    "vit -> keras_hub_vit": (lambda: package_vit(32, 4, 4), lambda: hub_vit(16, 2, 2)),
}


@pytest.mark.parametrize("family", sorted(PAIRS))
def test_every_student_variable_is_the_teachers_slice(family, tmp_path):
    student = PAIRS[family][1]()
    report = select_and_check(randomize(PAIRS[family][0]()), student)
    assert report.family == family
    x = np.random.default_rng(0).standard_normal((2, *student.input_shape[1:])).astype("float32")
    assert_round_trip_in_process(student, x, tmp_path, atol=1e-5)  # the selected student saves and reloads
    skipped = {
        "keras_convnext": ["student_head_dense/kernel", "student_head_dense/bias"],
        "keras_hub_vit -> vit": ["head/kernel", "head/bias"],
    }
    assert report.skipped == skipped.get(family, [])


def test_a_saved_and_reloaded_keras_applications_model_keeps_its_family(tmp_path):
    """Issue 33: reloading drops the nested stem/downsampling prefix of the variable paths."""
    import keras

    teacher = randomize(app_convnext((16, 32, 32, 64), (2, 2, 3, 2), "teacher"))
    teacher.save(tmp_path / "teacher.keras")
    reloaded = keras.saving.load_model(tmp_path / "teacher.keras")
    assert "teacher_stem_conv/kernel" in [v.path for v in reloaded.weights]  # the form reloading gives
    in_memory = app_convnext((8, 16, 16, 32), (1, 1, 2, 1), "student")
    select_and_check(teacher, in_memory)
    app_convnext((8, 16, 16, 32), (1, 1, 2, 1), "student").save(tmp_path / "student.keras")
    from_file = keras.saving.load_model(tmp_path / "student.keras")  # a reloaded student too
    report = select_and_check(reloaded, from_file)
    assert report.family == "keras_convnext" and len(report.entries) == len(in_memory.weights) - 2
    for a, b in zip(in_memory.weights, from_file.weights, strict=True):  # same selection, same order
        if b.path not in report.skipped:
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))


def _with_own_head(backbone, name):
    import keras

    inputs = keras.Input(IMAGE)
    return keras.Model(inputs, keras.layers.Dense(5, name=name)(backbone(inputs)[:, 0]))


@pytest.mark.parametrize("head", ["head", "classifier"])
def test_a_backbone_inside_a_users_model_with_its_own_head(head):
    """Issue 33: the user's head (of no family) made the family undetectable, even with skip and
    strict=False."""
    teacher = randomize(_with_own_head(hub_vit(32, 4, 4), head))
    student = _with_own_head(hub_vit(16, 2, 2), head)
    before = to_numpy(student.get_layer(head).kernel).copy()
    for strict in (True, False):
        report = select_and_check(teacher, student, skip=(head,), strict=strict)
        assert report.family == "keras_hub_vit"
        assert report.skipped == [f"{head}/kernel", f"{head}/bias"]
        np.testing.assert_array_equal(to_numpy(student.get_layer(head).kernel), before)
    # the classifier keeps its init by default, whatever its name (tests/test_selection_head.py)
    assert select_and_check(teacher, student).skipped == [f"{head}/kernel", f"{head}/bias"]
    if head != "head":  # copied: of no family, so still an error naming it
        with pytest.raises(ValueError, match=f"cannot place 2 variable.*'{head}/kernel'"):
            select_weights(student, teacher=teacher, copy_head=True)


def _index(report, path, axis):
    return indices_of(report, [(path, axis)])[0]


def test_keras_hub_resnet_widths_are_consistent_across_blocks_and_shortcuts():
    teacher, student = PAIRS["keras_hub_resnet_bottleneck"][0](), PAIRS["keras_hub_resnet_bottleneck"][1]()
    report = select_with_report(student, teacher=teacher, element_selection="random", seed=3)
    out_2 = indices_of(
        report,
        [
            ("stack1_block0_3_conv/kernel", 3),
            ("stack1_block0_0_conv/kernel", 3),
            ("stack1_block0_3_bn/gamma", 0),
            ("stack1_block1_1_conv/kernel", 2),
            ("stack1_block1_3_bn/moving_mean", 0),
        ],
    )
    inner_2 = indices_of(
        report,
        [
            ("stack1_block0_1_conv/kernel", 3),
            ("stack1_block0_2_conv/kernel", 2),
            ("stack1_block0_2_bn/beta", 0),
        ],
    )
    stem = indices_of(
        report,
        [
            ("conv1_conv/kernel", 3),
            ("conv1_bn/gamma", 0),
            ("stack0_block0_1_conv/kernel", 2),
            ("stack0_block0_0_conv/kernel", 2),
        ],
    )
    for group in (out_2, inner_2, stem):
        assert all(g == group[0] for g in group) and len(group[0]) > 0
    assert report.block_map == {"1": {0: 0}, "2": {0: 0, 1: 1}}  # first_n per stack
    assert _index(report, "stack0_block0_1_conv/kernel", 3) == "all"  # KerasHub fixes 64 in stage 1


def test_cross_library_vit_outputs_match_when_sizes_are_equal():
    """A KerasHub ViT selected into the package's ViT of the same size computes the same features."""
    import keras

    teacher = randomize(hub_vit(32, 2, 4))
    student = package_vit(32, 2, 4)
    select_weights(student, teacher=teacher)
    x = np.random.default_rng(0).standard_normal((2, *IMAGE)).astype("float32")
    features = keras.Model(student.input, student.get_layer("final_norm").output)
    np.testing.assert_allclose(to_numpy(features(x)), to_numpy(teacher(x)), rtol=1e-4, atol=1e-4)


def test_cross_library_vit_resizes_a_position_embedding_of_another_rank():
    teacher = randomize(hub_vit(32, 2, 4, image=(32, 32, 3)))  # (1 + 64, 32) position embedding
    student = package_vit(16, 2, 2)  # (1, 1 + 16, 16)
    report = select_with_report(student, teacher=teacher, resize_position_embeddings=True)
    assert _index(report, "position_embedding/embedding", 1) == "bilinear 65->17"
    from keras_structinit.selection.resample import resize_tokens

    source = to_numpy(teacher.get_layer("vit_patching_and_embedding").position_embedding.embeddings)[
        None, :, ::2
    ]
    np.testing.assert_allclose(
        to_numpy(student.get_layer("position_embedding").embedding), resize_tokens(source, 17), rtol=1e-6
    )


def test_unsupported_pairs_name_the_families():
    with pytest.raises(ValueError, match="teacher is 'keras_hub_vit'.*student 'convmixer'"):
        select_weights(
            ks.models.convmixer(8, 1, kernel_size=3, patch_size=2, num_classes=5, input_shape=IMAGE),
            teacher=hub_vit(32, 2, 4),
        )
    with pytest.raises(
        ValueError, match="teacher is 'keras_hub_resnet_bottleneck'.*'keras_hub_resnet_basic'"
    ):
        select_weights(
            PAIRS["keras_hub_resnet_basic"][1](), teacher=PAIRS["keras_hub_resnet_bottleneck"][0]()
        )
