"""Frozen filters stay frozen across fit, save and reload, with the optimizer state."""

import json
import os
import warnings
import zipfile

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.engine.freezing import load_frozen_model

from conftest import assert_round_trip_in_fresh_process, to_numpy


def data(n=16, shape=(8, 8, 3), classes=3):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, *shape)).astype("float32"), rng.integers(0, classes, n)


def compiled(model):
    model.compile(optimizer=keras.optimizers.AdamW(1e-2), loss="sparse_categorical_crossentropy")
    return model


def values(model):
    return {v.path: np.array(to_numpy(v)) for v in model.variables}


def assert_training_keeps_frozen(model, frozen, x, y):
    before = values(model)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    after = values(model)
    for path in before:
        if path in frozen:
            np.testing.assert_array_equal(after[path], before[path])
    changed = [p for v in model.trainable_variables if not np.array_equal(after[(p := v.path)], before[p])]
    assert changed, "nothing trained"


def save_and_reload(model, tmp_path, frozen=None):
    path = tmp_path / "model.keras"
    model.save(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(path) if frozen is None else load_frozen_model(path, frozen)
    assert not [w for w in caught if "Skipping variable loading for optimizer" in str(w.message)]
    return loaded


def test_package_layers_save_their_frozen_kernels(tmp_path):
    x, y = data()
    model = compiled(ks.models.convmixer(8, 2, kernel_size=3, num_classes=3, input_shape=(8, 8, 3)))
    frozen = ks.freeze_spatial(model)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    loaded = save_and_reload(model, tmp_path)
    by_path = {v.path: v for v in loaded.variables}
    assert [p for p in frozen if by_path[p].trainable] == []
    assert len(loaded.optimizer.variables) == len(model.optimizer.variables)
    for a, b in zip(model.optimizer.variables, loaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    assert_training_keeps_frozen(loaded, frozen, x, y)


def stock_model():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(6, 3, padding="same", name="conv3")(inputs)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    x = keras.layers.Conv2D(6, 1, name="pointwise")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax", name="head")(x))


def test_stock_layers_reload_frozen_with_load_frozen_model(tmp_path):
    x, y = data()
    model = compiled(stock_model())
    frozen = ks.freeze_spatial(model, which="all_spatial", include_bias=True)
    assert frozen == ["conv3/kernel", "conv3/bias", "dw/kernel", "dw/bias"]
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    loaded = save_and_reload(model, tmp_path, frozen=frozen)
    assert sorted(v.path for v in loaded.variables if not v.trainable) == sorted(frozen)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), rtol=1e-6)
    for a, b in zip(model.optimizer.variables, loaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    assert_training_keeps_frozen(loaded, frozen, x, y)


def test_the_frozen_paths_travel_in_the_keras_file(tmp_path):
    """Issue 33: load_frozen_model(path) needs nothing but the file; the record survives a second save."""
    from keras_structinit.engine.freezing import FROZEN_RECORD, frozen_paths_in_file

    x, y = data()
    model = compiled(stock_model())
    frozen = ks.freeze_spatial(model, which="all_spatial")
    assert frozen == ["conv3/kernel", "dw/kernel"]
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    assert frozen_paths_in_file(tmp_path / "m.keras") == frozen
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer"):
        plain = keras.saving.load_model(tmp_path / "m.keras")  # plain Keras: loads, ignores the record
    assert all(v.trainable for v in plain.trainable_variables) and len(plain.trainable_variables) == 8
    loaded = load_frozen_model(tmp_path / "m.keras")
    assert [v.path for v in loaded.variables if not v.trainable] == frozen
    assert_training_keeps_frozen(loaded, frozen, x, y)
    loaded.save(tmp_path / "again.keras")
    assert frozen_paths_in_file(tmp_path / "again.keras") == frozen
    # Unfrozen before saving: no longer recorded.
    model.get_layer("dw").kernel.trainable = True
    model.save(tmp_path / "thawed.keras")
    assert frozen_paths_in_file(tmp_path / "thawed.keras") == ["conv3/kernel"]
    keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]).save(tmp_path / "none.keras")
    assert frozen_paths_in_file(tmp_path / "none.keras") == []
    assert FROZEN_RECORD == "keras_structinit_frozen.json"


