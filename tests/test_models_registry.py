"""Model names in the papers' form -> builders."""

import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.models import available_models, build_model, parse_model_name

from conftest import to_numpy


@pytest.mark.parametrize(
    "name, expected",
    [
        ("convmixer-256/8", ("convmixer", {"dim": 256, "depth": 8})),
        ("ConvMixer-1536/20", ("convmixer", {"dim": 1536, "depth": 20})),
        ("convnext-iso-256/8", ("convnext_isotropic", {"dim": 256, "depth": 8})),
        ("convnext-atto", ("convnext_atto", {})),
        ("convnext-femto", ("convnext_femto", {})),
        ("convnext-pico", ("convnext_pico", {})),
        ("convnext-nano", ("convnext_nano", {})),
        ("convnext-tiny", ("convnext_tiny", {})),
        ("vit-tiny", ("vit_tiny", {})),
        ("vit-small", ("vit_small", {})),
        ("vit-tiny-8/2", ("vit", {"patch_size": 2, "dim": 192, "depth": 8, "heads": 3})),
        ("vgg16", ("vgg16", {})),
        ("resnet18-gn", ("resnet18_gn", {})),
        ("lcresnet-20-16x8", ("lcresnet", {"depth": 20, "width": 16, "expansion": 8})),
        ("LCResNet-8-4x1", ("lcresnet", {"depth": 8, "width": 4, "expansion": 1})),
        (" simple-cnn ", ("simple_cnn", {"num_conv_layers": 2, "num_filters": 256, "num_units": 64})),
    ],
)
def test_parse_model_name(name, expected):
    assert parse_model_name(name) == expected


def test_available_models_lists_every_form():
    names = available_models()
    assert names[:3] == ["convmixer-H/D", "convnext-iso-H/D", "lcresnet-D-WxE"]
    assert set(names[3:]) == {
        "convnext-atto",
        "convnext-femto",
        "convnext-pico",
        "convnext-nano",
        "convnext-tiny",
        "vit-tiny",
        "vit-small",
        "vit-tiny-8/2",
        "simple-cnn",
        "simple-cnn-a2",
        "simple-cnn-e3",
        "vgg16",
        "resnet18-gn",
    }
    # Every fixed name parses, and its builder exists.
    for name in names[3:]:
        builder, _ = parse_model_name(name)
        assert callable(getattr(ks.models, builder))


@pytest.mark.parametrize(
    "name",
    [
        "convmixer-256",
        "convmixer-a/8",
        "convmixer-0/8",
        "convmixer-8/0",
        "convmixer-256/8/2",
        "convnext-iso-256",
        "convnext-huge",
        "vit-base",
        "resnet50",
        "",
        "lcresnet-20-16",
        "lcresnet-21-16x8",
        "lcresnet-2-16x8",
        "lcresnet-20-0x8",
        "lcresnet-20-16x0",
        "lcresnet-20-16x8x2",
    ],
)
def test_bad_names_raise_naming_model(name):
    with pytest.raises(ValueError, match="`model`") as info:
        parse_model_name(name)
    assert "convmixer-H/D" in str(info.value) and "resnet18-gn" in str(info.value)
    assert "lcresnet-D-WxE" in str(info.value)


@pytest.mark.parametrize("name", [None, 256, ("convmixer", 8)])
def test_a_name_that_is_not_a_str_is_a_type_error(name):
    with pytest.raises(TypeError, match=r"`model` must be a model name \(a str"):
        parse_model_name(name)


def test_build_model_defaults_to_cifar10():
    model = build_model("convmixer-16/2")
    assert tuple(model.input_shape) == (None, 32, 32, 3) and tuple(model.output_shape) == (None, 10)


