"""LCConv2D: fold equivalence, PyTorch default inits, frozen spatial kernels through fit and reload."""

import math

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.layers import LCConv2D, SharedKernelBank

from conftest import assert_round_trip_in_fresh_process, to_numpy


def relative_error(got, want):
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.mark.parametrize("kernel_size", [3, 5, 7, 9])
@pytest.mark.parametrize("strides", [1, 2])
def test_fold_gives_the_same_outputs(kernel_size, strides):
    rng = np.random.default_rng(kernel_size + strides)
    x = rng.standard_normal((2, 13, 12, 3)).astype("float32")
    layer = LCConv2D(4, kernel_size, expansion=3, strides=strides, padding="same")
    y = to_numpy(layer(x))
    kernel = layer.fold()
    assert kernel.shape == (kernel_size, kernel_size, 3, 4) and kernel.dtype == np.float64
    folded = to_numpy(keras.ops.conv(x, kernel.astype("float32"), strides=strides, padding="same"))
    assert y.shape == (2, -(-13 // strides), -(-12 // strides), 4)
    assert relative_error(folded, y) < 1e-5


def test_fold_with_valid_padding_and_rectangular_kernel():
    x = np.random.default_rng(0).standard_normal((2, 9, 10, 2)).astype("float32")
    layer = LCConv2D(3, (5, 3), expansion=2, strides=(2, 1), padding="valid")
    y = to_numpy(layer(x))
    folded = to_numpy(keras.ops.conv(x, layer.fold().astype("float32"), strides=(2, 1), padding="valid"))
    assert y.shape == (2, 3, 8, 3) == tuple(layer.compute_output_shape((2, 9, 10, 2)))
    assert relative_error(folded, y) < 1e-5


def test_defaults_are_pytorch_uniform_frozen_and_bias_free():
    layer = LCConv2D(16, 3, expansion=4)
    layer.build((None, 8, 8, 8))
    assert sorted(v.path for v in layer.weights) == [
        f"{layer.name}/pointwise_kernel",
        f"{layer.name}/spatial_kernel",
    ]
    assert not layer.spatial_kernel.trainable and layer.pointwise_kernel.trainable
    assert tuple(layer.spatial_kernel.shape) == (3, 3, 8, 64)
    assert tuple(layer.pointwise_kernel.shape) == (1, 1, 64, 16)
    for kernel, fan_in in ((layer.spatial_kernel, 8 * 9), (layer.pointwise_kernel, 64)):
        w, bound = np.abs(to_numpy(kernel)), 1 / math.sqrt(fan_in)
        assert w.max() <= bound and w.max() > 0.95 * bound and w.mean() == pytest.approx(bound / 2, rel=0.1)
    learnable = LCConv2D(4, 3, frozen=False, use_bias=True)
    learnable.build((None, 8, 8, 2))
    assert all(v.trainable for v in learnable.weights) and tuple(learnable.bias.shape) == (4,)
    assert np.abs(to_numpy(learnable.bias)).max() <= 1 / math.sqrt(4)


def test_frozen_follows_the_variable_into_the_config():
    layer = LCConv2D(4, 3, frozen=False)
    assert layer.get_config()["frozen"] is False
    inputs = keras.Input((8, 8, 2))
    model = keras.Model(inputs, layer(inputs))
    assert ks.freeze_spatial(model, which="all_spatial") == [layer.spatial_kernel.path]
    assert layer.get_config()["frozen"] is True
    rebuilt = LCConv2D.from_config(layer.get_config())
    rebuilt.build((None, 8, 8, 2))
    assert not rebuilt.spatial_kernel.trainable and rebuilt.pointwise_kernel.trainable


def lc_model(bank):
    """An LC block with its own frozen kernel, then two slicing ``bank``."""
    inputs = keras.Input((8, 8, 3))
    x = LCConv2D(4, 3, expansion=2, name="lc_own")(inputs)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = LCConv2D(4, 3, expansion=2, strides=2, bank=bank, name="lc_bank_1")(x)
    x = LCConv2D(6, 3, expansion=2, bank=bank, name="lc_bank_2")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))


