"""Data-aligned init with Keras: DataAligned, align_conv_layers, weight covariance, initial norms, CLI."""

import json

import keras
import numpy as np
import pytest

from keras_structinit import cli, datasets
from keras_structinit.alignment import (
    DataAligned,
    RecordInitialNorms,
    align_conv_layers,
    extract_patches,
    misalignment,
    patch_covariance,
    random_basis,
    rescale_to_initial_norms,
    weight_covariance,
    weight_norms,
)
from keras_structinit.models import build_model, simple_cnn

from conftest import assert_covariance_within_sampling_error, to_numpy


def components(dim=27, seed=0):
    return np.geomspace(3.0, 0.3, dim), random_basis(dim, seed=seed)


def filters_of(kernel):
    """``(filters, d)``: row ``o`` is ``kernel[..., o].reshape(-1)``."""
    kernel = to_numpy(kernel)
    return kernel.reshape(-1, kernel.shape[-1]).T


def textures(n=48, size=12):
    """Images with spatial structure (distinct patch eigenvalues), scaled to [-1, 1]."""
    x, _ = datasets.procedural_images(n, image_size=size)
    return (x / 127.5 - 1.0).astype("float32")


def small_cnn(size=12):
    return simple_cnn(
        3,
        4,
        8,
        num_classes=3,
        input_shape=(size, size, 3),
        pooling="last",
        pool_size=3,
        pool_strides=2,
        init_scale=1.0,
    )


def layer_input(model, name, images):
    return to_numpy(keras.Model(model.inputs[0], model.get_layer(name).input)(images))


def test_eigvecs_mode_filters_are_the_scaled_eigenvectors():
    eigvals, eigvecs = components()
    kernel = DataAligned(eigvals, eigvecs)((3, 3, 3, 16))
    np.testing.assert_allclose(filters_of(kernel), eigvecs[:, :16].T, atol=1e-6)
    scaled = DataAligned(eigvals, eigvecs, n_components=4, f=0.5, scale=2.0)((3, 3, 3, 4))
    np.testing.assert_allclose(filters_of(scaled), (2.0 * np.sqrt(eigvals[:4]) * eigvecs[:, :4]).T, atol=1e-5)
    fewer = DataAligned(eigvals, eigvecs)((27, 5))  # a Dense kernel with 5 < 16 units: the first 5 components
    np.testing.assert_allclose(filters_of(fewer), eigvecs[:, :5].T, atol=1e-6)


def test_more_filters_than_components_repeat_them_with_random_signs():
    eigvals, eigvecs = components()
    init = DataAligned(eigvals, eigvecs, n_components=4, seed=3)
    got = filters_of(init((3, 3, 3, 400)))
    np.testing.assert_allclose(got[:4], eigvecs[:, :4].T, atol=1e-6)
    repeated = eigvecs[:, np.arange(4, 400) % 4].T
    signs = np.sum(got[4:] * repeated, axis=1)
    np.testing.assert_allclose(np.abs(signs), 1.0, atol=1e-5)
    assert 100 < np.sum(signs > 0) < 296  # both signs, about half each
    np.testing.assert_array_equal(to_numpy(init((3, 3, 3, 400))), to_numpy(init((3, 3, 3, 400))))  # int seed


def test_sample_mode_has_the_target_covariance():
    eigvals, eigvecs = components()
    init = DataAligned(eigvals, eigvecs, n_components=16, f=0.5, mode="sample", scale=0.5, seed=0)
    samples = filters_of(init((3, 3, 3, 20_000)))
    # scale^2 sum tau_i^2 e_i e_i^T with tau = sqrt(lambda)
    target = 0.25 * (eigvecs[:, :16] * eigvals[:16]) @ eigvecs[:, :16].T
    assert_covariance_within_sampling_error(samples, target)


