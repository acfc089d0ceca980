"""A training run as one value: ``Run(...).check().execute(out)``.

A :class:`Run` holds everything a run is: the model (a zoo name, a ``.keras`` file,
``keras.applications:NAME`` or a KerasHub preset directory), the init spec, frozen filters,
the data, the :class:`~keras_structinit.recipes.RecipeConfig`, distillation and the paper
setup it follows. :meth:`Run.check` checks all of it once, before anything is written
(the data loaded, teachers loaded, the init and freezing tried on a throwaway model), and
returns a :class:`CheckedRun`, whose :meth:`~CheckedRun.execute` trains and writes ``out``
(:class:`~keras_structinit.recipes.run_files.RunFiles`). ``structinit train`` builds its
runs this way; :meth:`Run.from_paper` is ``--paper``.

Example:
    >>> run = Run("convmixer-256/8", RecipeConfig("cifar10", epochs=200), init="conv-cov", frozen=True)
    >>> results = run.check().execute("runs/convcov")
    >>> Run.from_paper("lc", epochs=10).check().execute("runs/lc")
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import keras

from keras_structinit.methods import (
    check_parts,
    expand_parts,
    initialize,
    load_parts,
    paper_setups,
    parse_init_spec,
)
from keras_structinit.models.spec import ModelSpec, model_from
from keras_structinit.recipes import cifar, imagenet
from keras_structinit.recipes.config import DEFAULT, RecipeConfig
from keras_structinit.recipes.distill import fit_distill, load_teacher
from keras_structinit.recipes.progress import InterruptAtBatchEnd, progress_callbacks
from keras_structinit.recipes.rand_augment import parse_rand_augment
from keras_structinit.recipes.run_files import RunFiles
from keras_structinit.recipes.training import check_whole_batches
from keras_structinit.recipes.training_data import TrainingData, alignment_images, prepare_data
from keras_structinit.utils import validation
from keras_structinit.utils.arguments import check_exists, check_teacher
from keras_structinit.utils.reporting import format_table, machine_info, versions

__all__ = ["CheckedRun", "Run", "model_from"]

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
DISTILL_MODES = ("logits", "features")


@dataclass(frozen=True)
class Run:
    """One training run (see the module docstring).

    Attributes:
        model: a zoo name (``"convmixer-256/8"``), a ``.keras`` file, ``keras.applications:NAME``
            (built without weights) or a KerasHub preset directory.
        config: the :class:`RecipeConfig` (recipe, epochs, optimizer, ...).
        init: an init spec (:func:`keras_structinit.parse_init_spec`).
        frozen: freeze the spatial (depthwise) filters (what that means for the model:
            :meth:`~keras_structinit.models.spec.ModelSpec.freeze`).
        data, eval_data, train_size, train_offset, validation_split: as :func:`prepare_data` takes
            them (``train_offset``: a downstream run on images its upstream run never saw).
        model_kwargs: a zoo model's builder arguments (``kernel_size``, ``patch_size``, ...).
        new_head: give a loaded model whose last Dense does not match the data's classes a new one,
            linear (logits; a final softmax after it is dropped, and a line says so); otherwise such a
            model is refused. A loaded model's softmax or sigmoid head is kept and trained with the
            loss on probabilities (:func:`~keras_structinit.recipes.training.head_loss`);
            ``results.json`` records the head (``"head": {"outputs": "probabilities", ...}``).
        distill_from, distill_mode, distill_alpha: the weight-selection paper's distillation
            (:func:`~keras_structinit.recipes.fit_distill`).
        paper: what :meth:`from_paper` set: the setup's settings with their sources and the
            departures from them (kept in ``results.json``).
    """

    model: Any
    config: RecipeConfig = RecipeConfig("cifar10")
    init: str = "default"
    frozen: bool = False
    data: Any = None
    eval_data: Any = None
    train_size: int | None = None
    train_offset: int = 0
    validation_split: float = 0.1
    model_kwargs: Mapping = field(default_factory=dict)
    new_head: bool = False
    distill_from: str | None = None
    distill_mode: str = "logits"
    distill_alpha: float = 1.0
    paper: Mapping | None = None

    @classmethod
    def from_values(cls, recipe="cifar10", **values):
        """A run from flat ``values``: this class's fields, :class:`RecipeConfig`'s, and a zoo model's
        builder arguments (the rest)."""
        own = {f.name for f in dataclasses.fields(cls)} - {"config"}
        recipe_fields = {f.name for f in dataclasses.fields(RecipeConfig)} - {"recipe"}
        config = RecipeConfig(recipe, **{k: v for k, v in values.items() if k in recipe_fields})
        extra = {k: v for k, v in values.items() if k not in own and k not in recipe_fields}
        run = {k: v for k, v in values.items() if k in own}
        return cls(config=config, **{**run, "model_kwargs": {**run.get("model_kwargs", {}), **extra}})

    @classmethod
    def from_paper(cls, name, recipe="cifar10", **given):
        """The run of a paper's CIFAR experiment (:func:`keras_structinit.methods.setup_records`), with
        ``given`` values (as :meth:`from_values` takes them) replacing the setup's. A value that
        differs from the paper's (init specs and RandAugment forms compared as parsed) is a departure,
        recorded field by field in :attr:`paper`."""
        setups = paper_setups()
        validation.one_of(name, "paper", tuple(setups))
        if recipe == "imagenet":
            raise ValueError("`paper` sets a paper's CIFAR experiment; use recipe 'cifar10' or 'cifar100'")
        setup = setups[name]
        settings = dict(setup.settings)
        builder_args, source = settings.pop("model_kwargs", ({}, ""))
        settings.update({k: (v, source) for k, v in builder_args.items()})
        departures = {
            k: {"paper": settings[k][0], "given": v}
            for k, v in given.items()
            if k in settings and differs(k, v, settings[k][0])
        }
        values = {k: v for k, (v, _) in settings.items()}
        if "model" in departures:  # the paper model's builder arguments fit it alone
            dropped = {k: values.pop(k) for k in builder_args if k not in given}
            if dropped:
                departures["model_kwargs"] = {"paper": dropped, "given": {}}
        if "random_labels" in departures and "random_classes" in values and "random_classes" not in given:
            # the classes of random labels go with them (a fine-tuning run on the true labels)
            departures["random_classes"] = {"paper": values.pop("random_classes"), "given": None}
        paper = {
            "name": setup.name,
            "paper": setup.paper,
            "settings": {k: {"value": v, "source": s} for k, (v, s) in settings.items()},
            "departures": departures,
            "notes": list(setup.notes),
        }
        return cls.from_values(recipe, **{**values, **given, "paper": paper})

    def check(self, names=None):
        """Checks everything once, before anything is written; a :class:`CheckedRun`.

        ``names`` spells the fields in messages (``{"data": "--data"}`` on the command line;
        default ```data```). ``TypeError``/``ValueError`` for a bad value, ``FileNotFoundError``
        for a missing file, ``RuntimeError`` for a download that fails offline.
        """
        return _check(self, _Names(names or {}))

    def execute(self, out, **options):
        """``self.check().execute(out, **options)``."""
        return self.check().execute(out, **options)

    def inputs(self):
        """The files the run reads (no output of it may replace one)."""
        return [
            self.data,
            self.eval_data,
            self.distill_from,
            *(p.value for p in parse_init_spec(self.init) if p.form.reads_file),
        ]

    def record(self):
        """What ``results.json`` keeps as the run's ``config`` (JSON-ready)."""
        imagenet_recipe = not self.config.is_cifar
        distilled = self.distill_from is not None
        return dict(
            model=str(self.model),
            init=self.init,
            frozen=bool(self.frozen),
            data=None if self.data is None else str(self.data),
            eval_data=None if self.eval_data is None else str(self.eval_data),
            train_size=self.train_size,
            train_offset=self.train_offset,
            validation_split=None if imagenet_recipe else self.validation_split,
            model_kwargs=dict(self.model_kwargs),
            **({"new_head": True} if self.new_head else {}),
            distill_from=str(self.distill_from) if distilled else None,
            distill_alpha=self.distill_alpha if distilled else None,
            distill_mode=self.distill_mode if distilled else None,
            **self.config.to_dict(),
            paper=None if self.paper is None else dict(self.paper),
        )


