"""``structinit demo``'s help and flags (no Keras import: argument errors come before any backend
starts); the command itself is :mod:`keras_structinit.cli.demo`."""

from __future__ import annotations

from keras_structinit.utils.arguments import add_overwrite_argument, non_negative_int, positive_int

__all__ = ["DESCRIPTION", "HELP", "add_arguments"]

HELP = "frozen-filter ConvMixer: default init vs ConvCovariance"
DESCRIPTION = (
    "Trains a small frozen-filter ConvMixer with PyTorch's default uniform init and with "
    "ConvCovariance, prints a table and writes plots. Uses CIFAR-10 from --data or the Keras "
    "cache, else an embedded procedural image set (no download)."
)


def add_arguments(parser):
    """The demo's flags."""
    parser.add_argument("--data", default=None, help="CIFAR-10 ImageFolder dir, .zip of one, or .npz (x, y)")
    parser.add_argument("--epochs", type=positive_int, default=None, help="epochs per run (default 3)")
    parser.add_argument("--out", default="structinit_demo", help="output directory (default structinit_demo)")
    parser.add_argument("--seed", type=non_negative_int, default=None, help="random seed (default 0)")
    parser.add_argument(
        "--seeds",
        type=positive_int,
        default=None,
        help="seeds per init (seed, seed+1, ...; default 3): with 2 or more the demo says "
        "whether the gap exceeds seed noise",
    )
    parser.add_argument(
        "--train-size", type=positive_int, default=None, help="training images (default 8000)"
    )
    add_overwrite_argument(parser, "the results of an earlier run in --out")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with a demo that Ctrl-C or SIGTERM stopped in --out: trains only the runs it did "
        "not finish (same settings), with the uninterrupted demo's results",
    )
