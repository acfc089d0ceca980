"""keras_structinit.inspect: the papers' views of a model's weights (issue 36)."""

import json
import os

import keras
import numpy as np
import pytest
from model_sources import SOURCES

import keras_structinit as ks
from keras_structinit.covariance import depth_fractions, resolve_schedule, variance_schedule
from keras_structinit.engine import walker
from keras_structinit.methods import inspection

from conftest import once_per_suite


def test_the_fitted_sigma_of_a_conv_cov_convmixer_is_the_presets_schedule():
    """Issue 36: inspect a ConvMixer initialized with conv-cov:cifar-p2; sigma per layer within 10%."""
    model = ks.models.convmixer(256, 8, kernel_size=9, patch_size=2, num_classes=10, input_shape=(16, 16, 3))
    ks.initialize(model, "conv-cov:cifar-p2", seed=0)
    report = ks.inspect(model)
    depthwise = [row for row in report.spatial if row["kind"] == "depthwise"]
    expected = [variance_schedule(d, *resolve_schedule("cifar-p2")) for d in depth_fractions(8)]
    assert len(depthwise) == 8 and [row["depth_fraction"] for row in depthwise] == pytest.approx(
        depth_fractions(8)
    )
    for row, sigma in zip(depthwise, expected, strict=True):
        assert row["covariance_fit"]["sigma"] == pytest.approx(sigma, rel=0.1), row["path"]
        assert row["kernel_size"] == [9, 9] and 0 <= row["variance_entropy"] <= np.log10(81)
    assert report.sigma_grows_with_depth is True and report.sigma_depth_correlation() == pytest.approx(1.0)
    assert all(row["covariance_fit"]["structured"] for row in depthwise)
    ks.initialize(model, "torch-default", seed=0)  # independent weights: no closed form fits
    uniform = [r for r in ks.inspect(model).spatial if r["kind"] == "depthwise"]
    assert all(
        r["covariance_fit"]["rel_error"] > 0.9 and not r["covariance_fit"]["structured"] for r in uniform
    )
    assert ks.inspect(model).sigma_grows_with_depth is None
    # Wider filters spread their variance over more directions: entropy grows with sigma too.
    assert depthwise[-1]["variance_entropy"] > depthwise[0]["variance_entropy"]


def test_mlp_statistics_see_the_mimetic_mean_shift():
    """W1 W1^T off its diagonal is about n b^2 after the shift (n inputs), about 0 without it."""
    shifted, baseline = (ks.models.build_model("vit-tiny-8/2", 10, (8, 8, 3)) for _ in range(2))
    ks.initialize(shifted, "mean-shift:0.2", seed=0)
    ks.initialize(baseline, "torch-default", seed=0)
    after, before = ks.inspect(shifted).mlp, ks.inspect(baseline).mlp
    assert len(after) == len(before) == 8
    for row, base in zip(after, before, strict=True):
        n = 192  # the ViT's width: the first MLP layer's inputs
        assert row["w1w1t"]["offdiag_mean"] == pytest.approx(n * 0.2**2, rel=0.1)
        assert abs(base["w1w1t"]["offdiag_mean"]) < 0.05 * n * 0.2**2
        assert row["w1_mean"] == pytest.approx(0.2, abs=0.01)
    assert ks.inspect(shifted).spatial[0]["kind"] == "conv"  # the patch embedding; no depthwise conv


def test_first_layer_alignment_with_data_and_the_json_fields():
    x, _ = ks.datasets.procedural_images(64, image_size=12)
    images = (x / 127.5 - 1.0).astype("float32")
    aligned = ks.models.build_model("simple-cnn-e3", 3, (12, 12, 3), num_filters=256)
    ks.alignment.align_conv_layers(aligned, images=images, mode="sample", n_components=27, f=1.0, seed=0)
    report = ks.inspect(aligned, data=images)
    first = report.first_layer
    assert first["path"].endswith("conv_1/kernel") and len(first["spectrum"]) == 27
    assert first["spectrum"] == sorted(first["spectrum"], reverse=True)
    assert first["misalignment"] < first["random_baseline"]  # sampled along the data's eigenvectors
    few = ks.models.build_model("simple-cnn-e3", 3, (12, 12, 3), num_filters=16)
    assert "singular" in ks.inspect(few, data=images).first_layer["note"]  # 16 filters of 27 weights
    data = json.loads(report.to_json())
    for row in data["spatial"]:
        assert {"path", "kind", "kernel_size", "covariance_fit", "variance_entropy"} <= set(row)
        assert {"sigma", "rel_error"} <= set(row["covariance_fit"])
    assert {"misalignment", "random_baseline", "spectrum"} <= set(data["first_layer"])
    text = report.to_markdown()
    assert "## First layer and the data" in text and "## Spatial convolutions" in text


