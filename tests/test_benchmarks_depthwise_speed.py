"""benchmarks/depthwise_speed.py's models, without timing: the stock twin of the package's ConvMixer."""

import keras
import numpy as np

from benchmarks import depthwise_speed
from keras_structinit.layers import Conv2D, DepthwiseConv2D

from conftest import once_per_suite

pytestmark = once_per_suite("the clone swaps layer configs, the same on every backend")


def test_stock_convmixer_is_the_package_model_with_stock_conv_layers():
    keras.utils.set_random_seed(0)
    package = depthwise_speed.build_convmixer("package")
    keras.utils.set_random_seed(0)
    stock = depthwise_speed.build_convmixer("stock")
    depthwise = [layer for layer in stock.layers if isinstance(layer, keras.layers.DepthwiseConv2D)]
    assert len(depthwise) == depthwise_speed.MODEL["depth"]
    assert not any(isinstance(layer, DepthwiseConv2D) for layer in stock.layers)
    assert sum(isinstance(layer, DepthwiseConv2D) for layer in package.layers) == len(depthwise)
    # stem and pointwise convs: the package's Conv2D in one, the stock class in the other
    assert sum(type(layer) is Conv2D for layer in package.layers) == len(depthwise) + 1
    assert sum(type(layer) is keras.layers.Conv2D for layer in stock.layers) == len(depthwise) + 1
    x = np.random.default_rng(0).standard_normal((2, *depthwise_speed.MODEL["input_shape"]), dtype="float32")
    stock.set_weights(package.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(stock(x)), keras.ops.convert_to_numpy(package(x)), rtol=1e-4, atol=1e-4
    )


def test_shifted_convmixer_forces_the_shifted_path_and_computes_the_same():
    keras.utils.set_random_seed(0)
    package = depthwise_speed.build_convmixer("package")
    shifted = depthwise_speed.build_convmixer("shifted")
    depthwise = [layer for layer in shifted.layers if isinstance(layer, DepthwiseConv2D)]
    assert len(depthwise) == depthwise_speed.MODEL["depth"]
    assert {layer.implementation for layer in depthwise} == {"shifted"}
    shifted.set_weights(package.get_weights())
    x = np.random.default_rng(1).standard_normal((2, *depthwise_speed.MODEL["input_shape"]), dtype="float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(shifted(x)), keras.ops.convert_to_numpy(package(x)), rtol=1e-4, atol=1e-4
    )


def test_model_layers_default_and_choices():
    assert depthwise_speed.parse_args([]).model_layers == ["package", "stock"]
    args = depthwise_speed.parse_args(["--model-layers", "package", "shifted", "stock"])
    assert args.model_layers == list(depthwise_speed.MODEL_LAYERS)
