"""``structinit train``: one recipe run from a model name and an init spec.

Writes to ``out``: ``model.keras`` (the trained model, compiled, frozen
kernels recorded: reload with :func:`keras_structinit.load_frozen_model` or
``keras.saving.load_model``), ``log.csv`` (``keras.callbacks.CSVLogger``, one
row per epoch), ``results.json`` (config, versions, machine, per-epoch
metrics, final validation and ``eval_data`` accuracy), ``results.md`` (the
printed table) and ``learning_curves.png`` when matplotlib is installed.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import sys
import time
from typing import NamedTuple

import keras
import numpy as np

from keras_structinit import datasets, validation
from keras_structinit.arguments import (
    INPUT_ERRORS,
    OVERWRITE_HINT,
    RECIPES,
    check_exists,
    check_teacher,
    usage_error,
)
from keras_structinit.freezing import freeze_spatial
from keras_structinit.io_utils import atomic_path, prepare_output_dir, write_json, write_text
from keras_structinit.methods import check_parts, initialize, load_parts, paper_setups, parse_init_spec
from keras_structinit.models.registry import build_model, parse_model_name
from keras_structinit.recipes import backup, cifar, imagenet, native
from keras_structinit.recipes.config import RecipeConfig
from keras_structinit.recipes.data import imagenet_source
from keras_structinit.recipes.distill import fit_distill, load_teacher
from keras_structinit.recipes.progress import CSVLogger, InterruptAtBatchEnd, progress_callbacks
from keras_structinit.recipes.rand_augment import parse_rand_augment_flag
from keras_structinit.recipes.training import channel_normalizer, check_whole_batches
from keras_structinit.reporting import format_table, machine_info, versions
from keras_structinit.walker import find_kernels

#: The files a run writes to its ``out`` folder.
OUTPUT_FILES = ("log.csv", "results.json", "results.md", "learning_curves.png", "model.keras")
#: The folder in ``out`` where a run keeps what ``--resume`` needs (:class:`recipes.backup.RunBackup`).
BACKUP_DIR = "backup"
#: The file a run holds an exclusive lock on while it uses ``out`` (the kernel releases it on a kill).
LOCK_FILE = ".structinit.lock"
#: ``results.json``'s ``status``: written ``running`` first, so a killed run never looks finished.
STATUSES = ("running", "finished", "interrupted", "diverged")
#: The statuses of a run ``--resume`` goes on with.
UNFINISHED = ("running", "interrupted")
#: The exit status of a run stopped by a non-finite loss.
EXIT_DIVERGED = 3


class RunRefused(ValueError):
    """The run cannot start or go on in ``--out`` as asked (another run holds it, it holds a run
    that a new one may not replace, or ``--resume`` with other settings)."""
# Training images whose patches data-aligned init measures (a seeded random subset).
ALIGN_IMAGES = 10_000
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


def run(args):
    """Runs ``structinit train`` with parsed ``args``; returns the exit status.

    Argument and data errors (a missing, empty or corrupt ``--data``, more
    ``--train-size`` than the data holds, offline without ``--data``, a
    teacher that cannot be loaded, an ``--out`` that holds an earlier run's
    results without ``--overwrite``) print one line and return 2, before
    anything is written.
    """
    try:
        paper, paper_kwargs = _apply_paper(args)
        if args.distribution == "multi_worker":
            args.out = _process_out(args.out)
    except (*INPUT_ERRORS, RuntimeError) as err:
        return usage_error("train", err)
    try:
        family, _ = parse_model_name(args.model)
        parts = parse_init_spec(args.init)
        _check_spatial_target(args, family, parts)
        _check_out(args.out, args.overwrite, parts, args.data, args.eval_data, args.distill_from,
                   name="--out", hint=OVERWRITE_HINT + " (or --resume, to go on with an unfinished run)",
                   check_only=True, resume=args.resume)
        parse_rand_augment_flag(args.rand_augment)
        validation.rate(args.val_split, "--val-split")
        if args.distill_from is not None:
            _check_distill(args.recipe, args.distill_alpha)
            check_teacher(args.distill_from, "--distill-from")
        config = RecipeConfig.from_args(args)
        check_exists(None if str(args.data).startswith("tfds:") else args.data, "--data")
        check_exists(args.eval_data, "--eval-data")
        _check_devices(args.precision, args.distribution)
        if args.recipe == "imagenet" and args.data is None:
            raise ValueError("--recipe imagenet needs --data (an ImageFolder directory or tfds:NAME)")
        data = prepare_data(args.recipe, args.data, seed=args.seed, train_size=args.train_size,
                            validation_split=args.val_split, eval_data=args.eval_data, cli=True)
        if config.is_cifar:  # before any process trains (each would fail after its first epoch)
            sizes = {name: None if part is None else len(part[0]) for name, part in
                     (("--data", data.train), ("the --val-split hold-out", data.validation),
                      ("--eval-data", data.eval))}
            check_whole_batches(config.resolved()["batch_size"], args.distribution, **sizes)
        teachers = _load_teachers(parts, args.distill_from)
        model_kwargs = {**paper_kwargs, "kernel_size": args.kernel_size, "patch_size": args.patch_size}
        check_init(args.model, data, parts, seed=args.seed, teachers=teachers, image_size=args.image_size,
                   **{k: v for k, v in model_kwargs.items() if v is not None})
    except INPUT_ERRORS as err:
        return usage_error("train", err)
    try:
        results = run_train(
            args.model, data, args.out, config, init=args.init, frozen=args.frozen,
            distill_from=args.distill_from, distill_alpha=args.distill_alpha, distill_mode=args.distill_mode,
            overwrite=args.overwrite, teachers=teachers, paper=paper, resume=args.resume,
            model_kwargs={k: v for k, v in model_kwargs.items() if v is not None},
        )
    except RunRefused as err:
        return usage_error("train", err)
    return EXIT_DIVERGED if results["status"] == "diverged" else 0


#: ``{setting: (args attribute, flag)}``: the ``structinit train`` option of each setting a
#: :class:`~keras_structinit.methods.PaperSetup` may fix (a builder argument without a flag
#: goes to the model as it is).
PAPER_FLAGS = {
    "model": ("model", "--model"), "init": ("init", "--init"), "frozen": ("frozen", "--frozen"),
    "train_size": ("train_size", "--train-size"), "epochs": ("epochs", "--epochs"),
    "batch_size": ("batch_size", "--batch-size"), "learning_rate": ("lr", "--lr"),
    "weight_decay": ("weight_decay", "--weight-decay"),
    "label_smoothing": ("label_smoothing", "--label-smoothing"),
    "rand_augment": ("rand_augment", "--rand-augment"),
    "warmup_epochs": ("warmup_epochs", "--warmup-epochs"),
    "optimizer": ("optimizer", "--optimizer"), "schedule": ("schedule", "--schedule"),
    "normalization": ("normalization", "--normalization"), "pad": ("pad", "--pad"),
    "flip": ("flip", "--no-flip"),
    "mixup_alpha": ("mixup", "--mixup"), "cutmix_alpha": ("cutmix", "--cutmix"),
    "random_erasing": ("random_erasing", "--random-erasing"),
    "random_labels": ("random_labels", "--random-labels"),
    "kernel_size": ("kernel_size", "--kernel-size"), "patch_size": ("patch_size", "--patch-size"),
}


def _as_flag_value(setting, value):
    """A setup's value as the command line holds it (``rand_augment``: a form's name or ``"none"``)."""
    if setting == "rand_augment":
        form = None if value is None else parse_rand_augment_flag(str(value))
        return "none" if form is None else str(form)
    return value


def _differs(dest, given, wanted):
    """Whether a flag's value departs from a paper's: RandAugment forms and init specs compare as
    parsed (``mean-shift+conv-cov`` is ``conv-cov+mean-shift``)."""
    if dest == "rand_augment":
        return parse_rand_augment_flag(given) != parse_rand_augment_flag(wanted)
    if dest == "init":
        return ([(p.name, p.value) for p in parse_init_spec(given)]
                != [(p.name, p.value) for p in parse_init_spec(wanted)])
    return given != wanted


def _apply_paper(args):
    """With ``--paper NAME``: fills every option the command line left unset from the setup, prints
    the setup, and returns ``(record, model_kwargs)``: what ``results.json`` keeps (the settings with
    their sources, the departures: flags given that differ from the paper) and the builder arguments
    that have no flag. Without it: ``(None, {})``. Then ``--model`` and ``--epochs`` must be set."""
    record, extra = None, {}
    if args.paper is not None:
        if args.recipe == "imagenet":
            raise ValueError("--paper sets a paper's CIFAR experiment; use --recipe cifar10 or cifar100")
        setup = paper_setups()[args.paper]
        settings = dict(setup.settings)
        model_kwargs, source = settings.pop("model_kwargs", ({}, ""))
        settings.update({k: (v, source) for k, v in model_kwargs.items()})
        departures = {}
        for setting, (value, _) in settings.items():
            if setting not in PAPER_FLAGS:
                extra[setting] = value
                continue
            dest, flag = PAPER_FLAGS[setting]
            wanted, given = _as_flag_value(setting, value), getattr(args, dest)
            if given is None or (dest == "rand_augment" and given == "recipe"):
                setattr(args, dest, wanted)
            elif _differs(dest, given, wanted):
                departures[setting] = {"flag": flag, "paper": value, "given": given}
        if "model" in departures and extra:  # the paper model's builder arguments fit it alone
            departures["model_kwargs"] = {"flag": "--model", "paper": extra, "given": {}}
            extra = {}
        record = {"name": setup.name, "paper": setup.paper,
                  "settings": {k: {"value": v, "source": s} for k, (v, s) in settings.items()},
                  "departures": departures, "notes": list(setup.notes)}
        print(f"Paper setup {setup.name!r}: {setup.paper}", flush=True)
        for setting, (value, source) in settings.items():
            mark = f"  <- departure: {departures[setting]['flag']} {departures[setting]['given']}" if (
                setting in departures) else ""
            print(f"  {setting} = {value!r}  [{source}]{mark}", flush=True)
        for note in setup.notes:
            print(f"  note: {note}", flush=True)
    for dest, flag in (("model", "--model"), ("epochs", "--epochs")):
        if getattr(args, dest) is None:
            raise ValueError(f"{flag} is required (or --paper NAME, which sets it)")
    args.init = "default" if args.init is None else args.init
    args.frozen = bool(args.frozen)
    return record, extra


def _process_out(out):
    """Joins this process to a multi-process run (before any computation) and returns its
    ``--out``: process 0 writes ``out``, process ``i > 0`` its own ``out/process_<i>``."""
    from keras_structinit.recipes import devices

    _, index = devices.initialize_processes()
    return out if index == 0 else os.path.join(out, f"process_{index}")


def _check_devices(precision, distribution):
    """``--precision`` and ``--distribution`` this machine can run, checked before any data is read."""
    from keras_structinit.recipes import devices

    devices.resolve_precision(precision)
    devices.check_distribution(distribution)


def _input_shape(recipe, data, image_size):
    """The model's input shape: the crop size for ImageNet, the images' shape for CIFAR."""
    if recipe == "imagenet" or not isinstance(data.train, tuple):
        return (image_size or 224,) * 2 + (3,)
    return tuple(data.train[0].shape[1:])


def check_init(model, data, parts, *, seed=0, teachers=None, image_size=None, **model_kwargs):
    """Raises what applying the init ``parts`` to a fresh ``model`` would raise, before anything trains.

    Applies them to a throwaway model (loaded arguments, such as teachers, from
    ``teachers``), except the forms that measure data, which check what they can
    without it (:func:`keras_structinit.methods.check_parts`).
    """
    m = build_model(model, data.num_classes, _input_shape(None, data, image_size), **model_kwargs)
    check_parts(m, load_parts(parts, dict(teachers or {})), seed=seed)


def _check_out(out, overwrite, parts, data, eval_data, distill_from, resume=False, **options):
    """:func:`prepare_output_dir` for a run's ``out``; its inputs are the data, teachers and banks.

    ``resume``: ``out`` must hold an unfinished run (``results.json`` with ``status`` "running" or
    "interrupted"), whose files stay; returns that ``results.json``.
    """
    name = options.pop("name", "out")
    inputs = [data, eval_data, distill_from, *(p.value for p in parts if p.form.reads_file)]
    backup_dir = os.path.join(os.fspath(out), BACKUP_DIR)
    if not resume:
        if not overwrite and backup.holds_backup(backup_dir):
            raise RunRefused(f"`{name}` {os.fspath(out)!r} holds the backup of a run ({backup_dir}): pass "
                              "--resume to go on with it, or --overwrite to replace it")
        prepared = prepare_output_dir(out, OUTPUT_FILES, name, overwrite=overwrite, inputs=inputs, **options)
        if overwrite and not options.get("check_only"):
            shutil.rmtree(os.path.join(prepared, BACKUP_DIR), ignore_errors=True)
        return prepared
    if overwrite:
        raise ValueError("--resume goes on with the run in --out, --overwrite replaces it: pass one of them")
    path = os.path.join(os.fspath(out), "results.json")
    try:
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
    except (OSError, ValueError):
        previous = {}
    if previous.get("status") not in UNFINISHED:
        raise ValueError(f"--resume: `{name}` {os.fspath(out)!r} holds no unfinished run (a results.json "
                         f"with status {' or '.join(UNFINISHED)})")
    if backup.latest(backup_dir) is None:  # a folder of no whole backup: latest's one-line ValueError
        raise ValueError(f"--resume: `{name}` {os.fspath(out)!r} holds no backup to go on from ({backup_dir} "
                         "is missing: the run finished no epoch, or it was removed); start anew with "
                         "--overwrite")
    # Its files stay; only the checks that no output replaces an input (or the folder is a file).
    prepare_output_dir(out, OUTPUT_FILES, name, overwrite=True, inputs=inputs, check_only=True)
    return previous


def _load_teachers(parts, distill_from, loaded=None):
    """``{spec: model}`` of the run's teachers (the init's loaded arguments and ``distill_from``),
    loaded before anything is written; ``loaded`` (kept, not changed) holds those already loaded."""
    loaded = dict(loaded or {})
    load_parts(parts, loaded)
    if distill_from is not None and distill_from not in loaded:
        loaded[distill_from] = load_teacher(distill_from)
    return loaded


def _check_distill(recipe, alpha):
    """Distillation runs on the CIFAR recipe, with a positive ``alpha``."""
    if recipe == "imagenet":
        raise ValueError("--distill-from works with the CIFAR recipes (cifar10, cifar100)")
    validation.positive_float(alpha, "--distill-alpha")


def _check_spatial_target(args, family, parts):
    """``--frozen`` and the depthwise ``--init`` forms need spatial depthwise convs (an LCResNet takes
    ``--frozen`` itself: its LC blocks' random spatial kernels); MLP forms need MLP blocks."""
    if any(p.form.needs_data for p in parts) and args.recipe == "imagenet":
        raise ValueError(f"--init {args.init} measures the training images of the CIFAR recipes "
                         "(cifar10, cifar100)")
    targets = {t for p in parts for t in p.form.targets}
    if "mlp_first" in targets and not family.startswith(("convnext", "vit")):
        raise ValueError(f"--init {args.init} acts on the first Dense of MLP blocks, which {args.model} "
                         "does not have (use a convnext-* or vit-* model)")
    passed = [f"--init {args.init}"] if "depthwise" in targets else []
    passed += ["--frozen"] if args.frozen and family != "lcresnet" else []
    if passed and not family.startswith(("convmixer", "convnext")):
        verb = "act" if len(passed) > 1 else "acts"
        raise ValueError(
            f"{' and '.join(passed)} {verb} on spatial depthwise convs, which {args.model} "
            "does not have (use a convmixer-* or convnext-* model)"
        )


class TrainingData(NamedTuple):
    """What :func:`run_train` trains and evaluates on, loaded and checked up front.

    ``train`` and ``validation`` are ``(x, y)`` arrays for CIFAR recipes (an
    ImageFolder path or ``tfds:NAME`` and ``None`` for ImageNet); ``eval``
    is ``(x, y)`` arrays or an ImageNet source, or ``None``.
    """

    train: object
    validation: object
    eval: object
    num_classes: int
    description: str
    source: str | None = None
    eval_source: str | None = None


def prepare_data(recipe, data, *, seed=0, train_size=None, validation_split=0.1, eval_data=None,
                 cli=False):
    """Loads and checks the data of a run before any model is built; a :class:`TrainingData`.

    Errors name the argument as the caller knows it (``--data`` with
    ``cli=True``, else ``data``): ``ValueError`` for data that is empty,
    corrupt or smaller than ``train_size``, ``FileNotFoundError`` for a
    missing path, ``RuntimeError`` for ``keras.datasets`` offline.
    """
    validation.one_of(recipe, "recipe", RECIPES)
    name, eval_name = ("--data", "--eval-data") if cli else ("data", "eval_data")
    if recipe == "imagenet":
        if isinstance(data, str) and data.startswith("tfds:"):
            num_classes = imagenet_source(data, "train", 8, False, seed, name=name)[1]
        else:
            num_classes = native.count_classes(data, name)
        return TrainingData(data, None, eval_data, num_classes,
                            f"ImageNet-style data from {data} ({num_classes} classes)",
                            str(data), None if eval_data is None else str(eval_data))
    (x, y), (x_val, y_val) = datasets.load_cifar(
        data, recipe, validation_split=validation_split, seed=seed, train_size=train_size, name=name)
    evaluation = None if eval_data is None else datasets.load_labeled_images(eval_data, eval_name)
    # The data's classes (keras.datasets' CIFAR-10/100: 10/100); a recipe's name does not set them.
    num_classes = 100 if data is None and recipe == "cifar100" else (
        10 if data is None else int(max(y.max(initial=0), y_val.max(initial=0))) + 1)
    if len(np.unique(y)) < 2:
        raise ValueError(f"`{name}` must hold images of 2 classes at least to train a classifier. "
                         f"Received: 1 class in {data!r}")
    if evaluation is not None and evaluation[1].max(initial=0) >= num_classes:
        raise ValueError(f"`{eval_name}` has labels up to {int(evaluation[1].max())}, beyond the "
                         f"{num_classes} classes of `{name}`")
    description = (f"{len(x)} training / {len(x_val)} held-out validation images "
                   f"{x.shape[1]}x{x.shape[2]}, {num_classes} classes, from "
                   f"{data or 'keras.datasets.' + recipe}"
                   + (f"; {len(evaluation[0])} evaluation images from {eval_data}" if evaluation else ""))
    return TrainingData((x, y), (x_val, y_val) if len(x_val) else None, evaluation, num_classes, description,
                        None if data is None else str(data), None if eval_data is None else str(eval_data))


def run_train(model, data, out, config, *, init="default", frozen=False, eval_data=None, train_size=None,
              validation_split=0.1, model_kwargs=None, callbacks=(), interactive=None, distill_from=None,
              distill_alpha=1.0, distill_mode="logits", overwrite=False, teachers=None, paper=None,
              resume=False):
    """Trains ``model`` (a registry name) with the recipe run ``config``; returns the results dict
    (also in ``out``).

    ``config`` is a :class:`~keras_structinit.recipes.RecipeConfig` (its recipe, epochs,
    optimizer, schedule, seed, ...). ``data`` is what the recipe reads (see
    :func:`prepare_data`) or a :class:`TrainingData` already prepared (then ``eval_data``,
    ``train_size`` and ``validation_split`` are not used). Progress: Keras' bar on a
    terminal, else a line per epoch (and every minute) with time per step and ETA
    (``interactive`` overrides ``sys.stdout.isatty()``). ``results.json`` is written first with
    ``"status": "running"``, then ``"finished"``; Ctrl-C stops at the next batch end on every
    backend (:class:`~keras_structinit.recipes.progress.InterruptAtBatchEnd`), the finished epochs
    are written to ``results.json`` (``"status": "interrupted"``) and ``log.csv``, and
    ``KeyboardInterrupt`` is raised again. After every epoch the weights, optimizer state and
    epoch are kept in ``out/backup``; ``resume=True`` goes on from there with a run killed or
    interrupted in ``out`` (the same configuration), appending to its ``log.csv``; the input
    stream starts where the killed run's would have been (CIFAR). ``distill_from`` (a teacher: anything
    ``load_teacher`` takes) trains with the weight-selection paper's distillation
    (:func:`keras_structinit.recipes.fit_distill`: ``distill_mode`` "logits" or "features",
    weight ``distill_alpha``). ``out`` may not hold the files of an earlier run
    (:data:`OUTPUT_FILES`) unless ``overwrite``, which removes them first; nor may a file
    written be one of the run's inputs. ``teachers``: ``{spec: model}`` already loaded (the
    command line loads them while it checks its arguments). ``paper``: what ``--paper`` set (its
    settings with their sources and the departures from them), kept in ``results.json``.
    """
    if not isinstance(config, RecipeConfig):
        raise TypeError(f"`config` must be a RecipeConfig. Received: config of type {type(config).__name__}")
    validation.boolean(overwrite, "overwrite")
    recipe, seed = config.recipe, config.seed
    family, _ = parse_model_name(model)
    parts = parse_init_spec(init)
    data_source = data.source if isinstance(data, TrainingData) else data
    eval_source = data.eval_source if isinstance(data, TrainingData) else eval_data
    previous = _check_out(out, overwrite, parts, data_source, eval_source, distill_from, check_only=True,
                          resume=resume)
    if distill_from is not None:
        _check_distill(recipe, distill_alpha)
    teachers = _load_teachers(parts, distill_from, teachers)
    run_parts = load_parts(parts, teachers)  # every argument to load is in `teachers` now
    teacher = None if distill_from is None else teachers[distill_from]
    model_kwargs = dict(model_kwargs or {})
    if not isinstance(data, TrainingData):
        data = prepare_data(recipe, data, seed=seed, train_size=train_size,
                            validation_split=validation_split, eval_data=eval_data)
    keras.utils.set_random_seed(seed)
    image_size = None if config.is_cifar else config.resolved()["image_size"]
    input_shape = _input_shape(recipe, data, image_size)
    if recipe != "imagenet":
        train_size = len(data.train[0])
    print(f"Data: {data.description}", flush=True)

    align_images = None
    if any(p.form.needs_data for p in parts):
        align_images = alignment_images(data.train[0], config.resolved()["normalization"], seed)
    lc_model = family == "lcresnet"
    if lc_model:  # the LC blocks freeze their own spatial kernels (kept frozen in the .keras config)
        model_kwargs["frozen"] = bool(frozen)

    def builder():
        m = build_model(model, data.num_classes, input_shape, **model_kwargs)
        initialize(m, run_parts, data=align_images, seed=seed)
        if lc_model:
            frozen_paths = [v.path for _, v in find_kernels(m, "all_spatial") if not v.trainable]
        else:
            frozen_paths = freeze_spatial(m) if frozen else []
        trainable = sum(math.prod(v.shape) for v in m.trainable_weights)
        print(f"Model: {model} {input_shape[0]}x{input_shape[1]}, {m.count_params():,} parameters "
              f"({trainable:,} trainable); init {init}; "
              + (f"{len(frozen_paths)} spatial kernels frozen" if frozen else "all filters trained")
              + f"; backend {keras.backend.backend()}", flush=True)
        return m

    try:
        _check_out(out, overwrite, parts, data_source, eval_source, distill_from, resume=resume)
        lock = _lock(out)
    except (ValueError, FileExistsError) as err:
        raise RunRefused(str(err)) from err
    with lock:  # closing the file releases the lock; a killed process's lock the kernel releases
        log_path = os.path.join(out, "log.csv")
        backup_dir = os.path.join(out, BACKUP_DIR)
        verbose, progress = progress_callbacks(interactive)
        interrupt = InterruptAtBatchEnd()
        fit_callbacks = [CSVLogger(log_path, append=resume), *progress, *callbacks, interrupt]
        config_record = dict(
            model=model, init=init, frozen=bool(frozen), data=data.source, eval_data=data.eval_source,
            train_size=train_size, validation_split=validation_split if recipe != "imagenet" else None,
            model_kwargs=model_kwargs, distill_from=None if teacher is None else str(distill_from),
            distill_alpha=None if teacher is None else distill_alpha,
            distill_mode=None if teacher is None else distill_mode, **config.to_dict(), paper=paper)
        epochs = config_record["epochs"]
        resumed_at = backup.latest(backup_dir).epoch if resume else None
        if resume:
            _check_same_run(previous, config_record)
            _truncate_log(log_path, resumed_at)
        results_path = os.path.join(out, "results.json")
        run_record = {"status": "running", "config": config_record, "data": data.description,
                      "versions": versions(), "machine": machine_info(), "resumed_at_epoch": resumed_at}
        write_json(results_path, run_record)
        start = time.perf_counter()
        fit_options = dict(callbacks=fit_callbacks, verbose=verbose, backup_dir=backup_dir, resume=resume)
        try:
            if recipe == "imagenet":
                with interrupt:
                    history = imagenet.fit_imagenet(builder, data.train, config=config, eval_data=data.eval,
                                                    **fit_options)
            else:
                fit_options.update(config=config, validation_data=data.validation, eval_data=data.eval,
                                   num_classes=data.num_classes)
                with interrupt:
                    if teacher is None:
                        history = cifar.fit_cifar(builder, data.train, **fit_options)
                    else:
                        history = fit_distill(builder, teacher, data.train, mode=distill_mode,
                                              alpha=distill_alpha, **fit_options)
        except KeyboardInterrupt:
            _write_interrupted(out, run_record, epochs, time.perf_counter() - start)
            raise
        except Exception:
            if not resume:
                _forget_unstarted(out, log_path, backup_dir)
            raise
        total = time.perf_counter() - start
        metrics = _logged_metrics(log_path) if resume else {
            k: [float(v) for v in vs] for k, vs in history.history.items()}
        if history.diverged is not None:
            return _write_diverged(out, run_record, history.diverged, metrics, total, backup_dir)
        val = metrics.get("val_accuracy")
        row = {
            "model": model, "init": init, "frozen": bool(frozen), "epochs": epochs,
            "final_val_accuracy": val[-1] if val else None, "best_val_accuracy": max(val) if val else None,
            "eval_accuracy": history.eval_results["accuracy"] if history.eval_results else None,
            "train_seconds": round(history.train_seconds, 1),
        }
        table = format_table([row], TABLE)
        print("\n" + table, flush=True)
        results = {
            **run_record,
            "status": "finished",
            "model_params": int(getattr(history.model, "student", history.model).count_params()),
            "model_file": "model.keras",
            "metrics": metrics,
            "eval": history.eval_results,
            "normalization": getattr(history, "normalization", None),
            "summary": row,
            "wall_seconds": round(total, 1),
        }
        trained = getattr(history.model, "student", history.model)  # a distiller's student
        with atomic_path(os.path.join(out, "model.keras")) as tmp:
            trained.save(tmp)  # frozen kernels of stock layers are recorded in it (see load_frozen_model)
        write_text(os.path.join(out, "results.md"), table + "\n")
        write_json(results_path, results)  # last: "finished" only once everything is written
        backup.remove(backup_dir)  # the results are safe
        written = ["model.keras", "results.json", "results.md", "log.csv"]
        try:
            from keras_structinit import viz

            viz.plot_learning_curves({f"{model} {init}": metrics}, os.path.join(out, "learning_curves.png"),
                                     metrics=("val_accuracy", "loss") if val else ("accuracy", "loss"),
                                     title=data.description)
            written.append("learning_curves.png")
        except ImportError as err:
            print(f"Skipping plots: {err}")
        print(f"Wrote {', '.join(os.path.join(out, name) for name in written)}", flush=True)
        return results


def _lock(out):
    """An exclusive ``fcntl`` lock on ``out``'s :data:`LOCK_FILE` (the open file; closing releases it)."""
    import fcntl

    handle = open(os.path.join(os.fspath(out), LOCK_FILE), "a+")  # noqa: SIM115 - held for the run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise RunRefused(f"`--out` {os.fspath(out)!r} is in use by another run (it holds the lock on "
                          f"{LOCK_FILE})") from None
    return handle


