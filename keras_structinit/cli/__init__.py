"""The ``structinit`` command line: ``structinit train`` and the subcommands the method records add.

This module holds the parser and the dispatch. ``train`` runs from
:mod:`~keras_structinit.cli.train`; the records' commands (``demo``, ``select``, ...)
from their methods' ``cli`` modules (:class:`keras_structinit.methods.Command`). Each is
imported only when it runs, so that ``--help``, argument errors and ``--backend``
come before any Keras import.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from keras_structinit import methods
from keras_structinit.arguments import (
    BACKENDS,
    DATA_SCALINGS,
    DISTRIBUTIONS,
    PRECISIONS,
    RECIPES,
    SLOWER_NATIVE,
    add_overwrite_argument,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
    unit_rate,
    usage_error,
)

__all__ = ["build_parser", "main"]


def _shape(text):
    """An ``argparse`` type: ``H,W,C`` as a tuple of positive ints."""
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected H,W,C (three positive integers), got {text!r}")
    return shape


def _add_backend_argument(parser):
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="Keras backend (default: KERAS_BACKEND)")


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _example_spec():
    """Two forms of different stages joined by ``+``, for the help text (from the records)."""
    by_stage = {}
    for form in methods.init_forms().values():
        if form.arg is None or form.default is not None:
            by_stage.setdefault(form.stage, form.name)
    chosen = [by_stage[stage] for stage in ("spatial", "mlp", "data") if stage in by_stage][:2]
    return "+".join(chosen) or "default"


#: The model names ``--model`` takes, as ``models.registry.available_models()`` lists them (written
#: out so that the parser imports no Keras; a test checks the two agree).
MODEL_FORMS = ("convmixer-H/D, convnext-iso-H/D, lcresnet-D-WxE (D = 6n + 2), "
               "convnext-atto|femto|pico|nano|tiny, vit-tiny, vit-small, vit-tiny-8/2, simple-cnn, "
               "simple-cnn-a2, simple-cnn-e3, vgg16, resnet18-gn")


def _version():
    """The installed package's version (``importlib.metadata``; no Keras import)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("keras_structinit")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser():
    """The ``structinit`` argument parser (``args.command`` names the subcommand)."""
    parser = _Parser(
        prog="structinit", description="Structured initialization for Keras 3 vision models."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
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
    setups = methods.paper_setups()
    train.add_argument("--paper", choices=tuple(setups), default=None,
                       help="every training setting of a paper's CIFAR experiment (model, init, optimizer, "
                            "schedule, batch, augmentation, epochs; each citing its section), printed at the "
                            "start and written to results.json; flags given as well override it and are "
                            "recorded as departures: "
                            + "; ".join(f"{s.name}: {s.paper.split(',')[0]}" for s in setups.values()))
    train.add_argument("--model", default=None,
                       help="(required unless --paper) " + MODEL_FORMS)
    train.add_argument("--init", default=None,
                       help="an init spec: one or more of " + methods.form_usage() + ", joined by + (applied "
                            "in the order weights, spatial, data, MLP; e.g. " + _example_spec() + "). "
                            + "; ".join(f"{f.name}: {f.summary}" for f in methods.init_forms().values())
                            + " (default: default)")
    train.add_argument("--frozen", action="store_const", const=True, default=None,
                       help="freeze the spatial (depthwise) filters")
    train.add_argument("--distill-from", default=None,
                       help="teacher for distillation (a .keras file or anything "
                            "`structinit select --teacher` takes); combine with weight selection in --init")
    train.add_argument("--distill-mode", choices=("logits", "features"), default="logits",
                       help="logits: CE + alpha KL(p_t||p_s); features: CE + alpha L1(O_t, MLP(O_s))")
    train.add_argument("--distill-alpha", type=float, default=1.0, help="alpha of --distill-from (default 1)")
    train.add_argument("--epochs", type=positive_int, default=None, help="(required unless --paper)")
    train.add_argument("--data", default=None,
                       help="CIFAR: ImageFolder dir/.zip or .npz (default keras.datasets); "
                            "ImageNet: ImageFolder dir or tfds:NAME")
    train.add_argument("--eval-data", default=None,
                       help="external evaluation set: .npz (uint8 x, int y) or ImageFolder dir/.zip")
    train.add_argument("--out", default="structinit_train",
                       help="output directory (default structinit_train)")
    train.add_argument("--seed", type=int, default=0)
    add_overwrite_argument(train, "the results of an earlier run in --out")
    train.add_argument("--resume", action="store_true",
                       help="go on with the unfinished run in --out (killed or interrupted; same settings) "
                            "from its last finished epoch")
    _add_backend_argument(train)
    train.add_argument("--batch-size", type=positive_int, default=None, help="global batch (recipe default)")
    train.add_argument("--lr", type=positive_float, default=None, help="peak learning rate (recipe default)")
    train.add_argument("--weight-decay", type=non_negative_float, default=None)
    # The CIFAR options' choices are the recipe's (recipes.OPTIMIZERS, SCHEDULES, NORMALIZATIONS;
    # a test keeps them equal), written out so that parsing imports no Keras.
    train.add_argument("--optimizer", choices=("adamw", "sgd", "sgd_momentum"), default=None,
                       help="CIFAR: adamw (recipe default), sgd (Nesterov 0.9, PyTorch-style L2 decay) "
                            "or sgd_momentum (plain momentum 0.9)")
    train.add_argument("--warmup-epochs", type=non_negative_float, default=None,
                       help="linear warmup of the cosine schedule, in epochs (default: CIFAR 5%% of the run, "
                            "ImageNet 5; 0: none)")
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
    train.add_argument("--mixup", type=non_negative_float, default=None,
                       help="MixUp alpha (default: CIFAR off, ImageNet 0.2); with --cutmix, one of the two "
                            "per batch")
    train.add_argument("--cutmix", type=non_negative_float, default=None,
                       help="CutMix alpha (default: CIFAR off, ImageNet 1.0)")
    train.add_argument("--random-erasing", type=probability, default=None,
                       help="probability of erasing a box of each image (default 0)")
    train.add_argument("--random-labels", type=probability, default=None,
                       help="CIFAR: fraction of training labels replaced by random ones, fixed by --seed "
                            "(Maennel et al. App. A.1; default 0)")
    train.add_argument("--rand-augment", default="recipe",
                       help="a RandAugment form: timm:m9-n2-mstd0.5[-inc1] (timm's rand-m9-mstd0.5), "
                            "torchvision:n2-m12 (RandAugment(2, 12), CIFAR default), keras:n2-f0.4 "
                            "(keras.layers.RandAugment; tf pipeline only); 'none'; or 'recipe'")
    train.add_argument("--pipeline", choices=("auto", "native", "tf"), default=None,
                       help="input stream: native (batches augmented on the device in Keras ops, no "
                            "TensorFlow needed; CIFAR), tf (tf.data), auto (default: native without "
                            "TensorFlow, else tf)")
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
    train.add_argument("--distribution", choices=DISTRIBUTIONS, default=None,
                       help="devices: data_parallel (JAX), mirrored or tpu (TensorFlow), multi_worker "
                            "(several processes; JAX or TensorFlow, from the environment: "
                            "docs/models-and-recipes.md), auto")

    init = sub.add_parser(
        "init", help="apply an init spec to your own model and save it as .keras",
        description="Applies an init spec (any --init form, joined by +) to a .keras file, "
                    "keras.applications:NAME, a KerasHub preset (name or directory), keras_cv:PRESET or a "
                    "zoo model, and saves it as a new .keras file; prints (and writes to --report) what "
                    "changed.")
    init.add_argument("model", metavar="MODEL",
                      help="a .keras file, keras.applications:NAME (with --input-shape, --classes), a "
                           "KerasHub preset name or directory, keras_cv:PRESET, or a zoo name "
                           "(convmixer-256/8)")
    init.add_argument("--init", required=True, help="an init spec: " + methods.form_usage() + ", joined by +")
    init.add_argument("--out", required=True, help="where to save the initialized model (.keras)")
    init.add_argument("--data", default=None,
                      help="images for the forms that measure data: .npz, ImageFolder "
                           "dir/.zip")
    init.add_argument("--data-scaling", choices=DATA_SCALINGS, default="channel",
                      help="how --data is scaled for the model: per-channel standardization as the CIFAR "
                           "recipe (default), [-1, 1], or raw 0-255 (keras.applications models that "
                           "preprocess their input)")
    init.add_argument("--seed", type=int, default=0)
    init.add_argument("--freeze", choices=("depthwise", "all_spatial"), default=None,
                      help="freeze the depthwise (or every k x k) kernels; kept in the .keras file")
    init.add_argument("--input-shape", type=_shape, default=None,
                      help="H,W,C of a zoo or keras.applications model (default 32,32,3 / 224,224,3)")
    init.add_argument("--classes", type=positive_int, default=None,
                      help="classes of a zoo or keras.applications model (default 10 / 1000)")
    init.add_argument("--report", default=None, help="also write what changed here (Markdown)")
    add_overwrite_argument(init, "an existing --out or --report")
    _add_backend_argument(init)

    inspect = sub.add_parser(
        "inspect", help="what a model's filters and MLP blocks look like, against the papers' findings",
        description="Fits the covariance paper's closed form (sigma, fit error) and the LC paper's filter "
                    "variance entropy to every spatial conv, measures W1 W1^T of every MLP block and, "
                    "with --data, the first layer's misalignment with the data; writes report.md and "
                    "report.json to --out.")
    inspect.add_argument("model", metavar="MODEL", help="as for structinit init")
    inspect.add_argument("--data", default=None, help="images for the first layer's alignment (.npz, "
                                                      "ImageFolder dir/.zip)")
    inspect.add_argument("--data-scaling", choices=DATA_SCALINGS, default="channel")
    inspect.add_argument("--seed", type=int, default=0, help="of the subset of --data measured")
    inspect.add_argument("--input-shape", type=_shape, default=None)
    inspect.add_argument("--classes", type=positive_int, default=None)
    inspect.add_argument("--out", default="structinit_inspect", help="folder of report.md and report.json")
    add_overwrite_argument(inspect, "an existing report in --out")
    _add_backend_argument(inspect)

    for command in methods.commands().values():
        added = sub.add_parser(command.name, help=command.help, description=command.description)
        command.arguments(added)
        _add_backend_argument(added)
    return parser


BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
#: The subcommands of the command line itself (the method records add theirs).
CORE_COMMANDS = {"train": "keras_structinit.cli.train", "init": "keras_structinit.cli.init",
                 "inspect": "keras_structinit.cli.inspect"}


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


def _reads_tf_data(args):
    """Whether a ``train`` run imports TensorFlow for ``tf.data`` (``recipes.native.choose_pipeline``)."""
    return (args.pipeline == "tf" or args.distribution == "multi_worker"
            or str(args.data or "").startswith("tfds:")
            or (args.recipe, os.environ.get("KERAS_BACKEND")) in SLOWER_NATIVE)


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

    0 on success, 2 for a usage or data error (one line on stderr), 3 for a ``train`` run stopped
    by a non-finite loss, 130 when interrupted with Ctrl-C (after saying where partial results are).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        _ensure_backend(args.backend, argv)
    except ValueError as err:
        return usage_error(args.command, err)
    if os.environ.get("KERAS_BACKEND") == "tensorflow" or (args.command == "train" and _reads_tf_data(args)):
        _quiet_tensorflow_import()
    try:
        if args.command in CORE_COMMANDS:
            return importlib.import_module(CORE_COMMANDS[args.command]).run(args)
        return importlib.import_module(methods.commands()[args.command].module).run(args)
    except KeyboardInterrupt:
        print(f"structinit {args.command}: interrupted", file=sys.stderr, flush=True)
        return 130
