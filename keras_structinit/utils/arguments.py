"""Argument types and error reporting shared by the ``structinit`` parser and subcommands (no Keras)."""

from __future__ import annotations

import argparse
import os
import sys
import zipfile

from keras_structinit.utils import validation
from keras_structinit.utils.model_files import parse_bytes

BACKENDS = ("tensorflow", "jax", "torch")
#: The recipes' ``precision`` and ``distribution`` names (:mod:`keras_structinit.recipes.devices`).
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16", "auto")
DISTRIBUTIONS = ("data_parallel", "multi_worker", "mirrored", "tpu", "auto")
#: The ratio native / ``tf.data`` images/s below which a pair goes into :data:`SLOWER_NATIVE`.
SLOWER_NATIVE_LINE = 0.8
#: ``(recipe, backend)`` where the native input stream measured below :data:`SLOWER_NATIVE_LINE`
#: times ``tf.data``'s rate on one core of the 2-core CPU (``benchmarks/results/cpu/input_streams.md``):
#: the ImageNet recipe on torch, whose eager ops at 224 x 224 ran the full recipe at 11 images/s
#: against tf.data's 18 (0.61x; 12 against 27 on 2026-11-29). Elsewhere the native stream ran at
#: 0.96x or more (JAX 83 against 18; TensorFlow 17 against 18, both streams TensorFlow ops there).
#: The line at 0.8x separates the two groups in all three recorded runs (torch's ImageNet
#: 0.44-0.61x, every other pair 0.88x or more); the 0.5x it was before fell between two of them.
#: ``pipeline="auto"`` takes ``tf.data`` in these pairs when TensorFlow is installed.
SLOWER_NATIVE = frozenset({("imagenet", "torch")})
#: The recipes ``structinit train --recipe`` runs.
RECIPES = ("cifar10", "cifar100", "imagenet")
#: ``RecipeConfig`` fields of the CIFAR recipes only, and of the ImageNet recipe only.
CIFAR_ONLY = ("optimizer", "schedule", "normalization", "pad", "flip", "random_labels", "random_classes")
IMAGENET_ONLY = ("image_size", "loss")
#: The recipes' named choices (``RecipeConfig`` fields, and ``structinit train``'s flags).
OPTIMIZERS = ("adamw", "sgd", "sgd_momentum")
SCHEDULES = ("triangular", "cosine", "step")
NORMALIZATIONS = ("channel", "symmetric", "imagenet")
LOSSES = ("bce", "ce")
#: The recipes' input streams (``RecipeConfig.pipeline``, ``--pipeline``): "native"
#: (:mod:`keras_structinit.recipes.native`), "tf" (``tf.data``) or "auto"
#: (:func:`keras_structinit.recipes.native.choose_pipeline`).
PIPELINES = ("auto", "native", "tf")
#: Every form of a model argument, as the help shows them (the grammar is
#: :class:`keras_structinit.models.spec.ModelSpec`; a test parses every form the help and the docs show).
MODEL_TEXT = (
    "a zoo name, keras.applications:NAME (no weights), keras.applications:NAME:WEIGHTS "
    "(WEIGHTS: imagenet, downloaded, or a weights file), a .keras file, a KerasHub preset folder, "
    "keras_hub:PRESET or keras_cv:PRESET"
)
#: The zoo's model names, as ``--model``'s help lists them: ``models.registry.model_forms()``, which
#: the zoo modules' declarations give (written out so that the parser imports no Keras; a test
#: checks the two agree).
ZOO_NAMES = (
    "convmixer-H/D, convnext-iso-H/D, lcresnet-D-WxE (D = 6n + 2), "
    "convnext-atto|femto|pico|nano|tiny, vit-tiny, vit-small, vit-tiny-8/2, simple-cnn, "
    "simple-cnn-a2, simple-cnn-e3, vgg16, resnet18-gn"
)
#: How ``structinit init`` and ``inspect`` scale ``--data`` for the model (the CIFAR recipe's
#: per-channel standardization, [-1, 1], or raw 0-255).
DATA_SCALINGS = ("channel", "symmetric", "raw")
#: What a bad input raises while it is read (a truncated zip, a refused Lambda, a missing module, a
#: failed download).
INPUT_ERRORS = (ValueError, TypeError, OSError, ImportError, EOFError, zipfile.BadZipFile, RuntimeError)
#: How the error messages of :mod:`keras_structinit.utils.io_utils` say to allow replacing an output.
OVERWRITE_HINT = "--overwrite"


def _int_type(minimum, expected):
    """An ``argparse`` type: an int ``>= minimum``; otherwise an error saying ``expected``."""

    def parse(text):
        try:
            return validation.int_value(int(text), "value", minimum=minimum)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None

    return parse