def differs(setting, given, wanted):
    """Whether ``given`` departs from a setup's ``wanted``: init specs and RandAugment forms compare
    as parsed (``mean-shift+conv-cov`` is ``conv-cov+mean-shift``)."""
    if setting == "init":
        return [(p.name, p.value) for p in parse_init_spec(given)] != [
            (p.name, p.value) for p in parse_init_spec(wanted)
        ]
    if setting == "rand_augment":
        return parse_rand_augment(given) != parse_rand_augment(wanted)
    return given != wanted


class _Names:
    """How messages spell a field: ``names[field]``, else ```field```."""

    def __init__(self, names):
        self.names = dict(names)

    def __call__(self, field):
        return self.names.get(field, f"`{field}`")


def _expanded(checked, is_cifar):
    """``checked`` with ``auto`` resolved: the concrete parts, the spec they spell and one line per
    structure group. ``auto`` reads the model as it trains, its filters frozen if asked (frozen and
    trained filters have rows of their own); the init itself is checked on a model frozen after it,
    as :meth:`CheckedRun.build` does."""
    trains_as = checked.throwaway_model()
    checked.spec.freeze(trains_as, checked.run.frozen)
    images = checked.data.train[0] if is_cifar else None
    parts, resolved, lines = expand_parts(trains_as, checked.parts, data=images)
    return dataclasses.replace(checked, parts=parts, resolved=resolved, choices=tuple(lines))


