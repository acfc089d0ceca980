"""benchmarks/depthwise_speed.py's models, without timing: the stock twin of the package's ConvMixer;
and a tiny timed run: its rows record their memory (issue 62)."""

import keras
import numpy as np

from benchmarks import depthwise_speed
from keras_structinit.layers import Conv2D, DepthwiseConv2D

from conftest import once_per_suite

CLONE = "the clone swaps layer configs, the same on every backend"


@once_per_suite(CLONE)
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


@once_per_suite(CLONE)
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


@once_per_suite(CLONE)
def test_model_layers_default_and_choices():
    assert depthwise_speed.parse_args([]).model_layers == ["package", "stock"]
    args = depthwise_speed.parse_args(["--model-layers", "package", "shifted", "stock"])
    assert args.model_layers == list(depthwise_speed.MODEL_LAYERS)


def test_a_tiny_run_records_the_memory_of_every_measurement(monkeypatch):
    monkeypatch.setattr(depthwise_speed, "OP_SHAPE", {"batch": 2, "height": 8, "width": 8, "channels": 4})
    tiny = {**depthwise_speed.MODEL, "dim": 8, "depth": 1, "batch": 4, "input_shape": (8, 8, 3)}
    monkeypatch.setattr(depthwise_speed, "MODEL", tiny)
    args = depthwise_speed.parse_args(
        [
            "--quick",
            "--kernel-sizes",
            "3",
            "--repeats",
            "1",
            "--model-repeats",
            "1",
            "--model-layers",
            "package",
        ]
    )
    backend, entry = depthwise_speed.run_backend(args)
    records = [
        row[mode]["memory"] for row in entry["op"]["results"] for mode in depthwise_speed.MODES if mode in row
    ]
    records += [row[mode]["memory"] for row in entry["model"]["results"] for mode in ("thawed", "frozen")]
    assert len(records) > 3
    for memory in records:  # on CPU: the process' peak RSS and the growth over the measurement's calls
        assert memory["kind"] == "cpu_rss" and memory["device_peak_bytes"] is None
        assert memory["rss_peak_bytes"] > 0 and memory["rss_growth_bytes"] >= 0
    text = depthwise_speed.render_markdown({"benchmark": "depthwise_speed", "results": {backend: entry}})
    assert "Peak RSS GB (+ step growth): forward / fwd+bwd / fwd+bwd frozen" in text
    assert "Peak RSS GB (+ step growth): thawed / frozen" in text and "`ru_maxrss`" in text
    assert f"{records[-1]['rss_peak_bytes'] / 1e9:.2f} (+" in text