def test_load_frozen_model_in_a_fresh_process(tmp_path):
    x, y = data()
    model = compiled(stock_model())
    ks.freeze_spatial(model, which="all_spatial")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    checks = f"""
    from keras_structinit.engine.freezing import load_frozen_model
    frozen = load_frozen_model({str(tmp_path / "model.keras")!r})
    assert sorted(v.path for v in frozen.variables if not v.trainable) == ["conv3/kernel", "dw/kernel"]
    before = keras.ops.convert_to_numpy(frozen.get_layer("dw").kernel).copy()
    frozen.fit(io["x"], np.arange(len(io["x"])) % 3, batch_size=8, epochs=1, verbose=0)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(frozen.get_layer("dw").kernel), before)
    """
    assert_round_trip_in_fresh_process(model, x, tmp_path, checks=checks)


def test_freeze_refuses_a_trained_model_and_bad_arguments(tmp_path):
    x, y = data()
    model = compiled(stock_model())
    with pytest.raises(ValueError, match="which"):
        ks.freeze_spatial(model, which="pointwise")
    with pytest.raises(TypeError, match="include_bias"):
        ks.freeze_spatial(model, include_bias=1)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="already been trained"):
        ks.freeze_spatial(model)
    model.save(tmp_path / "m.keras")
    with pytest.raises(ValueError, match="does not have"):
        load_frozen_model(tmp_path / "m.keras", ["nope/kernel"])
    with pytest.raises(TypeError, match="frozen"):
        load_frozen_model(tmp_path / "m.keras", "dw/kernel")
    with pytest.raises(ValueError, match=".keras"):
        load_frozen_model(tmp_path / "m.h5", [])


def test_all_spatial_freezes_every_kxk_conv_of_an_off_the_shelf_network():
    # The LC-blocks paper's Fig. 3 experiment: every k x k conv frozen, 1x1 convs and the rest trained.
    model = ks.models.resnet18_gn(widths=(8, 8, 16, 16), groups=4, input_shape=(16, 16, 3))
    frozen = ks.freeze_spatial(model, which="all_spatial")
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    spatial = [c.kernel.path for c in convs if c.kernel_size != (1, 1)]
    assert frozen == spatial and len(frozen) == 17  # stem + 16 block convs
    pointwise = {c.name for c in convs if c.kernel_size == (1, 1)}
    assert pointwise == {f"stage_{s}_block_1_shortcut" for s in (2, 3, 4)}
    assert {v.path for v in model.trainable_weights} == {v.path for v in model.weights} - set(frozen)


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="a file saved on torch, loaded on another backend"
)
def test_a_torch_saved_adamw_loads_and_trains_on_this_backend(tmp_path):
    """Issue 37: Keras saves AdamW by its torch class, which then fails on JAX/TF at the first step."""
    import subprocess
    import sys
    import textwrap

    saved = tmp_path / "adamw_torch.keras"
    code = textwrap.dedent(f"""
        import keras, numpy as np
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        model.compile(optimizer=keras.optimizers.AdamW(1e-2), loss="mse")
        model.fit(np.ones((8, 4)), np.arange(24.0).reshape(8, 3), verbose=0)
        model.save({str(saved)!r})
        np.savez({str(tmp_path / "state.npz")!r}, *[np.asarray(v.detach()) if hasattr(v, "detach") else
                 np.asarray(v) for v in (w.value for w in model.optimizer.variables)])
        """)
    env = dict(os.environ, KERAS_BACKEND="torch")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with zipfile.ZipFile(saved) as archive:  # how Keras records it: the torch class
        assert "torch" in json.loads(archive.read("config.json"))["compile_config"]["optimizer"]["module"]
    model = load_frozen_model(str(saved))
    state = np.load(tmp_path / "state.npz")
    for variable, want in zip(model.optimizer.variables, state.values(), strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), want)  # its state, loaded
    model.fit(np.ones((8, 4)), np.arange(24.0).reshape(8, 3), verbose=0)
    assert int(model.optimizer.iterations) == 2


