"""The LC paper's views in ``structinit inspect``: the per-position weight variance (Fig. 13)."""

import json
import os

import keras
import numpy as np
import pytest

import keras_structinit as ks


def hand_set_model(scales):
    """A Conv2D whose kernel is +-scales[i, j] at each position (variance scales^2), then a
    depthwise conv; a Dense head."""
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(8, 3, name="conv")(inputs)
    x = keras.layers.DepthwiseConv2D(5, padding="same", name="depthwise")(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x)))
    signs = np.where(np.arange(24) % 2, 1.0, -1.0).reshape(3, 8)
    model.get_layer("conv").kernel.assign((scales[:, :, None, None] * signs).astype("float32"))
    return model


def test_each_spatial_conv_gets_its_normalized_map_and_the_model_a_pooled_one():
    scales = np.array([[1.0, 1.0, 1.0], [1.0, 3.0, 1.0], [1.0, 1.0, 1.0]])
    model = hand_set_model(scales)
    section = ks.inspect(model).position_variance
    conv, depthwise = section["layers"]
    assert (conv["kind"], conv["kernel_size"], depthwise["kind"], depthwise["kernel_size"]) == (
        "conv",
        [3, 3],
        "depthwise",
        [5, 5],
    )
    np.testing.assert_allclose(conv["variance"], scales**2 / np.mean(scales**2), rtol=1e-6)
    assert conv["centre_border"] == pytest.approx(9.0)
    kernel = keras.ops.convert_to_numpy(model.get_layer("depthwise").kernel)
    np.testing.assert_allclose(depthwise["variance"], ks.lc.position_variance(kernel), rtol=1e-5)
    assert [(p["kernel_size"], p["layers"]) for p in section["pooled"]] == [([3, 3], 1), ([5, 5], 1)]
    np.testing.assert_allclose(section["pooled"][0]["variance"], conv["variance"])


def test_an_lc_block_is_mapped_by_its_combined_filters(tmp_path):
    pytest.importorskip("matplotlib")
    model = ks.models.build_model("lcresnet-8-8x2", 10, (8, 8, 3))
    report = ks.inspect(model)
    rows = report.position_variance["layers"]
    assert rows and all(r["kind"] == "lc" for r in rows)
    layer = model.get_layer(rows[0]["layer"])
    combined = ks.lc.fold_kernels(
        keras.ops.convert_to_numpy(layer.spatial_kernel), keras.ops.convert_to_numpy(layer.pointwise_kernel)
    )
    np.testing.assert_allclose(rows[0]["variance"], ks.lc.position_variance(combined), rtol=1e-5)
    data = json.loads(report.to_json())["position_variance"]
    assert data["pooled"][0]["layers"] == len(rows) and len(data["pooled"][0]["variance"]) == 3
    text = report.to_markdown()
    assert "## Weight variance per kernel position" in text and "Fig. 13" in text
    written = [os.path.basename(p) for p in report.figures(tmp_path)]
    assert "position_variance.png" in written


def test_a_model_without_spatial_convs_has_an_empty_section():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    report = ks.inspect(model)
    assert report.position_variance == {"layers": [], "pooled": []}
    assert "per kernel position" not in report.to_markdown()
    assert report.sections["position_variance"].figures("unused") == []
