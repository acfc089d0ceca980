"""``structinit train``'s recipe flags: one per :class:`~keras_structinit.recipes.RecipeConfig`
field it sets (no Keras import: argument errors come before any backend starts)."""

from __future__ import annotations

from keras_structinit.utils.arguments import (
    COMPILE_MODES,
    DISTRIBUTIONS,
    NORMALIZATIONS,
    OPTIMIZERS,
    PRECISIONS,
    SCHEDULES,
    compile_mode,
    no_weight_decay,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
    unit_rate,
)

__all__ = ["add_recipe_arguments"]


def add_recipe_arguments(group, more):
    """The recipe's training flags (``RecipeConfig`` fields: each flag's ``dest`` is its field);
    ``more(help)``: the help of a flag ``--help`` shows only with ``--help-all``."""
    group.add_argument("--epochs", type=positive_int, help="passes over the data (required unless --paper)")
    group.add_argument(
        "--batch-size", type=positive_int, help="global batch (default: CIFAR 512, ImageNet 1024)"
    )
    group.add_argument(
        "--lr",
        dest="learning_rate",
        type=positive_float,
        help="peak learning rate (default: CIFAR 0.01; ImageNet 5e-3 x batch / 2048)",
    )
    group.add_argument("--seed", type=int, help="of the init, shuffling and augmentation (default 0)")
    group.add_argument("--weight-decay", type=non_negative_float, help=more("(default 0.01)"))
    group.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        help=more("adamw (default), sgd (Nesterov 0.9, PyTorch-style L2) or sgd_momentum"),
    )
    group.add_argument(
        "--schedule",
        choices=SCHEDULES,
        help=more("triangular (default), cosine, or step (/3 at 1/3 and 2/3)"),
    )
    group.add_argument(
        "--warmup-epochs",
        type=non_negative_float,
        help=more("linear warmup of the cosine schedule (default: CIFAR 5%% of the run, ImageNet 5)"),
    )
    group.add_argument(
        "--normalization",
        choices=NORMALIZATIONS,
        help=more(
            "channel (the data's mean/std, default), symmetric ([-1, 1]) or imagenet "
            "(ImageNet's mean/std, as the weight-selection authors' data code)"
        ),
    )
    group.add_argument(
        "--pad", type=non_negative_int, help=more("padding of the random crop (default 4; 0: no crop)")
    )
    group.add_argument(
        "--no-flip",
        dest="flip",
        action="store_const",
        const=False,
        help=more("no random horizontal flip (default: flip)"),
    )
    _augmentation_arguments(group, more)
    _run_arguments(group, more)


def _augmentation_arguments(group, more):
    """The regularization of the data: label smoothing, RandAugment, mixing, erasing, noisy labels."""
    group.add_argument("--label-smoothing", type=unit_rate, help=more("(default 0)"))
    group.add_argument(
        "--rand-augment",
        help=more(
            "timm:m9-n2-mstd0.5[-inc1], torchvision:n2-m12 (CIFAR default), keras:n2-f0.4 or none "
            "(ImageNet default timm:m7-n2-mstd0.5-inc1)"
        ),
    )
    group.add_argument(
        "--mixup",
        dest="mixup_alpha",
        type=non_negative_float,
        help=more("MixUp alpha (default: CIFAR 0, ImageNet 0.2)"),
    )
    group.add_argument(
        "--cutmix",
        dest="cutmix_alpha",
        type=non_negative_float,
        help=more("CutMix alpha (default: CIFAR 0, ImageNet 1.0)"),
    )
    group.add_argument("--random-erasing", type=probability, help=more("probability per image (default 0)"))
    group.add_argument(
        "--random-labels",
        type=probability,
        help=more("fraction of labels made random, fixed by --seed (default 0)"),
    )
    group.add_argument(
        "--random-classes",
        type=positive_int,
        help=more("with --random-labels 1: the random labels' classes and outputs (default: the data's)"),
    )


def _run_arguments(group, more):
    """What decays, and how the run computes: weight-decay exclusions, precision, distribution,
    compilation."""
    group.add_argument(
        "--no-weight-decay",
        type=no_weight_decay,
        help=more(
            "variables AdamW does not decay: timm (timm's parameter groups: biases, norms, position table, "
            "class token), comma-separated name patterns, or none (default: none)"
        ),
    )
    group.add_argument("--precision", choices=PRECISIONS, help=more("(default float32)"))
    group.add_argument(
        "--compile",
        dest="jit_compile",
        type=compile_mode,
        metavar="{" + ",".join(COMPILE_MODES) + "}",
        help=more(
            "compile the train step (on: XLA, or torch.compile on PyTorch; off: "
            "eager/graph mode); auto (default): the recipe's choice per backend"
        ),
    )
    group.add_argument(
        "--distribution",
        choices=DISTRIBUTIONS,
        help=more(
            "data_parallel (JAX), mirrored or tpu (TensorFlow), multi_worker (several "
            "processes: docs/models-and-recipes.md) or auto (default: one device)"
        ),
    )