def test_figures_draw_the_covariances_the_report_measured(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    x, _ = ks.datasets.procedural_images(32, image_size=12)
    images = (x / 127.5 - 1.0).astype("float32")
    model = ks.models.build_model("convmixer-32/4", 3, (12, 12, 3), patch_size=2, kernel_size=3)
    ks.initialize(model, "conv-cov:cifar-p2", seed=0)
    report = ks.inspect(model, data=images)
    written = report.figures(tmp_path)
    assert [os.path.basename(p) for p in written] == [
        "spatial_depth.png",
        "covariance_blocks.png",
        "position_variance.png",
        "first_layer.png",
        "transfer_function.png",
        "specialization.png",
    ]
    for path in written:
        assert plt.imread(path).ndim == 3  # a colour PNG
    kernels = {v.path: keras.ops.convert_to_numpy(v) for v in model.variables}
    for row in report.spatial:
        expected = ks.covariance.filter_statistics(kernels[row["path"]])[1]
        np.testing.assert_allclose(report.arrays["covariances"][row["path"]], expected, rtol=1e-6)
    assert report.arrays["eigenvectors"].shape == (2, 2, 3, 12)  # 2x2x3 patches: 12 eigenvectors
    assert report.arrays["filters"].shape == (2, 2, 3, inspection.FIGURE_FILTERS)
    with pytest.raises(ValueError, match="overwrite"):
        report.figures(tmp_path)  # refuses to replace them


def test_an_lc_block_is_measured_by_its_combined_filters():
    model = ks.models.build_model("lcresnet-8-8x2", 10, (8, 8, 3))
    report = ks.inspect(model)
    rows = [r for r in report.spatial if r["kind"] == "lc"]
    assert len(rows) == len(walker.find(model, "lc_pointwise"))
    layer = model.get_layer(rows[0]["layer"])
    combined = ks.lc.fold_kernels(
        keras.ops.convert_to_numpy(layer.spatial_kernel), keras.ops.convert_to_numpy(layer.pointwise_kernel)
    )
    assert rows[0]["filters"] == combined.shape[2] * combined.shape[3]  # not the E-times spatial ones
    assert rows[0]["variance_entropy"] == pytest.approx(ks.lc.variance_entropy(combined), rel=1e-5)


def test_a_model_without_convs_or_mlp_blocks_has_only_its_layers():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="dense")])
    report = ks.inspect(model)
    assert report.spatial == [] and report.mlp == [] and report.first_layer is None
    assert [row["path"].split("/", 1)[-1] for row in report.layers] == ["dense/kernel", "dense/bias"]
    assert report.sigma_grows_with_depth is None
    assert "## Spatial convolutions" not in report.to_markdown()
    with pytest.raises(TypeError, match="`model`"):
        ks.inspect("model.keras")
    with pytest.raises(TypeError, match="`data`"):
        ks.inspect(model, data=[1, 2])


#: Sections each model source's report has (issue 36: ConvNeXt, a KerasHub ViT, the zoo, a user's model).
SECTIONS = {
    "zoo ConvMixer": {"spatial"},
    "zoo ConvNeXt": {"spatial", "mlp"},
    "zoo ViT": {"spatial", "mlp"},
    "zoo LCResNet": {"spatial"},
    "keras.applications ConvNeXt": {"spatial", "mlp"},
    "KerasHub ViT": {"spatial", "mlp"},
    "user Sequential": {"spatial"},
}


@once_per_suite("inspect reads weights with NumPy; the report does not depend on the backend")
@pytest.mark.parametrize("source", list(SECTIONS))
def test_every_model_source_gets_its_sections(source):
    builder, extra = SOURCES[source]
    if extra:
        pytest.importorskip(extra)
    model = builder()
    report = json.loads(ks.inspect(model).to_json())
    assert {name for name in ("spatial", "mlp") if report[name]} == SECTIONS[source]
    assert len(report["layers"]) == len({v.path for v in model.variables})
    for row in report["spatial"]:
        assert len(row["kernel_size"]) == 2 and row["kind"] in ("depthwise", "conv", "lc")


def test_first_layer_is_measured_on_the_input_it_sees():
    """Issue 52: the raw images' patch covariance was measured against the first Conv2D even when a
    Rescaling (or a stem) sat before it: a silently wrong scale."""
    from keras_structinit.alignment.patches import patch_covariance

    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(32, 3, name="conv")(keras.layers.Rescaling(1 / 255)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x)))
    images = np.random.default_rng(0).integers(0, 256, (16, 8, 8, 3)).astype("float32")
    report = ks.inspect(model, data=images)
    want, _ = patch_covariance(images / 255, (3, 3))
    np.testing.assert_allclose(report.first_layer["spectrum"], want, rtol=1e-4)
    assert report.first_layer["misalignment"] is not None
