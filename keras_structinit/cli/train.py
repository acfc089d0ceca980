"""``structinit train``: one recipe run from a model name and an init spec.

Writes to ``out``: ``log.csv`` (``keras.callbacks.CSVLogger``, one row per
epoch), ``results.json`` (config, versions, machine, per-epoch metrics, final
validation and ``eval_data`` accuracy), ``results.md`` (the printed table)
and ``learning_curves.png`` when matplotlib is installed.
"""

from __future__ import annotations

import os
import sys
import time

import keras

import keras_structinit as ks
from keras_structinit import covariance, datasets, validation
from keras_structinit.cli import RECIPES
from keras_structinit.cli.arguments import check_exists, usage_error
from keras_structinit.io_utils import write_json, write_text
from keras_structinit.models.registry import build_model, parse_model_name
from keras_structinit.recipes import cifar, imagenet
from keras_structinit.recipes.data import check_rand_augment, imagenet_source
from keras_structinit.reporting import format_table, machine_info, versions

INIT_FORMS = ("default", "conv-cov[:PRESET]", "cov-transfer:PATH", "torch-uniform")
TABLE = (
    ("model", "model"),
    ("init", "init"),
    ("filters", lambda row: "frozen" if row["frozen"] else "trained"),
    ("epochs", "epochs"),
    ("final val acc", "final_val_accuracy", ".4f"),
    ("best val acc", "best_val_accuracy", ".4f"),
    ("eval acc", "eval_accuracy", ".4f"),
    ("train time (s)", "train_seconds", ".1f"),
)


def _rand_augment(text):
    """'recipe' (keep the recipe's default), None for 'none', or a checked ``(N, M)``."""
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


def run(args):
    """Runs ``structinit train`` with parsed ``args``; returns the exit status."""
    try:
        family, _ = parse_model_name(args.model)
        parse_init(args.init)
        if (args.frozen or args.init != "default") and not family.startswith(("convmixer", "convnext")):
            raise ValueError(
                f"--frozen and --init {args.init} act on spatial depthwise convs, which {args.model} "
                "does not have (use a convmixer-* or convnext-* model)"
            )
        rand_augment = _rand_augment(args.rand_augment)
        validation.rate(args.val_split, "--val-split")
        check_exists(None if str(args.data).startswith("tfds:") else args.data, "--data")
        check_exists(args.eval_data, "--eval-data")
        if args.recipe == "imagenet" and args.data is None:
            raise ValueError("--recipe imagenet needs --data (an ImageFolder directory or tfds:NAME)")
    except ValueError as err:
        return usage_error("train", err)
    model_kwargs = {"kernel_size": args.kernel_size, "patch_size": args.patch_size}
    run_train(
        args.recipe, args.model, args.data, args.epochs, args.out, init=args.init, frozen=args.frozen,
        eval_data=args.eval_data, seed=args.seed, batch_size=args.batch_size, learning_rate=args.lr,
        weight_decay=args.weight_decay, train_size=args.train_size, validation_split=args.val_split,
        image_size=args.image_size, precision=args.precision, distribution=args.distribution,
        rand_augment=rand_augment, label_smoothing=args.label_smoothing,
        model_kwargs={k: v for k, v in model_kwargs.items() if v is not None},
        verbose=1 if sys.stdout.isatty() else 2,
    )
    return 0


def parse_init(spec):
    """``(kind, argument)`` of an ``--init`` spec (one of ``INIT_FORMS``); else a ``ValueError``."""
    validation.text(spec, "init")
    kind, _, arg = spec.partition(":")
    if kind in ("default", "torch-uniform") and not arg:
        return kind, None
    if kind == "conv-cov":
        preset = arg or "cifar-p2"
        if preset not in covariance.PRESETS:
            raise ValueError(
                f"Unknown ConvCovariance preset in init={spec!r}; presets: {sorted(covariance.PRESETS)}."
            )
        return kind, preset
    if kind == "cov-transfer":
        if not arg:
            raise ValueError(
                f"`init` cov-transfer needs a bank path: cov-transfer:PATH. Received: init={spec!r}")
        if not os.path.isfile(arg):
            raise ValueError(f"Covariance bank not found: init={spec!r} "
                             "(expected an .npz saved by FilterCovariance.save).")
        return kind, arg
    raise ValueError(f"`init` must be one of {INIT_FORMS}. Received: init={spec!r}")