def test_config_stores_the_components_used(tmp_path):
    eigvals, eigvecs = components()
    init = DataAligned(eigvals, eigvecs, n_components=3, f=lambda v: v**2, seed=1)
    config = init.get_config()
    assert np.array(config["eigvecs"]).shape == (27, 3) and len(config["eigvals"]) == 3
    assert config["f"] == pytest.approx(list(eigvals[:3] ** 2))  # a callable is stored as its values
    clone = DataAligned.from_config(config)
    assert clone.get_config() == config
    np.testing.assert_array_equal(to_numpy(clone((3, 3, 3, 3))), to_numpy(init((3, 3, 3, 3))))
    model = keras.Sequential([keras.Input((6, 6, 3)), keras.layers.Conv2D(3, 3, kernel_initializer=init)])
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras").layers[0].kernel_initializer
    assert isinstance(loaded, DataAligned) and loaded.get_config() == config


def test_data_aligned_bad_input():
    eigvals, eigvecs = components()
    with pytest.raises(ValueError, match=r"`n_components` must be at most .*patch dimension is 27"):
        DataAligned(eigvals, eigvecs, n_components=28)
    with pytest.raises(ValueError, match="27 weights per filter"):
        DataAligned(eigvals, eigvecs)((3, 3, 4, 8))
    with pytest.raises(ValueError, match="`mode` must be one of"):
        DataAligned(eigvals, eigvecs, mode="pca")
    with pytest.raises(TypeError, match="`f` must be None"):
        DataAligned(eigvals, eigvecs, f="flat")
    with pytest.raises(ValueError, match="orthonormal"):
        DataAligned(eigvals, 3.0 * eigvecs)


def test_a_conv_whose_filter_is_a_patch_outputs_its_squared_norm():
    images = np.random.default_rng(0).standard_normal((2, 7, 9, 3)).astype("float32")
    patches = extract_patches(images, (3, 2))  # (2, 5, 8, 18), the order of a (3, 2, 3, filters) kernel
    patch = patches[1, 3, 5]
    conv = keras.layers.Conv2D(1, (3, 2), use_bias=False)
    conv.build((None, 7, 9, 3))
    conv.kernel.assign(patch.reshape(3, 2, 3, 1).astype("float32"))
    out = to_numpy(conv(images))[..., 0]
    assert out[1, 3, 5] == pytest.approx(patch @ patch, rel=1e-5)
    np.testing.assert_allclose(out, patches @ patch, rtol=1e-4, atol=1e-4)  # everywhere: the dot product


def test_align_the_first_conv():
    model, images = small_cnn(), textures()
    conv_2 = to_numpy(model.get_layer("conv_2").kernel)
    assert align_conv_layers(model, images=images, seed=0) == ["conv_1/kernel", "conv_1/bias"]
    _, eigvecs = patch_covariance(images, 3)
    np.testing.assert_allclose(filters_of(model.get_layer("conv_1").kernel), eigvecs[:, :4].T, atol=1e-6)
    np.testing.assert_array_equal(to_numpy(model.get_layer("conv_1").bias), 0.0)
    np.testing.assert_array_equal(to_numpy(model.get_layer("conv_2").kernel), conv_2)


@pytest.mark.parametrize("num_layers", [2, 3])
def test_later_layers_are_aligned_with_the_aligned_activations(num_layers):
    model, images = small_cnn(), textures()
    stale = layer_input(model, "conv_2", images)  # conv_1's output before it is aligned
    paths = align_conv_layers(model, images=images, num_layers=num_layers, n_components=4, seed=0)
    assert paths == [f"conv_{i}/{name}" for i in range(1, num_layers + 1) for name in ("kernel", "bias")]
    for i in range(2, num_layers + 1):
        _, eigvecs = patch_covariance(layer_input(model, f"conv_{i}", images), 3)
        kernel = model.get_layer(f"conv_{i}").kernel
        np.testing.assert_allclose(filters_of(kernel), eigvecs[:, :4].T, atol=1e-5)
    _, stale_vecs = patch_covariance(stale, 3)
    assert not np.allclose(filters_of(model.get_layer("conv_2").kernel), stale_vecs[:, :4].T, atol=1e-2)