positive_int = _int_type(1, "a positive integer")
non_negative_int = _int_type(0, "a non-negative integer")


def _float_type(check, expected):
    """An ``argparse`` type: a float that ``check`` (a :mod:`validation` checker) accepts."""

    def parse(text):
        try:
            return check(float(text), "value")
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None

    return parse


def no_weight_decay(text):
    """``--no-weight-decay``'s type: ``"timm"``, ``()`` for ``none`` (no exclusion; given, so it
    overrides a setup's) or the comma-separated patterns (``RecipeConfig`` checks them)."""
    return "timm" if text == "timm" else () if text == "none" else tuple(text.split(","))


#: ``structinit train --compile``: the recipe's ``jit_compile`` (``auto``: the recipe's per-backend
#: default, ``recipes.training.default_jit_compile``).
COMPILE_MODES = {"auto": None, "on": True, "off": False}


def compile_mode(text):
    """``--compile``'s type: ``auto``, ``on`` or ``off`` as ``RecipeConfig.jit_compile``."""
    if text not in COMPILE_MODES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(COMPILE_MODES)}, got {text!r}")
    return COMPILE_MODES[text]


positive_float = _float_type(validation.positive_float, "a positive number")
non_negative_float = _float_type(validation.non_negative_float, "a number >= 0")
unit_rate = _float_type(validation.rate, "a number in [0, 1)")
probability = _float_type(validation.fraction, "a number in [0, 1]")


def check_exists(path, flag):
    """``ValueError`` naming ``flag`` when ``path`` (``None`` allowed) does not exist."""
    if path is not None and not os.path.exists(path):
        raise ValueError(f"{flag} {path!r} does not exist")


def check_teacher(spec, flag):
    """``check_exists`` for a model argument that names a ``.keras`` file; every other form is read
    by the one grammar (:class:`keras_structinit.models.spec.ModelSpec`), once Keras is loaded."""
    if spec is not None and spec.endswith(".keras"):
        check_exists(spec, flag)


def model_bytes(text):
    """``--max-model-bytes``' type: a number of bytes, plain or with a unit (``8GiB``)."""
    try:
        return parse_bytes(text, "--max-model-bytes")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of bytes (e.g. 8GiB), got {text!r}"
        ) from None


def add_max_model_bytes_argument(parser, help_text=lambda text: text):
    """``--max-model-bytes`` (:mod:`~keras_structinit.utils.model_files`): the bound on what a model
    file declares. ``help_text`` wraps the help (``train`` shows it under ``--help-all`` only)."""
    parser.add_argument(
        "--max-model-bytes",
        type=model_bytes,
        default=None,
        help=help_text(
            "refuse a .keras file (a teacher too) whose weights or layers declare more bytes of "
            "variables than this, before reading it (default 4GiB; units B, KiB, MiB, GiB, TiB)"
        ),
    )


def add_overwrite_argument(parser, what):
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace {what} (refused by default; an input is never replaced)",
    )


#: ``structinit init`` and ``inspect``'s flags of :func:`keras_structinit.models.spec.model_from`'s arguments.
SIZE_FLAGS = {"input_shape": "--input-shape", "classes": "--classes"}


def spelled(message, flags):
    """``message`` with each field it names in backticks (```learning_rate```) shown as its flag
    (``flags``: ``{field: flag}``): the Python API's messages, in the command line's words."""
    for field, flag in flags.items():
        message = message.replace(f"`{field}`", flag)
    return message


#: How the command line spells the Python API's options that messages name in backticks (the keys,
#: without them): the flag where the command line has one, else a word that the option is the
#: Python API's only.
CLI_WORDS = {
    "init": "--init",
    "head_classes=...": "--head-classes I,J,...",
    "skip=(...)": "--skip PREFIX",
    "strict=False": "strict=False (an option of the Python API, keras_structinit.selection.select_weights; "
    "the command line has no flag for it)",
    "layers=[...]": "layers=[...] (an option of the Python API, keras_structinit.initialize and the "
    "apply_* functions; the command line has no flag for it)",
}


def usage_error(command, error):
    """Prints ``structinit COMMAND: error: ...`` to stderr, on one line, in the command line's words
    (:data:`CLI_WORDS`); returns the exit status 2."""
    text = spelled(" ".join(line.strip() for line in str(error).splitlines() if line.strip()), CLI_WORDS)
    text = validation.clipped(text, 2 * validation.SHOWN_CHARS)  # a long input is echoed in part
    print(f"structinit {command}: error: {text}", file=sys.stderr)
    return 2