def _with_record(source, target, write):
    """``source`` (a .keras zip) copied to ``target`` with its frozen record written by ``write(f)``."""
    import zipfile

    from keras_structinit.engine.freezing import FROZEN_RECORD

    with (
        zipfile.ZipFile(source) as old,
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as new,
    ):
        for info in old.infolist():
            if not info.filename.endswith(FROZEN_RECORD):
                new.writestr(info, old.read(info))
        with new.open(f"assets/{FROZEN_RECORD}", "w", force_zip64=True) as f:
            write(f)
    return target


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="reading a zip: the same on every backend")
def test_a_frozen_record_that_is_too_large_or_malformed_is_refused_naming_the_file(tmp_path):
    import time
    import tracemalloc

    from keras_structinit.engine.freezing import frozen_paths_in_file

    model = compiled(stock_model())
    ks.freeze_spatial(model, which="all_spatial")
    model.save(tmp_path / "m.keras")

    def bomb(f):  # 400 MB of JSON whitespace: about 0.6 MB deflated
        block = b" " * (1 << 20)
        for _ in range(400):
            f.write(block)

    path = _with_record(tmp_path / "m.keras", tmp_path / "bomb.keras", bomb)
    assert path.stat().st_size < 3 << 20
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=r"bomb\.keras.*a zip bomb, not read"):  # the archive's guard
            load_frozen_model(path)
        with pytest.raises(ValueError, match=r"bomb\.keras.*larger than"):  # the record's own
            frozen_paths_in_file(path)
        seconds, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 2.0 and peak < 100 << 20, (seconds, peak)
    for name, text, message in [
        ("garbage", b"{not json", "not JSON"),
        ("version", b'{"format_version": 99, "frozen": []}', "format_version 99"),
        ("string", b'{"format_version": 1, "frozen": "abc"}', "a list of variable paths"),
        ("numbers", b'{"format_version": 1, "frozen": [1, 2]}', "a list of variable paths"),
        ("list", b'["conv3/kernel"]', "format_version None"),
    ]:
        path = _with_record(tmp_path / "m.keras", tmp_path / f"{name}.keras", lambda f, t=text: f.write(t))
        with pytest.raises(ValueError, match=rf"{name}\.keras.*{message}") as info:
            frozen_paths_in_file(path)
        assert "\n" not in str(info.value)


def _nested_sources():
    """Models whose variable paths nest: a user model holding auto-named sub-models,
    keras.applications ConvNeXt, and KerasHub's MiT and DINOV2 built from config."""
    inner = keras.Sequential(
        [keras.layers.Conv2D(4, 3, padding="same"), keras.layers.DepthwiseConv2D(3, padding="same")]
    )
    inputs = keras.Input((16, 16, 3))
    hidden = keras.Sequential([inner, keras.layers.Conv2D(4, 3)])(inputs)
    user = keras.Model(inputs, keras.layers.Dense(3)(keras.layers.GlobalAveragePooling2D()(hidden)))
    sources = {
        "nested user model": user,
        "keras.applications ConvNeXtTiny": keras.applications.ConvNeXtTiny(
            weights=None, input_shape=(32, 32, 3), classes=3
        ),
    }
    try:
        import keras_hub
    except ImportError:
        return sources
    sources["KerasHub MiT"] = keras_hub.models.MiTBackbone(
        layerwise_depths=[1, 1],
        num_layers=2,
        layerwise_num_heads=[1, 2],
        layerwise_sr_ratios=[2, 1],
        max_drop_path_rate=0.0,
        layerwise_patch_sizes=[7, 3],
        layerwise_strides=[4, 2],
        hidden_dims=[8, 16],
        image_shape=(32, 32, 3),
    )
    sources["KerasHub DINOV2"] = keras_hub.models.DINOV2Backbone(
        patch_size=4,
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        image_shape=(16, 16, 3),
        position_embedding_shape=(16, 16, 3),
    )
    return sources


def test_load_frozen_model_restores_nested_models_in_a_fresh_process(tmp_path):
    """Issue 49: the record's paths are those Keras rebuilds on load, for nested and library models
    (built, frozen and saved in one fresh process, loaded in another: the suite's stays small)."""
    from conftest import REPO_ROOT, run_fresh_python

    save = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT / "tests")!r})