def test_smallest_components_and_sampled_filters():
    images = textures()
    model = small_cnn()
    align_conv_layers(model, images=images, components="smallest", seed=0)
    _, eigvecs = patch_covariance(images, 3)
    smallest = eigvecs[:, ::-1][:, :4]
    np.testing.assert_allclose(filters_of(model.get_layer("conv_1").kernel), smallest.T, atol=1e-6)
    sampled = build_model("simple-cnn-e3", 3, (12, 12, 3), num_filters=32)
    align_conv_layers(sampled, images=images, mode="sample", n_components=8, seed=1)
    got = filters_of(sampled.get_layer("conv_1").kernel)
    top = eigvecs[:, :8]
    np.testing.assert_allclose(got - got @ top @ top.T, 0.0, atol=1e-5)  # in the span of the 8 leading ones
    assert np.linalg.matrix_rank(got, tol=1e-4) == 8


def test_eigenvector_offsets_and_slices_of_table_6():
    """Maennel et al., Table 6: e_4..e_19 (of 27) in the first layer, e_10..e_25 in the next two."""
    images = textures()
    model = build_model("simple-cnn-e3", 3, (12, 12, 3), num_filters=16)
    align_conv_layers(model, images=images, num_layers=3, n_components=16, components=[3, 9, 9], seed=0)
    _, eigvecs = patch_covariance(images, 3)
    np.testing.assert_allclose(filters_of(model.get_layer("conv_1").kernel), eigvecs[:, 3:19].T, atol=1e-6)
    _, second = patch_covariance(layer_input(model, "conv_2", images), 3)
    np.testing.assert_allclose(filters_of(model.get_layer("conv_2").kernel), second[:, 9:25].T, atol=1e-5)
    by_slice = build_model("simple-cnn-e3", 3, (12, 12, 3), num_filters=16)
    align_conv_layers(by_slice, images=images, components=slice(3, 19), seed=0)  # the slice sets the count
    np.testing.assert_allclose(filters_of(by_slice.get_layer("conv_1").kernel), eigvecs[:, 3:19].T, atol=1e-6)
    with pytest.raises(ValueError, match="eigenvectors 20..35 \\(from 0\\) of a patch covariance with 27"):
        align_conv_layers(by_slice, images=images, components=20, n_components=16)
    with pytest.raises(ValueError, match="one entry per aligned layer \\(3\\)"):
        align_conv_layers(by_slice, images=images, num_layers=3, components=[3, 9])
    with pytest.raises(TypeError, match="`components` must be"):
        align_conv_layers(by_slice, images=images, components=3.0)
    with pytest.raises(ValueError, match="offsets must be >= 0"):
        align_conv_layers(by_slice, images=images, components=-1)


class _Stem(keras.layers.Layer):
    """A layer that owns and calls a Conv2D (as KerasHub's patch embedding does), after rescaling."""

    def __init__(self, spare=False, **kwargs):
        super().__init__(**kwargs)
        self.conv = keras.layers.Conv2D(4, 3, name="inner_conv")
        self.spare = keras.layers.Conv2D(2, 3, name="unused") if spare else None  # never called

    def build(self, input_shape):
        self.conv.build(input_shape)
        if self.spare is not None:
            self.spare.build(input_shape)

    def call(self, x):
        return self.conv(2.0 * x)


def nested_model(size=12, spare=False):
    """A conv inside a nested Sequential, then a conv inside a custom layer, then a plain conv."""
    inputs = keras.Input((size, size, 3))
    stem = keras.Sequential([keras.layers.Conv2D(4, 3, name="stem_conv"), keras.layers.ReLU()], name="stem")
    x = _Stem(spare, name="owner")(stem(inputs))
    x = keras.layers.Conv2D(4, 3, name="top_conv")(keras.layers.ReLU()(x))
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x), name="nested")


