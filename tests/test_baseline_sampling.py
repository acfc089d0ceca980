"""baseline.sampling: the whole-model forms' NumPy draws, one per variable, seeded by path (issue 77.4)."""

import math

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.baseline.sampling import int_seed, truncated_normal, uniform, variable_rngs


def _model():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(16, 3, name="stem")(inputs)
    x = keras.layers.DepthwiseConv2D(3, name="spatial")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(10, name="head")(x))


def test_torch_default_is_the_numpy_uniform_of_each_path():
    model = _model()
    paths = ks.apply_torch_default(model, seed=11)
    fan_ins = {"stem": 27, "spatial": 9, "head": 16}
    for path in paths:
        variable = next(v for v in model.weights if v.path == path)
        (rng,) = variable_rngs(11, model, [variable])
        bound = 1 / math.sqrt(fan_ins[path.split("/")[0]])
        expected = uniform(rng, tuple(variable.shape), bound).astype("float32")
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), expected, err_msg=path)


def test_torch_uniform_draws_the_depthwise_fan_in():
    model = _model()
    assert ks.apply_torch_uniform(model, seed=2) == ["spatial/kernel"]
    (rng,) = variable_rngs(2, model, [model.get_layer("spatial").kernel])
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.get_layer("spatial").kernel),
        uniform(rng, (3, 3, 16, 1), 1 / 3).astype("float32"),
    )


def test_a_second_build_draws_the_same_values_whatever_its_names():
    """Keras names a second build's layers anew (conv2d_1): the draws follow the place in the model."""

    def build():
        inputs = keras.Input((6, 6, 2))
        x = keras.layers.Conv2D(4, 3)(inputs)
        return keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Flatten()(x)))

    a, b = build(), build()
    assert a.layers[1].name != b.layers[1].name
    for spec in ("torch-default", "trunc-normal"):
        ks.initialize(a, spec, seed=9)
        ks.initialize(b, spec, seed=9)
        for va, vb in zip(a.weights, b.weights, strict=True):
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(va), keras.ops.convert_to_numpy(vb))


def test_seeds():
    model = _model()
    stem, head = model.get_layer("stem").kernel, model.get_layer("head").kernel
    a, b = variable_rngs(5, model, [stem, head])
    (again,) = variable_rngs(5, model, [stem])
    assert a.random() == again.random() and a.random() != b.random()
    generator = keras.random.SeedGenerator(3)
    assert int_seed(generator) != int_seed(generator)  # a generator: fresh seeds per call
    assert int_seed(keras.random.SeedGenerator(3)) == int_seed(keras.random.SeedGenerator(3))
    assert 0 <= int_seed(None) < 2**32
    with pytest.raises(TypeError, match="`seed` must be None, an int"):
        int_seed(1.5)
    with pytest.raises(ValueError, match="`seed` must be None, an int"):
        variable_rngs(-1, model, [stem])


def test_truncated_normal_bounds_both_proposals():
    rng = np.random.default_rng(0)
    for std in (0.5, 10.0):
        z = truncated_normal(rng, (4000,), std, bound=2.0)
        assert z.shape == (4000,) and np.abs(z).max() <= 2.0
