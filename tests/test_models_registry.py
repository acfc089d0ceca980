"""Model names in the papers' form -> builders."""

import pytest

import keras_structinit as ks
from keras_structinit.models import available_models, build_model, parse_model_name


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
        ("vgg16", ("vgg16", {})),
        ("resnet18-gn", ("resnet18_gn", {})),
        (" simple-cnn ", ("simple_cnn", {"num_conv_layers": 2, "num_filters": 256, "num_units": 64})),
    ],
)
def test_parse_model_name(name, expected):
    assert parse_model_name(name) == expected


def test_available_models_lists_every_form():
    names = available_models()
    assert names[:2] == ["convmixer-H/D", "convnext-iso-H/D"]
    assert set(names[2:]) == {
        "convnext-atto", "convnext-femto", "convnext-pico", "convnext-nano", "convnext-tiny",
        "vit-tiny", "vit-small", "simple-cnn", "vgg16", "resnet18-gn",
    }
    # Every fixed name parses, and its builder exists.
    for name in names[2:]:
        builder, _ = parse_model_name(name)
        assert callable(getattr(ks.models, builder))


@pytest.mark.parametrize(
    "name",
    ["convmixer-256", "convmixer-a/8", "convmixer-0/8", "convmixer-8/0", "convmixer-256/8/2",
     "convnext-iso-256", "convnext-huge", "vit-base", "resnet50", "", None, 256],
)
def test_bad_names_raise_naming_model(name):
    with pytest.raises(ValueError, match="`model`") as info:
        parse_model_name(name)
    assert "convmixer-H/D" in str(info.value) and "resnet18-gn" in str(info.value)


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


def test_build_model_rejects_arguments_fixed_by_the_name():
    with pytest.raises(ValueError, match="`dim`"):
        build_model("convmixer-16/2", 10, (32, 32, 3), dim=32)
    with pytest.raises(ValueError, match="`depth`"):
        build_model("convnext-iso-16/2", 10, (32, 32, 3), depth=3)
    with pytest.raises(ValueError, match="`model`"):
        build_model("convmixer", 10, (32, 32, 3))


def test_build_model_keyword_form():
    model = build_model("convmixer-8/1", num_classes=3, input_shape=(16, 16, 3), name="cm")
    assert model.name == "cm" and tuple(model.output_shape) == (None, 3)