def test_align_convs_inside_nested_models_and_other_layers():
    """Issue 33: convs in a nested Sequential (keras.applications' stems) or owned by another layer
    (KerasHub's patch embedding) had no computable input."""
    model, images = nested_model(), textures()
    paths = align_conv_layers(model, images=images, num_layers=3, n_components=4, seed=0)
    assert paths == [
        "stem/stem_conv/kernel",
        "stem/stem_conv/bias",
        "owner/inner_conv/kernel",
        "owner/inner_conv/bias",
        "top_conv/kernel",
        "top_conv/bias",
    ]
    stem = keras.Model(model.inputs[0], model.get_layer("stem").output)
    owner_input = 2.0 * to_numpy(stem(images))  # _Stem doubles its input before its conv
    before_top = keras.Model(model.inputs[0], model.get_layer("top_conv").input)
    expected = {"stem_conv": images, "inner_conv": owner_input, "top_conv": to_numpy(before_top(images))}
    convs = {
        "stem_conv": model.get_layer("stem").get_layer("stem_conv"),
        "inner_conv": model.get_layer("owner").conv,
        "top_conv": model.get_layer("top_conv"),
    }
    for name, x in expected.items():
        _, eigvecs = patch_covariance(x, 3)
        np.testing.assert_allclose(filters_of(convs[name].kernel), eigvecs[:, :4].T, atol=2e-4, err_msg=name)
    # The layers' own call is back in place.
    assert "call" not in vars(convs["inner_conv"]) and model(images[:2]).shape == (2, 4)


def test_align_keras_applications_and_keras_hub_models():
    from keras.src.applications.convnext import ConvNeXt  # the generic builder (private; pinned Keras range)

    images = textures(8, 32)
    app = ConvNeXt(
        depths=[1, 1, 1, 1],
        projection_dims=[8, 8, 16, 16],
        input_shape=(32, 32, 3),
        weights=None,
        include_preprocessing=False,
        include_top=False,
        name="small",
    )
    assert align_conv_layers(app, images=images, num_layers=1, n_components=4, seed=0) == [
        "small_stem/small_stem_conv/kernel",
        "small_stem/small_stem_conv/bias",
    ]
    _, eigvecs = patch_covariance(images, 4)
    stem_conv = app.get_layer("small_stem").get_layer("small_stem_conv")
    np.testing.assert_allclose(filters_of(stem_conv.kernel)[:4], eigvecs[:, :4].T, atol=1e-5)
    keras_hub = pytest.importorskip("keras_hub", reason="keras_hub is not installed (the `hub` extra)")
    vit = keras_hub.models.ViTBackbone(
        image_shape=(8, 8, 3), patch_size=4, num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32
    )
    paths = align_conv_layers(vit, images=images[:, :8, :8], n_components=8, seed=0)
    assert len(paths) == 2 and paths[0].endswith("/kernel")
    conv = next(layer for layer in vit._flatten_layers() if isinstance(layer, keras.layers.Conv2D))
    _, eigvecs = patch_covariance(images[:, :8, :8], 4)
    np.testing.assert_allclose(filters_of(conv.kernel)[:8], eigvecs[:, :8].T, atol=1e-5)


def test_a_conv_the_forward_pass_never_calls_is_a_clear_error():
    model = nested_model(spare=True)
    with pytest.raises(ValueError, match="Layer 'unused' is not called when 'nested' runs on `images`"):
        align_conv_layers(model, images=textures(8), layers=["stem_conv", "unused"], num_layers=2)


