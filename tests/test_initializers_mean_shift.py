"""MeanShift: moments of both modes against the paper's equations, seeds, errors, use in the builders."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.initializers import MeanShift, TorchDefaultUniform
from keras_structinit.mimetic import DEFAULT_B, expected_statistics, row_mean_statistics
from keras_structinit.mimetic import torch_default_variance as uniform_variance

from conftest import assert_round_trip_in_fresh_process, to_numpy

Z = 5.0  # |z| > 5 has probability ~6e-7 per check: a failure is a real mismatch


def test_constant_mode_adds_b_to_the_base_and_keeps_its_variance():
    shape = (1024, 512)
    kernel = to_numpy(MeanShift(b=0.03, seed=1)(shape))
    base_var = uniform_variance(1024)  # the default base, PyTorch's U[-1/sqrt(in), 1/sqrt(in)]
    n = kernel.size
    assert abs(kernel.mean() - 0.03) < Z * np.sqrt(base_var / n)
    # Var of the sample variance of a uniform: sigma^4 (kurtosis - 1) / n, kurtosis 9/5.
    assert abs(kernel.var() - base_var) < Z * base_var * np.sqrt(0.8 / n)
    assert np.abs(kernel - 0.03).max() <= 1 / np.sqrt(1024) + 1e-6
    # Exactly the base plus b: the default base is TorchDefaultUniform with the same int seed.
    base = to_numpy(TorchDefaultUniform(seed=1)(shape))
    np.testing.assert_allclose(kernel, base + 0.03, atol=1e-7)


def test_default_b():
    assert to_numpy(MeanShift(seed=0)((64, 64))).mean() == pytest.approx(DEFAULT_B, abs=0.01)


def test_per_input_mode_shifts_each_row_by_its_own_normal_draw():
    rows, cols, b, variance = 2048, 256, 0.02, 0.01
    base_init = TorchDefaultUniform(seed=1)
    init = MeanShift(base=base_init, b=b, mode="per_input", variance=variance, seed=2)
    kernel = to_numpy(init((rows, cols)))
    shift = kernel - to_numpy(base_init((rows, cols)))
    b_n = shift[:, 0]
    np.testing.assert_allclose(shift, np.broadcast_to(b_n[:, None], shift.shape), atol=1e-6)  # row j: b_n[j]
    base_var = uniform_variance(rows)
    # Each row mean of the Keras kernel estimates b_n[j] (the mean of cols base entries around it).
    stats = row_mean_statistics(kernel)
    assert np.abs(stats["row_means"] - b_n).max() < 6 * np.sqrt(base_var / cols)
    # b_n ~ N(b, variance): its mean and spread; the spread of the row means; the per-entry variance.
    expected = expected_statistics(base_var, b, "per_input", variance, cols)
    assert abs(b_n.mean() - b) < Z * np.sqrt(variance / rows)
    spread = Z * np.sqrt(2 / (rows - 1))  # relative standard error of a normal sample's variance
    assert b_n.var(ddof=1) == pytest.approx(variance, rel=spread)
    assert stats["row_mean_variance"] == pytest.approx(expected["row_mean_variance"], rel=spread)
    assert kernel.var() == pytest.approx(expected["entry_variance"], rel=spread)


def test_per_input_shift_of_a_1x1_conv_kernel_runs_along_its_input_axis():
    shape = (1, 1, 512, 64)
    base_init = TorchDefaultUniform(seed=3)
    kernel = to_numpy(MeanShift(base=base_init, mode="per_input", variance=0.04, seed=4)(shape))
    shift = kernel - to_numpy(base_init(shape))
    np.testing.assert_allclose(shift, np.broadcast_to(shift[..., :1], shape), atol=1e-6)
    assert shift[0, 0, :, 0].std() == pytest.approx(0.2, rel=Z * np.sqrt(0.5 / 512))
    assert to_numpy(MeanShift(mode="per_input", seed=0)((3, 3, 8, 4))).shape == (3, 3, 8, 4)


def test_the_shift_is_independent_of_the_base_it_shares_a_seed_with():
    rows = 4096
    kernel = to_numpy(MeanShift(mode="per_input", variance=0.01, seed=5)((rows, 8)))
    base = to_numpy(TorchDefaultUniform(seed=5)((rows, 8)))
    b_n = (kernel - base)[:, 0]
    for same_bits in (base.reshape(-1)[:rows], base[:, 0]):  # where a reused seed would show
        assert abs(np.corrcoef(b_n, same_bits)[0, 1]) < Z / np.sqrt(rows)


def test_seeds_follow_keras_semantics():
    shape = (32, 16)
    for mode in ("constant", "per_input"):
        init = MeanShift(mode=mode, seed=7)
        np.testing.assert_array_equal(to_numpy(init(shape)), to_numpy(init(shape)))  # int: same values
        np.testing.assert_array_equal(to_numpy(init(shape)), to_numpy(MeanShift(mode=mode, seed=7)(shape)))
        assert not np.array_equal(to_numpy(init(shape)), to_numpy(MeanShift(mode=mode, seed=8)(shape)))
        first, second = (MeanShift(mode=mode, seed=keras.random.SeedGenerator(3)) for _ in range(2))
        draws = [to_numpy(first(shape)), to_numpy(first(shape))]
        assert not np.array_equal(*draws)  # a SeedGenerator: fresh values per call, reproducibly
        np.testing.assert_array_equal(draws[0], to_numpy(second(shape)))
        np.testing.assert_array_equal(draws[1], to_numpy(second(shape)))


def test_any_keras_initializer_is_a_base_and_is_saved_in_the_config():
    init = MeanShift(base="zeros", b=0.25)
    np.testing.assert_allclose(to_numpy(init((4, 3))), 0.25)
    init = MeanShift(base=keras.initializers.RandomNormal(stddev=0.1, seed=1), mode="per_input", seed=2)
    config = init.get_config()
    assert config["base"]["class_name"] == "RandomNormal" and config["base"]["config"]["stddev"] == 0.1
    assert config["mode"] == "per_input" and config["variance"] == pytest.approx(DEFAULT_B**2)
    clone = MeanShift.from_config(config)
    np.testing.assert_array_equal(to_numpy(clone((8, 4))), to_numpy(init((8, 4))))
    assert MeanShift(seed=1).get_config() == {
        "seed": 1,
        "base": None,
        "b": DEFAULT_B,
        "mode": "constant",
        "variance": None,
    }
    assert keras.backend.standardize_dtype(MeanShift(seed=1)((4, 4), dtype="float16").dtype) == "float16"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"mode": "per_input", "variance": -1.0}, ValueError, "`variance` must be a finite number >= 0"),
        ({"mode": "per-input"}, ValueError, "`mode` must be one of"),
        ({"variance": 0.1}, ValueError, "applies to mode='per_input'"),
        ({"base": 0.5}, TypeError, "`base` must be None or a keras.Initializer"),
        ({"base": lambda shape, dtype=None: None}, TypeError, "`base`"),
        ({"base": "no_such_initializer"}, ValueError, "`base`"),
        ({"b": "big"}, TypeError, "`b`"),
        ({"seed": 1.5}, TypeError, "`seed`"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        MeanShift(**kwargs)


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="not biases"):
        MeanShift(seed=0)((16,))
    with pytest.raises(ValueError, match="floating"):
        MeanShift(seed=0)((4, 4), dtype="int32")


def _mlp_first_kernels(model, suffix):
    return [to_numpy(layer.kernel) for layer in model.layers if layer.name.endswith(suffix)]


@pytest.mark.parametrize("family", ["convnext", "convnext_isotropic", "vit"])
def test_builders_take_mean_shift_for_the_first_mlp_layer_only(family):
    init = MeanShift(b=0.5, seed=keras.random.SeedGenerator(0))  # shared by the layers: fresh draws
    if family == "vit":
        model = ks.models.vit(4, 16, 2, 2, num_classes=3, input_shape=(8, 8, 3), mlp_initializer=init)
        first, second = "_mlp_1", "_mlp_2"
    else:
        depths, dims = ((1, 1), (8, 16)) if family == "convnext" else ((2,), (8,))
        model = ks.models.convnext(
            depths,
            dims,
            kernel_size=3,
            patch_size=2,
            num_classes=3,
            input_shape=(8, 8, 3),
            mlp_initializer=init,
        )
        first, second = "_pointwise_1", "_pointwise_2"
    kernels = _mlp_first_kernels(model, first)
    assert len(kernels) == 2 and not np.array_equal(kernels[0][:8, :8], kernels[1][:8, :8])
    for kernel in kernels:  # U[-1/sqrt(in), 1/sqrt(in)] + 0.5
        assert np.abs(kernel - 0.5).max() <= 1 / np.sqrt(kernel.shape[0]) + 1e-6
    for kernel in _mlp_first_kernels(model, second):
        assert abs(kernel.mean()) < 0.05  # the second layers keep their own init


def test_model_built_with_mean_shift_round_trips_in_a_fresh_process(tmp_path):
    base = keras.initializers.RandomUniform(-0.1, 0.1, seed=3)
    init = MeanShift(base=base, b=0.1, mode="per_input", variance=0.02, seed=4)
    model = ks.models.convnext_isotropic(
        8, 1, kernel_size=3, num_classes=3, input_shape=(8, 8, 3), mlp_initializer=init
    )
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        checks=f"""
        init = model.get_layer("block_1_pointwise_1").kernel_initializer
        assert type(init).__name__ == "MeanShift", type(init)
        assert init.get_config() == {init.get_config()!r}, init.get_config()
        assert type(init.base).__name__ == "RandomUniform" and init.base.seed == 3
    """,
    )
