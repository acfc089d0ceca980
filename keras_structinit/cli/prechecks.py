"""The checks of a command line that need no model, run before Keras and the backend are imported
(issue 76, point 2): a mistake in a path or an init spec is reported in the time of an argparse error,
not of a model load. Each command checks everything again, in its own order, once Keras is loaded;
these only come first. No Keras import here."""

from __future__ import annotations

import os

from keras_structinit.methods import parse_init_spec
from keras_structinit.utils.arguments import check_exists, check_teacher

__all__ = ["check"]

#: ``{dest: flag}`` of the arguments that name images (a path, unless a named source such as
#: ``tfds:NAME``).
DATA = {"data": "--data", "eval_data": "--eval-data"}
#: ``{dest: flag}`` of the arguments that name a model; ``MODEL`` is the positional one of ``init``
#: and ``inspect``.
MODELS = {
    "model": "--model",
    "distill_from": "--distill-from",
    "teacher": "--teacher",
    "student": "--student",
}


def check(args):
    """``ValueError`` (one line, naming the flag) for a path that does not exist among the images and
    model files ``args`` names, or an init spec its grammar refuses (files the spec reads included)."""
    for dest, flag in DATA.items():
        path = getattr(args, dest, None)
        if path is not None and ":" not in path:  # tfds:NAME and other named sources load later
            check_exists(path, flag)
    positional = args.command in ("init", "inspect")
    for dest, flag in MODELS.items():
        spec = getattr(args, dest, None)
        if isinstance(spec, str) and not os.path.isdir(spec):
            check_teacher(spec, "MODEL" if positional and dest == "model" else flag)
    init = getattr(args, "init", None)
    if isinstance(init, str):
        parse_init_spec(init)