def test_align_conv_layers_bad_input():
    model, images = small_cnn(), textures(8)
    with pytest.raises(ValueError, match="`num_layers` must be at most .* \\(3\\)"):
        align_conv_layers(model, images=images, num_layers=4)
    with pytest.raises(ValueError, match=r"images` must be a non-empty \(N, H, W, C\)"):
        align_conv_layers(model, images=images[0])
    with pytest.raises(TypeError, match="images"):
        align_conv_layers(model, images=[images])
    with pytest.raises(ValueError, match="`components` must be one of"):
        align_conv_layers(model, images=images, components="leading")
    depthwise = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.DepthwiseConv2D(3, name="dw"),
            keras.layers.Conv2D(4, 3, name="conv"),
        ]
    )
    with pytest.raises(ValueError, match="'dw', which is not a plain Conv2D"):
        align_conv_layers(depthwise, images=images[:, :8, :8], layers=["dw", "conv"])
    tiny = keras.Sequential([keras.Input((None, None, 3)), keras.layers.Conv2D(4, 3, padding="same")])
    with pytest.raises(ValueError, match="larger than the images"):
        align_conv_layers(tiny, images=np.zeros((5, 2, 2, 3), "float32"))
    with pytest.raises(ValueError, match="must be built"):
        align_conv_layers(keras.Sequential([keras.layers.Conv2D(4, 3)]), images=images)


def test_align_conv_layers_refuses_non_finite_or_mismatched_images():
    """Issue 32: NaN images failed far away ("`eigvals` must be ... finite"); 1-channel images spoke of
    n_components."""
    model, images = small_cnn(), textures(8)
    before = to_numpy(model.get_layer("conv_1").kernel)
    broken = images.copy()
    broken[3, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"`images` must be finite: 1 value\(s\) are NaN or inf"):
        align_conv_layers(model, images=broken)
    with pytest.raises(ValueError, match=r"`images` must fit float32 .*values reach 1e\+200"):
        align_conv_layers(model, images=images.astype("float64") * 0 + 1e200)
    with pytest.raises(ValueError, match=rf"`images` have 1 channel\(s\), but '{model.name}' takes 3"):
        align_conv_layers(model, images=images[..., :1])
    with pytest.raises(TypeError, match="real numbers"):
        align_conv_layers(model, images=images.astype(complex))
    np.testing.assert_array_equal(to_numpy(model.get_layer("conv_1").kernel), before)
    # Activations between aligned layers: conv_2, not aligned here, overflows float32.
    conv_2 = model.get_layer("conv_2").kernel
    conv_2.assign(np.full(conv_2.shape, 3e38, "float32"))
    with pytest.raises(ValueError, match=r"layer .conv_3., computed from `images` 0..7 .*NaN or inf"):
        align_conv_layers(model, images=images, num_layers=2, layers=["conv_1", "conv_3"])


def test_weight_covariance_measures_alignment():
    eigvals, eigvecs = components()
    sigma_x = (eigvecs * eigvals) @ eigvecs.T
    init = DataAligned(eigvals, eigvecs, n_components=27, f=1.0)
    aligned = keras.layers.Conv2D(27, 3, kernel_initializer=init)
    aligned.build((None, 8, 8, 3))
    sigma_w = weight_covariance(aligned)
    np.testing.assert_allclose(sigma_w, (eigvecs * eigvals**2) @ eigvecs.T / 27, atol=1e-6)
    assert misalignment(sigma_x, sigma_w) < 1e-4  # float32 kernel
    he = keras.layers.Conv2D(64, 3, kernel_initializer=keras.initializers.HeNormal(seed=0))
    he.build((None, 8, 8, 3))
    assert misalignment(sigma_x, weight_covariance(he.kernel)) > 1.0
    sixteen = keras.layers.Conv2D(16, 3)
    sixteen.build((None, 8, 8, 3))
    with pytest.raises(ValueError, match="singular"):
        misalignment(sigma_x, weight_covariance(sixteen))
    with pytest.raises(ValueError, match="has no `kernel`"):
        weight_covariance(keras.layers.ReLU())


def bias_free_relu_net():
    return keras.Sequential(
        [
            keras.Input((6, 6, 3)),
            keras.layers.Conv2D(4, 3, use_bias=False, activation="relu", name="conv"),
            keras.layers.Flatten(),
            keras.layers.Dense(8, use_bias=False, activation="relu", name="dense"),
            keras.layers.Dense(3, use_bias=False, name="head"),
        ]
    )


