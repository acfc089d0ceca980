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


def test_specialization_of_the_last_dense_layers_inputs_with_and_without_labels(tmp_path):
    """The head reads 16 hidden ReLUs; one of them is made to fire for class 2 only."""
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(3), 20)
    images = rng.normal(size=(60, 8, 8, 3)).astype("float32")
    images[..., 0] = np.where(labels == 2, 5.0, -5.0)[:, None, None]  # class 2: a bright first channel
    model = small_cnn()
    conv = model.get_layer("conv")
    kernel = np.zeros(conv.kernel.shape, "float32")
    kernel[1, 1, 0, 0] = 1.0  # conv channel 0 copies the first image channel
    conv.kernel.assign(kernel)
    hidden = model.get_layer("hidden")
    weights = np.zeros(hidden.kernel.shape, "float32")
    weights[0, 0] = 1.0  # hidden neuron 0 reads conv channel 0: above 0 for class 2 only
    weights[:, 1] = -1.0  # hidden neuron 1: never above 0
    hidden.kernel.assign(weights)
    hidden.bias.assign(np.r_[0.0, 0.0, np.ones(14)].astype("float32"))  # the others: always
    report = ks.inspect(model, data=(images, labels))
    section = report.specialization
    assert [section[k] for k in ("layer", "neurons", "examples", "classes")] == ["head", 16, 60, 3]
    fractions = report.arrays["neuron_fractions"]
    np.testing.assert_allclose(fractions[:2], [1 / 3, 0.0])
    np.testing.assert_allclose(report.arrays["class_selectivity"][[0, 2]], [1.0, 0.0])
    assert section["dead_neurons"] == pytest.approx(1 / 16)
    assert section["selective_neurons"] == pytest.approx(1 / 16)
    assert "class selectivity" in report.to_markdown()
    unlabeled = ks.inspect(model, data=images).specialization  # images alone: the paper's measure
    assert unlabeled["classes"] is None and unlabeled["neuron_histogram"] == section["neuron_histogram"]
    assert ks.inspect(model).specialization is None
    with pytest.raises(ValueError, match="integer labels"):
        ks.inspect(model, data=(images, labels[:10]))
    one_hot = ks.inspect(model, data=(images, np.eye(3)[labels])).specialization
    assert one_hot["mean_class_selectivity"] == pytest.approx(section["mean_class_selectivity"])
    pytest.importorskip("matplotlib")
    assert "specialization.png" in [os.path.basename(p) for p in report.figures(tmp_path)]
