"""The mimetic paper's section of ``structinit inspect``: an MLP block's W1 with its W2 (Fig. 1)."""

import os

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.mimetic.inspect import mlp_weight_pairs
from keras_structinit.mimetic.joint import unit_covariance


def test_each_block_pairs_its_first_layer_with_its_second_and_measures_them_jointly(tmp_path):
    model = ks.models.build_model("vit-tiny-8/2", 10, (8, 8, 3))
    first = model.get_layer("block_2_mlp_1").kernel
    model.get_layer("block_2_mlp_2").kernel.assign(-keras.ops.transpose(first))  # W2 = -W1^T
    report = ks.inspect(model)
    rows = {r["layer"]: r for r in report.mlp}
    assert len(rows) == 8 and all(r["second_path"].endswith("_mlp_2/kernel") for r in rows.values())
    assert rows["block_2_mlp_1"]["joint"]["cross_correlation"] == pytest.approx(-1.0, abs=1e-5)
    assert abs(rows["block_1_mlp_1"]["joint"]["cross_correlation"]) < 0.1  # independent draws
    _, _, w1, w2, _ = mlp_weight_pairs(model)[0]
    k1 = keras.ops.convert_to_numpy(model.get_layer("block_1_mlp_1").kernel)
    k2 = keras.ops.convert_to_numpy(model.get_layer("block_1_mlp_2").kernel)
    np.testing.assert_allclose(w1, k1.T)
    np.testing.assert_allclose(w2, k2.T)
    np.testing.assert_allclose(report.arrays["mlp_covariance"], unit_covariance(k1.T, k2.T), rtol=1e-6)
    assert "corr(W1, W2^T)" in report.to_markdown()
    pytest.importorskip("matplotlib")
    assert "mlp_covariance.png" in [os.path.basename(p) for p in report.figures(tmp_path)]


def test_a_layer_named_like_a_block_without_the_structure_gives_no_rows():
    """The names must agree with the structure: a widening Dense named like a first layer, with no
    activation, narrowing layer or residual after it, is no MLP block."""
    inputs = keras.Input((4, 8))
    x = keras.layers.Dense(16, name="block_1_mlp_1")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(8, name="other")(x))
    assert ks.inspect(model).mlp == [] and mlp_weight_pairs(model) == []
