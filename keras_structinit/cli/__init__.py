"""The ``structinit`` command line: ``structinit train`` and the subcommands the method records add.

This module holds the parser and the dispatch. ``train`` runs from
:mod:`~keras_structinit.cli.train`; the records' commands (``demo``, ``select``, ...)
from their methods' ``cli`` modules (:class:`keras_structinit.methods.Command`). Each is
imported only when it runs, so that ``--help``, argument errors and ``--backend``
come before any Keras import.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import os
import sys

from keras_structinit import methods
from keras_structinit.cli import prechecks
from keras_structinit.utils.arguments import (
    BACKENDS,
    DATA_SCALINGS,
    MODEL_TEXT,
    ZOO_NAMES,
    add_max_model_bytes_argument,
    add_overwrite_argument,
    positive_int,
    usage_error,
)
from keras_structinit.utils.model_files import max_model_bytes_scope

__all__ = ["build_parser", "choose_backend", "main"]


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
    parser.add_argument(
        "--backend", choices=BACKENDS, default=None, help="Keras backend (default: KERAS_BACKEND)"
    )


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _version():
    """The installed package's version (``importlib.metadata``; no Keras import)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("keras_structinit")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser(full=False):
    """The ``structinit`` argument parser (``args.command`` names the subcommand); ``full``: every
    flag of ``train`` in its ``--help`` (``--help-all``). ``parser.train_parser`` is ``train``'s."""
    from keras_structinit.cli.train_flags import add_arguments as add_train_arguments

    parser = _Parser(prog="structinit", description="Structured initialization for Keras 3 vision models.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser(
        "train",
        help="train a model with a CIFAR or ImageNet recipe",
        description="Trains a model (the zoo's or your own) with a model.fit recipe and an init spec; writes "
        "model.keras, log.csv, results.json and learning curves to --out.",
    )
    add_train_arguments(train, full)
    _add_backend_argument(train)
    parser.train_parser = train
    _add_init(sub)
    _add_inspect(sub)
    _add_demo(sub)
    for command in methods.commands().values():
        added = sub.add_parser(command.name, help=command.help, description=command.description)
        command.arguments(added)
        _add_backend_argument(added)
    return parser


def _add_demo(sub):
    from keras_structinit.cli import demo_flags

    demo = sub.add_parser("demo", help=demo_flags.HELP, description=demo_flags.DESCRIPTION)
    demo_flags.add_arguments(demo)
    _add_backend_argument(demo)


def _add_model_arguments(parser):
    """MODEL and what sizes a built one (``init`` and ``inspect``)."""
    parser.add_argument(
        "model",
        metavar="MODEL",
        help=f"{MODEL_TEXT} (zoo and keras.applications models are sized by --input-shape and "
        f"--classes); zoo names: {ZOO_NAMES}",
    )
    parser.add_argument(
        "--input-shape",
        type=_shape,
        default=None,
        help="H,W,C of a zoo or keras.applications model (default 32,32,3 / 224,224,3)",
    )
    parser.add_argument(
        "--classes",
        type=positive_int,
        default=None,
        help="classes of a zoo or keras.applications model (default 10 / 1000)",
    )
    parser.add_argument(
        "--data-scaling",
        choices=DATA_SCALINGS,
        default="channel",
        help="how --data is scaled for the model: per-channel standardization as the CIFAR "
        "recipe (default), [-1, 1], or raw 0-255 (keras.applications models that "
        "preprocess their input)",
    )
    add_max_model_bytes_argument(parser)