import keras
import keras_structinit as ks
from test_freezing import _nested_sources
want = {{}}
for i, (name, model) in enumerate(_nested_sources().items()):
    frozen = ks.freeze_spatial(model, which="all_spatial")
    model.compile(keras.optimizers.AdamW(1e-3), "mse")
    path = {str(tmp_path)!r} + f"/{{i}}.keras"
    model.save(path)
    want[path] = [name, [j for j, v in enumerate(model.variables) if not v.trainable], len(frozen)]
print(json.dumps(want))
"""
    want = json.loads(run_fresh_python(save, cwd=str(REPO_ROOT)).strip().splitlines()[-1])
    assert len(want) >= 2 and all(count for _, _, count in want.values())
    load = f"""
import json
from keras_structinit.engine.freezing import load_frozen_model
out = {{}}
for path in {sorted(want)!r}:
    model = load_frozen_model(path)
    out[path] = [j for j, v in enumerate(model.variables) if not v.trainable]
print(json.dumps(out))
"""
    got = json.loads(run_fresh_python(load, cwd=str(REPO_ROOT)).strip().splitlines()[-1])
    for path, (name, frozen, _) in want.items():  # the same variables, by place: paths change on reload
        assert got[path] == frozen, name


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="a file saved on torch, loaded on the other two backends in fresh processes",
)
def test_a_run_saved_on_torch_loads_and_trains_with_plain_load_model_everywhere(tmp_path):
    """``structinit train``'s model.keras (save_portable): plain ``keras.saving.load_model`` on JAX
    and TensorFlow compiles it with that backend's AdamW and takes a training step (issue 58)."""
    import subprocess
    import sys

    from keras_structinit.engine.freezing import save_portable

    x, y = data()
    model = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3), keras.layers.Flatten(), keras.layers.Dense(3)]
    )
    model.compile(optimizer=keras.optimizers.AdamW(1e-3), loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=1, verbose=0)
    assert type(model.optimizer).__module__.startswith("keras.src.backend.torch")
    path = tmp_path / "m.keras"
    save_portable(model, path)
    assert "get_compile_config" not in model.__dict__  # the model is left as it was
    np.savez(tmp_path / "d.npz", x=x, y=y)
    code = (
        "import sys, keras, numpy as np\n"
        "m = keras.saving.load_model(sys.argv[1]); d = np.load(sys.argv[2])\n"
        "assert type(m.optimizer).__name__ == 'AdamW', type(m.optimizer)\n"
        "assert int(m.optimizer.iterations) == 1, int(m.optimizer.iterations)\n"
        "m.fit(d['x'], d['y'], epochs=1, verbose=0); print('TRAINED', type(m.optimizer).__module__)\n"
    )
    for backend in ("jax", "tensorflow"):
        done = subprocess.run(
            [sys.executable, "-c", code, str(path), str(tmp_path / "d.npz")],
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, KERAS_BACKEND=backend),
        )
        assert done.returncode == 0 and "TRAINED" in done.stdout, (backend, done.stderr[-3000:])
        assert "torch" not in done.stdout, done.stdout


def _same_named_nested():
    """Two nested sub-models that each hold a depthwise layer named ``dw``: reloaded, both kernels
    have the path ``dw/kernel`` (issue 64)."""

    def block(name):
        inputs = keras.Input((8, 8, 4))
        outputs = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(inputs)
        return keras.Model(inputs, outputs, name=name)

    inputs = keras.Input((8, 8, 3))
    x = block("b")(block("a")(keras.layers.Conv2D(4, 1, name="stem")(inputs)))
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(keras.layers.GlobalAveragePooling2D()(x)))


def _frozen_places(model):
    return [i for i, v in enumerate(model.variables) if not v.trainable]


