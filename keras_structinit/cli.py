"""The ``structinit`` command line."""

from __future__ import annotations

import argparse
import os
import sys

BACKENDS = ("tensorflow", "jax", "torch")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser():
    parser = argparse.ArgumentParser(
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
    demo.add_argument("--epochs", type=_positive_int, default=None, help="epochs per run (default 4)")
    demo.add_argument("--out", default="structinit_demo", help="output directory (default structinit_demo)")
    demo.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    demo.add_argument("--train-size", type=_positive_int, default=None, help="training images (default 10000)")
    demo.add_argument("--backend", choices=BACKENDS, default=None, help="Keras backend (default: KERAS_BACKEND)")

    train = sub.add_parser(
        "train",
        help="train a model with a CIFAR or ImageNet recipe",
        description=(
            "Trains a model from the zoo with a model.fit recipe and an initialization, "
            "logs CSV, writes learning curves and results.json (config, versions, "
            "per-epoch metrics, final eval accuracy) to --out."
        ),
    )
    train.add_argument("--recipe", choices=("cifar10", "cifar100", "imagenet"), default="cifar10")
    train.add_argument("--model", required=True,
                       help="convmixer-H/D, convnext-iso-H/D, convnext-atto|femto|pico|nano|tiny, "
                            "vit-tiny, vit-small, simple-cnn, vgg16, resnet18-gn")
    train.add_argument("--init", default="default",
                       help="default | torch-uniform | conv-cov[:PRESET] | cov-transfer:PATH (default: default)")
    train.add_argument("--frozen", action="store_true", help="freeze the spatial (depthwise) filters")
    train.add_argument("--epochs", type=_positive_int, required=True)
    train.add_argument("--data", default=None,
                       help="CIFAR: ImageFolder dir/.zip or .npz (default keras.datasets); "
                            "ImageNet: ImageFolder dir or tfds:NAME")
    train.add_argument("--eval-data", default=None, help="external evaluation set: .npz (uint8 x, int y) or ImageFolder dir/.zip")
    train.add_argument("--out", default="structinit_train", help="output directory (default structinit_train)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--backend", choices=BACKENDS, default=None, help="Keras backend (default: KERAS_BACKEND)")
    train.add_argument("--batch-size", type=_positive_int, default=None, help="global batch (recipe default)")
    train.add_argument("--lr", type=float, default=None, help="peak learning rate (recipe default)")
    train.add_argument("--weight-decay", type=float, default=None)
    train.add_argument("--label-smoothing", type=float, default=None)
    train.add_argument("--rand-augment", default="recipe", help="N,M (ops, magnitude in [0,1]), 'none', or 'recipe'")
    train.add_argument("--train-size", type=_positive_int, default=None, help="CIFAR: use this many training images")
    train.add_argument("--val-split", type=float, default=0.1, help="CIFAR: held-out fraction per class (default 0.1)")
    train.add_argument("--image-size", type=_positive_int, default=None, help="ImageNet: crop size (default 224)")
    train.add_argument("--kernel-size", type=_positive_int, default=None, help="depthwise kernel size (model default)")
    train.add_argument("--patch-size", type=_positive_int, default=None, help="stem patch size (model default)")
    train.add_argument("--precision", choices=("float32", "mixed_bfloat16", "mixed_float16", "auto"), default=None)
    train.add_argument("--distribution", choices=("data_parallel", "mirrored", "tpu", "auto"), default=None)
    return parser


def _rand_augment(text):
    """'recipe' (keep the recipe's default), None for 'none', or a checked ``(N, M)``."""
    from keras_structinit.recipes.data import check_rand_augment

    if text == "recipe":
        return text
    if text == "none":
        return None
    try:
        ops, magnitude = text.split(",")
        return check_rand_augment((int(ops), float(magnitude)))
    except ValueError:
        raise ValueError(
            f"--rand-augment must be N,M (N >= 1 ops, magnitude M in [0, 1], e.g. 2,0.4), "
            f"'none' or 'recipe'. Received: {text!r}"
        ) from None


def _train(args):
    from keras_structinit.models.registry import parse_model_name
    from keras_structinit.recipes.runner import parse_init, run_train

    try:
        family, _ = parse_model_name(args.model)
        parse_init(args.init)
        if (args.frozen or args.init != "default") and not family.startswith(("convmixer", "convnext")):
            raise ValueError(
                f"--frozen and --init {args.init} act on spatial depthwise convs, which {args.model} "
                "does not have (use a convmixer-* or convnext-* model)"
            )
        rand_augment = _rand_augment(args.rand_augment)
        if not 0.0 <= args.val_split < 1.0:
            raise ValueError(f"--val-split must be in [0, 1). Received: {args.val_split}")
        if args.data is not None and not args.data.startswith("tfds:") and not os.path.exists(args.data):
            raise ValueError(f"--data {args.data!r} does not exist")
        if args.eval_data is not None and not os.path.exists(args.eval_data):
            raise ValueError(f"--eval-data {args.eval_data!r} does not exist")
        if args.recipe == "imagenet" and args.data is None:
            raise ValueError("--recipe imagenet needs --data (an ImageFolder directory or tfds:NAME)")
    except ValueError as err:
        print(f"structinit train: error: {err}", file=sys.stderr)
        return 2
    model_kwargs = {k: v for k, v in dict(kernel_size=args.kernel_size, patch_size=args.patch_size).items()
                    if v is not None}
    run_train(
        args.recipe, args.model, args.data, args.epochs, args.out, init=args.init, frozen=args.frozen,
        eval_data=args.eval_data, seed=args.seed, batch_size=args.batch_size, learning_rate=args.lr,
        weight_decay=args.weight_decay, train_size=args.train_size, validation_split=args.val_split,
        image_size=args.image_size, precision=args.precision, distribution=args.distribution,
        rand_augment=rand_augment, label_smoothing=args.label_smoothing, model_kwargs=model_kwargs,
        verbose=1 if sys.stdout.isatty() else 2,
    )
    return 0


def _ensure_backend(backend, argv):
    """Re-runs the command under ``backend`` if Keras is already on another one."""
    if backend is None:
        return
    import keras

    if keras.backend.backend() != backend:
        env = dict(os.environ, KERAS_BACKEND=backend)
        os.execve(sys.executable, [sys.executable, "-m", "keras_structinit.cli", *argv], env)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    _ensure_backend(args.backend, argv)
    if args.command == "demo":
        from keras_structinit.recipes.demo import run_demo

        if args.data is not None and not os.path.exists(args.data):
            print(f"structinit demo: error: --data {args.data!r} does not exist", file=sys.stderr)
            return 2
        run_demo(data=args.data, epochs=args.epochs, out=args.out, seed=args.seed, train_size=args.train_size)
    elif args.command == "train":
        return _train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