def _add_init(sub):
    init = sub.add_parser(
        "init",
        help="apply an init spec to your own model and save it as .keras",
        description="Applies an init spec (any --init form, joined by +) to a model and saves it as a new "
        ".keras file; prints (and writes to --report) what changed.",
    )
    _add_model_arguments(init)
    init.add_argument("--init", required=True, help="an init spec: " + methods.form_usage() + ", joined by +")
    init.add_argument("--out", required=True, help="where to save the initialized model (.keras)")
    init.add_argument(
        "--data",
        default=None,
        help="images for the forms that measure data: .npz, ImageFolder dir/.zip (default: none)",
    )
    init.add_argument(
        "--teacher",
        default=None,
        help="a larger model of its family (.keras) that --init auto may select weights from; the same as "
        "--init auto:TEACHER.keras (default: none)",
    )
    init.add_argument("--seed", type=int, default=0, help="(default 0)")
    init.add_argument(
        "--freeze",
        choices=("depthwise", "all_spatial"),
        default=None,
        help="freeze the depthwise (or every k x k) kernels; kept in the .keras file",
    )
    init.add_argument("--report", default=None, help="also write what changed here (Markdown)")
    add_overwrite_argument(init, "an existing --out or --report")
    _add_backend_argument(init)


def _add_inspect(sub):
    inspect = sub.add_parser(
        "inspect",
        help="what a model's filters and MLP blocks look like, against the papers' findings",
        description="Measures a model's filters and MLP blocks as the papers do (each method's sections) "
        "and, "
        "with --data, the first layer's alignment with the data; writes report.md and "
        "report.json to --out.",
    )
    _add_model_arguments(inspect)
    inspect.add_argument(
        "--data",
        default=None,
        help="labelled images for the first layer's alignment and "
        "the neurons' specialization by class (.npz, "
        "ImageFolder dir/.zip; default: none)",
    )
    inspect.add_argument("--seed", type=int, default=0, help="of the subset of --data measured (default 0)")
    inspect.add_argument(
        "--out",
        default="structinit_inspect",
        help="folder of report.md and report.json (default structinit_inspect)",
    )
    add_overwrite_argument(inspect, "an existing report in --out")
    _add_backend_argument(inspect)


BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
#: The subcommands of the command line itself (the method records add theirs).
CORE_COMMANDS = {
    "train": "keras_structinit.cli.train",
    "init": "keras_structinit.cli.init",
    "inspect": "keras_structinit.cli.inspect",
    "demo": "keras_structinit.cli.demo",
}


def _check_backend_installed(backend, given_as):
    """``ValueError`` saying which extra to install when ``backend``'s library is missing."""
    if importlib.util.find_spec(BACKEND_MODULES[backend]) is None:
        raise ValueError(
            f"{given_as}: {BACKEND_MODULES[backend]} is not installed; install it with "
            f'pip install -e ".[{backend}]" (from the repository root)'
        )


def _configured_backend():
    """The backend Keras would take with no ``KERAS_BACKEND``: ``keras.json``'s, else TensorFlow."""
    import json

    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as f:
            backend = json.load(f).get("backend")
    except (OSError, ValueError, AttributeError):
        backend = None
    return backend if backend in BACKEND_MODULES else "tensorflow"


def choose_backend(installed=None):
    """The backend to select when neither ``--backend`` nor ``KERAS_BACKEND`` names one: ``None``
    (Keras' own choice, ``keras.json`` or TensorFlow) when that one is installed, else the one
    backend installed. ``ValueError`` naming the choices when none, or several others, are."""
    if installed is None:
        installed = [
            b for b, module in BACKEND_MODULES.items() if importlib.util.find_spec(module) is not None
        ]
    configured = _configured_backend()
    if configured in installed:
        return None
    if len(installed) == 1:
        return installed[0]
    if not installed:
        raise ValueError(
            'no Keras backend is installed: install one with pip install -e ".[jax]", '
            '".[torch]" or ".[tensorflow]" (from the repository root)'
        )
    raise ValueError(
        f"Keras' default backend ({configured}) is not installed: choose one of "
        f"{', '.join(installed)} with --backend or KERAS_BACKEND"
    )


