"""TorchDefaultUniform: PyTorch's default conv/linear initialization."""

import zipfile

import keras
import numpy as np
import pytest

from keras_structinit.initializers import TorchDefaultUniform


def test_torch_default_uniform():
    init = TorchDefaultUniform(seed=0)
    w = keras.ops.convert_to_numpy(init((3, 3, 16, 32)))
    bound = 1 / np.sqrt(3 * 3 * 16)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert np.std(w) == pytest.approx(bound / np.sqrt(3), rel=0.05)
    dw = keras.ops.convert_to_numpy(TorchDefaultUniform(depthwise=True, seed=0)((7, 7, 64, 1)))
    assert np.abs(dw).max() <= 1 / 7 and np.abs(dw).max() > 0.98 / 7
    b = keras.ops.convert_to_numpy(TorchDefaultUniform(fan_in=4, seed=0)((1000,)))
    assert np.abs(b).max() <= 0.5 and np.abs(b).max() > 0.49
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(init))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(clone((3, 3, 16, 32))), w)
    with pytest.raises(ValueError, match="shape"):
        TorchDefaultUniform()((10,))
    with pytest.raises(ValueError, match="fan_in"):
        TorchDefaultUniform(fan_in=0)
    with pytest.raises(TypeError, match="depthwise"):
        TorchDefaultUniform(depthwise="yes")


@pytest.mark.parametrize(
    "shape, error",
    [
        ((0, 3), ValueError),
        ((3, 3, 4, 0), ValueError),
        ((3, 0, 4, 2), ValueError),
        ((3.5, 2), TypeError),
        ("abc", TypeError),
    ],
)
def test_shapes_with_a_zero_size_or_non_int_axis_are_refused(shape, error):
    # (0, 3) divided by a zero fan-in; (3, 3, 4, 0) returned an empty kernel.
    with pytest.raises(error, match=r"`shape` must be a non-empty list or tuple of positive ints"):
        TorchDefaultUniform()(shape)
    with pytest.raises(error, match="`shape`"):
        TorchDefaultUniform(fan_in=4)(shape)


def _mixed_model():
    """Every layer kind PyTorch's default init covers, and some it leaves alone."""
    inputs = keras.Input((8, 8, 4))
    x = keras.layers.Conv2D(6, 3, groups=2, name="grouped")(inputs)  # fan-in (4/2)*9 = 18
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.DepthwiseConv2D(5, depth_multiplier=2, padding="same", name="dw")(x)  # 25
    x = keras.layers.SeparableConv2D(8, 3, name="sep")(x)  # 9, then 12
    x = keras.layers.Conv2DTranspose(4, 2, name="up")(x)  # torch: (cout)*k*k = 16
    tokens = keras.layers.Reshape((-1, 4))(x)
    tokens = keras.layers.MultiHeadAttention(2, 3, name="mha")(tokens, tokens)  # q/k/v: 4, output: 6
    tokens = keras.layers.LayerNormalization(name="ln")(tokens)
    outputs = keras.layers.Dense(5, name="head")(keras.layers.GlobalAveragePooling1D()(tokens))
    return keras.Model(inputs, outputs)


FAN_INS = {
    "grouped/kernel": 18,
    "grouped/bias": 18,
    "dw/kernel": 25,
    "dw/bias": 25,
    "sep/depthwise_kernel": 9,
    "sep/pointwise_kernel": 12,
    "sep/bias": 12,
    "up/kernel": 16,
    "up/bias": 16,
    "head/kernel": 4,
    "head/bias": 4,
}


def test_apply_torch_default_draws_every_conv_and_dense_variable_with_its_torch_fan_in():
    from keras_structinit.initializers import apply_torch_default

    model = _mixed_model()
    norms = {
        v.path: keras.ops.convert_to_numpy(v) for v in model.weights if v.path.startswith(("bn/", "ln/"))
    }
    paths = apply_torch_default(model, seed=0)
    by_path = {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}
    assert set(FAN_INS) <= set(paths) and not set(norms) & set(paths)
    mha = [p for p in paths if p.startswith("mha/")]
    assert len(mha) == 8  # query, key, value, output: kernel and bias each
    expected = {**FAN_INS, **{p: (6 if "attention_output" in p else 4) for p in mha}}
    assert set(paths) == set(expected)
    for path, fan_in in expected.items():
        bound, values = 1 / np.sqrt(fan_in), by_path[path]
        assert np.abs(values).max() <= bound, path
        if values.size >= 64:  # U[-b, b]: std b / sqrt(3), range nearly reached
            assert np.std(values) == pytest.approx(bound / np.sqrt(3), rel=0.2), path
            assert np.abs(values).max() > 0.8 * bound, path
    for path, values in norms.items():  # normalizations keep their values
        np.testing.assert_array_equal(by_path[path], values)
    again = _mixed_model()
    assert apply_torch_default(again, seed=0) == paths
    for a, b in zip(model.weights, again.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))


def test_apply_torch_default_layers_and_errors():
    from keras_structinit.initializers import apply_torch_default

    model = _mixed_model()
    before = {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}
    assert apply_torch_default(model, layers=["head"], seed=1) == ["head/kernel", "head/bias"]
    changed = [
        v.path for v in model.weights if not np.array_equal(before[v.path], keras.ops.convert_to_numpy(v))
    ]
    assert changed == ["head/kernel", "head/bias"]
    with pytest.raises(ValueError, match="`layers` includes 'bn', which has no conv or Dense"):
        apply_torch_default(model, layers=["bn"])
    norm_only = keras.Sequential([keras.Input((4,)), keras.layers.LayerNormalization()])
    with pytest.raises(ValueError, match="has no conv or Dense layer"):
        apply_torch_default(norm_only)
    with pytest.raises(TypeError, match="`model`"):
        apply_torch_default("model.keras")


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="compares with torch.nn's own fan-in")
def test_fan_ins_are_pytorchs():
    import torch

    fan_in = torch.nn.init._calculate_fan_in_and_fan_out
    torch_layers = {
        "grouped/kernel": torch.nn.Conv2d(4, 6, 3, groups=2),
        "dw/kernel": torch.nn.Conv2d(6, 12, 5, groups=6),
        "sep/pointwise_kernel": torch.nn.Conv2d(12, 8, 1),
        "up/kernel": torch.nn.ConvTranspose2d(8, 4, 2),
        "head/kernel": torch.nn.Linear(4, 5),
    }
    for path, layer in torch_layers.items():
        assert fan_in(layer.weight)[0] == FAN_INS[path], path


def test_a_keras_file_saved_before_the_baseline_folder_still_loads(tmp_path):
    """``TorchDefaultUniform`` moved from ``keras_structinit.torch_default`` to ``.baseline``; files
    saved before name the old module, and load through the registered name, which did not change."""
    assert keras.saving.get_registered_name(TorchDefaultUniform) == "keras_structinit>TorchDefaultUniform"
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, kernel_initializer=TorchDefaultUniform(fan_in=4, seed=2))]
    )
    model.save(tmp_path / "new.keras")
    with zipfile.ZipFile(tmp_path / "new.keras") as new, zipfile.ZipFile(tmp_path / "old.keras", "w") as old:
        for item in new.infolist():
            data = new.read(item)
            if item.filename == "config.json":
                moved = b'"keras_structinit.baseline.torch_default"'
                assert moved in data
                data = data.replace(moved, b'"keras_structinit.torch_default"')
            old.writestr(item, data)
    loaded = keras.saving.load_model(tmp_path / "old.keras").layers[0].kernel_initializer
    assert type(loaded) is TorchDefaultUniform and loaded.fan_in == 4