def test_rescaling_to_initial_norms_keeps_a_bias_free_relu_nets_predictions():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 6, 6, 3)).astype("float32"), rng.integers(0, 3, 32)
    model = bias_free_relu_net()
    record = RecordInitialNorms()
    model.compile(keras.optimizers.SGD(0.2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=3, batch_size=8, callbacks=[record], verbose=0)
    initial = dict(record.norms)
    layer_paths = [model.get_layer(n).kernel.path.rsplit("/", 1)[0] for n in ("conv", "dense", "head")]
    assert sorted(initial) == sorted(layer_paths)  # one norm per layer with a kernel (the variables' prefix)
    trained_norms = weight_norms(model)
    assert max(abs(trained_norms[p] - n) for p, n in initial.items()) > 1e-3
    trained = to_numpy(model(x))
    assert rescale_to_initial_norms(model, initial) == [f"{path}/kernel" for path in initial]
    assert weight_norms(model) == pytest.approx(initial, rel=1e-5)
    # Positively homogeneous per layer: the logits are multiplied by prod(target / current) > 0.
    factor = np.prod([initial[p] / trained_norms[p] for p in initial])
    np.testing.assert_allclose(to_numpy(model(x)), factor * trained, rtol=1e-4, atol=1e-5)
    model.fit(x, y, epochs=1, batch_size=8, callbacks=[record], verbose=0)
    assert record.norms == initial  # a later fit keeps the first record


def test_rescaling_multiplies_kernel_and_bias_by_one_constant():
    """App. A.4: all parameters of a layer (its bias too) are multiplied by one positive constant."""
    model = keras.Sequential(
        [
            keras.Input((4, 4, 2)),
            keras.layers.Conv2D(3, 3, name="conv", bias_initializer="ones"),
            keras.layers.Flatten(),
            keras.layers.Dense(2, name="head"),
        ]
    )
    conv = model.get_layer("conv")
    conv.bias.assign(np.full(3, 0.5, "float32"))
    path = conv.kernel.path.rsplit("/", 1)[0]
    kernel, bias = to_numpy(conv.kernel).astype(np.float64), to_numpy(conv.bias).astype(np.float64)
    joint = np.sqrt(np.sum(kernel**2) + np.sum(bias**2))
    assert weight_norms(model)[path] == pytest.approx(joint, rel=1e-6)
    assert rescale_to_initial_norms(model, {path: 2.0 * joint}) == [conv.kernel.path, conv.bias.path]
    np.testing.assert_allclose(to_numpy(conv.kernel), 2.0 * kernel, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(conv.bias), np.full(3, 1.0), rtol=1e-6)  # 0.5 -> 1.0, not kept
    assert weight_norms(model)[path] == pytest.approx(2.0 * joint, rel=1e-6)


def test_rescale_bad_input():
    model = bias_free_relu_net()
    with pytest.raises(ValueError, match="'nope', which is not a layer with a trainable kernel"):
        rescale_to_initial_norms(model, {"nope": 1.0})
    with pytest.raises(TypeError, match="`norms` must be a dict"):
        rescale_to_initial_norms(model, [1.0])
    kernel = model.get_layer("conv").kernel
    path = kernel.path.rsplit("/", 1)[0]
    with pytest.raises(ValueError, match="must be a norm >= 0"):
        rescale_to_initial_norms(model, {path: -1.0})
    kernel.assign(np.zeros((3, 3, 3, 4), "float32"))
    with pytest.raises(ValueError, match="all zeros"):
        rescale_to_initial_norms(model, {path: 1.0})


def test_cli_init_data_aligned(tmp_path, capsys):
    from keras_structinit import initialize, parse_init_spec

    assert [(p.name, p.value) for p in parse_init_spec("data-aligned")] == [("data-aligned", 1)]
    assert [(p.name, p.value) for p in parse_init_spec("data-aligned:3")] == [("data-aligned", 3)]
    for bad in ("data-aligned:0", "data-aligned:x", "data-aligned:-1"):
        with pytest.raises(ValueError, match="number of conv layers"):
            parse_init_spec(bad)
    with pytest.raises(ValueError, match="`data` is needed by init data-aligned"):
        initialize(small_cnn(), "data-aligned", seed=0)
    model, images = small_cnn(), textures()
    assert initialize(model, "data-aligned", data=images, seed=0) == ["conv_1/kernel", "conv_1/bias"]
    rng = np.random.default_rng(0)
    data = tmp_path / "train.npz"
    np.savez(data, x=rng.integers(0, 256, (40, 12, 12, 3), dtype=np.uint8), y=np.arange(40) % 10)
    # The paper's recipe (App. A.3) from the command line.
    argv = [
        "train",
        "--model",
        "simple-cnn-e3",
        "--init",
        "data-aligned:2",
        "--epochs",
        "1",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "run"),
        "--batch-size",
        "16",
        "--rand-augment",
        "none",
        "--optimizer",
        "sgd_momentum",
        "--schedule",
        "step",
        "--lr",
        "0.002",
        "--weight-decay",
        "0",
        "--normalization",
        "symmetric",
        "--pad",
        "0",
        "--no-flip",
    ]
    assert cli.main(argv) == 0
    assert "init data-aligned:2" in capsys.readouterr().out
    config = json.loads((tmp_path / "run" / "results.json").read_text())["config"]
    assert config["init"] == "data-aligned:2"
    expected = {
        "optimizer": "sgd_momentum",
        "schedule": "step",
        "normalization": "symmetric",
        "pad": 0,
        "flip": False,
        "weight_decay": 0.0,
    }
    assert {k: config[k] for k in expected} == expected
    argv = [
        "train",
        "--recipe",
        "imagenet",
        "--model",
        "simple-cnn-e3",
        "--init",
        "data-aligned",
        "--epochs",
        "1",
        "--data",
        str(tmp_path),
    ]
    assert cli.main(argv) == 2
    assert "--init data-aligned measures the training images of the CIFAR recipes" in capsys.readouterr().err


