"""apply_mean_shift: exactly the first layer of every MLP block changes, on each supported family."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.mimetic import apply_mean_shift, find_mlp_kernels

from conftest import to_numpy


def package_convnext():
    return ks.models.convnext(
        (1, 2), (8, 16), kernel_size=3, patch_size=2, num_classes=3, input_shape=(8, 8, 3)
    )


def package_convnext_isotropic():
    return ks.models.convnext_isotropic(8, 2, kernel_size=3, num_classes=3, input_shape=(8, 8, 3))


def package_vit():
    return ks.models.vit(4, 16, 2, 2, num_classes=3, input_shape=(8, 8, 3))


def keras_applications_convnext():
    from keras.src.applications.convnext import ConvNeXt  # the generic builder (private; pinned Keras range)

    config = {"depths": [1, 1, 2, 1], "projection_dims": [8, 8, 16, 16], "input_shape": (32, 32, 3)}
    return ConvNeXt(**config, weights=None, include_preprocessing=False, include_top=False, name="small")


def keras_hub_vit():
    keras_hub = pytest.importorskip("keras_hub", reason="keras_hub is not installed (the `hub` extra)")
    return keras_hub.models.ViTBackbone(
        image_shape=(8, 8, 3), patch_size=4, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32
    )


FAMILIES = {
    "convnext": (
        package_convnext,
        ["stage_1_block_1", "stage_2_block_1", "stage_2_block_2"],
        "{}_pointwise_1/kernel",
    ),
    "convnext_isotropic": (package_convnext_isotropic, ["block_1", "block_2"], "{}_pointwise_1/kernel"),
    "vit": (package_vit, ["block_1", "block_2"], "{}_mlp_1/kernel"),
    "keras_convnext": (
        keras_applications_convnext,
        ["stage_0_block_0", "stage_1_block_0", "stage_2_block_0", "stage_2_block_1", "stage_3_block_0"],
        "small_{}_pointwise_conv_1/kernel",
    ),
    "keras_hub_vit": (keras_hub_vit, ["1", "2"], "vit_encoder/transformer_block_{}/mlp/dense_1/kernel"),
}


def snapshot(model):
    return [(variable, np.array(keras.ops.convert_to_numpy(variable))) for variable in model.weights]


def assert_only_changed(before, paths):
    """Variables at ``paths`` changed; every other one is bit-identical."""
    for variable, value in before:
        unchanged = np.array_equal(keras.ops.convert_to_numpy(variable), value)
        assert unchanged != (variable.path in paths), variable.path


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_exactly_the_first_mlp_kernels_change(family):
    build, blocks, template = FAMILIES[family]
    model = build()
    before = snapshot(model)
    paths = apply_mean_shift(model, b=0.5, seed=0)
    assert paths == [template.format(block) for block in blocks]
    assert_only_changed(before, paths)
    for _, kernel in find_mlp_kernels(model):
        value = to_numpy(kernel)
        assert np.abs(value - 0.5).max() <= 1 / np.sqrt(value.shape[0]) + 1e-6  # PyTorch's default + 0.5


def test_keras_applications_convnext_tiny():
    model = keras.applications.ConvNeXtTiny(weights=None, include_top=False, input_shape=(32, 32, 3))
    before = snapshot(model)
    paths = apply_mean_shift(model, mode="per_input", variance=1e-3, seed=0)
    assert len(paths) == 3 + 3 + 9 + 3 and all(p.endswith("_pointwise_conv_1/kernel") for p in paths)
    assert_only_changed(before, paths)


def test_seeds_reproduce_and_layers_differ():
    first, second = package_convnext_isotropic(), package_convnext_isotropic()
    for mode in ("constant", "per_input"):
        for model in (first, second):
            apply_mean_shift(model, mode=mode, seed=3)
        kernels = [[to_numpy(k) for _, k in find_mlp_kernels(m)] for m in (first, second)]
        for a, b in zip(*kernels, strict=True):
            np.testing.assert_array_equal(a, b)
        assert not np.array_equal(kernels[0][0], kernels[0][1])  # same shape, other samples
    apply_mean_shift(second, mode=mode, seed=4)
    assert not np.array_equal(to_numpy(find_mlp_kernels(second)[0][1]), kernels[0][0])


def test_base_and_per_input_mode():
    model = package_vit()
    apply_mean_shift(model, base="zeros", mode="per_input", b=0.1, variance=0.04, seed=0)
    for _, kernel in find_mlp_kernels(model):
        value = to_numpy(kernel)
        np.testing.assert_allclose(value, np.broadcast_to(value[:, :1], value.shape), atol=1e-7)  # rows
        assert value[:, 0].std() == pytest.approx(0.2, rel=0.5)


def test_redraw_false_shifts_the_current_kernels():
    model = package_vit()
    kernels = [to_numpy(kernel) for _, kernel in find_mlp_kernels(model)]
    apply_mean_shift(model, b=0.25, redraw=False, seed=0)
    for (_, kernel), before in zip(find_mlp_kernels(model), kernels, strict=True):
        np.testing.assert_allclose(to_numpy(kernel), before + 0.25, atol=1e-6)
    apply_mean_shift(model, mode="per_input", b=0.0, variance=0.01, redraw=False, seed=0)
    for (_, kernel), before in zip(find_mlp_kernels(model), kernels, strict=True):
        shift = to_numpy(kernel) - before - 0.25  # one draw per input row (Eq. 1)
        np.testing.assert_allclose(shift, np.broadcast_to(shift[:, :1], shift.shape), atol=1e-6)
        assert shift[:, 0].std() == pytest.approx(0.1, rel=0.5)


def unknown_mlp():
    inputs = keras.Input((6, 6, 4))
    x = keras.layers.Conv2D(4, 3, padding="same", name="spatial")(inputs)
    x = keras.layers.Conv2D(16, 1, name="expand")(x)
    x = keras.layers.Dense(4, name="contract")(x)
    return keras.Model(inputs, x, name="custom")


def test_unknown_model_lists_what_was_looked_for_and_takes_layers():
    model = unknown_mlp()
    with pytest.raises(ValueError, match=r"\(custom\) has no MLP blocks") as info:
        apply_mean_shift(model)
    for words in ("widens the features", "an activation", "narrows them back", "residual", "layers="):
        assert words in str(info.value)  # what the structural search looked for (no activation here)
    before = snapshot(model)
    paths = apply_mean_shift(model, layers=["expand"], seed=0)  # a 1x1 conv named by hand
    assert paths == ["expand/kernel"]
    assert_only_changed(before, paths)
    with pytest.raises(ValueError, match="not a Dense layer or 1x1 convolution"):
        apply_mean_shift(model, layers=["spatial"])
    with pytest.raises(ValueError, match="not a layer of the model"):
        apply_mean_shift(model, layers=["nope"])
    with pytest.raises(TypeError, match="`layers` must be a list"):
        apply_mean_shift(model, layers="expand")


def test_layers_restricts_the_recognised_blocks():
    model = package_convnext_isotropic()
    before = snapshot(model)
    assert apply_mean_shift(model, layers=["block_2_pointwise_1"], seed=0) == ["block_2_pointwise_1/kernel"]
    assert_only_changed(before, ["block_2_pointwise_1/kernel"])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"mode": "per_input", "variance": -0.1}, ValueError, "`variance`"),
        ({"mode": "stripes"}, ValueError, "`mode`"),
        ({"base": 3}, TypeError, "`base`"),
        ({"seed": "0"}, TypeError, "`seed`"),
        ({"redraw": "no"}, TypeError, "`redraw`"),
        ({"redraw": False, "base": "zeros"}, ValueError, "`base` must be None with `redraw=False`"),
    ],
)
def test_bad_arguments_fail_before_any_change(kwargs, error, match):
    model = package_convnext_isotropic()
    before = snapshot(model)
    with pytest.raises(error, match=match):
        apply_mean_shift(model, **kwargs)
    assert_only_changed(before, [])
    with pytest.raises(TypeError, match="`model`"):
        apply_mean_shift("model")