def test_build_model_passes_kwargs_through():
    model = build_model("convmixer-16/2", 5, (32, 32, 3), kernel_size=3, patch_size=4)
    assert model.name == "convmixer_16_2"
    assert model.get_layer("stem_conv").strides == (4, 4)
    assert tuple(model.get_layer("block_2_depthwise_conv").kernel.shape) == (3, 3, 16, 1)
    assert tuple(model.output_shape) == (None, 5)

    model = build_model("convnext-iso-16/3", 4, (32, 32, 3), kernel_size=5, drop_path=0.1)
    assert model.name == "convnext_isotropic_16_3"
    assert model.get_layer("block_3_drop_path").rate == pytest.approx(0.1)

    model = build_model("simple-cnn", 3, (16, 16, 3), num_filters=4, num_units=8)
    assert model.get_layer("conv_2").filters == 4 and model.get_layer("dense").units == 8

    model = build_model("vit-tiny", 10, (32, 32, 3), patch_size=4, name="vt")
    assert model.name == "vt" and model.get_layer("block_12_attention").num_heads == 3
    assert tuple(model.get_layer("position_embedding").embedding.shape) == (1, 65, 192)

    model = build_model("resnet18-gn", 10, (32, 32, 3), groups=8)
    assert model.get_layer("final_norm").groups == 8

    model = build_model("lcresnet-8-4x2", 10, (32, 32, 3), kernel_size=5, frozen=False, shortcut="B")
    assert model.name == "lcresnet_8_4x2"
    stem = model.get_layer("stem_conv")
    assert (stem.expansion, stem.kernel_size, stem.spatial_kernel.trainable) == (2, (5, 5), True)
    assert model.get_layer("stage_2_block_1_shortcut").kernel_size == (1, 1)  # option B: a 1x1 projection


def test_build_model_rejects_arguments_fixed_by_the_name():
    with pytest.raises(ValueError, match="`dim`"):
        build_model("convmixer-16/2", 10, (32, 32, 3), dim=32)
    with pytest.raises(ValueError, match="`depth`"):
        build_model("convnext-iso-16/2", 10, (32, 32, 3), depth=3)
    with pytest.raises(ValueError, match="`model`"):
        build_model("convmixer", 10, (32, 32, 3))
    for key in ("width", "expansion", "depth"):
        with pytest.raises(ValueError, match=f"`{key}`"):
            build_model("lcresnet-8-4x2", 10, (32, 32, 3), **{key: 2})


def test_build_model_keyword_form():
    model = build_model("convmixer-8/1", num_classes=3, input_shape=(16, 16, 3), name="cm")
    assert model.name == "cm" and tuple(model.output_shape) == (None, 3)


def test_build_model_passes_initializers_through():
    model = build_model(
        "convnext-iso-8/2", 3, (16, 16, 3), kernel_size=3, mlp_initializer="ones", dense_initializer="zeros"
    )
    np.testing.assert_array_equal(to_numpy(model.get_layer("block_2_pointwise_1").kernel), 1.0)
    np.testing.assert_array_equal(to_numpy(model.get_layer("block_2_pointwise_2").kernel), 0.0)
    model = build_model(
        "convmixer-8/1", 3, (16, 16, 3), kernel_initializer="ones", depthwise_initializer="zeros"
    )
    np.testing.assert_array_equal(to_numpy(model.get_layer("block_1_pointwise_conv").kernel), 1.0)
    np.testing.assert_array_equal(to_numpy(model.get_layer("block_1_depthwise_conv").kernel), 0.0)
    model = build_model("simple-cnn", 3, (16, 16, 3), num_filters=4, num_units=8, dense_initializer="ones")
    np.testing.assert_array_equal(to_numpy(model.get_layer("dense").kernel), 1.0)


# One name per builder; the builders' checks run before any layer is built.
ONE_PER_BUILDER = [
    "convmixer-8/1",
    "convnext-iso-8/1",
    "convnext-atto",
    "vit-tiny",
    "simple-cnn",
    "vgg16",
    "resnet18-gn",
]


@pytest.mark.parametrize("name", ONE_PER_BUILDER)
def test_every_builder_checks_input_shape_and_initializers(name):
    with pytest.raises(TypeError, match="input_shape"):
        build_model(name, 10, "32x32x3")
    for bad in ((32, 32), (32, 0, 3), (32, 32, None)):
        with pytest.raises(ValueError, match="input_shape"):
            build_model(name, 10, bad)
    with pytest.raises(TypeError, match="kernel_initializer"):
        build_model(name, 10, (32, 32, 3), kernel_initializer=1.5)
    with pytest.raises(ValueError, match="num_classes"):
        build_model(name, 0, (32, 32, 3))


@pytest.mark.parametrize("name", ["vit-tiny", "simple-cnn", "vgg16"])
def test_fixed_size_builders_need_the_spatial_sizes(name):
    with pytest.raises(ValueError, match="input_shape"):
        build_model(name, 10, (None, 32, 3))


@pytest.mark.parametrize("name", ["convmixer-8/1", "convnext-iso-8/1", "resnet18-gn", "lcresnet-8-2x2"])
def test_fully_convolutional_builders_accept_any_spatial_size(name):
    model = build_model(name, 10, [None, None, 3])
    assert tuple(model.input_shape) == (None, None, None, 3)
    assert tuple(model(np.zeros((1, 16, 24, 3), "float32")).shape) == (1, 10)