def test_a_2x2_rgb_stem_takes_as_many_components_as_its_patch_has(tmp_path):
    """Issue 52: data-aligned always refused the zoo's 2x2 RGB stems (patch dimension 12 < 16)."""
    import keras_structinit as ks
    from keras_structinit.alignment.apply import PAPER_COMPONENTS
    from keras_structinit.alignment.patches import patch_covariance

    model = ks.models.convmixer(8, 1, kernel_size=3, patch_size=2, num_classes=3, input_shape=(8, 8, 3))
    images = np.random.default_rng(0).normal(size=(32, 8, 8, 3)).astype("float32")
    paths = ks.initialize(model, "data-aligned", data=images, seed=0)
    kernel = next(v for v in model.weights if v.path == paths[0])
    assert tuple(kernel.shape)[:3] == (2, 2, 3) and PAPER_COMPONENTS == 16
    # the 8 filters lie in the span of the 12 eigenvectors (all of them): Sigma_w's rank is min(8, 12)
    w = np.asarray(keras.ops.convert_to_numpy(kernel)).reshape(12, -1)
    assert np.linalg.matrix_rank(w) == 8
    fewer = ks.models.convmixer(8, 1, kernel_size=3, patch_size=2, num_classes=3, input_shape=(8, 8, 3))
    ks.initialize(fewer, "data-aligned:1:4", data=images, seed=0)  # L:N, 4 eigenvectors
    w4 = np.asarray(keras.ops.convert_to_numpy(next(v for v in fewer.weights if v.path == paths[0])))
    _, eigvecs = patch_covariance(images, (2, 2))
    top = eigvecs[:, :4]
    residual = w4.reshape(12, -1) - top @ (top.T @ w4.reshape(12, -1))
    np.testing.assert_allclose(residual, 0, atol=1e-4)  # every filter in the top-4 subspace
    with pytest.raises(ValueError, match="components"):
        ks.parse_init_spec("data-aligned:1:0")