def alignment_images(x, normalization, seed, count=ALIGN_IMAGES):
    """A seeded random ``count`` of the uint8 images ``x``, normalized as :func:`cifar.fit_cifar` does
    (``"channel"``, ``"symmetric"``), or as float32 0-255 (``"raw"``)."""
    pick = np.sort(np.random.default_rng(seed).choice(len(x), min(count, len(x)), replace=False))
    if normalization == "raw":
        return x[pick].astype("float32")
    return channel_normalizer(x, normalization)(x[pick])


def _logged_metrics(log_path):
    """``{metric: [per epoch]}`` of a run's ``log.csv`` (its every epoch, resumed runs included)."""
    if not os.path.exists(log_path):
        return {}
    with open(log_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {key: [None if row[key] in ("", "NA") else float(row[key]) for row in rows]  # NA: not logged
            for key in (rows[0] if rows else ()) if key != "epoch"}


def _truncate_log(log_path, epochs):
    """Keeps the header and the first ``epochs`` rows of ``log.csv``: a run killed after logging an
    epoch but before backing it up logs that epoch again when it resumes."""
    if not os.path.exists(log_path):
        return
    with open(log_path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    write_text(log_path, "".join(lines[: 1 + epochs]) if epochs else "")


def _check_same_run(previous, config):
    """``--resume`` goes on with the same run: a ValueError naming the settings that differ."""
    now = json.loads(json.dumps(config, default=str))
    before = previous.get("config", {})
    differ = sorted(k for k in {*now, *before} if now.get(k) != before.get(k))
    if differ:
        raise RunRefused(f"--resume: the run in --out was started with other settings ({', '.join(differ)}); "
                         "pass them as they were, or start a new run with --overwrite")


def _forget_unstarted(out, log_path, backup_dir):
    """A run that failed before finishing an epoch (a missing dependency, a bad argument found late)
    leaves nothing that says "running": its ``--out`` takes a new run without ``--overwrite``."""
    if os.path.exists(log_path) and os.path.getsize(log_path) > 0:
        return  # an epoch finished: the record stays for --resume
    for name in ("results.json", "log.csv"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            os.remove(path)
    shutil.rmtree(backup_dir, ignore_errors=True)


def _write_diverged(out, record, diverged, metrics, seconds, backup_dir):
    """Records a run stopped by a non-finite loss: no ``model.keras``; its last finite backup stays."""
    found = backup.latest(backup_dir)
    results = {**record, "status": "diverged", "diverged": diverged, "metrics": metrics,
               "last_finite_backup_epoch": None if found is None else found.epoch,
               "wall_seconds": round(seconds, 1)}
    write_json(os.path.join(out, "results.json"), results)
    kept = f"; the weights after epoch {found.epoch} are in {found.path}" if found else ""
    print(f"structinit train: the training loss became {diverged['loss']} at epoch {diverged['epoch']}, step "
          f"{diverged['step']}: stopped, no model.keras written{kept} (exit {EXIT_DIVERGED})",
          file=sys.stderr, flush=True)
    return results


def _write_interrupted(out, record, epochs, seconds):
    """Records the finished epochs of an interrupted run and says where they are."""
    log_path = os.path.join(out, "log.csv")
    if os.path.exists(log_path) and os.path.getsize(log_path) == 0:
        os.remove(log_path)  # CSVLogger writes its header with the first finished epoch
    metrics = _logged_metrics(log_path)
    finished = len(next(iter(metrics.values()), []))
    results_path = os.path.join(out, "results.json")
    write_json(results_path, {**record, "status": "interrupted", "interrupted": True,
                              "finished_epochs": finished, "metrics": metrics,
                              "wall_seconds": round(seconds, 1)})
    where = results_path + (f" and {log_path}" if finished else "")
    print(f"\nInterrupted in epoch {finished + 1}/{epochs}: {finished} finished "
          f"epoch(s) recorded in {where}; --resume goes on from there.", file=sys.stderr, flush=True)
