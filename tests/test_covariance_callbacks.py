"""RecordFilterCovariance: saving filter banks during and after training."""

import os
import pathlib

import numpy as np
import pytest

from keras_structinit.callbacks import RecordFilterCovariance
from keras_structinit.covariance import FilterCovariance
from keras_structinit.models.convmixer_model import convmixer


def tiny_model():
    model = convmixer(8, 2, kernel_size=5, num_classes=3, input_shape=(8, 8, 3))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def tiny_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 8, 8, 3)).astype("float32")
    y = rng.integers(0, 3, size=(16,))
    return x, y


def assert_banks_close(a, b):
    assert len(a) == len(b)
    assert a.kernel_size == b.kernel_size
    for ma, mb in zip(a.means, b.means, strict=True):
        np.testing.assert_allclose(ma, mb, rtol=1e-6, atol=1e-7)
    for ca, cb in zip(a.covariances, b.covariances, strict=True):
        np.testing.assert_allclose(ca, cb, rtol=1e-6, atol=1e-7)


def test_saves_bank_at_train_end(tmp_path):
    model = tiny_model()
    x, y = tiny_data()
    path = tmp_path / "bank.npz"
    callback = RecordFilterCovariance(path)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[callback])
    assert callback.saved_paths == [str(path)]
    loaded = FilterCovariance.load(path)
    assert_banks_close(loaded, FilterCovariance.from_model(model))


def test_every_n_epochs_with_placeholder(tmp_path):
    model = tiny_model()
    x, y = tiny_data()
    pattern = str(tmp_path / "bank_{epoch:03d}.npz")
    callback = RecordFilterCovariance(pattern, every_n_epochs=2)
    model.fit(x, y, epochs=5, batch_size=8, verbose=0, callbacks=[callback])
    expected = [str(tmp_path / f"bank_{e:03d}.npz") for e in (2, 4, 5)]
    assert callback.saved_paths == expected
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(p) for p in expected]
    assert_banks_close(FilterCovariance.load(expected[-1]), FilterCovariance.from_model(model))


def test_every_n_epochs_without_placeholder_overwrites(tmp_path):
    model = tiny_model()
    x, y = tiny_data()
    path = tmp_path / "bank"  # .npz is appended on save
    callback = RecordFilterCovariance(path, every_n_epochs=1)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[callback])
    assert callback.saved_paths == [str(path) + ".npz"] * 3
    assert os.listdir(tmp_path) == ["bank.npz"]
    assert_banks_close(FilterCovariance.load(path), FilterCovariance.from_model(model))


def test_a_file_from_before_the_run_is_replaced_only_with_overwrite(tmp_path):
    model = tiny_model()
    x, y = tiny_data()
    path = tmp_path / "bank.npz"
    path.write_bytes(b"an earlier run's bank")
    with pytest.raises(ValueError, match=r"`path` .*bank.npz' already exists; pass overwrite=True"):
        model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[RecordFilterCovariance(path)])
    assert path.read_bytes() == b"an earlier run's bank"
    callback = RecordFilterCovariance(path, overwrite=True)
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[callback])
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[callback])  # its own file: replaced
    assert callback.saved_paths == [str(path)] * 2
    assert_banks_close(FilterCovariance.load(path), FilterCovariance.from_model(model))
    pattern = str(tmp_path / "b_{epoch}.npz")
    (tmp_path / "b_1.npz").write_bytes(b"old")
    with pytest.raises(ValueError, match="b_1.npz' already exists"):
        model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[RecordFilterCovariance(pattern)])
    assert (tmp_path / "b_1.npz").read_bytes() == b"old"


def test_get_config_round_trip(tmp_path):
    callback = RecordFilterCovariance(pathlib.Path(tmp_path) / "b.npz", every_n_epochs=3)
    config = callback.get_config()
    assert config == {"path": str(tmp_path / "b.npz"), "every_n_epochs": 3, "overwrite": False}
    assert RecordFilterCovariance(**config).get_config() == config


@pytest.mark.parametrize("path", [None, 3, ["a.npz"]])
def test_bad_path_type(path):
    with pytest.raises(TypeError, match="`path`"):
        RecordFilterCovariance(path)


def test_empty_path():
    with pytest.raises(ValueError, match="`path`"):
        RecordFilterCovariance("")


@pytest.mark.parametrize("value", [1.5, "2", True])
def test_bad_every_n_epochs_type(value):
    with pytest.raises(TypeError, match="`every_n_epochs`"):
        RecordFilterCovariance("b.npz", every_n_epochs=value)


@pytest.mark.parametrize("value", [0, -1])
def test_bad_every_n_epochs_value(value):
    with pytest.raises(ValueError, match="`every_n_epochs`"):
        RecordFilterCovariance("b.npz", every_n_epochs=value)


def test_recorded_bank_carries_the_patch_size(tmp_path):
    model = convmixer(8, 2, kernel_size=3, patch_size=4, num_classes=3, input_shape=(8, 8, 3))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = tiny_data()
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[RecordFilterCovariance(tmp_path / "bank")])
    assert FilterCovariance.load(tmp_path / "bank.npz").patch_size == 4