def _ensure_backend(backend, argv):
    """Selects ``backend`` before Keras is imported, or re-runs the command if Keras is on another one.
    With neither ``--backend`` nor ``KERAS_BACKEND``: :func:`choose_backend`, said in a first line."""
    if backend is None:
        env_backend = os.environ.get("KERAS_BACKEND")
        if env_backend in BACKEND_MODULES and "keras" not in sys.modules:
            _check_backend_installed(env_backend, f"KERAS_BACKEND={env_backend}")
        if env_backend is None and "keras" not in sys.modules:
            chosen = choose_backend()
            if chosen is not None:
                os.environ["KERAS_BACKEND"] = chosen
                print(
                    f"structinit: backend {chosen} (the one installed; --backend or KERAS_BACKEND chooses)",
                    flush=True,
                )
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
    """Imports TensorFlow, when it is installed, with the C++ lines of its start-up silenced.

    KerasHub needs ``tensorflow-text``, which installs TensorFlow's GPU build; on a machine without
    CUDA that build logs its failed CUDA probes ("Could not find cuda drivers", "failed call to
    cuInit") on every start. They are written by C++ to file descriptor 2 at import and at the first
    device query, so both happen with that descriptor pointed at ``/dev/null``
    (:class:`_stderr_silenced`); Python errors are raised after it is restored. Every line TensorFlow
    prints while it starts is silenced this way (absl's "All log messages before
    absl::InitializeLog()", oneDNN's, ``cpu_feature_guard``'s "AVX2 FMA" pair, the CUDA probes);
    ``TF_CPP_MIN_LOG_LEVEL`` (default 2 here: errors only) still governs later messages, such as
    oneDNN's ``DT_INT64`` line at the first training step. TensorFlow is imported whatever the
    backend: on JAX and torch, Keras (``keras.utils.set_random_seed``, ``Model.save``) and KerasHub
    (through ``tensorflow-text``) import it whenever it is installed, and its start-up could not be
    silenced then without an import hook. Set ``STRUCTINIT_TF_STARTUP_LOG=1`` to see the lines.
    """
    if (
        "tensorflow" in sys.modules
        or os.environ.get("STRUCTINIT_TF_STARTUP_LOG")
        or importlib.util.find_spec("tensorflow") is None
    ):
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _stderr_silenced():
        import tensorflow as tf

        tf.config.list_physical_devices()


class _stderr_silenced:
    """File descriptor 2 pointed at ``/dev/null`` inside the ``with`` block (C++ writes there)."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved, self.devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(self.devnull, 2)

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        os.close(self.devnull)
        return False


def _dispatch(args, parser):
    if args.command == "train":
        return importlib.import_module(CORE_COMMANDS["train"]).run(args, parser.train_parser)
    if args.command in CORE_COMMANDS:
        return importlib.import_module(CORE_COMMANDS[args.command]).run(args)
    return importlib.import_module(methods.commands()[args.command].module).run(args)


def main(argv=None):
    """Runs ``structinit`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success, 2 for a usage or data error (one line on stderr), 3 for a ``train`` run stopped
    by a non-finite loss, 130 when interrupted with Ctrl-C and 143 with SIGTERM during training (after
    saying, in one line, where partial results are), 1 when the disk fails a run (full: one line, and
    ``results.json`` says so).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(full="--help-all" in argv)
    args = parser.parse_args(argv)
    if getattr(args, "help_all", False):
        parser.train_parser.print_help()
        return 0
    try:
        prechecks.check(args)  # no Keras yet: a wrong path or init spec is told at once
        _ensure_backend(args.backend, argv)
    except ValueError as err:
        return usage_error(args.command, err)
    _quiet_tensorflow_import()  # whatever the backend: Keras and KerasHub import it when installed
    try:
        with max_model_bytes_scope(getattr(args, "max_model_bytes", None)):  # every model file read
            return _dispatch(args, parser)
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM during training (recipes.progress.Terminated)
        signum = int(getattr(err, "signum", 2))
        if not getattr(err, "said", False):  # a run that recorded its epochs said so in its own line
            print(f"structinit {args.command}: interrupted", file=sys.stderr, flush=True)
        return 128 + signum
    finally:
        # A fit that an interrupt ended leaves its data iterators in reference cycles (on TensorFlow
        # a tf.data iterator over Python code); destroyed at interpreter exit, such an iterator can
        # wait forever on a thread that needs the interpreter (seen: a SIGTERM'd run hung at exit in
        # 1 of ~10 CI runs). Collected here, they go while everything still runs.
        gc.collect()
