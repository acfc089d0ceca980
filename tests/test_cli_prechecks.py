"""``cli.prechecks``: the checks of a command line that need no model, before Keras (issue 76.2)."""

import argparse

import pytest

from keras_structinit.cli import prechecks

from conftest import once_per_suite

pytestmark = once_per_suite("paths and the init grammar: no backend is involved")


def _args(command="train", **fields):
    return argparse.Namespace(command=command, **fields)


def test_missing_paths_are_refused_naming_their_flag(tmp_path):
    with pytest.raises(ValueError, match=r"^--data '.*nope' does not exist$"):
        prechecks.check(_args(data=str(tmp_path / "nope")))
    with pytest.raises(ValueError, match=r"^--eval-data "):
        prechecks.check(_args(eval_data=str(tmp_path / "nope.npz")))
    with pytest.raises(ValueError, match=r"^--distill-from '.*t.keras' does not exist$"):
        prechecks.check(_args(distill_from=str(tmp_path / "t.keras")))
    with pytest.raises(ValueError, match=r"^MODEL '.*m.keras' does not exist$"):
        prechecks.check(_args("init", model=str(tmp_path / "m.keras")))
    with pytest.raises(ValueError, match=r"^--teacher "):
        prechecks.check(_args("select", teacher=str(tmp_path / "t.keras"), student="vit-tiny"))


def test_what_only_the_grammar_can_judge_is_left_to_it(tmp_path):
    """Zoo names with a slash, keras.applications names, named data sources and preset folders pass:
    the one grammar of a model (``ModelSpec``) reads them once Keras is loaded."""
    (tmp_path / "preset").mkdir()
    prechecks.check(_args(model="convmixer-256/8", data="tfds:imagenet2012", distill_from="vit-tiny"))
    prechecks.check(_args("inspect", model=str(tmp_path / "preset")))
    prechecks.check(_args(model="keras.applications:ResNet50:imagenet", data=None, init=None))


def test_the_init_spec_is_parsed_with_the_files_it_reads(tmp_path):
    with pytest.raises(ValueError, match="'conv-covx' is not one of"):
        prechecks.check(_args(model="convmixer-8/2", init="conv-covx"))
    with pytest.raises(ValueError, match="cov-transfer"):
        prechecks.check(_args(model="convmixer-8/2", init=f"cov-transfer:{tmp_path / 'bank.npz'}"))
    prechecks.check(_args(model="convmixer-8/2", init="torch-default+conv-cov+mean-shift:0.2"))
