"""ConvNeXt (hierarchical and isotropic): structure, parameter counts, init, round trips."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.initializers import ConvCovariance
from keras_structinit.layers import DepthwiseConv2D, LayerScale, StochasticDepth

from conftest import assert_round_trip_in_fresh_process, assert_round_trip_in_process, to_numpy


def block_params(d, k=7, layer_scale=True):
    """One ConvNeXt block of width d, written out."""
    depthwise = k * k * d + d
    norm = 2 * d
    pointwise_1 = d * 4 * d + 4 * d
    pointwise_2 = 4 * d * d + d
    gamma = d if layer_scale else 0
    return depthwise + norm + pointwise_1 + pointwise_2 + gamma


def convnext_params(depths, dims, k=7, patch=4, channels=3, classes=1000):
    stem = patch * patch * channels * dims[0] + dims[0] + 2 * dims[0]
    total = stem
    for s, (depth, d) in enumerate(zip(depths, dims, strict=True)):
        if s:  # downsampling LN + 2x2 conv
            total += 2 * dims[s - 1] + 2 * 2 * dims[s - 1] * d + d
        total += depth * block_params(d, k)
    return total + 2 * dims[-1] + dims[-1] * classes + classes


# Counts do not depend on values: zeros spare JAX compiling a random-number program for every
# weight shape (~0.25 s each, ~60 shapes in ConvNeXt-T).
ZEROS = {
    name: "zeros"
    for name in ("kernel_initializer", "depthwise_initializer", "mlp_initializer", "dense_initializer")
}


def test_convnext_tiny_has_the_published_parameter_count():
    expected = convnext_params((3, 3, 9, 3), (96, 192, 384, 768))
    assert expected == 28_589_128
    model = ks.models.convnext_tiny(**ZEROS)
    assert model.name == "convnext_tiny"
    assert model.count_params() == expected
    assert tuple(model.input_shape) == (None, 224, 224, 3)
    assert tuple(model.output_shape) == (None, 1000)


def test_convnext_atto_parameter_count():
    model = ks.models.convnext_atto(**ZEROS)
    expected = convnext_params((2, 2, 6, 2), (40, 80, 160, 320))
    assert model.count_params() == expected
    assert round(expected / 1e5) == 37  # "3.7M"


def test_named_configs():
    from keras_structinit.models.convnext_model import CONFIGS

    assert CONFIGS["femto"] == ((2, 2, 6, 2), (48, 96, 192, 384))
    assert CONFIGS["pico"] == ((2, 2, 6, 2), (64, 128, 256, 512))
    assert CONFIGS["nano"] == ((2, 2, 8, 2), (80, 160, 320, 640))
    model = ks.models.convnext_nano(num_classes=10, input_shape=(32, 32, 3), **ZEROS)
    assert model.name == "convnext_nano"
    assert model.count_params() == convnext_params((2, 2, 8, 2), (80, 160, 320, 640), classes=10)
    assert model.get_layer("stage_3_block_8_pointwise_2").units == 320
    assert ks.models.convnext_femto.__name__ == "convnext_femto"


def small_convnext(**kwargs):
    kwargs = {"kernel_size": 5, "patch_size": 2, "num_classes": 7, "input_shape": (32, 32, 3), **kwargs}
    return ks.models.convnext((1, 2), (8, 16), **kwargs)


def test_structure_names_and_forward_shape():
    model = small_convnext(drop_path=0.3)
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 7)
    assert model.count_params() == convnext_params((1, 2), (8, 16), k=5, patch=2, classes=7)
    assert model.get_layer("stem_conv").strides == (2, 2)
    assert model.get_layer("stem_norm").epsilon == 1e-6
    down = model.get_layer("stage_2_downsample_conv")
    assert down.strides == (2, 2) and tuple(down.kernel.shape) == (2, 2, 8, 16)
    for s, b, d in ((1, 1, 8), (2, 1, 16), (2, 2, 16)):
        prefix = f"stage_{s}_block_{b}"
        dw = model.get_layer(f"{prefix}_depthwise_conv")
        assert isinstance(dw, DepthwiseConv2D) and dw.padding == "same"
        assert tuple(dw.kernel.shape) == (5, 5, d, 1)
        assert model.get_layer(f"{prefix}_norm").epsilon == 1e-6
        assert model.get_layer(f"{prefix}_pointwise_1").units == 4 * d
        assert model.get_layer(f"{prefix}_pointwise_2").units == d
        gamma = to_numpy(model.get_layer(f"{prefix}_layer_scale").gamma)
        np.testing.assert_allclose(gamma, np.full(d, 1e-6), rtol=1e-6)
    # Drop-path rates grow linearly over the 3 blocks: 0, 0.15, 0.3.
    names = {layer.name for layer in model.layers}
    assert "stage_1_block_1_drop_path" not in names
    assert model.get_layer("stage_2_block_1_drop_path").rate == pytest.approx(0.15)
    assert model.get_layer("stage_2_block_2_drop_path").rate == pytest.approx(0.3)
    assert model.get_layer("head").units == 7
    assert model.get_layer("stage_2_block_2_residual").output.shape[1:] == (8, 8, 16)


@pytest.mark.parametrize("patch_size, final", [(1, 4), (2, 2), (4, 1)])
def test_cifar_patch_sizes(patch_size, final):
    model = ks.models.convnext(
        (1, 1, 1, 1), (8, 8, 16, 16), patch_size=patch_size, num_classes=3, input_shape=(32, 32, 3)
    )
    assert model.get_layer("stage_4_block_1_residual").output.shape[1:3] == (final, final)
    out = model(np.ones((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 3)


def test_official_initialization():
    model = ks.models.convnext_isotropic(64, 1, layer_scale_init=1e-6)
    kernel = to_numpy(model.get_layer("block_1_pointwise_1").kernel)  # 64 x 256
    assert np.std(kernel) == pytest.approx(0.02, rel=0.05)
    dw = to_numpy(model.get_layer("block_1_depthwise_conv").kernel)
    assert 0.015 < np.std(dw) < 0.025
    for name in ("stem_conv", "block_1_depthwise_conv", "block_1_pointwise_1", "head"):
        np.testing.assert_array_equal(to_numpy(model.get_layer(name).bias), 0.0)
    np.testing.assert_allclose(to_numpy(model.get_layer("block_1_layer_scale").gamma), 1e-6, rtol=1e-6)


def test_layer_scale_can_be_left_out():
    for value in (None, 0, 0.0):
        model = small_convnext(layer_scale_init=value)
        assert not any(isinstance(layer, LayerScale) for layer in model.layers)
        assert model.count_params() == convnext_params((1, 2), (8, 16), k=5, patch=2, classes=7) - (
            8 + 2 * 16
        )


def test_isotropic_structure_and_count():
    model = ks.models.convnext_isotropic(16, 3, kernel_size=3, num_classes=5)
    assert model.name == "convnext_isotropic_16_3"
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 5)
    # Constant width and resolution; layer scale off by default (official isotropic).
    for i in (1, 2, 3):
        assert model.get_layer(f"block_{i}_residual").output.shape[1:] == (16, 16, 16)
    assert not any(isinstance(layer, (LayerScale, StochasticDepth)) for layer in model.layers)
    stem = 2 * 2 * 3 * 16 + 16 + 2 * 16
    head = 2 * 16 + 16 * 5 + 5
    assert model.count_params() == stem + 3 * block_params(16, 3, layer_scale=False) + head


def test_depthwise_initializer_follows_depth_over_all_blocks():
    model = small_convnext(depthwise_initializer=ConvCovariance(seed=3))
    configs = [
        model.get_layer(name).get_config()["depthwise_initializer"]["config"]
        for name in (
            "stage_1_block_1_depthwise_conv",
            "stage_2_block_1_depthwise_conv",
            "stage_2_block_2_depthwise_conv",
        )
    ]
    assert [c["depth_fraction"] for c in configs] == [0.0, 0.5, 1.0]
    assert [c["seed"] for c in configs] == [3, 4, 5]


def test_inference_is_deterministic_and_training_drops_paths():
    x = np.random.default_rng(0).random((16, 8, 8, 3)).astype("float32")
    model = ks.models.convnext_isotropic(
        8, 4, kernel_size=3, input_shape=(8, 8, 3), drop_path=0.9, layer_scale_init=None
    )
    a, b = to_numpy(model(x, training=False)), to_numpy(model(x, training=False))
    np.testing.assert_array_equal(a, b)
    trained = [to_numpy(model(x, training=True)) for _ in range(2)]
    assert not np.allclose(trained[0], a) and not np.allclose(trained[0], trained[1])


def test_bad_arguments():
    with pytest.raises(ValueError, match="dims"):
        ks.models.convnext((1, 1), (8, 16, 32))
    with pytest.raises(ValueError, match="depths"):
        ks.models.convnext((1, 0), (8, 16))
    with pytest.raises(ValueError, match="patch_size"):
        ks.models.convnext((1,), (8,), patch_size=0)
    with pytest.raises(ValueError, match="drop_path"):
        ks.models.convnext((1,), (8,), drop_path=1.0)
    with pytest.raises(ValueError, match="layer_scale_init"):
        ks.models.convnext((1,), (8,), layer_scale_init=-1e-6)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.convnext((1, 1, 1, 1), (8, 8, 8, 8), input_shape=(16, 16, 3))  # 16 / 4 / 8 < 1
    with pytest.raises(ValueError, match="num_classes"):
        ks.models.convnext_atto(num_classes=0)
    with pytest.raises(ValueError, match="dim"):
        ks.models.convnext_isotropic(0, 8)
    with pytest.raises(TypeError, match="depth"):
        ks.models.convnext_isotropic(8, 2.0)
    with pytest.raises(TypeError, match="mlp_initializer"):
        ks.models.convnext((1,), (8,), mlp_initializer=1)
    with pytest.raises(ValueError, match="dense_initializer"):
        ks.models.convnext_isotropic(8, 1, dense_initializer="no_such_initializer")


def kernels(model, suffix):
    """Kernels of the layers whose names end with ``suffix``, by name."""
    return {layer.name: to_numpy(layer.kernel) for layer in model.layers if layer.name.endswith(suffix)}


def test_mlp_initializer_sets_exactly_the_first_mlp_dense():
    model = small_convnext(mlp_initializer=keras.initializers.Constant(0.5))
    w1 = kernels(model, "_pointwise_1")
    assert sorted(w1) == [f"stage_{s}_block_{b}_pointwise_1" for s, b in ((1, 1), (2, 1), (2, 2))]
    for kernel in w1.values():
        np.testing.assert_array_equal(kernel, 0.5)
    others = {**kernels(model, "_pointwise_2"), **kernels(model, "_conv"), **kernels(model, "head")}
    assert len(others) == 3 + 3 + 2 + 1  # W2, depthwise, stem + downsampling, head
    for name, kernel in others.items():
        assert not np.any(kernel == 0.5), name
        assert np.std(kernel) < 0.05, name  # the official N(0, 0.02^2)


def test_dense_and_kernel_initializers_reach_w2_and_the_convs():
    model = small_convnext(dense_initializer="ones", kernel_initializer=keras.initializers.Constant(0.25))
    for kernel in kernels(model, "_pointwise_2").values():
        np.testing.assert_array_equal(kernel, 1.0)
    for name in ("stem_conv", "stage_2_downsample_conv"):
        np.testing.assert_array_equal(to_numpy(model.get_layer(name).kernel), 0.25)
        np.testing.assert_array_equal(to_numpy(model.get_layer(name).bias), 0.0)
    for name, kernel in {**kernels(model, "_pointwise_1"), **kernels(model, "_depthwise_conv")}.items():
        assert np.std(kernel) == pytest.approx(0.02, rel=0.5), name
    assert not np.any(to_numpy(model.get_layer("head").kernel) == 1.0)


def test_unseeded_initializers_draw_fresh_values_per_block():
    model = ks.models.convnext_isotropic(8, 2, kernel_size=3, mlp_initializer=keras.initializers.HeNormal())
    w1 = [to_numpy(model.get_layer(f"block_{i}_pointwise_1").kernel) for i in (1, 2)]
    assert not np.allclose(w1[0], w1[1])
    assert np.std(w1[0]) == pytest.approx(np.sqrt(2 / 8), rel=0.3)


def test_one_stage_is_the_isotropic_model():
    a = ks.models.convnext((2,), (8,), kernel_size=3, patch_size=2, num_classes=3, input_shape=(8, 8, 3))
    b = ks.models.convnext_isotropic(
        8, 2, kernel_size=3, num_classes=3, input_shape=(8, 8, 3), layer_scale_init=1e-6
    )
    assert [layer.name for layer in a.layers] == [layer.name for layer in b.layers]
    assert a.count_params() == b.count_params()


def test_keras_round_trip_in_process(tmp_path):
    model = small_convnext(drop_path=0.2, layer_scale_init=0.5)
    x = np.random.default_rng(0).random((3, 32, 32, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("stage_2_block_2_drop_path"), StochasticDepth)
    assert loaded.get_layer("stage_2_block_2_drop_path").rate == pytest.approx(0.2)
    assert isinstance(loaded.get_layer("stage_2_block_2_depthwise_conv"), DepthwiseConv2D)


def test_keras_round_trip_in_fresh_process(tmp_path):
    model = ks.models.convnext(
        (1, 1),
        (8, 16),
        kernel_size=3,
        patch_size=2,
        num_classes=4,
        input_shape=(16, 16, 3),
        drop_path=0.1,
    )
    x = np.random.default_rng(1).random((2, 16, 16, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        """
        from keras_structinit.models import LayerScale, StochasticDepth
        assert isinstance(model.get_layer("stage_2_block_1_layer_scale"), LayerScale)
        assert isinstance(model.get_layer("stage_2_block_1_drop_path"), StochasticDepth)
    """,
    )


def test_keras_round_trip_with_non_default_initializers(tmp_path):
    model = small_convnext(
        mlp_initializer=keras.initializers.Orthogonal(gain=2.0),
        dense_initializer={"class_name": "HeUniform", "config": {}},
        depthwise_initializer=ConvCovariance(seed=1),
    )
    x = np.random.default_rng(2).random((2, 32, 32, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    initializer = loaded.get_layer("stage_2_block_2_pointwise_1").kernel_initializer
    assert isinstance(initializer, keras.initializers.Orthogonal) and initializer.gain == 2.0


def test_one_compiled_training_step_with_drop_path():
    model = ks.models.convnext_isotropic(
        8, 2, kernel_size=3, num_classes=3, input_shape=(8, 8, 3), drop_path=0.5, layer_scale_init=0.1
    )
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random((8, 8, 8, 3)).astype("float32"), rng.integers(0, 3, 8)
    before = [to_numpy(w) for w in model.trainable_weights]
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [to_numpy(w) for w in model.trainable_weights]
    assert not np.array_equal(after[-2], before[-2])  # head kernel
    assert not np.array_equal(after[0], before[0])  # stem kernel: gradients flow through blocks
