"""The random-label paper's views in ``structinit inspect``: the first layer's transfer function
tau_i^2 (Sec. 2.3, App. A.8) and the neurons' specialization (App. F, A.11)."""

import json
import os

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.alignment.patches import patch_covariance


def small_cnn():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(32, 3, activation="relu", name="conv")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(16, activation="relu", name="hidden")(x)
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))


def test_the_first_layers_transfer_function_over_the_data_eigenvectors(tmp_path):
    images = np.random.default_rng(0).normal(size=(64, 8, 8, 3)).astype("float32")
    model = small_cnn()
    report = ks.inspect(model, data=images)
    first = report.first_layer
    eigvals, eigvecs = patch_covariance(images, (3, 3))
    kernel = keras.ops.convert_to_numpy(model.get_layer("conv").kernel).astype(np.float64)
    w = kernel.reshape(27, -1)
    sigma_w = w @ w.T / w.shape[1]
    direct = [eigvecs[:, i] @ sigma_w @ eigvecs[:, i] for i in range(27)]
    np.testing.assert_allclose(first["transfer"], direct, rtol=1e-4)
    assert len(json.loads(report.to_json())["first_layer"]["transfer"]) == 27
    assert "tau_i^2 = v_i^T Sigma_w v_i" in report.to_markdown()
    pytest.importorskip("matplotlib")
    written = [os.path.basename(p) for p in report.figures(tmp_path)]
    assert "transfer_function.png" in written and "first_layer.png" in written
