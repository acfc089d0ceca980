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
    return parser


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