FROZEN = ["lc_own/spatial_kernel", "shared_kernel_bank/bank"]
TRAINED = ["lc_own/pointwise_kernel", "lc_bank_1/pointwise_kernel", "lc_bank_2/pointwise_kernel"]


def test_frozen_kernels_and_bank_stay_bit_identical_through_fit_reload_and_fit(tmp_path):
    keras.utils.set_random_seed(0)
    bank = SharedKernelBank.for_shapes([(3, 3, 4, 8), (3, 3, 4, 12)], seed=1)
    model = lc_model(bank)
    model.compile(
        optimizer=keras.optimizers.AdamW(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 8, 8, 3)).astype("float32"), rng.integers(0, 3, 16)
    before = {v.path: to_numpy(v) for v in model.weights}
    assert sorted(v.path for v in model.non_trainable_weights if "moving" not in v.path) == sorted(FROZEN)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    after = {v.path: to_numpy(v) for v in model.weights}
    for path in FROZEN:
        np.testing.assert_array_equal(after[path], before[path])
    for path in TRAINED:
        assert not np.array_equal(after[path], before[path]), path
    np.savez(tmp_path / "fit.npz", y=y, **{p.replace("/", "__"): before[p] for p in FROZEN + TRAINED})
    checks = f"""
        data = np.load({str(tmp_path / "fit.npz")!r})
        own, b1, b2 = (model.get_layer(n) for n in ("lc_own", "lc_bank_1", "lc_bank_2"))
        assert not own.spatial_kernel.trainable and b1.bank is b2.bank
        assert [v.path for v in model.weights if v.path.endswith("/bank")] == ["shared_kernel_bank/bank"]
        model.fit(io["x"], data["y"], batch_size=8, epochs=1, verbose=0)
        values = {{v.path: keras.ops.convert_to_numpy(v) for v in model.weights}}
        for path in {FROZEN!r}:
            np.testing.assert_array_equal(values[path], data[path.replace("/", "__")])
        for path in {TRAINED!r}:
            assert not np.array_equal(values[path], data[path.replace("/", "__")]), path
    """
    assert_round_trip_in_fresh_process(model, x, tmp_path, checks)


def test_output_shape_with_unknown_sizes():
    layer = LCConv2D(5, 3, expansion=2, strides=2)
    inputs = keras.Input((None, None, 3))
    assert tuple(layer(inputs).shape) == (None, None, None, 5)
    assert tuple(to_numpy(layer(np.zeros((1, 7, 6, 3), "float32"))).shape) == (1, 4, 3, 5)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"expansion": 0}, ValueError, "expansion"),
        ({"expansion": 1.5}, TypeError, "expansion"),
        ({"filters": 0}, ValueError, "filters"),
        ({"kernel_size": (3, 3, 3)}, ValueError, "kernel_size"),
        ({"kernel_size": "3"}, TypeError, "kernel_size"),
        ({"strides": 0}, ValueError, "strides"),
        ({"padding": "causal"}, ValueError, "padding"),
        ({"padding": "SAME"}, ValueError, "padding"),
        ({"frozen": 1}, TypeError, "frozen"),
        ({"use_bias": None}, TypeError, "use_bias"),
        ({"bank": "global"}, TypeError, "bank"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    arguments = {"filters": 4, "kernel_size": 3, **kwargs}
    with pytest.raises(error, match=match):
        LCConv2D(**arguments)


def test_inputs_must_be_images_and_bank_seeds_uint32():
    with pytest.raises(ValueError, match=r"`input_shape` must have rank 4"):
        LCConv2D(4, 3)(np.ones((1, 3, 2), "float32"))
    with pytest.raises(ValueError, match="`seed`"):
        SharedKernelBank(9, seed=-1)


def test_valid_padding_needs_an_input_at_least_the_kernel():
    with pytest.raises(ValueError, match="padding"):
        LCConv2D(4, 5, padding="valid")(keras.Input((4, 8, 3)))
    LCConv2D(4, 5, padding="same")(keras.Input((4, 8, 3)))  # 'same' pads
