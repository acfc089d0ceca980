"""``structinit train``'s flags other than the recipe's (:mod:`~keras_structinit.cli.recipe_flags`):
the model, its initialization, the data and the output; each flag's ``dest`` is the field it sets.
No Keras import: argument errors come before any backend starts."""

from __future__ import annotations

import argparse

from keras_structinit import methods
from keras_structinit.cli.recipe_flags import add_recipe_arguments
from keras_structinit.utils.arguments import (
    CIFAR_ONLY,
    IMAGENET_ONLY,
    MODEL_TEXT,
    PIPELINES,
    RECIPES,
    ZOO_NAMES,
    add_max_model_bytes_argument,
    add_overwrite_argument,
    non_negative_int,
    positive_float,
    positive_int,
)

__all__ = ["add_arguments"]


def add_arguments(parser, full):
    """``train``'s flags, in groups; ``full``: every flag in ``--help`` (else the common ones)."""

    def more(text):
        return text if full else argparse.SUPPRESS

    _model_flags(parser.add_argument_group("the model"), more, full)
    _init_flags(parser.add_argument_group("initialization"), more, full)
    _data_flags(parser.add_argument_group("data"), more)
    training = parser.add_argument_group("training (default: the recipe's, docs/models-and-recipes.md)")
    add_recipe_arguments(training, more)
    group = parser.add_argument_group("output")
    group.add_argument("--out", default="structinit_train", help="output folder (default structinit_train)")
    group.add_argument(
        "--resume",
        action="store_true",
        help="go on with the unfinished run in --out from its last finished epoch (default: a new run)",
    )
    add_overwrite_argument(group, "the results of an earlier run in --out")
    parser.add_argument("--help-all", action="store_true", help="show every flag and exit")
    only = {**dict.fromkeys(CIFAR_ONLY, "CIFAR recipes: "), **dict.fromkeys(IMAGENET_ONLY, "ImageNet: ")}
    for action in parser._actions:  # the recipes' own lists say which recipe a flag is for
        if action.dest in only and action.help != argparse.SUPPRESS:
            action.help = only[action.dest] + action.help


def _model_flags(group, more, full):
    own = " (default: the model's)"
    zoo = ZOO_NAMES if full else "convmixer-256/8, ... see --help-all"
    group.add_argument(
        "--model",
        help=f"(required unless --paper) {MODEL_TEXT}; zoo names: {zoo}"
        if full
        else "(required unless --paper) a zoo name (convmixer-256/8, ...), keras.applications:NAME, "
        "a .keras file, ... (see --help-all)",
    )
    group.add_argument(
        "--paper",
        choices=tuple(methods.paper_setups()),
        help="a paper's CIFAR experiment: its settings, cited; flags given too are departures",
    )
    group.add_argument(
        "--new-head",
        action="store_const",
        const=True,
        help="a new last Dense of the data's classes (default: refuse a head of another size)",
    )
    add_max_model_bytes_argument(group, more)
    group.add_argument("--kernel-size", type=positive_int, help=more("a zoo model's depthwise kernel" + own))
    group.add_argument("--patch-size", type=positive_int, help=more("a zoo model's stem patch size" + own))


def _init_flags(group, more, full):
    summaries = "; ".join(f"{f.name}: {f.summary}" for f in methods.init_forms().values())
    forms = f": {methods.form_usage()}. {summaries}"
    group.add_argument(
        "--init",
        help="an init spec: forms joined by + (e.g. conv-cov+mean-shift; default: "
        "default, the builder's own)" + (forms if full else ""),
    )
    group.add_argument(
        "--frozen",
        action="store_const",
        const=True,
        help="freeze the spatial (depthwise) filters (default: trained)",
    )
    group.add_argument(
        "--distill-from",
        help=more(f"a teacher to distill from ({MODEL_TEXT}; default: none)"),
    )
    group.add_argument(
        "--distill-mode",
        choices=("logits", "features"),
        help=more("logits: CE + alpha KL(p_t||p_s); features: CE + alpha L1(O_t, MLP(O_s)) (default logits)"),
    )
    group.add_argument("--distill-alpha", type=positive_float, help=more("the alpha (default 1)"))


def _data_flags(group, more):
    cifar = "CIFAR recipes: "  # the Run's CIFAR-only fields
    group.add_argument("--recipe", choices=RECIPES, default="cifar10", help="the recipe (default cifar10)")
    group.add_argument(
        "--data",
        help="CIFAR: an ImageFolder folder/.zip (every image of one size: the recipe trains at the "
        "images' own size) or .npz (default keras.datasets); ImageNet: an ImageFolder folder (any "
        "sizes: resized as read) or tfds:NAME",
    )
    group.add_argument("--eval-data", help="an evaluation set, as --data (default: none)")
    group.add_argument("--train-size", type=positive_int, help=more(cifar + "N images (default all)"))
    group.add_argument(
        "--train-offset",
        type=non_negative_int,
        help=more(
            cifar + "skip the N images --train-size N draws with this --seed: disjoint runs (default 0)"
        ),
    )
    group.add_argument(
        "--val-split",
        dest="validation_split",
        type=float,
        help=more(cifar + "held-out fraction per class (default 0.1)"),
    )
    group.add_argument("--image-size", type=positive_int, help=more("crop size (default 224)"))
    group.add_argument(
        "--pipeline",
        choices=PIPELINES,
        help=more(
            "input stream: native (Keras ops on the device, no TensorFlow), tf "
            "(tf.data) or auto (default: docs/models-and-recipes.md)"
        ),
    )
