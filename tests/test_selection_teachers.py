"""load_teacher from local KerasHub presets, keras.applications weights files and .keras; smaller_config."""

import importlib.util

import keras
import numpy as np
import pytest

from keras_structinit.selection import load_teacher, smaller_config

from conftest import to_numpy
from selection_helpers import assert_selected_slices, randomize, select_with_report

keras_hub = pytest.importorskip("keras_hub")


def hub_vit(**changes):
    config = dict(image_shape=(16, 16, 3), patch_size=4, num_layers=4, num_heads=4, hidden_dim=32, mlp_dim=64)
    return keras_hub.models.ViTBackbone(**{**config, **changes})


def test_local_keras_hub_preset_directory_loads_and_selects(tmp_path):
    teacher = randomize(hub_vit())
    teacher.save_to_preset(str(tmp_path / "vit_preset"))
    loaded = load_teacher(tmp_path / "vit_preset")
    assert type(loaded) is type(teacher)
    for a, b in zip(loaded.weights, teacher.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    student = type(teacher).from_config(
        smaller_config(teacher, hidden_dim=16, num_heads=2, mlp_dim=32, num_layers=2)
    )
    # select_weights loads the preset directory the same way
    report = select_with_report(student, teacher=str(tmp_path / "vit_preset"))
    assert report.family == "keras_hub_vit"
    assert_selected_slices(loaded, student, report)


def test_keras_applications_name_with_a_weights_file(tmp_path):
    kwargs = dict(input_shape=(32, 32, 3), alpha=0.25, classes=5)
    source = keras.applications.MobileNet(weights=None, classifier_activation=None, **kwargs)
    randomize(source)
    path = tmp_path / "mobilenet.weights.h5"
    source.save_weights(path)
    teacher = load_teacher(f"keras.applications:MobileNet:{path}", **kwargs)
    for a, b in zip(teacher.weights, source.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype("float32")
    np.testing.assert_allclose(to_numpy(teacher(x)), to_numpy(source(x)), rtol=1e-5, atol=1e-5)  # logits


def test_keras_file_and_model_objects(tmp_path):
    teacher = hub_vit(num_layers=1)
    assert load_teacher(teacher) is teacher
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    assert isinstance(load_teacher(tmp_path / "m.keras"), keras.Model)


def test_bad_specs_say_what_is_accepted(tmp_path):
    with pytest.raises(
        TypeError, match="`teacher` must be a keras.Model or one of NAME, keras.applications:NAME"
    ):
        load_teacher(3)
    with pytest.raises(FileNotFoundError, match="missing.keras"):
        load_teacher(tmp_path / "missing.keras")
    with pytest.raises(FileNotFoundError, match="weights file"):
        load_teacher(f"keras.applications:ConvNeXtTiny:{tmp_path / 'none.h5'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="without config.json"):
        load_teacher(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_teacher(str(tmp_path / "nothing_here"))
    if importlib.util.find_spec("keras_cv") is None:
        with pytest.raises(ImportError, match=r"KerasCV: pip install -e \"\.\[cv\]\""):
            load_teacher("keras_cv:resnet50_v2_imagenet")


def test_smaller_config_checks_its_arguments():
    teacher = hub_vit(num_layers=1)
    config = smaller_config(teacher, hidden_dim=16, num_heads=2)
    assert config["hidden_dim"] == 16 and config["num_layers"] == 1 and "name" not in config
    assert teacher.get_config()["hidden_dim"] == 32  # the teacher is not touched
    with pytest.raises(ValueError, match=r"no argument\(s\) \['width'\]"):
        smaller_config(teacher, width=3)
    functional = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(TypeError, match="functional model"):
        smaller_config(functional, units=1)
