"""The one model walker and the shared signature of every function that acts on a model."""

import inspect

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.engine.initializer_base import check_seed
from keras_structinit.engine.walker import find_kernels, iter_layers

# Every public function that changes a model: apply_X(model, *, layers=None, seed=None, ...).
MODEL_FUNCTIONS = [
    ks.apply_conv_covariance,
    ks.apply_covariance_transfer,
    ks.apply_filter_transfer,
    ks.apply_torch_uniform,
    ks.apply_mean_shift,
    ks.freeze_spatial,
]


def small_dw_model(name="inner"):
    inputs = keras.Input((8, 8, 4))
    x = keras.layers.Conv2D(4, 3, padding="same", name=f"{name}_conv3")(inputs)
    x = keras.layers.DepthwiseConv2D(5, padding="same", name=f"{name}_dw")(x)
    x = keras.layers.Conv2D(4, 1, name=f"{name}_pointwise")(x)
    return keras.Model(inputs, x, name=name)


@pytest.mark.parametrize("fn", MODEL_FUNCTIONS, ids=lambda f: f.__name__)
def test_shared_signature(fn):
    params = list(inspect.signature(fn).parameters.values())
    assert params[0].name == "model" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    names = [p.name for p in params]
    assert "layers" in names and inspect.signature(fn).parameters["layers"].default is None
    if fn is not ks.freeze_spatial:  # the only one that draws nothing
        assert inspect.signature(fn).parameters["seed"].default is None


def test_nested_models_are_searched_in_order():
    inner = small_dw_model()
    inputs = keras.Input((8, 8, 4))
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="outer_dw")(inputs)
    outer = keras.Model(inputs, inner(x))
    assert [layer.name for layer, _ in find_kernels(outer)] == ["outer_dw", "inner_dw"]
    assert [layer.name for layer, _ in find_kernels(outer, which="all_spatial")] == [
        "outer_dw",
        "inner_conv3",
        "inner_dw",
    ]
    paths = ks.apply_torch_uniform(outer, which="all_spatial", seed=0)
    assert paths == [k.path for _, k in find_kernels(outer, which="all_spatial")]
    assert all(isinstance(p, str) for p in paths)


def test_shared_layer_is_visited_once():
    shared = keras.layers.DepthwiseConv2D(3, padding="same", name="shared_dw")
    inputs = keras.Input((8, 8, 2))
    model = keras.Model(inputs, shared(shared(inputs)))
    assert sum(layer is shared for layer in iter_layers(model)) == 1
    assert ks.apply_conv_covariance(model, seed=0) == [shared.kernel.path]
    assert ks.freeze_spatial(model) == [shared.kernel.path]


def test_no_matching_layer_is_a_clear_error():
    dense = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="fc")])
    for fn in (ks.apply_conv_covariance, ks.apply_torch_uniform, ks.freeze_spatial):
        with pytest.raises(ValueError, match=r"has no spatial depthwise convolutions"):
            fn(dense)
    with pytest.raises(ValueError, match=r"has no spatial convolutions"):
        ks.freeze_spatial(dense, which="all_spatial")
    with pytest.raises(ValueError, match="which"):
        find_kernels(small_dw_model(), which="dense")
    with pytest.raises(ValueError, match="not a spatial depthwise convolution of the model"):
        find_kernels(small_dw_model(), layers=["inner_pointwise"])
    with pytest.raises(TypeError, match="`model`"):
        ks.apply_conv_covariance("model")
    unbuilt = keras.Sequential([keras.layers.DepthwiseConv2D(3)])
    with pytest.raises(ValueError, match="must be built"):
        ks.apply_conv_covariance(unbuilt)


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_int_seeds_outside_uint32_are_refused_on_every_backend(seed):
    # Keras on JAX holds a seed as a uint32 (OverflowError there); TF and torch took any int.
    with pytest.raises(ValueError, match=r"`seed` must be None, an int in \[0, 2\*\*32 - 1\]"):
        check_seed(seed)
    with pytest.raises(ValueError, match="`seed`"):
        ks.apply_torch_uniform(small_dw_model(), seed=seed)
    assert check_seed(0) == 0 and check_seed(2**32 - 1) == 2**32 - 1
    with pytest.raises(TypeError, match="`seed`"):
        check_seed(1.0)


def test_extra_positional_arguments_are_refused():
    with pytest.raises(TypeError, match="positional"):
        ks.freeze_spatial(small_dw_model(), False, None, "extra")


def test_keras_applications_convnext_tiny():
    model = keras.applications.ConvNeXtTiny(weights=None, include_top=False, input_shape=(32, 32, 3))
    depthwise = find_kernels(model)
    assert len(depthwise) == 3 + 3 + 9 + 3
    assert all(tuple(k.shape[:3]) == (7, 7, 1) for _, k in depthwise)
    spatial = find_kernels(model, which="all_spatial")
    assert len(spatial) == len(depthwise) + 1 + 3  # 4x4 stem and three 2x2 downsampling convs
    before = {v.path: np.array(keras.ops.convert_to_numpy(v)) for v in model.weights}
    paths = ks.apply_conv_covariance(model, preset="imagenet-thawed", seed=0)
    assert paths == [k.path for _, k in depthwise]
    for variable in model.weights:  # only the returned kernels changed
        after = np.array(keras.ops.convert_to_numpy(variable))
        assert np.array_equal(after, before[variable.path]) != (variable.path in paths)


def test_keras_hub_backbone_built_from_config():
    keras_hub = pytest.importorskip("keras_hub")
    backbone = keras_hub.models.ResNetBackbone(
        input_conv_filters=[64],
        input_conv_kernel_sizes=[3],
        stackwise_num_filters=[64, 64],
        stackwise_num_blocks=[1, 1],
        stackwise_num_strides=[1, 2],
        block_type="basic_block",
        image_shape=(16, 16, 3),
    )
    convs = [layer for layer in iter_layers(backbone) if isinstance(layer, keras.layers.Conv2D)]
    spatial = [layer for layer in convs if layer.kernel.shape[0] > 1]
    assert spatial and len(spatial) < len(convs)  # 1x1 shortcut convs are left out
    assert [layer for layer, _ in find_kernels(backbone, which="all_spatial")] == spatial
    paths = ks.freeze_spatial(backbone, which="all_spatial")
    assert paths == [layer.kernel.path for layer in spatial]
    assert not any(layer.kernel.trainable for layer in spatial)
    with pytest.raises(ValueError, match="no spatial depthwise"):
        find_kernels(backbone)