def _check(run, spell):
    """:meth:`Run.check`: every check of a run, in the order of their cost."""
    if not isinstance(run.config, RecipeConfig):
        raise TypeError(
            f"`config` must be a RecipeConfig. Received: config of type {type(run.config).__name__}"
        )
    config, recipe = run.config, run.config.recipe
    validation.boolean(run.frozen, spell("frozen"))
    validation.boolean(run.new_head, spell("new_head"))
    filled = config.filled()  # `epochs` is needed
    parts = parse_init_spec(run.init)
    validation.rate(run.validation_split, spell("validation_split"))
    if run.distill_from is not None:
        if not config.is_cifar:
            raise ValueError(f"{spell('distill_from')} works with the CIFAR recipes (cifar10, cifar100)")
        validation.positive_float(run.distill_alpha, spell("distill_alpha"))
        validation.one_of(run.distill_mode, spell("distill_mode"), DISTILL_MODES)
        check_teacher(run.distill_from, spell("distill_from"))
    if any(p.form.needs_data for p in parts) and not config.is_cifar:
        raise ValueError(
            f"{spell('init')} {run.init} measures the training images of the CIFAR recipes "
            "(cifar10, cifar100)"
        )
    if not config.is_cifar and run.data is None:
        raise ValueError(f"recipe imagenet needs {spell('data')} (an ImageFolder directory or tfds:NAME)")
    check_exists(None if str(run.data).startswith("tfds:") else run.data, spell("data"))
    check_exists(run.eval_data, spell("eval_data"))
    spec = ModelSpec.parse(run.model, spell("model"))  # the one parse of the run's model
    model_kwargs = {**run.model_kwargs, **spec.builder_arguments(run.frozen)}
    spec.check_kwargs(model_kwargs)
    from keras_structinit.recipes import devices

    devices.resolve_precision(config.precision)
    devices.check_distribution(config.distribution)
    data = prepare_data(
        recipe,
        run.data,
        seed=config.seed,
        train_size=run.train_size,
        train_offset=run.train_offset,
        validation_split=run.validation_split,
        eval_data=run.eval_data,
        names={"data": spell("data"), "eval_data": spell("eval_data")},
    )
    if config.is_cifar:  # before any process trains (each would fail after its first epoch)
        check_whole_batches(
            filled.batch_size,
            config.distribution,
            **{
                name: None if part is None else len(part[0])
                for name, part in (
                    (spell("data"), data.train),
                    (f"the {spell('validation_split')} hold-out", data.validation),
                    (spell("eval_data"), data.eval),
                )
            },
        )
    teachers = {}
    load_parts(parts, teachers)  # loads each argument (a teacher, a bank) into `teachers` once
    if run.distill_from is not None and run.distill_from not in teachers:
        teachers[run.distill_from] = load_teacher(run.distill_from)
    checked = CheckedRun(run, parts, data, teachers, spec, model_kwargs)
    model = checked.throwaway_model()
    if any(p.form.expand is not None for p in parts):  # `auto`: the concrete spec, recorded and rerun
        checked = _expanded(checked, config.is_cifar)
        parts = checked.parts
    try:
        check_parts(model, load_parts(parts, dict(teachers)), seed=config.seed)
        spec.freeze(model, run.frozen)
    except ValueError as err:
        flag = spell("init") + f" {run.init}" if run.init != "default" else spell("frozen")
        raise ValueError(f"{flag}: {err}") from None
    if config.is_cifar and filled.batch_size > len(data.train[0]):  # one short step an epoch otherwise
        raise ValueError(
            f"{spell('batch_size')} {filled.batch_size} is above the {len(data.train[0])} training images "
            f"of {spell('data')}: pass a {spell('batch_size')} of at most {len(data.train[0])}"
        )
    return checked


