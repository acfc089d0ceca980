"""``structinit train``'s recipe flags (``cli/recipe_flags.py``): each sets its ``RecipeConfig`` field."""

import subprocess
import sys

import pytest

from keras_structinit import cli
from keras_structinit.cli.train import _flags, _run_of

from conftest import once_per_suite


def _train_args(*extra):
    parser = cli.build_parser()
    return parser.parse_args(["train", "--model", "simple-cnn", "--epochs", "1", *extra]), parser


@once_per_suite("argparse and a RecipeConfig: no backend")
@pytest.mark.parametrize("mode, jit_compile", [("on", True), ("off", False), ("auto", None)])
def test_compile_sets_the_recipe_jit_compile(mode, jit_compile):
    """Issue 62 point 2: ``--compile on|off`` overrides, ``auto`` (and no flag) leaves the recipe's
    per-backend default (``recipes.training.default_jit_compile``) to decide."""
    args, parser = _train_args("--compile", mode)
    assert args.jit_compile is jit_compile
    run = _run_of(args, _flags(parser.train_parser))
    assert run.config.jit_compile is jit_compile
    assert _flags(parser.train_parser)["jit_compile"] == "--compile"
    plain, _ = _train_args()
    assert plain.jit_compile is None


@once_per_suite("a process of the command line's own")
def test_a_bad_compile_mode_is_one_line_and_exit_2():
    code = "import sys\nfrom keras_structinit import cli\nsys.exit(cli.main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", code, "train", "--model", "simple-cnn", "--epochs", "1", "--compile", "yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "structinit train: error: argument --compile: expected one of auto, on, off, got 'yes' "
        "(see structinit train --help)"
    ], result.stderr
