"""SharedKernelBank: slices against the NumPy reference, one variable per model, stored once."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import lc
from keras_structinit.layers import LCConv2D, SharedKernelBank

from conftest import assert_round_trip_in_process, to_numpy


def shared_model(bank, widths=(4, 6, 8), expansion=2, name="shared"):
    inputs = keras.Input((6, 6, 3))
    x = inputs
    for i, width in enumerate(widths):
        x = LCConv2D(width, 3, expansion=expansion, bank=bank, name=f"lc_{i}")(x)
    return keras.Model(inputs, x, name=name)


@pytest.mark.parametrize("recycle", [False, True])
def test_kernels_are_scaled_slices_of_the_bank(recycle):
    shapes = [(3, 3, 3, 8), (3, 3, 4, 12), (3, 3, 6, 16)]
    bank = SharedKernelBank.for_shapes(shapes, fraction=0.25 if recycle else None, seed=3)
    assert bank.size == (9 * 24 if recycle else 9 * 6 * 16) and bank.recycle is recycle
    model = shared_model(bank)
    values = to_numpy(bank.values)
    assert values.min() >= -1 and values.max() <= 1 and values.std() > 0.5
    for i, shape in enumerate(shapes):
        layer = model.get_layer(f"lc_{i}")
        want = lc.bank_kernel(values, shape, recycle) / np.sqrt(shape[0] * shape[1] * shape[2])
        np.testing.assert_allclose(to_numpy(layer.effective_spatial_kernel()), want, rtol=1e-6, atol=1e-7)
        assert layer.spatial_kernel is None
        np.testing.assert_allclose(
            layer.fold(), lc.fold_kernels(want, to_numpy(layer.pointwise_kernel)), rtol=1e-6, atol=1e-7
        )


def test_one_bank_variable_per_model_and_fold_equivalence():
    bank = SharedKernelBank(9 * 6 * 16)
    model = shared_model(bank)
    assert [v.path for v in model.weights if v.path.endswith("/bank")] == ["shared_kernel_bank/bank"]
    assert [v.path for v in model.non_trainable_weights] == ["shared_kernel_bank/bank"]
    assert lc.parameter_counts(model)["total"] == 9 * 6 * 16 + sum(w * 2 * w for w in (4, 6, 8))
    x = np.random.default_rng(0).standard_normal((2, 6, 6, 3)).astype("float32")
    folded = lc.fold_model(model)
    assert not any(isinstance(layer, LCConv2D) for layer in folded.layers)
    np.testing.assert_allclose(to_numpy(folded(x)), to_numpy(model(x)), rtol=1e-5, atol=1e-5)


def test_round_trip_keeps_sharing_and_stores_the_bank_once(tmp_path):
    size = 9 * 8 * 16 * 24  # 27,648 values (108 kB), much more than the other weights
    x = np.random.default_rng(1).standard_normal((2, 6, 6, 3)).astype("float32")
    one = shared_model(SharedKernelBank(size), widths=(8,), name="one")
    four = shared_model(SharedKernelBank(size), widths=(8, 8, 8, 8), name="four")
    loaded = assert_round_trip_in_process(four, x, tmp_path)
    banks = {id(loaded.get_layer(f"lc_{i}").bank) for i in range(4)}
    assert len(banks) == 1
    np.testing.assert_array_equal(
        to_numpy(loaded.get_layer("lc_3").bank.values), to_numpy(four.get_layer("lc_0").bank.values)
    )
    one.save(tmp_path / "one.keras")
    extra = (tmp_path / "four.keras").stat().st_size - (tmp_path / "one.keras").stat().st_size
    bank_bytes = 4 * size
    # Three more layers add their small pointwise kernels (3 * 8 * 16 floats) and config, not three banks.
    assert extra < bank_bytes / 4, (extra, bank_bytes)


def test_bank_too_small_and_other_errors():
    with pytest.raises(ValueError, match="recycle=True"):
        shared_model(SharedKernelBank(9 * 3 * 8 - 1))
    with pytest.raises(ValueError, match="multiple of 9"):
        shared_model(SharedKernelBank(100, recycle=True))
    shared_model(SharedKernelBank(9 * 3, recycle=True))  # three whole filters, repeated
    with pytest.raises(ValueError, match="frozen"):
        LCConv2D(4, 3, frozen=False, bank=SharedKernelBank(9))
    with pytest.raises(ValueError, match="size"):
        SharedKernelBank(0)
    with pytest.raises(TypeError, match="recycle"):
        SharedKernelBank(9, recycle="yes")
    with pytest.raises(TypeError, match="seed"):
        SharedKernelBank(9, seed=1.5)


def test_seeded_bank_is_reproducible_and_not_trained_by_the_walker():
    a, b = SharedKernelBank(50, seed=7), SharedKernelBank(50, seed=7)
    np.testing.assert_array_equal(to_numpy(a.values), to_numpy(b.values))
    model = shared_model(SharedKernelBank(9 * 6 * 16))
    # Sliced kernels are not variables of the LC layers: freeze_spatial has nothing to find.
    with pytest.raises(ValueError, match="no spatial convolutions"):
        ks.freeze_spatial(model, which="all_spatial")