@dataclass(frozen=True)
class CheckedRun:
    """A :class:`Run` checked, with its data and teachers loaded: :meth:`execute` trains it."""

    run: Run
    parts: list
    data: TrainingData
    teachers: Mapping
    spec: ModelSpec
    model_kwargs: Mapping = field(default_factory=dict)
    #: What building the model said: ``{"new_head": the line stating a new head}`` (``results.json``).
    notes: dict = field(default_factory=dict, compare=False)
    #: The concrete spec that an init choosing per model (``auto``) stood for, and its lines.
    resolved: str | None = None
    choices: tuple = ()

    @property
    def input_shape(self):
        config = self.run.config
        return self.data.image_shape or (config.filled().image_size,) * 2 + (3,)

    @property
    def num_classes(self):
        """The model's outputs: the data's classes, or ``random_classes`` (Maennel et al., App. A.1)."""
        classes = self.run.config.random_classes
        return self.data.num_classes if classes in (DEFAULT, None) else classes

    def throwaway_model(self):
        """The model as built or loaded, checked against the data (:attr:`Run.new_head`)."""
        return self._model()[0]

    def _model(self):
        """``(model, note)``: :meth:`throwaway_model` and the line stating its new head (or ``None``)."""
        return self.spec.fitted(
            self.num_classes,
            self.input_shape,
            self.data.image_shape,
            self.run.new_head,
            _Names({}),
            **self.model_kwargs,
        )

    def build(self, images=None):
        """A fresh model of the run: built (or loaded), initialized with ``images`` for the forms
        that measure data, its spatial filters frozen if asked."""
        run = self.run
        m, note = self._model()
        initialize(m, load_parts(self.parts, dict(self.teachers)), data=images, seed=run.config.seed)
        frozen = self.spec.freeze(m, run.frozen)  # a model that freezes itself was built frozen
        trainable = sum(math.prod(v.shape) for v in m.trainable_weights)
        size = "x".join(str(n) for n in self.input_shape[:2])
        print(
            f"Model: {run.model} {size}, {m.count_params():,} parameters "
            f"({trainable:,} trainable); init {self.resolved or run.init}; "
            + (f"{len(frozen)} spatial kernels frozen" if run.frozen else "all filters trained")
            + f"; backend {keras.backend.backend()}",
            flush=True,
        )
        if note:
            print(note, flush=True)
            self.notes["new_head"] = note
        return m

    def execute(self, out, *, resume=False, overwrite=False, callbacks=(), interactive=None, names=None):
        """Trains the run into ``out``; returns the results dict (also in ``out/results.json``).

        See :class:`~keras_structinit.recipes.run_files.RunFiles` for ``out``'s rules (``resume``,
        ``overwrite``, the lock) and statuses. Progress: Keras' bar on a terminal, else a line per
        epoch and every minute (``interactive`` overrides ``sys.stdout.isatty()``); Ctrl-C stops at the
        next batch end, records the finished epochs and raises ``KeyboardInterrupt`` again.
        """
        run, data = self.run, self.data
        files = RunFiles(out, resume=resume, overwrite=overwrite, inputs=run.inputs(), names=names)
        files.check()
        keras.utils.set_random_seed(run.config.seed)
        print(f"Data: {data.description}", flush=True)
        images = None
        if any(p.form.needs_data for p in self.parts):
            images = alignment_images(data.train[0], run.config.filled().normalization, run.config.seed)
        if self.resolved is not None:
            print(
                f"Init {run.init} -> {self.resolved}:",
                *(f"  {line}" for line in self.choices),
                sep="\n",
                flush=True,
            )
        record = {
            **({"init_resolved": self.resolved} if self.resolved is not None else {}),
            "config": run.record(),
            "data": data.description,
            "data_sha256": data.digest,
            "versions": versions(),
            "machine": machine_info(),
        }
        with files.open(record):
            if files.resume:
                print(
                    f"Resuming after epoch {files.resumed_at} of {run.config.filled().epochs} "
                    f"({files.backup_dir})",
                    flush=True,
                )
            return self._train(files, images, callbacks, interactive)

    def _train(self, files, images, callbacks, interactive):
        run, data = self.run, self.data
        verbose, progress = progress_callbacks(interactive)
        interrupt = InterruptAtBatchEnd()
        options = dict(
            callbacks=[files, *progress, *callbacks, interrupt],
            verbose=verbose,
            backup_dir=files.backup_dir,
            resume=files.resume,
            config=run.config,
            eval_data=data.eval,
        )
        cifar_data = dict(validation_data=data.validation, num_classes=self.num_classes)
        start = time.perf_counter()
        try:
            with interrupt:
                if not run.config.is_cifar:
                    history = imagenet.fit_imagenet(lambda: self.build(images), data.train, **options)
                elif run.distill_from is None:
                    history = cifar.fit_cifar(lambda: self.build(images), data.train, **cifar_data, **options)
                else:
                    history = fit_distill(
                        lambda: self.build(images),
                        self.teachers[run.distill_from],
                        data.train,
                        mode=run.distill_mode,
                        alpha=run.distill_alpha,
                        **cifar_data,
                        **options,
                    )
        except KeyboardInterrupt:
            files.interrupted(run.config.filled().epochs, time.perf_counter() - start)
            raise
        except Exception as err:
            files.failed(err)
            raise
        seconds = time.perf_counter() - start
        metrics = (
            files.logged_metrics()
            if files.resume
            else {k: [float(v) for v in vs] for k, vs in history.history.items()}
        )
        if history.diverged is not None:
            return _diverged(files, history.diverged, metrics, seconds)
        return _finished(files, run, history, metrics, seconds, self.notes)