def apply_init(model, spec, seed):
    """Applies an ``--init`` spec (a string or a parsed pair) to the spatial depthwise convs of ``model``.

    "default": the builder's own initialization. "torch-uniform":
    :func:`keras_structinit.apply_torch_uniform` (PyTorch's default
    U[-1/sqrt(fan_in), 1/sqrt(fan_in)]). "conv-cov[:PRESET]":
    :func:`keras_structinit.apply_conv_covariance`. "cov-transfer:PATH":
    :func:`keras_structinit.apply_covariance_transfer` from a saved bank.
    Returns what the applied function returns (``[]`` for "default").
    """
    kind, arg = parse_init(spec) if isinstance(spec, str) else spec
    if kind == "conv-cov":
        return ks.apply_conv_covariance(model, preset=arg, seed=seed)
    if kind == "cov-transfer":
        return ks.apply_covariance_transfer(model, bank=arg, seed=seed)
    if kind == "torch-uniform":
        return ks.apply_torch_uniform(model, seed=seed)
    return []


def run_train(recipe, model, data, epochs, out, init="default", frozen=False, eval_data=None,
              seed=0, batch_size=None, learning_rate=None, weight_decay=None, train_size=None,
              validation_split=0.1, image_size=None, precision=None, distribution=None,
              rand_augment="recipe", label_smoothing=None, model_kwargs=None, verbose="auto"):
    """Trains ``model`` (a registry name) with a recipe; returns the results dict (also in ``out``)."""
    validation.one_of(recipe, "recipe", RECIPES)
    parse_model_name(model)
    init_spec = parse_init(init)
    model_kwargs = dict(model_kwargs or {})
    keras.utils.set_random_seed(seed)
    options = {"batch_size": batch_size, "learning_rate": learning_rate,
               "weight_decay": weight_decay, "label_smoothing": label_smoothing}
    options = {k: v for k, v in options.items() if v is not None}
    if rand_augment != "recipe":
        options["rand_augment"] = rand_augment

    if recipe == "imagenet":
        input_shape = (image_size or 224,) * 2 + (3,)
        num_classes = imagenet_source(data, "train", 8, False, seed)[1]
        description = f"ImageFolder/TFDS {data}"
    else:
        (x, y), (x_val, y_val) = datasets.load_cifar(
            data, recipe, validation_split=validation_split, seed=seed, train_size=train_size)
        num_classes = 100 if recipe == "cifar100" else 10
        input_shape = x.shape[1:]
        description = (f"{len(x)} training / {len(x_val)} held-out validation images "
                       f"from {data or 'keras.datasets'}")

    def builder():
        m = build_model(model, num_classes, input_shape, **model_kwargs)
        apply_init(m, init_spec, seed)
        if frozen:
            ks.freeze_spatial(m)
        return m

    os.makedirs(out, exist_ok=True)
    callbacks = [keras.callbacks.CSVLogger(os.path.join(out, "log.csv"))]
    start = time.perf_counter()
    if recipe == "imagenet":
        history = imagenet.fit_imagenet(
            builder, data, epochs, image_size=input_shape[0], validation_data=None,
            eval_data=eval_data, precision=precision, distribution=distribution, seed=seed,
            callbacks=callbacks, verbose=verbose, **options)
    else:
        history = cifar.fit_cifar(
            builder, (x, y), epochs, validation_data=(x_val, y_val) if len(x_val) else None,
            eval_data=eval_data, precision=precision, distribution=distribution, seed=seed,
            callbacks=callbacks, verbose=verbose, num_classes=num_classes, **options)
    total = time.perf_counter() - start
    metrics = {k: [float(v) for v in vs] for k, vs in history.history.items()}
    val = metrics.get("val_accuracy")
    row = {
        "model": model, "init": init, "frozen": bool(frozen), "epochs": epochs,
        "final_val_accuracy": val[-1] if val else None, "best_val_accuracy": max(val) if val else None,
        "eval_accuracy": history.eval_results["accuracy"] if history.eval_results else None,
        "train_seconds": round(history.train_seconds, 1),
    }
    table = format_table([row], TABLE)
    print("\n" + table, flush=True)
    config = dict(recipe=recipe, model=model, init=init, frozen=bool(frozen), epochs=epochs,
                  data=None if data is None else str(data),
                  eval_data=None if eval_data is None else str(eval_data),
                  seed=seed, train_size=train_size, validation_split=validation_split,
                  precision=precision, distribution=None if distribution is None else str(distribution),
                  model_kwargs=model_kwargs, **options)
    results = {
        "config": config,
        "data": description,
        "versions": versions(),
        "machine": machine_info(),
        "model_params": int(history.model.count_params()),
        "metrics": metrics,
        "eval": history.eval_results,
        "normalization": getattr(history, "normalization", None),
        "summary": row,
        "wall_seconds": round(total, 1),
    }
    write_json(os.path.join(out, "results.json"), results)
    write_text(os.path.join(out, "results.md"), table + "\n")
    try:
        from keras_structinit import viz

        viz.plot_learning_curves({f"{model} {init}": metrics}, os.path.join(out, "learning_curves.png"),
                                 metrics=("val_accuracy", "loss") if val else ("accuracy", "loss"))
    except ImportError as err:
        print(f"Skipping plots: {err}")
    print(f"Wrote {out}/results.json, results.md, log.csv", flush=True)
    return results
