"""The ``structinit`` command line: ``structinit demo``, ``structinit train`` and ``structinit select``.

This module holds the parser and the dispatch; each subcommand runs from its
own module (:mod:`~keras_structinit.cli.demo`, :mod:`~keras_structinit.cli.train`),
imported only when it runs, so that ``--help``, argument errors and
``--backend`` come before any Keras import.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from keras_structinit.cli.arguments import (
    BACKENDS,
    add_overwrite_argument,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    unit_rate,
    usage_error,
)
from keras_structinit.methods import INIT_FORMS, form_usage
from keras_structinit.selection.indices import ELEMENT_METHODS, LAYER_METHODS
from keras_structinit.selection.plan import HEAD_MODES

__all__ = ["build_parser", "main"]

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16", "auto")
DISTRIBUTIONS = ("data_parallel", "mirrored", "tpu", "auto")
RECIPES = ("cifar10", "cifar100", "imagenet")


def _add_backend_argument(parser):
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="Keras backend (default: KERAS_BACKEND)")


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser():
    """The ``structinit`` argument parser (``args.command`` names the subcommand)."""
    parser = _Parser(
        prog="structinit", description="Structured initialization for Keras 3 vision models."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="frozen-filter ConvMixer: default init vs ConvCovariance",
        description=(
            "Trains a small frozen-filter ConvMixer with PyTorch's default uniform init and "
            "with ConvCovariance, prints a table and writes plots. Uses CIFAR-10 from --data "
            "or the Keras cache, else an embedded procedural image set (no download)."
        ),
    )
    demo.add_argument("--data", default=None, help="CIFAR-10 ImageFolder dir, .zip of one, or .npz (x, y)")
    demo.add_argument("--epochs", type=positive_int, default=None, help="epochs per run (default 4)")
    demo.add_argument("--out", default="structinit_demo", help="output directory (default structinit_demo)")
    demo.add_argument("--seed", type=non_negative_int, default=None, help="random seed (default 0)")
    demo.add_argument("--seeds", type=positive_int, default=None,
                      help="seeds per init (seed, seed+1, ...; default 1): with 2 or more the demo says "
                           "whether the gap exceeds seed noise")
    demo.add_argument("--train-size", type=positive_int, default=None, help="training images (default 10000)")
    add_overwrite_argument(demo, "the results of an earlier run in --out")
    _add_backend_argument(demo)

    train = sub.add_parser(
        "train",
        help="train a model with a CIFAR or ImageNet recipe",
        description=(
            "Trains a model from the zoo with a model.fit recipe and an initialization, "
            "logs CSV, writes learning curves and results.json (config, versions, "
            "per-epoch metrics, final eval accuracy) to --out."
        ),
    )
    train.add_argument("--recipe", choices=RECIPES, default="cifar10")
    train.add_argument("--model", required=True,
                       help="convmixer-H/D, convnext-iso-H/D, convnext-atto|femto|pico|nano|tiny, "
                            "vit-tiny, vit-tiny-8/2, vit-small, simple-cnn, simple-cnn-a2, simple-cnn-e3, "
                            "vgg16, resnet18-gn")
    train.add_argument("--init", default="default",
                       help="an init spec: one or more of " + form_usage() + ", joined by + (applied in "
                            "the order weights, spatial, data, MLP; e.g. conv-cov+mean-shift). "
                            + "; ".join(f"{form.name}: {form.summary}" for form in INIT_FORMS.values())
                            + " (default: default)")
    train.add_argument("--frozen", action="store_true", help="freeze the spatial (depthwise) filters")
    train.add_argument("--distill-from", default=None,
                       help="teacher for distillation (a .keras file or anything "
                            "`structinit select --teacher` takes); combine with --init select:")
    train.add_argument("--distill-mode", choices=("logits", "features"), default="logits",
                       help="logits: CE + alpha KL(p_t||p_s); features: CE + alpha L1(O_t, MLP(O_s))")
    train.add_argument("--distill-alpha", type=float, default=1.0, help="alpha of --distill-from (default 1)")
    train.add_argument("--epochs", type=positive_int, required=True)
    train.add_argument("--data", default=None,
                       help="CIFAR: ImageFolder dir/.zip or .npz (default keras.datasets); "
                            "ImageNet: ImageFolder dir or tfds:NAME")
    train.add_argument("--eval-data", default=None,
                       help="external evaluation set: .npz (uint8 x, int y) or ImageFolder dir/.zip")
    train.add_argument("--out", default="structinit_train",
                       help="output directory (default structinit_train)")
    train.add_argument("--seed", type=int, default=0)
    add_overwrite_argument(train, "the results of an earlier run in --out")
    _add_backend_argument(train)
    train.add_argument("--batch-size", type=positive_int, default=None, help="global batch (recipe default)")
    train.add_argument("--lr", type=positive_float, default=None, help="peak learning rate (recipe default)")
    train.add_argument("--weight-decay", type=non_negative_float, default=None)
    # The CIFAR options' choices are the recipe's (recipes.OPTIMIZERS, SCHEDULES, NORMALIZATIONS;
    # a test keeps them equal), written out so that parsing imports no Keras.
    train.add_argument("--optimizer", choices=("adamw", "sgd", "sgd_momentum"), default=None,
                       help="CIFAR: adamw (recipe default), sgd (Nesterov 0.9, PyTorch-style L2 decay) "
                            "or sgd_momentum (plain momentum 0.9)")
    train.add_argument("--schedule", choices=("triangular", "cosine", "step"), default=None,
                       help="CIFAR: learning-rate schedule (recipe default triangular; step: divided by 3 "
                            "at 1/3 and 2/3 of the run)")
    train.add_argument("--normalization", choices=("channel", "symmetric"), default=None,
                       help="CIFAR: per-channel standardization (recipe default) or symmetric ([-1, 1])")
    train.add_argument("--pad", type=non_negative_int, default=None,
                       help="CIFAR: pixels of padding before the random crop (recipe default 4; 0: no crop)")
    train.add_argument("--no-flip", dest="flip", action="store_const", const=False, default=None,
                       help="CIFAR: no random horizontal flip")
    train.add_argument("--label-smoothing", type=unit_rate, default=None)
    train.add_argument("--rand-augment", default="recipe",
                       help="N,M (ops, magnitude in [0,1]), 'none', or 'recipe'")
    train.add_argument("--train-size", type=positive_int, default=None,
                       help="CIFAR: use this many training images")
    train.add_argument("--val-split", type=float, default=0.1,
                       help="CIFAR: held-out fraction per class (default 0.1)")
    train.add_argument("--image-size", type=positive_int, default=None,
                       help="ImageNet: crop size (default 224)")
    train.add_argument("--kernel-size", type=positive_int, default=None,
                       help="depthwise kernel size (model default)")
    train.add_argument("--patch-size", type=positive_int, default=None,
                       help="stem patch size (model default)")
    train.add_argument("--precision", choices=PRECISIONS, default=None)
    train.add_argument("--distribution", choices=DISTRIBUTIONS, default=None)

    select = sub.add_parser(
        "select",
        help="initialize a small model with selected weights of a larger one (weight selection)",
        description=(
            "Loads a teacher .keras file, builds the student by model name (as in `train`), copies "
            "the teacher's selected weights into it (Xu et al., ICLR 2024) and saves it as .keras. "
            "The head keeps the student's own initialization."
        ),
    )
    select.add_argument("--teacher", required=True,
                        help="the larger trained model: a .keras file, a KerasHub preset (name or dir), "
                             "keras_cv:PRESET, or a keras.applications name[:weights file]")
    select.add_argument("--student", required=True,
                        help="a zoo model name (vit-tiny, convnext-femto, ...), a .keras file whose "
                             "architecture to use, or keras.applications:NAME (e.g. "
                             "keras.applications:ConvNeXtTiny, built without weights)")
    select.add_argument("--student-kwargs", default=None,
                        help='JSON of builder arguments, e.g. \'{"num_classes": 100, "patch_size": 4}\' '
                             "(default: the teacher's classes and input shape)")
    select.add_argument("--out", required=True, help="where to save the student (.keras)")
    select.add_argument("--layer-selection", choices=LAYER_METHODS, default="first_n")
    select.add_argument("--element-selection", choices=ELEMENT_METHODS, default="uniform")
    select.add_argument("--heads", choices=HEAD_MODES, default="flatten")
    select.add_argument("--seed", type=int, default=0)
    select.add_argument("--resize-position-embeddings", action="store_true",
                        help="allow another image size: resize the teacher's position grid bilinearly "
                             "(an extension of the paper)")
    select.add_argument("--report", default=None, help="write the selection report (JSON) here")
    add_overwrite_argument(select, "an existing --out or --report")
    _add_backend_argument(select)
    return parser


BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


def _check_backend_installed(backend, given_as):
    """``ValueError`` saying which extra to install when ``backend``'s library is missing."""
    if importlib.util.find_spec(BACKEND_MODULES[backend]) is None:
        raise ValueError(
            f"{given_as}: {BACKEND_MODULES[backend]} is not installed; install it with "
            f'pip install -e ".[{backend}]" (from the repository root)'
        )


