"""covariance/bank_io.py: a FilterCovariance bank's ``.npz`` file and config dict (save, load,
get_config, from_config): round trips, files of format version 1 written before, bad files."""

import json
import os
import zipfile

import numpy as np
import pytest

from keras_structinit.covariance import FilterCovariance, bank, bank_io

from conftest import once_per_suite


def random_bank(num_layers=3, k=5, seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    n = k * k
    means, covs = [], []
    for _ in range(num_layers):
        x = rng.normal(size=(n, 3 * n))
        covs.append(x @ x.T / (3 * n))
        means.append(rng.normal(size=n))
    return FilterCovariance(means, covs, k, **kwargs)


def test_save_load_round_trip(tmp_path):
    bank = random_bank(num_layers=3, layer_paths=["a/x", "b/y", "c/z"], source_name="net")
    written = bank.save(tmp_path / "bank")  # ".npz" is appended
    assert written.endswith("bank.npz")
    assert sorted(os.listdir(tmp_path)) == ["bank.npz"]  # no temporary file left
    for path in (written, tmp_path / "bank"):
        loaded = FilterCovariance.load(path)
        assert len(loaded) == 3
        assert loaded.kernel_size == bank.kernel_size
        assert loaded.depth_fractions == bank.depth_fractions
        assert loaded.layer_paths == bank.layer_paths
        assert loaded.source_name == "net"
        for a, b in zip(bank.means + bank.covariances, loaded.means + loaded.covariances, strict=True):
            np.testing.assert_array_equal(a, b)
    assert "num_layers=3" in repr(loaded)
    # An existing file is replaced only when asked (".npz" appended before the check).
    other = random_bank(num_layers=1)
    with pytest.raises(ValueError, match=r"`path` .*bank.npz' already exists; pass overwrite=True"):
        other.save(tmp_path / "bank")
    assert len(FilterCovariance.load(written)) == 3
    assert len(FilterCovariance.load(other.save(tmp_path / "bank", overwrite=True))) == 1


def test_load_bad_files(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not an npz file")
    with pytest.raises(ValueError, match="is not a FilterCovariance bank") as info:
        FilterCovariance.load(garbage)
    assert "pickle" not in str(info.value)  # not NumPy's allow_pickle advice
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(ValueError, match=r"notes\.txt' is not a FilterCovariance bank"):
        FilterCovariance.load(notes)
    truncated = tmp_path / "truncated.npz"
    data = open(random_bank().save(tmp_path / "good.npz"), "rb").read()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        FilterCovariance.load(truncated)
    missing = tmp_path / "missing.npz"
    np.savez(missing, means=np.zeros((1, 9)))
    with pytest.raises(ValueError, match="missing"):
        FilterCovariance.load(missing)
    nan_file = tmp_path / "nan.npz"
    with zipfile.ZipFile(tmp_path / "good.npz") as zf:
        assert sorted(zf.namelist()) == ["covariances.npy", "means.npy", "metadata.npy"]
    good = np.load(tmp_path / "good.npz")
    covs = good["covariances"].copy()
    covs[2, 0, 0] = np.nan
    np.savez(nan_file, means=good["means"], covariances=covs, metadata=good["metadata"])
    good.close()
    with pytest.raises(ValueError, match="Layer 2"):
        FilterCovariance.load(nan_file)
    with pytest.raises(FileNotFoundError):
        FilterCovariance.load(tmp_path / "nowhere.npz")


def test_patch_size_round_trips_through_save_and_config(tmp_path):
    for patch_size in (1, 4, None):
        bank = random_bank(num_layers=2, patch_size=patch_size, source_name="net")
        assert FilterCovariance.load(bank.save(tmp_path / f"bank_{patch_size}")).patch_size == patch_size
        config = bank.get_config()
        assert config["patch_size"] == patch_size
        assert FilterCovariance.from_config(config).patch_size == patch_size


def test_banks_without_patch_size_still_load(tmp_path):
    # Files and configs written before the patch size was stored.
    bank = random_bank(num_layers=2, patch_size=2)
    config = bank.get_config()
    del config["patch_size"]
    assert FilterCovariance.from_config(config).patch_size is None
    with np.load(bank.save(tmp_path / "new.npz")) as data:
        metadata = json.loads(str(data["metadata"][()]))
        del metadata["patch_size"]
        np.savez(
            tmp_path / "old.npz",
            means=data["means"],
            covariances=data["covariances"],
            metadata=np.array(json.dumps(metadata)),
        )
    old = FilterCovariance.load(tmp_path / "old.npz")
    assert old.patch_size is None and len(old) == 2
    metadata["patch_size"] = "two"
    with np.load(tmp_path / "old.npz") as data:
        np.savez(
            tmp_path / "bad.npz",
            means=data["means"],
            covariances=data["covariances"],
            metadata=np.array(json.dumps(metadata)),
        )
    with pytest.raises(ValueError, match="patch size"):
        FilterCovariance.load(tmp_path / "bad.npz")


# A bank file of format version 1 as FilterCovariance.save writes it, spelled out: files written
# by earlier versions of the package must keep loading.
VERSION_1_METADATA = (
    '{"format_version": 1, "kernel_size": [3, 3], "depth_fractions": [0.0, 1.0], '
    '"layer_paths": ["a/dw", "b/dw"], "source_name": "net", "patch_size": 2}'
)


@once_per_suite("the bank file is NumPy")
def test_a_version_1_file_loads_and_saving_writes_the_same_layout(tmp_path):
    means = np.arange(18.0).reshape(2, 9)
    covariances = np.stack([np.eye(9), 2.0 * np.eye(9)])
    np.savez(tmp_path / "v1.npz", means=means, covariances=covariances, metadata=np.array(VERSION_1_METADATA))
    loaded = FilterCovariance.load(tmp_path / "v1.npz")
    assert (loaded.kernel_size, loaded.depth_fractions) == ((3, 3), (0.0, 1.0))
    assert (loaded.layer_paths, loaded.source_name, loaded.patch_size) == (["a/dw", "b/dw"], "net", 2)
    np.testing.assert_array_equal(np.stack(loaded.means), means)
    np.testing.assert_array_equal(np.stack(loaded.covariances), covariances)
    written = loaded.save(tmp_path / "again")
    with zipfile.ZipFile(written) as zf:
        assert sorted(zf.namelist()) == ["covariances.npy", "means.npy", "metadata.npy"]
    with np.load(written, allow_pickle=False) as data:
        assert json.loads(str(data["metadata"][()])) == json.loads(VERSION_1_METADATA)
        for key, expected in (("means", means), ("covariances", covariances)):
            assert data[key].dtype == np.float64
            np.testing.assert_array_equal(data[key], expected)
    assert bank.FORMAT_VERSION == bank_io.FORMAT_VERSION == 1  # still importable from bank
    assert bank_io.load(written).keys() == {
        "means",
        "covariances",
        "kernel_size",
        "depth_fractions",
        "layer_paths",
        "source_name",
        "patch_size",
    }


@once_per_suite("the bank file is NumPy")
@pytest.mark.parametrize(
    "change, match",
    [
        (lambda m: m.update(format_version=2), "format version 2"),
        (lambda m: m.update(format_version=0), "format version 0"),
        (lambda m: m.update(format_version="1"), "format version '1'"),
        (lambda m: m.pop("kernel_size"), "invalid FilterCovariance metadata"),
        (lambda m: m.update(kernel_size=3), "invalid kernel size"),
    ],
)
def test_load_refuses_bad_metadata(tmp_path, change, match):
    metadata = json.loads(VERSION_1_METADATA)
    change(metadata)
    np.savez(
        tmp_path / "bad.npz",
        means=np.zeros((2, 9)),
        covariances=np.stack([np.eye(9)] * 2),
        metadata=np.array(json.dumps(metadata)),
    )
    with pytest.raises(ValueError, match=match):
        FilterCovariance.load(tmp_path / "bad.npz")


@once_per_suite("the bank file is NumPy")
def test_load_refuses_arrays_of_the_wrong_rank(tmp_path):
    np.savez(
        tmp_path / "flat.npz",
        means=np.zeros(9),
        covariances=np.stack([np.eye(9)]),
        metadata=np.array(VERSION_1_METADATA),
    )
    with pytest.raises(ValueError, match=r"must be \(L, n\)"):
        FilterCovariance.load(tmp_path / "flat.npz")


@once_per_suite("the config is NumPy")
def test_config_is_json_and_exact():
    original = random_bank(num_layers=2, layer_paths=["a", "b"], source_name="net", patch_size=4)
    config = json.loads(json.dumps(original.get_config()))
    assert config == bank_io.to_config(original._fields())
    restored = FilterCovariance.from_config(config)
    pairs = zip(original.means + original.covariances, restored.means + restored.covariances, strict=True)
    for a, b in pairs:
        np.testing.assert_array_equal(a, b)  # bit for bit: base64 of float64
    assert (restored.layer_paths, restored.source_name, restored.patch_size) == (["a", "b"], "net", 4)
    with pytest.raises(TypeError, match="must be a dict"):
        FilterCovariance.from_config([config])
    with pytest.raises(ValueError, match=r"missing \['covariances'\]"):
        FilterCovariance.from_config({k: v for k, v in config.items() if k != "covariances"})
    with pytest.raises(ValueError, match="`means` in the FilterCovariance config is not an encoded array"):
        FilterCovariance.from_config(dict(config, means={"shape": [2, 25], "float64_base64": "%%"}))
