"""LCResNet-D-WxE: He et al.'s CIFAR ResNet with LC blocks; Table 1's parameter counts."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import lc
from keras_structinit.layers import LCConv2D, ZeroPadShortcut
from keras_structinit.lc import find_pointwise_kernels

from conftest import to_numpy


def test_architecture_every_spatial_conv_is_an_lc_block():
    model = ks.models.lcresnet(8, 4, expansion=3)
    assert model.name == "lcresnet_8_4x3" and tuple(model.output_shape) == (None, 10)
    convs = [layer for layer in model.layers if isinstance(layer, LCConv2D)]
    assert [c.name for c in convs] == [
        "stem_conv",
        *[f"stage_{s}_block_1_conv_{i}" for s in (1, 2, 3) for i in (1, 2)],
    ]
    assert [(c.filters, c.strides[0], c.expansion) for c in convs] == [
        (4, 1, 3),
        (4, 1, 3),
        (4, 1, 3),
        (8, 2, 3),
        (8, 1, 3),
        (16, 2, 3),
        (16, 1, 3),
    ]
    assert not any(type(layer) is keras.layers.Conv2D for layer in model.layers)
    assert all(not c.spatial_kernel.trainable and c.pointwise_kernel.trainable for c in convs)
    assert [layer.name for layer in model.layers if isinstance(layer, ZeroPadShortcut)] == [
        "stage_2_block_1_shortcut",
        "stage_3_block_1_shortcut",
    ]
    bn = model.get_layer("stem_bn")
    assert bn.momentum == pytest.approx(0.9) and bn.epsilon == pytest.approx(1e-5)
    assert model.get_layer("head").units == 10


def test_option_a_shortcut_subsamples_and_pads_with_zeros():
    x = np.random.default_rng(0).standard_normal((2, 5, 6, 4)).astype("float32")
    y = to_numpy(ZeroPadShortcut(9, strides=2)(x))
    assert y.shape == (2, 3, 3, 9)
    np.testing.assert_array_equal(y[..., 2:6], x[:, ::2, ::2, :])
    assert not y[..., :2].any() and not y[..., 6:].any()
    with pytest.raises(ValueError, match="filters"):
        ZeroPadShortcut(2)(keras.Input((4, 4, 4)))


@pytest.mark.parametrize("kernel_size", [3, 5, 7, 9])
def test_kernel_sizes_and_trainability(kernel_size):
    model = ks.models.lcresnet(8, 2, 2, kernel_size=kernel_size, frozen=False, input_shape=(16, 16, 3))
    kernel = model.get_layer("stem_conv").spatial_kernel
    assert tuple(kernel.shape) == (kernel_size, kernel_size, 3, 4) and kernel.trainable
    assert tuple(model(np.zeros((1, 16, 16, 3), "float32")).shape) == (1, 10)


def test_option_b_adds_projections():
    model = ks.models.lcresnet(8, 4, shortcut="B")
    projection = model.get_layer("stage_2_block_1_shortcut")
    assert isinstance(projection, keras.layers.Conv2D) and projection.kernel_size == (1, 1)
    assert isinstance(model.get_layer("stage_2_block_1_shortcut_bn"), keras.layers.BatchNormalization)
    want = lc.lcresnet_parameter_counts(8, 4, 1, shortcut="B")
    assert lc.parameter_counts(model)["total"] == want["total"]


def test_small_table_counts_w16():
    # The counts for W = 16, k = 3 (frozen).
    zeros = {"spatial_initializer": "zeros", "pointwise_initializer": "zeros"}  # counts do not need values
    for expansion, total, learnable in ((1, 302_234, 34_538), (8, 2_403_690, 262_122)):
        counts = lc.parameter_counts(ks.models.lcresnet(20, 16, expansion, **zeros))
        assert (counts["total"], counts["learnable"]) == (total, learnable)


def test_table_1_parameter_column():
    """LCResNet-20-16x128 (38M parameters, 154 MB): each row counted on a built model.

    Zeros initializers avoid sampling 38M values (counts do not depend on values).
    """
    zeros = {"spatial_initializer": "zeros", "pointwise_initializer": "zeros"}
    model = ks.models.lcresnet(20, 16, 128, frozen=False, **zeros)
    assert lc.parameter_counts(model)["total"] == lc.parameter_counts(model)["learnable"] == 38_428_650
    ks.freeze_spatial(model, which="all_spatial")  # frozen random spatial filters
    assert lc.parameter_counts(model)["learnable"] == 4_163_562
    del model
    shared = ks.models.lcresnet(20, 16, 128, sharing="global", **zeros)
    assert lc.parameter_counts(shared)["total"] == 8_882_154
    del shared
    # Derived rows: recycled sharing (1/16 of the largest kernel), then 70% of the 1x1 weights pruned.
    model = ks.models.lcresnet(20, 16, 128, sharing="recycled")
    assert lc.parameter_counts(model)["total"] == 4_458_474
    for variable in model.trainable_weights:  # as after training: no parameter exactly zero
        values = to_numpy(variable)  # (BatchNorm betas start at 0, a float32 uniform draw may be 0)
        if not values.all():
            variable.assign(np.where(values == 0, 0.1, values).astype("float32"))
    lc.prune_pointwise(model, ratio=0.7)
    assert lc.pointwise_sparsity(model)["zeros"] == 2_913_075
    assert lc.parameter_counts(model)["nonzero"] == 1_545_399
    assert len(find_pointwise_kernels(model)) == 19


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"depth": 21}, ValueError, "6n"),
        ({"depth": 2}, ValueError, "6n"),
        ({"width": 0}, ValueError, "width"),
        ({"expansion": 0}, ValueError, "expansion"),
        ({"kernel_size": 4}, ValueError, "odd"),
        ({"shortcut": "C"}, ValueError, "shortcut"),
        ({"frozen": "yes"}, TypeError, "frozen"),
        ({"sharing": "local"}, ValueError, "sharing"),
        ({"sharing": "global", "frozen": False}, ValueError, "frozen"),
        ({"recycle_fraction": 0.0}, ValueError, "recycle_fraction"),
        ({"spatial_initializer": 1.5}, TypeError, "spatial_initializer"),
        ({"pointwise_initializer": "nope"}, ValueError, "pointwise_initializer"),
        ({"input_shape": (32, 32)}, ValueError, "input_shape"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ks.models.lcresnet(**kwargs)
