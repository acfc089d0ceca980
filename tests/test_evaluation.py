"""fgsm_accuracy: a NumPy reference on fixed weights (one value on every backend), a trained model."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.engine.evaluation import fgsm_images

MEAN, STD = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)
SHAPE, HIDDEN, CLASSES = (6, 6, 3), 16, 5


def _fixed():
    """Weights and uint8 images drawn by NumPy (the same on every backend); the labels are the
    reference's clean predictions, so the clean accuracy is 1."""
    rng = np.random.default_rng(52)
    w1 = rng.normal(0, 0.2, (int(np.prod(SHAPE)), HIDDEN))
    b1 = rng.normal(0, 0.1, HIDDEN)
    w2 = rng.normal(0, 0.5, (HIDDEN, CLASSES))
    b2 = rng.normal(0, 0.1, CLASSES)
    images = rng.integers(0, 256, (600, *SHAPE), dtype=np.uint8)
    return (w1, b1, w2, b2), images


def _reference_logits_and_gradient(weights, pixels, labels):
    """Flatten -> Dense + ReLU -> Dense on standardized pixels, float64: logits and d loss / d pixels."""
    w1, b1, w2, b2 = weights
    u = ((pixels - MEAN) / STD).reshape(len(pixels), -1)
    z1 = u @ w1 + b1
    logits = np.maximum(z1, 0) @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz2 = p - np.eye(CLASSES)[labels]
    du = ((dz2 @ w2.T) * (z1 > 0)) @ w1.T
    return logits, du.reshape(pixels.shape) / STD


def _reference_fgsm_accuracy(weights, images, labels, epsilon):
    pixels = images / 255.0
    _, gradient = _reference_logits_and_gradient(weights, pixels, labels)
    adversarial = np.clip(pixels + epsilon * np.sign(gradient), 0, 1)
    logits, _ = _reference_logits_and_gradient(weights, adversarial, labels)
    return float(np.mean(logits.argmax(axis=1) == labels))


def _keras_model(weights):
    inputs = keras.Input(SHAPE)
    x = keras.layers.Flatten()(inputs)
    x = keras.layers.Dense(HIDDEN, activation="relu", name="hidden")(x)
    model = keras.Model(inputs, keras.layers.Dense(CLASSES, name="head")(x))
    model.get_layer("hidden").set_weights([w.astype("float32") for w in weights[:2]])
    model.get_layer("head").set_weights([w.astype("float32") for w in weights[2:]])
    return model


#: The NumPy reference's robust accuracies on the fixed weights (computed once; every backend's process
#: checks its own result against them): eps = 1/255 (the LC paper's Fig. 4) and 4/255.
STORED = {1: 0.8883333333333333, 4: 0.5516666666666666}


@pytest.mark.parametrize("levels", sorted(STORED))
def test_fixed_weights_give_the_numpy_reference_on_every_backend(levels):
    weights, images = _fixed()
    labels = _reference_logits_and_gradient(weights, images / 255.0, np.zeros(len(images), int))[0].argmax(1)
    expected = _reference_fgsm_accuracy(weights, images, labels, levels / 255)
    assert expected == pytest.approx(STORED[levels], abs=1e-12)
    model = _keras_model(weights)
    normalization = {"mean": list(MEAN), "std": list(STD)}
    assert ks.fgsm_accuracy(model, (images, labels), 0.0, normalization=normalization) == 1.0
    got = ks.fgsm_accuracy(model, (images, labels), levels / 255, normalization=normalization, batch_size=256)
    assert abs(got - expected) <= 1e-3, (keras.backend.backend(), got, expected)
    # The same images as floats in [0, 1], one-hot labels and a (mean, std) pair: the same attack.
    assert (
        ks.fgsm_accuracy(
            model,
            (images / 255.0, np.eye(CLASSES)[labels]),
            levels / 255,
            normalization=(MEAN, STD),
            batch_size=100,
        )
        == got
    )
    # The adversarial images: every pixel moved by eps (or clipped at 0 or 1), never further.
    adversarial = fgsm_images(model, images[:50], labels[:50], levels / 255, normalization=normalization)
    moved = np.abs(adversarial - images[:50] / 255.0)
    assert adversarial.min() >= 0 and adversarial.max() <= 1 and moved.max() <= levels / 255 + 1e-6


def _separable_data(n, seed):
    """uint8 images of 4 classes: class-dependent mean images with noise (close classes, small margins)."""
    rng = np.random.default_rng(seed)
    means = np.random.default_rng(0).uniform(0.3, 0.7, (4, 8, 8, 3))
    labels = rng.integers(0, 4, n)
    images = np.clip(means[labels] + rng.normal(0, 0.15, (n, 8, 8, 3)), 0, 1)
    return (images * 255).round().astype(np.uint8), labels


def test_a_trained_model_is_less_accurate_under_fgsm_and_epsilon_is_in_pixel_units():
    (x, y), (x_val, y_val) = _separable_data(400, 1), _separable_data(300, 2)
    mean, std = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(4),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit((x / 255.0 - 0.5) / 0.25, y, epochs=20, batch_size=32, verbose=0)
    normalization = {"mean": list(mean), "std": list(std)}
    clean = ks.fgsm_accuracy(model, (x_val, y_val), 0, normalization=normalization)
    _, evaluated = model.evaluate((x_val / 255.0 - 0.5) / 0.25, y_val, verbose=0)
    assert clean == pytest.approx(evaluated, abs=1e-6) and clean > 0.4  # well above chance (0.25)
    robust = ks.fgsm_accuracy(model, (x_val, y_val), normalization=normalization)  # eps = 1/255
    stronger = ks.fgsm_accuracy(model, (x_val, y_val), 4 / 255, normalization=normalization)
    assert stronger < robust < clean
    # The normalization inside the model, fed [0, 1] pixels: the same eps, the same attack.
    inside = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Normalization(mean=mean, variance=np.square(std)), model]
    )
    assert ks.fgsm_accuracy(inside, (x_val, y_val)) == pytest.approx(robust, abs=2 / len(x_val))
    # A final softmax: from_logits=False gives the logits' attack.
    softmax = keras.Sequential([keras.Input((8, 8, 3)), model, keras.layers.Softmax()])
    assert ks.fgsm_accuracy(
        softmax, (x_val, y_val), normalization=normalization, from_logits=False
    ) == pytest.approx(robust, abs=2 / len(x_val))
