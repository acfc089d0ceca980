"""Which Keras backend ``structinit`` selects when neither ``--backend`` nor ``KERAS_BACKEND``
names one (issue 58, point 2); the no-TensorFlow lanes run the real commands
(``tests/test_no_tensorflow.py``)."""

import json

import pytest

from keras_structinit.cli import choose_backend


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    return tmp_path


def test_keras_own_default_is_kept_when_installed(keras_home):
    assert choose_backend(["tensorflow", "jax", "torch"]) is None
    (keras_home / "keras.json").write_text(json.dumps({"backend": "torch"}))
    assert choose_backend(["torch"]) is None  # keras.json's backend, installed


@pytest.mark.parametrize("installed", [["jax"], ["torch"]])
def test_the_one_installed_backend_is_chosen(keras_home, installed):
    assert choose_backend(installed) == installed[0]


def test_keras_json_naming_a_missing_backend_with_one_installed(keras_home):
    (keras_home / "keras.json").write_text(json.dumps({"backend": "jax"}))
    assert choose_backend(["torch"]) == "torch"


def test_several_or_none_installed_names_the_choices(keras_home):
    with pytest.raises(ValueError, match=r"default backend \(tensorflow\) is not installed: choose one of "
                                         r"jax, torch with --backend or KERAS_BACKEND"):
        choose_backend(["jax", "torch"])
    with pytest.raises(ValueError, match=r"no Keras backend is installed: install one with pip install"):
        choose_backend([])