def _ensure_backend(backend, argv):
    """Selects ``backend`` before Keras is imported, or re-runs the command if Keras is on another one."""
    if backend is None:
        env_backend = os.environ.get("KERAS_BACKEND")
        if env_backend in BACKEND_MODULES and "keras" not in sys.modules:
            _check_backend_installed(env_backend, f"KERAS_BACKEND={env_backend}")
        return
    _check_backend_installed(backend, f"--backend {backend}")
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = backend
        return
    import keras

    if keras.backend.backend() != backend:
        env = dict(os.environ, KERAS_BACKEND=backend)
        os.execve(sys.executable, [sys.executable, "-m", "keras_structinit.cli", *argv], env)


def _quiet_tensorflow_import():
    """Imports TensorFlow with the C++ lines of its start-up silenced.

    KerasHub needs ``tensorflow-text``, which installs TensorFlow's GPU build;
    on a machine without CUDA that build logs its failed CUDA probes
    ("Could not find cuda drivers", "failed call to cuInit") on every start.
    They are written by C++ to file descriptor 2 at import and at the first
    device query, so both happen here with that descriptor pointed at
    ``/dev/null``; Python errors are raised after it is restored.
    ``TF_CPP_MIN_LOG_LEVEL`` (default 2 here) still governs later messages;
    set ``STRUCTINIT_TF_STARTUP_LOG=1`` to see the start-up lines.
    """
    if ("tensorflow" in sys.modules or os.environ.get("STRUCTINIT_TF_STARTUP_LOG")
            or importlib.util.find_spec("tensorflow") is None):
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        import tensorflow as tf

        tf.config.list_physical_devices()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def main(argv=None):
    """Runs ``structinit`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success, 2 for a usage or data error (one line on stderr), 130 when
    interrupted with Ctrl-C (after saying where partial results are).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        _ensure_backend(args.backend, argv)
    except ValueError as err:
        return usage_error(args.command, err)
    if args.command == "train" or os.environ.get("KERAS_BACKEND") == "tensorflow":
        _quiet_tensorflow_import()  # train's input pipelines are tf.data on every backend
    try:
        return importlib.import_module(f"keras_structinit.cli.{args.command}").run(args)
    except KeyboardInterrupt:
        print(f"structinit {args.command}: interrupted", file=sys.stderr, flush=True)
        return 130
