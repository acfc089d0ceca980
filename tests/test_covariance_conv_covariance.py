"""ConvCovariance and apply_conv_covariance on the active Keras backend."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import covariance as cv
from keras_structinit.covariance import apply as cc_module
from keras_structinit.engine.walker import find_kernels
from keras_structinit.initializers import ConvCovariance
from keras_structinit.methods import apply_parts

from conftest import assert_covariance_within_sampling_error, filters_of, to_numpy


@pytest.mark.parametrize("psd", ["abs", "clip"])
def test_sampled_covariance_matches_psd_handled_target(psd):
    # sigma(d=1) of cifar-p2 is 1.905: Sigma' is indefinite, so abs != clip.
    init = ConvCovariance(depth_fraction=1.0, psd=psd, seed=123)
    kernel = init((7, 7, 4000, 6), dtype="float32")  # 24,000 filters
    assert tuple(kernel.shape) == (7, 7, 4000, 6)
    target = cv.psd_project(cv.conv_covariance(7, init.sigma), psd)
    np.testing.assert_allclose(init.covariance(7), target, atol=1e-12)
    assert_covariance_within_sampling_error(filters_of(kernel), target)


@pytest.mark.parametrize("psd", ["abs", "clip"])
def test_variance_along_negative_eigenvectors(psd):
    # abs and clip differ by less than the entry-wise sampling error above, but
    # sharply along the eigenvectors of Sigma' with negative eigenvalues: the
    # sampled variance there is |lambda| for "abs" and 0 for "clip".
    init = ConvCovariance(depth_fraction=1.0, psd=psd, seed=5)
    eigvals, eigvecs = np.linalg.eigh(cv.conv_covariance(7, init.sigma))
    negative = eigvals < -1e-3
    assert negative.sum() >= 1
    n = 20000
    proj = filters_of(init((7, 7, n, 1))) @ eigvecs[:, negative]
    var = (proj**2).mean(axis=0)
    expected = np.abs(eigvals[negative]) if psd == "abs" else np.zeros(negative.sum())
    # stderr of a Gaussian variance estimate: var * sqrt(2 / n); plus float32 slack.
    tol = 6 * np.abs(eigvals[negative]) * np.sqrt(2 / n) + 1e-6
    np.testing.assert_array_less(np.abs(var - expected), tol)


@pytest.mark.parametrize("shape", [(3, 5, 2500, 8), (6, 3000, 7), (3, 3, 3, 1000, 20)])
def test_layout_for_non_square_1d_and_3d_kernels(shape):
    init = ConvCovariance(sigma0=0.9, v_sigma=0.0, a_sigma=0.0, preset=None, seed=7)
    kernel = init(shape)
    target = cv.psd_project(cv.conv_covariance(shape[:-2], 0.9), "abs")
    assert_covariance_within_sampling_error(filters_of(kernel), target)


def test_scale_multiplies_samples():
    a = to_numpy(ConvCovariance(seed=3)((5, 5, 8, 1)))
    b = to_numpy(ConvCovariance(seed=3, scale=2.5)((5, 5, 8, 1)))
    np.testing.assert_allclose(b, 2.5 * a, rtol=1e-5, atol=1e-6)


def test_explicit_values_override_preset():
    init = ConvCovariance(v_sigma=0.0, a_sigma=0.0, depth_fraction=1.0, preset="cifar-p1")
    assert init.sigma == pytest.approx(0.16)
    assert ConvCovariance(sigma0=0.3, depth_fraction=0.0).sigma == pytest.approx(0.3)
    assert ConvCovariance(depth_fraction=0.5, preset="imagenet-thawed").sigma == pytest.approx(
        0.15 + 0.125 + 0.125
    )


def test_int_seed_repeats_and_seed_generator_advances():
    shape = (5, 5, 16, 1)
    init = ConvCovariance(seed=42)
    np.testing.assert_array_equal(to_numpy(init(shape)), to_numpy(init(shape)))
    np.testing.assert_array_equal(to_numpy(init(shape)), to_numpy(ConvCovariance(seed=42)(shape)))
    assert not np.array_equal(to_numpy(init(shape)), to_numpy(ConvCovariance(seed=43)(shape)))
    gen_init = ConvCovariance(seed=keras.random.SeedGenerator(42))
    assert not np.array_equal(to_numpy(gen_init(shape)), to_numpy(gen_init(shape)))
    unseeded = ConvCovariance()
    np.testing.assert_array_equal(to_numpy(unseeded(shape)), to_numpy(unseeded(shape)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_dtypes(dtype):
    kernel = ConvCovariance(seed=1)((9, 9, 32, 1), dtype=dtype)
    assert keras.backend.standardize_dtype(kernel.dtype) == dtype
    reference = to_numpy(ConvCovariance(seed=1)((9, 9, 32, 1), dtype="float32"))
    np.testing.assert_allclose(to_numpy(kernel), reference, atol=0.02, rtol=0.02)


def test_config_round_trip():
    init = ConvCovariance(
        sigma0=0.2, depth_fraction=0.25, preset="imagenet-frozen", psd="clip", scale=0.5, seed=9
    )
    config = keras.saving.serialize_keras_object(init)
    clone = keras.saving.deserialize_keras_object(config)
    assert isinstance(clone, ConvCovariance)
    assert clone.get_config() == init.get_config()
    np.testing.assert_array_equal(to_numpy(clone((7, 7, 4, 1))), to_numpy(init((7, 7, 4, 1))))


def test_at_depth_specializes_depth_and_seed():
    init = ConvCovariance(seed=5, preset="cifar-p1")
    layer3 = init.at_depth(0.5, index=3)
    assert layer3.depth_fraction == 0.5 and layer3.preset == "cifar-p1"
    assert layer3.get_config()["seed"] == 8
    assert ConvCovariance().at_depth(0.2, 1).get_config()["seed"] is None


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(sigma0=-1.0), ValueError, "sigma0"),
        (dict(sigma0=float("nan")), ValueError, "sigma0"),
        (dict(preset="cifar10"), ValueError, "preset"),
        (dict(preset=None, sigma0=0.1), ValueError, "v_sigma"),
        (dict(psd="eig"), ValueError, "psd"),
        (dict(depth_fraction=1.5), ValueError, "depth_fraction"),
        (dict(depth_fraction=-0.01), ValueError, "depth_fraction"),
        (dict(scale=float("inf")), ValueError, "scale"),
        (dict(seed="1"), TypeError, "seed"),
        (dict(sigma0=0.1, v_sigma=-1.0, a_sigma=0.0, depth_fraction=1.0), ValueError, "sigma=.* <= 0"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ConvCovariance(**kwargs)


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_int_seeds_outside_uint32_are_refused_on_every_backend(seed):
    # seed=-1 was an OverflowError on JAX (uint32 seeds) and accepted by TensorFlow and torch.
    with pytest.raises(ValueError, match=r"`seed` must be None, an int in \[0, 2\*\*32 - 1\]"):
        ConvCovariance(seed=seed)
    assert tuple(ConvCovariance(seed=2**32 - 1)((3, 3, 2, 1)).shape) == (3, 3, 2, 1)


@pytest.mark.parametrize("shape", [(9, 9), (81,), (), (3, 3, 0, 1)])
def test_bad_shapes(shape):
    with pytest.raises(ValueError, match="shape"):
        ConvCovariance()(shape)


def test_bad_dtype():
    with pytest.raises(ValueError, match="dtype"):
        ConvCovariance()((3, 3, 2, 1), dtype="int32")


# ---------------------------------------------------------------------------
# apply_conv_covariance
# ---------------------------------------------------------------------------
def kernels_by_path(model):
    return {v.path: to_numpy(v) for v in model.weights}


def test_apply_assigns_schedule_over_depth(monkeypatch):
    depths = []

    class Recording(ConvCovariance):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            depths.append(self.depth_fraction)

    model = ks.models.convmixer(8, 8, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    monkeypatch.setattr(cc_module, "ConvCovariance", Recording)
    paths = ks.apply_conv_covariance(model, seed=0)
    assert paths == [f"block_{i}_depthwise_conv/kernel" for i in range(1, 9)]
    np.testing.assert_allclose(depths, np.arange(8) / 7)


def test_apply_samples_each_layer_from_its_own_sigma():
    model = ks.models.convmixer(3000, 2, kernel_size=5, num_classes=2, input_shape=(4, 4, 1))
    ks.apply_conv_covariance(model, seed=1)
    first = filters_of(model.get_layer("block_1_depthwise_conv").kernel)
    last = filters_of(model.get_layer("block_2_depthwise_conv").kernel)
    sigma_first, sigma_last = 0.08, 0.08 + 0.37 + 1.45
    assert_covariance_within_sampling_error(first, cv.psd_project(cv.conv_covariance(5, sigma_first)))
    assert_covariance_within_sampling_error(last, cv.psd_project(cv.conv_covariance(5, sigma_last)))


def test_apply_is_reproducible_differs_per_layer_and_keeps_biases():
    model = ks.models.convmixer(16, 4, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    before = kernels_by_path(model)
    paths = ks.apply_conv_covariance(model, seed=11, preset="imagenet-thawed")
    first = kernels_by_path(model)
    ks.apply_conv_covariance(model, seed=11, preset="imagenet-thawed")
    second = kernels_by_path(model)
    for path in before:
        np.testing.assert_array_equal(first[path], second[path])
        if path not in paths:
            np.testing.assert_array_equal(first[path], before[path])
        else:
            assert not np.array_equal(first[path], before[path])
    kernels = [first[p] for p in paths]
    for a in range(len(kernels)):
        for b in range(a + 1, len(kernels)):
            assert not np.allclose(kernels[a], kernels[b])
    ks.apply_conv_covariance(model, seed=12, preset="imagenet-thawed")
    assert not np.array_equal(kernels_by_path(model)[paths[0]], first[paths[0]])


def test_apply_finds_grouped_conv_and_respects_layers_argument():
    inputs = keras.Input((8, 8, 6))
    x = keras.layers.Conv2D(6, 7, groups=6, padding="same", name="grouped_dw")(inputs)
    x = keras.layers.Conv2D(6, 1, name="pointwise")(x)  # 1x1: not spatial
    x = keras.layers.Conv2D(6, 3, groups=2, padding="same", name="grouped_not_dw")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    model = keras.Model(inputs, x)
    assert ks.apply_conv_covariance(model, seed=0) == ["grouped_dw/kernel", "dw/kernel"]
    before = to_numpy(model.get_layer("grouped_dw").kernel)
    assert ks.apply_conv_covariance(model, seed=3, layers=["dw"]) == ["dw/kernel"]
    np.testing.assert_array_equal(to_numpy(model.get_layer("grouped_dw").kernel), before)
    with pytest.raises(ValueError, match="not a spatial depthwise"):
        ks.apply_conv_covariance(model, layers=["pointwise"])
    with pytest.raises(ValueError, match="not a layer of the model"):
        ks.apply_conv_covariance(model, layers=["nope"])
    with pytest.raises(TypeError, match="layers"):
        ks.apply_conv_covariance(model, layers="dw")


def test_apply_descends_into_nested_models():
    inner = ks.models.convmixer(8, 2, kernel_size=3, num_classes=2, input_shape=(8, 8, 3))
    outer = keras.Sequential([keras.Input((8, 8, 3)), inner, keras.layers.Dense(1)])
    assert ks.apply_conv_covariance(outer, seed=0) == [
        "block_1_depthwise_conv/kernel",
        "block_2_depthwise_conv/kernel",
    ]


def test_apply_rejects_models_without_spatial_convs_and_bad_arguments():
    dense = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="no spatial depthwise"):
        ks.apply_conv_covariance(dense)
    model = ks.models.convmixer(8, 2, kernel_size=3, num_classes=2, input_shape=(8, 8, 3))
    with pytest.raises(ValueError, match="preset"):
        ks.apply_conv_covariance(model, preset="nope")
    with pytest.raises(ValueError, match="psd"):
        ks.apply_conv_covariance(model, psd="svd")
    with pytest.raises(TypeError, match="seed"):
        ks.apply_conv_covariance(model, seed=1.5)
    with pytest.raises(TypeError, match="model"):
        ks.apply_conv_covariance("model")


def test_mixed_bfloat16_policy():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = ks.models.convmixer(
            8,
            2,
            kernel_size=5,
            num_classes=3,
            input_shape=(8, 8, 3),
            depthwise_initializer=ConvCovariance(seed=0),
        )
        ks.apply_conv_covariance(model, seed=0)
        kernel = model.get_layer("block_1_depthwise_conv").kernel
        assert keras.backend.standardize_dtype(kernel.dtype) == "float32"
        out = model(np.random.default_rng(0).random((2, 8, 8, 3)).astype("float32"))
        assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
        assert np.all(np.isfinite(to_numpy(out)))
    finally:
        keras.config.set_dtype_policy(previous)


# ---------------------------------------------------------------------------
# Models the presets were not fitted for (issue 77.3)
# ---------------------------------------------------------------------------
def mobile_cnn():
    """Depthwise widths and kernel sizes that change with depth, as in MobileNets."""
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", name="stem")(inputs)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="dw_1")(x)
    x = keras.layers.Conv2D(24, 1, name="expand")(x)
    x = keras.layers.DepthwiseConv2D(5, padding="same", name="dw_2")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(4, name="predictions")(x), name="mobile_cnn")


def test_presets_fit_isotropic_convmixers_only():
    convmixer = ks.models.convmixer(8, 3, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    assert cc_module.presets_fit(find_kernels(convmixer))
    assert not cc_module.presets_fit(find_kernels(mobile_cnn()))


def test_matched_scale_is_the_preset_samples_times_each_kernels_own_rms():
    model = mobile_cnn()
    before = {name: to_numpy(model.get_layer(name).kernel) for name in ("dw_1", "dw_2")}
    ks.apply_conv_covariance(model, seed=4, scale="preset")
    preset = {name: to_numpy(model.get_layer(name).kernel) for name in before}
    for name in before:  # restore the layer's own init, then re-draw at the matched scale
        model.get_layer(name).kernel.assign(before[name])
    with pytest.warns(UserWarning, match="scaled to its kernel's own variance"):
        ks.apply_conv_covariance(model, seed=4, scale="matched")
    sigmas = [cv.variance_schedule(d, *cv.PRESETS["cifar-p2"]) for d in (0.0, 1.0)]
    for (name, old), sigma in zip(before.items(), sigmas, strict=True):
        size = old.shape[:2]
        trace = np.trace(cv.psd_project(cv.conv_covariance(size, sigma)))
        expected = np.sqrt(np.mean(old.astype(np.float64) ** 2) * np.prod(size) / trace)
        want = expected * preset[name]  # float32 sampling: relative to the kernel's largest value
        np.testing.assert_allclose(to_numpy(model.get_layer(name).kernel), want, atol=1e-5 * abs(want).max())
        assert abs(np.log(expected)) > 0.3  # Keras' glorot_uniform is not the preset's variance


def test_on_other_models_the_default_is_announced_in_one_line():
    model = mobile_cnn()
    with pytest.warns(UserWarning) as record:
        ks.apply_conv_covariance(model, seed=0)
    (warning,) = [w for w in record if "conv-cov" in str(w.message)]
    message = str(warning.message)
    assert "\n" not in message and "mobile_cnn" in message and "3x3, 5x5" in message
    said = {"preset": "the preset's own scale", "matched": "each layer's samples scaled"}
    assert f"preset cifar-p2's schedule with {said[cc_module.OTHER_MODELS_SCALE]}" in message
    for scale, words in said.items():
        with pytest.warns(UserWarning, match=words):
            ks.apply_conv_covariance(model, seed=0, scale=scale)
    convmixer = ks.models.convmixer(8, 2, kernel_size=3, num_classes=2, input_shape=(8, 8, 3))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ks.apply_conv_covariance(convmixer, seed=0)  # fitted: the paper's preset, silently


def test_the_init_form_resolves_auto_per_model_and_reports_it():
    convmixer = ks.models.convmixer(8, 2, kernel_size=3, num_classes=2, input_shape=(8, 8, 3))
    parts = apply_parts(convmixer, "conv-cov:auto", seed=0)
    assert [(p.name, p.value) for p, _ in parts] == [("conv-cov", "cifar-p2")]
    with pytest.warns(UserWarning, match="conv-cov"):
        parts = apply_parts(mobile_cnn(), "conv-cov:auto", seed=0)
    resolved = {"preset": "cifar-p2", "matched": "matched"}[cc_module.OTHER_MODELS_SCALE]
    assert [(p.name, p.value) for p, _ in parts] == [("conv-cov", resolved)]
    assert [(p.name, p.value) for p in ks.parse_init_spec("conv-cov:matched")] == [("conv-cov", "matched")]


def test_matched_refuses_a_zero_kernel_and_bad_scales():
    model = mobile_cnn()
    model.get_layer("dw_2").kernel.assign(np.zeros(model.get_layer("dw_2").kernel.shape, "float32"))
    before = to_numpy(model.get_layer("dw_1").kernel)
    with pytest.raises(ValueError, match="layer 'dw_2'.s kernel is all zeros"), pytest.warns(UserWarning):
        ks.apply_conv_covariance(model, scale="matched")
    np.testing.assert_array_equal(to_numpy(model.get_layer("dw_1").kernel), before)  # nothing written
    with pytest.raises(ValueError, match="`scale`"):
        ks.apply_conv_covariance(model, scale="fan_in")
