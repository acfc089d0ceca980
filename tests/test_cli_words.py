"""A refusal under ``structinit`` is in the command line's words (issue 76, point 3): it names the
flag, or says that the option is the Python API's only; the Python API keeps its own words."""

import pytest

from keras_structinit import cli
from keras_structinit.utils.arguments import CLI_WORDS, usage_error


def _error(capsys, argv):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_mean_shift_without_mlp_blocks_says_layers_is_a_python_option(tmp_path, capsys):
    err = _error(capsys, ["init", "simple-cnn", "--init", "mean-shift", "--out", str(tmp_path / "m.keras")])
    assert "layers=[...] (an option of the Python API" in err and "no flag for it" in err
    assert "`layers=[...]`" not in err
    assert not (tmp_path / "m.keras").exists()


def test_a_wider_student_says_strict_is_a_python_option(tmp_path, capsys):
    teacher = str(tmp_path / "teacher.keras")
    assert cli.main(["init", "simple-cnn", "--init", "torch-default", "--out", teacher]) == 0
    capsys.readouterr()
    argv = ["select", "--teacher", teacher, "--student", "simple-cnn-e3", "--out", str(tmp_path / "s.keras")]
    err = _error(capsys, argv)
    assert "strict=False (an option of the Python API, keras_structinit.selection.select_weights" in err
    assert "`strict=False`" not in err


@pytest.mark.parametrize(
    "python_words,flag", [("head_classes=...", "--head-classes"), ("skip=(...)", "--skip")]
)
def test_options_the_command_line_has_are_named_by_their_flag(capsys, python_words, flag):
    assert usage_error("select", ValueError(f"pass `{python_words}` to choose")) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"structinit select: error: pass {CLI_WORDS[python_words]} to choose"
    )
    assert CLI_WORDS[python_words].startswith(flag)


def test_the_python_api_keeps_its_own_words():
    import keras

    from keras_structinit import initialize

    inputs = keras.Input((8, 8, 3))
    model = keras.Model(
        inputs, keras.layers.Dense(2)(keras.layers.Flatten()(keras.layers.Conv2D(4, 3)(inputs)))
    )
    with pytest.raises(ValueError, match=r"pass `layers=\[\.\.\.\]`"):
        initialize(model, "mean-shift", seed=0)
