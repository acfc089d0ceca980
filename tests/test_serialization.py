"""Every registered class of the package: config round trip and ``.keras`` round trip.

A new serializable class must add an example below; the first test fails
until it does.
"""

import keras
import numpy as np
import pytest

import keras_structinit  # noqa: F401  (registers the package's objects with Keras)
from keras_structinit.covariance import FilterCovariance, conv_covariance

from conftest import to_numpy


def bank():
    covs = [conv_covariance(3, 0.4), conv_covariance(3, 1.5)]
    return FilterCovariance([np.zeros(9), np.full(9, 0.1)], covs, 3)


def initializer_examples():
    from keras_structinit.alignment import random_basis
    from keras_structinit.initializers import (
        ConvCovariance,
        CovarianceTransfer,
        DataAligned,
        TorchDefaultUniform,
    )
    from keras_structinit.mimetic import MeanShift

    return {
        "ConvCovariance": ConvCovariance(
            depth_fraction=0.5, preset="cifar-p1", psd="clip", scale=0.5, seed=3
        ),
        "CovarianceTransfer": CovarianceTransfer(bank(), depth_fraction=0.25, use_mean=True, seed=4),
        "TorchDefaultUniform": TorchDefaultUniform(depthwise=True, seed=5),
        "MeanShift": MeanShift(TorchDefaultUniform(seed=6), b=0.1, mode="per_input", variance=0.01, seed=7),
        "DataAligned": DataAligned(
            np.linspace(2.0, 0.1, 36),
            random_basis(36, seed=0),
            n_components=4,
            f=0.5,
            mode="sample",
            scale=0.5,
            seed=8,
        ),
    }


def layer_examples():
    from keras_structinit import layers
    from keras_structinit.selection.distill import FeatureProjector

    return {
        "Conv2D": (layers.Conv2D(5, 2, strides=2, implementation="matmul"), (2, 6, 6, 4)),
        "DepthwiseConv2D": (layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2), (2, 6, 6, 4)),
        "GroupedConv2D": (layers.GroupedConv2D(4, 3, groups=4, padding="same"), (2, 6, 6, 4)),
        "MaxPooling2D": (layers.MaxPooling2D(3, strides=2, padding="symmetric"), (2, 6, 6, 4)),
        "LayerScale": (layers.LayerScale(0.5), (2, 6, 6, 4)),
        "StochasticDepth": (layers.StochasticDepth(0.3, seed=1), (2, 6, 6, 4)),
        "ClassToken": (layers.ClassToken(), (2, 5, 4)),
        "PositionEmbedding": (layers.PositionEmbedding(), (2, 5, 4)),
        "FeatureProjector": (FeatureProjector(6), (2, 4)),
        "LCConv2D": (
            layers.LCConv2D(
                3,
                3,
                expansion=2,
                strides=2,
                padding="symmetric",
                frozen=False,
                use_bias=True,
                pointwise_regularizer=keras.regularizers.L1(1e-4),
            ),
            (2, 6, 6, 4),
        ),
        "ZeroPadShortcut": (layers.ZeroPadShortcut(7, strides=2), (2, 6, 6, 4)),
        "ScalarBiasDense": (layers.ScalarBiasDense(5, activation="gelu", scalar=0.3), (2, 3, 4)),
    }


def shared_object_examples():
    """Objects several layers hold (never called): ``{name: (object, make_model, attribute)}``."""
    from keras_structinit import layers

    def bank_model(bank):
        inputs = keras.Input((6, 6, 4))
        x = layers.LCConv2D(4, 3, expansion=2, bank=bank, name="first")(inputs)
        return keras.Model(inputs, layers.LCConv2D(3, 3, bank=bank, name="second")(x))

    return {"SharedKernelBank": (layers.SharedKernelBank(9 * 4 * 8, seed=2), bank_model, "bank")}


def schedule_examples():
    from keras_structinit.recipes import PiecewiseLinearSchedule, TriangularSchedule

    return {
        "PiecewiseLinearSchedule": PiecewiseLinearSchedule(100, [0.0, 0.5, 1.0], [0.0, 1.0, 0.1]),
        "TriangularSchedule": TriangularSchedule(0.01, 100),
    }


def optimizer_examples():
    from keras_structinit.recipes import TorchSGD, TriangularSchedule

    return {"TorchSGD": TorchSGD(TriangularSchedule(0.01, 100), momentum=0.8, nesterov=False, l2=0.02)}


def registered_names():
    return sorted(
        name.split(">", 1)[1]
        for name in keras.saving.get_custom_objects()
        if name.startswith("keras_structinit>")
    )


def test_every_registered_class_has_an_example():
    examples = {
        **initializer_examples(),
        **layer_examples(),
        **schedule_examples(),
        **optimizer_examples(),
        **shared_object_examples(),
    }
    assert registered_names() == sorted(examples)


@pytest.mark.parametrize("name", sorted(initializer_examples()))
def test_initializer_round_trips(name, tmp_path):
    init = initializer_examples()[name]
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(init))
    assert type(clone) is type(init) and clone.get_config() == init.get_config()
    shape = (3, 3, 4, 2)
    np.testing.assert_array_equal(to_numpy(clone(shape)), to_numpy(init(shape)))
    layer = keras.layers.DepthwiseConv2D(3, depthwise_initializer=init)
    model = keras.Sequential([keras.Input((6, 6, 4)), layer])
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras").layers[0].depthwise_initializer
    assert type(loaded) is type(init) and loaded.get_config() == init.get_config()


@pytest.mark.parametrize("name", sorted(layer_examples()))
def test_layer_round_trips(name, tmp_path):
    layer, shape = layer_examples()[name]
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    inputs = keras.Input(shape[1:])
    model = keras.Model(inputs, layer(inputs))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert type(loaded.layers[-1]) is type(layer)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(shared_object_examples()))
def test_shared_object_round_trips(name, tmp_path):
    obj, make_model, attribute = shared_object_examples()[name]
    clone = type(obj).from_config(obj.get_config())
    assert clone.get_config() == obj.get_config()
    model = make_model(obj)
    x = np.random.default_rng(0).standard_normal((2, 6, 6, 4)).astype("float32")
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    first, second = (getattr(loaded.get_layer(n), attribute) for n in ("first", "second"))
    assert type(first) is type(obj) and first is second and first.get_config() == obj.get_config()
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(schedule_examples()))
def test_schedule_round_trips(name):
    schedule = schedule_examples()[name]
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert clone.get_config() == schedule.get_config()
    steps = [0, 13, 50, 77, 100]
    np.testing.assert_allclose([float(clone(s)) for s in steps], [float(schedule(s)) for s in steps])


@pytest.mark.parametrize("name", sorted(optimizer_examples()))
def test_optimizer_round_trips(name, tmp_path):
    optimizer = optimizer_examples()[name]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(np.ones((4, 3)), np.zeros((4, 2)), epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras").optimizer
    assert type(loaded) is type(optimizer) and loaded.get_config() == optimizer.get_config()
