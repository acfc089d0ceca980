"""reinitialize: a fresh head after pre-training (Maennel et al., App. A.4), drawn from each layer's
own initializers."""

import keras
import numpy as np
import pytest

import keras_structinit as ks

from conftest import to_numpy


def model():
    inputs = keras.Input((6, 6, 3))
    x = keras.layers.Conv2D(4, 3, name="conv")(inputs)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(64, kernel_initializer=keras.initializers.GlorotUniform(seed=3), name="dense")(x)
    return keras.Model(inputs, keras.layers.Dense(5, bias_initializer="ones", name="head")(x))


def test_the_named_layers_are_drawn_again_from_their_initializers():
    m = model()
    for v in m.weights:  # "pre-trained": every value moved away from its init
        v.assign(to_numpy(v) + 0.5)
    before = {v.path: to_numpy(v) for v in m.weights}
    paths = ks.reinitialize(m, layers=["dense", "head", "bn"], seed=0)
    assert paths == [
        "bn/gamma",
        "bn/beta",
        "bn/moving_mean",
        "bn/moving_variance",
        "dense/kernel",
        "dense/bias",
        "head/kernel",
        "head/bias",
    ]
    now = {v.path: to_numpy(v) for v in m.weights}
    np.testing.assert_array_equal(now["conv/kernel"], before["conv/kernel"])
    np.testing.assert_array_equal(now["bn/moving_variance"], 1.0)
    np.testing.assert_array_equal(now["head/bias"], 1.0)
    bound = np.sqrt(6 / (now["dense/kernel"].shape[0] + 64))  # Glorot uniform
    assert np.abs(now["dense/kernel"]).max() <= bound
    assert np.std(now["dense/kernel"]) == pytest.approx(bound / np.sqrt(3), rel=0.1)
    # A fresh draw, not the values the layer was built with (its initializer's own seed is 3).
    built = to_numpy(model().get_layer("dense").kernel)
    assert not np.allclose(now["dense/kernel"], built)
    again = model()
    ks.reinitialize(again, layers=["dense", "head", "bn"], seed=0)
    np.testing.assert_array_equal(to_numpy(again.get_layer("dense").kernel), now["dense/kernel"])


class _Scale(keras.layers.Layer):
    """A layer that keeps no initializer for its two variables."""

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="beta")

    def call(self, x):
        return x * self.gamma + self.beta


def test_errors_name_the_layer_or_variable():
    m = model()
    with pytest.raises(ValueError, match="`layers` includes 'flatten'"):
        ks.reinitialize(m, layers=[m.layers[3]])
    with pytest.raises(ValueError, match="not a layer of the model"):
        ks.reinitialize(m, layers=["nope"])
    vit = ks.models.build_model("vit-tiny-8/2", 10, (8, 8, 3))
    assert len(ks.reinitialize(vit, seed=0)) == len(vit.weights)  # the package's layers keep theirs
    inputs = keras.Input((3,))
    custom = keras.Model(inputs, _Scale(name="custom")(keras.layers.Dense(3, name="dense")(inputs)))
    with pytest.raises(ValueError, match="'custom/gamma' of layer 'custom' .* no `gamma_initializer`"):
        ks.reinitialize(custom, layers=["dense", "custom"])
    with pytest.raises(TypeError, match="`model`"):
        ks.reinitialize("model.keras", layers=["head"])