def _diverged(files, diverged, metrics, seconds):
    results, found = files.diverged(diverged, metrics, seconds)
    kept = f"; the weights after epoch {found.epoch} are in {found.path}" if found else ""
    print(
        f"structinit train: the training loss became {diverged['loss']} at epoch {diverged['epoch']}, step "
        f"{diverged['step']}: stopped, no model.keras written{kept}",
        file=sys.stderr,
        flush=True,
    )
    return results


def _finished(files, run, history, metrics, seconds, notes):
    val = metrics.get("val_accuracy")
    row = {
        "model": str(run.model),
        "init": run.init,
        "frozen": bool(run.frozen),
        "epochs": run.config.filled().epochs,
        "final_val_accuracy": val[-1] if val else None,
        "best_val_accuracy": max(val) if val else None,
        "eval_accuracy": history.eval_results["accuracy"] if history.eval_results else None,
        "train_seconds": round(history.train_seconds, 1),
    }
    table = format_table([row], TABLE)
    print("\n" + table, flush=True)
    trained = getattr(history.model, "student", history.model)  # a distiller's student
    results = files.finish(
        {
            "model_params": int(trained.count_params()),
            "model_file": "model.keras",
            "metrics": metrics,
            "eval": history.eval_results,
            "normalization": getattr(history, "normalization", None),
            "summary": row,
            "head": getattr(history, "head", None),
            "new_head": notes.get("new_head"),
            "wall_seconds": round(seconds, 1),
        },
        trained,
        table,
    )
    names = ("model.keras", "results.json", "results.md", "log.csv")
    written = [os.path.join(files.out, name) for name in names]
    try:
        from keras_structinit.utils import viz

        path = os.path.join(files.out, "learning_curves.png")
        viz.plot_learning_curves(
            {f"{run.model} {run.init}": metrics},
            path,
            metrics=("val_accuracy", "loss") if val else ("accuracy", "loss"),
            title=files.record["data"],
        )
        written.append(path)
    except ImportError as err:
        print(f"Skipping plots: {err}")
    print(f"Wrote {', '.join(written)}", flush=True)
    return results