def test_same_named_layers_of_nested_models_stay_frozen_through_every_save(tmp_path):
    """Issue 64: both ``dw`` kernels stay frozen after two save -> load_frozen_model rounds, after
    freeze_spatial on a plain load (``train --model FILE --frozen``), and then in training."""
    x, y = data(shape=(8, 8, 3))
    model = compiled(_same_named_nested())
    assert ks.freeze_spatial(model) == ["dw/kernel", "dw/kernel"]
    want = _frozen_places(model)
    assert len(want) == 2
    model.save(tmp_path / "0.keras")
    for round_ in (1, 2):
        loaded = load_frozen_model(tmp_path / f"{round_ - 1}.keras")
        assert _frozen_places(loaded) == want, round_
        loaded.save(tmp_path / f"{round_}.keras")
    plain = keras.saving.load_model(tmp_path / "0.keras", compile=False)
    assert [v.path for v in plain.variables if "dw" in v.path] == ["dw/kernel", "dw/bias"] * 2
    assert all(v.trainable for v in plain.variables)
    ks.freeze_spatial(plain)
    plain.save(tmp_path / "plain.keras")
    with zipfile.ZipFile(tmp_path / "plain.keras") as archive:
        record = json.loads(archive.read("assets/keras_structinit_frozen.json"))
    assert record["format_version"] == 3 and record["indices"] == want
    assert record["frozen"] == ["dw/kernel"] * 2 and record["shapes"] == [[3, 3, 4, 1]] * 2
    reloaded = load_frozen_model(tmp_path / "plain.keras")
    assert _frozen_places(reloaded) == want
    assert_training_keeps_frozen(compiled(reloaded), set(), x, y)
    before = [to_numpy(reloaded.variables[i]).copy() for i in want]
    reloaded.fit(x, y, batch_size=8, epochs=1, verbose=0)
    for i, kernel in zip(want, before, strict=True):
        np.testing.assert_array_equal(to_numpy(reloaded.variables[i]), kernel)


def test_a_record_written_by_a_nested_model_freezes_that_models_variables(tmp_path):
    """A sub-model frozen before it was nested writes its own record (its places are its own): it is
    found where Keras saved it (``assets/layers/functional_1/``), not by the path both share."""

    def nested(frozen_block):
        model = _same_named_nested()
        sub = [layer for layer in model.layers if isinstance(layer, keras.Model)][frozen_block]
        ks.freeze_spatial(sub)
        return model

    for block in (0, 1):
        model = nested(block)
        model.save(tmp_path / f"{block}.keras")
        with zipfile.ZipFile(tmp_path / f"{block}.keras") as archive:
            assert [n for n in archive.namelist() if n.startswith("assets/")] == [
                f"assets/layers/functional{'_1' if block else ''}/keras_structinit_frozen.json"
            ]
        assert _frozen_places(load_frozen_model(tmp_path / f"{block}.keras")) == _frozen_places(model)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="reading a zip: the same on every backend")
def test_records_of_formats_1_and_2_still_load_and_a_record_that_disagrees_is_refused(tmp_path):
    model = compiled(stock_model())
    frozen = ks.freeze_spatial(model, which="all_spatial")
    model.save(tmp_path / "m.keras")
    places = _frozen_places(model)
    for name, record in [
        ("v1", {"format_version": 1, "frozen": frozen}),
        ("v2", {"format_version": 2, "frozen": frozen, "variables": len(model.variables), "indices": places}),
    ]:
        path = _with_record(
            tmp_path / "m.keras",
            tmp_path / f"{name}.keras",
            lambda f, r=record: f.write(json.dumps(r).encode()),
        )
        assert _frozen_places(load_frozen_model(path)) == places, name
    v3 = {"format_version": 3, "frozen": frozen, "variables": len(model.variables), "indices": places}
    for name, record, message in [
        (
            "shape",
            {**v3, "shapes": [[3, 3, 3, 6], [9, 9, 6, 1]]},
            r"places 'dw/kernel' of shape \(9, 9, 6, 1\) at variable 2, which is 'dw/kernel' of shape "
            r"\(3, 3, 6, 1\): the file's config and record disagree",
        ),
        ("noshapes", v3, "must hold `shapes`"),
        ("badshapes", {**v3, "shapes": [[3, 3, 3, 6], "3x3"]}, "must hold `shapes`"),
    ]:
        path = _with_record(
            tmp_path / "m.keras",
            tmp_path / f"{name}.keras",
            lambda f, r=record: f.write(json.dumps(r).encode()),
        )
        with pytest.raises(ValueError, match=message) as info:
            load_frozen_model(path)
        assert "\n" not in str(info.value) and f"{name}.keras" in str(info.value)
