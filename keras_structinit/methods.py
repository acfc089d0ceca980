"""Method records: each method declares itself once; the init grammar, exports and commands derive.

A method is one folder: ``keras_structinit/<name>/method.py`` holding ``METHOD = Method(...)``
(a third-party package declares the module holding its record under the entry-point
group ``keras_structinit.methods``). The record names the method's init forms, its
public exports per namespace, its serializable modules, the walker selectors it adds,
its sections of ``structinit inspect`` and its command-line subcommands; :func:`records`
finds them, and the CLI's ``--init`` help, the lazy exports of ``keras_structinit``,
``.initializers``, ``.callbacks`` and ``.layers``, ``_registry``, :mod:`.inspection` and the
walker's selectors read them (nothing else names a method, this module included).

An init spec names one or more forms joined by ``+``, each ``NAME`` or
``NAME:ARG``, e.g. ``"A:ARG+B"`` (the forms: ``docs/initialize.md``). Forms act on the model in
stage order, whatever order the spec gives them (whole-model weights, then spatial filters,
then data-measuring convs, then attention layers, then MLP blocks), at most one form per stage. The first form
applied gets ``seed``; each later one a seed derived from the previous one
(:func:`~keras_structinit.validation.derive_seed`), so adding a form never changes what
the earlier ones draw.

This module imports no Keras; appliers import their method when called.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from keras_structinit import _hooks, validation

__all__ = [
    "CONVMIXER_PIPELINE_NOTES",
    "HELD_OUT_NOTE",
    "Command",
    "InitForm",
    "InitPart",
    "Inspector",
    "Method",
    "PaperSetup",
    "Selector",
    "form_usage",
    "init_forms",
    "initialize",
    "parse_init_spec",
    "records",
]

#: Stages in the order forms are applied.
STAGES = ("weights", "spatial", "data", "attention", "mlp")
#: The namespaces a record exports into (``""``: ``keras_structinit`` itself).
NAMESPACES = ("", "initializers", "callbacks", "layers")
#: Entry-point group of methods defined outside this package.
ENTRY_POINT_GROUP = "keras_structinit.methods"


@dataclass(frozen=True)
class InitForm:
    """One ``--init`` form.

    Attributes:
        name: the form's name in a spec.
        summary: one line for ``--help``.
        apply: called as ``apply(model, value, *, data, seed)``; returns the variable paths it
            wrote (each applier imports its method when called).
        stage: one of :data:`STAGES` (when it acts, and what it competes with).
        arg: the argument's placeholder (``"PATH"``), ``None`` for a form without one.
        default: the argument when the spec omits it (a callable is called then); ``None``
            makes it required.
        parse: ``str -> value``; raises ``ValueError`` (its message is put after the form).
        reads_file: the argument is a path the run reads (never to be written over).
        load: ``value -> object`` done once before a run (e.g. loading a teacher model), or ``None``.
        check: ``check(model, value)`` raising what applying would, without ``data``; for the
            forms that need data (the others are checked by applying them to a throwaway model).
        targets: what the form acts on, as ``walker`` selectors (for checks and docs).
        needs_data: the form measures images (``initialize(..., data=images)``).
        base: a form applied first (without an argument) when the spec has no form of its
            stage (e.g. the weights that a form shifting MLP kernels starts from); ``None`` for none.
        alone: a spec naming this form names no other.
    """

    name: str
    summary: str
    apply: Callable[..., list]
    stage: str
    arg: str | None = None
    default: Any = None
    parse: Callable[[str], Any] | None = None
    reads_file: bool = False
    load: Callable[[Any], Any] | None = None
    check: Callable[..., None] | None = None
    targets: tuple = ()
    needs_data: bool = False
    base: str | None = None
    alone: bool = False

    def usage(self):
        """``name``, ``name[:ARG]`` or ``name:ARG``."""
        if self.arg is None:
            return self.name
        return f"{self.name}[:{self.arg}]" if self.default is not None else f"{self.name}:{self.arg}"

    def default_value(self):
        return self.default() if callable(self.default) else self.default


@dataclass(frozen=True)
class InitPart:
    """One parsed form of a spec: its record and its argument's value."""

    form: InitForm
    value: Any = None

    @property
    def name(self):
        return self.form.name


@dataclass(frozen=True)
class Selector:
    """What a method acts on, for :mod:`keras_structinit.walker`.

    ``find(layer)`` returns the layer's variable of this kind or ``None``;
    ``singular`` and ``description`` word the walker's errors.
    """

    name: str
    find: Callable[[Any], Any]
    singular: str
    description: str


@dataclass(frozen=True)
class Command:
    """A ``structinit`` subcommand: ``arguments(parser)`` adds its options (no Keras import);
    ``module`` (relative to the record's package when it starts with ``.``) has ``run(args)``,
    which runs it and returns the exit status, imported only when the command runs."""

    name: str
    help: str
    description: str
    arguments: Callable[[Any], None]
    module: str


@dataclass(frozen=True)
class Inspector:
    """A section that a method adds to the report of :func:`keras_structinit.inspection.inspect`
    (``structinit inspect``), or its part of another method's section.

    Attributes:
        section: the section's key in the report (``report.<section>``, ``to_dict()[section]``).
        function: ``"module:function"`` (the module relative to the record's package when it starts
            with ``.``), imported when a model is inspected. A section's function is called as
            ``f(model, *, data, parts)`` (``data``: ``None``, images or ``(images, labels)``, read
            with :func:`keras_structinit.inspection.images_and_labels`), ``parts`` being the loaded
            functions of the parts added to it, and returns the section
            (:mod:`keras_structinit.inspection` says what it holds); a part's function is called
            as the section's function documents.
        order: where the section comes in the report, lower first (unused for a part).
        part: the function adds to ``section``, which another record declares.
        figures: the PNG files its section's ``figures()`` may write (``structinit inspect`` checks
            them before anything is written).
    """

    section: str
    function: str
    order: int = 0
    part: bool = False
    figures: tuple = ()

    def load(self):
        """The function that ``function`` names (its module imported now)."""
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)


#: What a :class:`PaperSetup` may set besides the :class:`~keras_structinit.recipes.RecipeConfig`
#: fields of a CIFAR recipe: the model, its builder's arguments, the init, frozen filters, the
#: training-set size.
RUN_SETTINGS = ("model", "model_kwargs", "init", "frozen", "train_size")


#: A departure of every setup: the recipes hold out their own validation split.
HELD_OUT_NOTE = ("trains on 90% of the training split and validates on the rest (--val-split); the paper "
                 "trains on all of it and reports the test split (--val-split 0 --eval-data TEST)")
#: The departures of the setups that follow ConvMixer's CIFAR pipeline (Trockman & Kolter 2022).
CONVMIXER_PIPELINE_NOTES = (
    "the paper states no N (ops per image) or M (magnitude) for RandAugment: torchvision:n2-m12 is the "
    "command of the cited CIFAR script's README for its 92.5% run (--ra-n=2 --ra-m=12); the script's "
    "train.py defaults to 1 op at magnitude 8 (torchvision:n1-m8)",
    "the text names RandAugment only; here also a pad-4 random crop and flips. The cited CIFAR script "
    "(locuslab/convmixer-cifar10 train.py) flips and by default takes a square RandomResizedCrop of "
    "scale 0.75-1, ColorJitter 0.1 and random erasing 0.25; its README's 92.5% command turns those "
    "three off (--scale 1.0 --jitter 0 --reprob 0). Neither has a pad crop; none of the three is here",
    "the script trains in mixed precision (torch.cuda.amp); here float32 unless --precision",
)


@dataclass(frozen=True)
class PaperSetup:
    """A paper's CIFAR experiment, as ``structinit train --paper NAME`` and
    :func:`keras_structinit.recipes.paper_config` run it.

    Attributes:
        name: the ``--paper`` name (``"convcov"``).
        paper: the paper, as cited.
        settings: ``{setting: (value, source)}``: each of :data:`RUN_SETTINGS` or a CIFAR
            ``RecipeConfig`` field the paper fixes, with the section or table saying so.
        notes: where a run of this setup still departs from the paper, and why.
    """

    name: str
    paper: str
    settings: Mapping[str, tuple]
    notes: tuple = ()

    def recipe_fields(self):
        """``{field: value}`` of the ``RecipeConfig`` fields this setup sets."""
        return {k: v for k, (v, _) in self.settings.items() if k not in RUN_SETTINGS}

    def value(self, setting, default=None):
        return self.settings[setting][0] if setting in self.settings else default


@dataclass(frozen=True)
class Method:
    """One method, declared once in its package's ``method.py`` as ``METHOD``.

    Attributes:
        name: short name (``"toy"``).
        title: one line (what it does).
        paper: the paper it implements.
        package: the package holding it (``"keras_structinit.toy"``).
        docs: its user guide, relative to the repository (``"docs/toy.md"``).
        forms: its :class:`InitForm` records.
        exports: ``{public name: module}`` of the package's lazily imported objects
            (a module starting with ``.`` is relative to ``package``).
        public: ``{namespace: names}``: which exports also appear in ``keras_structinit``
            (namespace ``""``), ``.initializers``, ``.callbacks`` or ``.layers``.
        model_functions: the exports that act on a model; each is
            ``f(model, *, layers=None, seed=None, ...) -> list[str]`` (a contract test checks).
        serializable: modules registering Keras-serializable objects (relative allowed).
        selectors: :class:`Selector` records the walker gains.
        commands: :class:`Command` records the ``structinit`` command line gains.
        setups: :class:`PaperSetup` records of the paper's experiments (``--paper``).
        inspectors: :class:`Inspector` records of its sections of ``structinit inspect``.
        pure: its modules that import neither Keras nor a backend (relative allowed; ``"."`` is
            the package itself); a test imports each alone.
        order: where its forms come in ``--help`` and its record in :func:`records`: lower
            first, then by folder name.
    """

    name: str
    title: str
    paper: str
    package: str
    docs: str | None = None
    forms: tuple = ()
    exports: Mapping[str, str] = field(default_factory=dict)
    public: Mapping[str, tuple] = field(default_factory=dict)
    model_functions: tuple = ()
    serializable: tuple = ()
    selectors: tuple = ()
    commands: tuple = ()
    setups: tuple = ()
    inspectors: tuple = ()
    pure: tuple = ()
    order: int = 1

    def __post_init__(self):
        absolute = functools.partial(importlib.util.resolve_name, package=self.package)
        object.__setattr__(self, "exports", {k: absolute(v) for k, v in self.exports.items()})
        object.__setattr__(self, "serializable", tuple(absolute(m) for m in self.serializable))
        object.__setattr__(self, "commands", tuple(
            dataclasses.replace(c, module=absolute(c.module)) for c in self.commands))
        object.__setattr__(self, "inspectors", tuple(
            dataclasses.replace(i, function=absolute(i.function)) for i in self.inspectors))
        object.__setattr__(self, "pure", tuple(absolute(m) for m in self.pure))
        unknown = [n for names in self.public.values() for n in names if n not in self.exports]
        unknown += [n for n in self.model_functions if n not in self.exports]
        if unknown or set(self.public) - set(NAMESPACES):
            raise ValueError(f"method {self.name!r}: public names {unknown} are not exports, or "
                             f"namespaces {sorted(set(self.public) - set(NAMESPACES))} are unknown")


def _builtin_record_modules():
    """``keras_structinit.<name>.method`` for every folder of this package holding a ``method.py``."""
    root = os.path.dirname(os.path.abspath(__file__))
    return [f"{__package__}.{name}.method" for name in sorted(os.listdir(root))
            if os.path.isfile(os.path.join(root, name, "method.py"))]


def _record_of(obj, where):
    record = getattr(obj, "METHOD", obj)
    if not isinstance(record, Method):
        raise TypeError(f"{where} must be a Method record or a module defining METHOD = Method(...); "
                        f"got {type(record).__name__}")
    return record


@functools.cache
def records():
    """Every :class:`Method`: the core's, this package's methods (by :attr:`Method.order`, then folder
    name), then plug-ins."""
    builtin = [_record_of(importlib.import_module(m), m) for m in _builtin_record_modules()]
    found = [CORE] + sorted(builtin, key=lambda r: r.order)
    for point in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        found.append(_record_of(point.load(), f"entry point {point.name!r} ({point.value})"))
    names = [r.name for r in found]
    forms = [f.name for r in found for f in r.forms]
    for what, values in (("method", names), ("init form", forms)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ValueError(f"{what} names declared twice: {twice}")
    return tuple(found)


def init_forms():
    """``{name: InitForm}`` of every method, in the order ``--help`` lists them."""
    return {form.name: form for record in records() for form in record.forms}


def namespace_exports(namespace):
    """``{name: module}`` that the records export into ``namespace`` (one of :data:`NAMESPACES`)."""
    return {name: record.exports[name] for record in records() for name in record.public.get(namespace, ())}


def serializable_modules():
    """The modules of every record that register Keras-serializable objects."""
    return tuple(module for record in records() for module in record.serializable)


def paper_setups():
    """``{name: PaperSetup}`` of every record, for ``--paper``."""
    return {setup.name: setup for record in records() for setup in record.setups}


def selectors():
    """``{name: Selector}`` that the records add to the walker."""
    return {selector.name: selector for record in records() for selector in record.selectors}


_hooks.record_selectors = selectors  # the walker's lookup of the records' selectors


def commands():
    """``{name: Command}`` that the records add to the command line."""
    return {command.name: command for record in records() for command in record.commands}


def inspectors():
    """``{section: (Inspector, [its parts])}`` that the records add to ``structinit inspect``, in the
    sections' order."""
    found = [i for record in records() for i in record.inspectors]
    sections = {i.section: (i, []) for i in sorted(found, key=lambda i: i.order) if not i.part}
    for part in (i for i in found if i.part):
        if part.section not in sections:
            raise ValueError(f"inspector {part.function!r} adds to section {part.section!r}, which no "
                             f"record declares; sections: {sorted(sections)}")
        sections[part.section][1].append(part)
    return sections


def figure_names():
    """The PNG files the records' inspectors may write, in the sections' order."""
    return tuple(name for inspector, parts in inspectors().values() for i in (inspector, *parts)
                 for name in i.figures)


# ------------------------------------------------------------------ argument parsers for records


def existing_file(what, suffix=None):
    """A ``parse`` for a form whose argument is a file that must exist (ending in ``suffix``)."""

    def parse(text):
        if suffix is not None and not text.endswith(suffix):
            raise ValueError(f"needs {what} ({suffix})")
        if not os.path.isfile(text):
            raise ValueError(f"{what} not found: {text!r}")
        return text

    return parse


def finite_number(text):
    """A ``parse`` for a finite float argument."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"takes a finite number, e.g. 0.05; got {text!r}")
    return value


def count(what):
    """A ``parse`` for an int argument >= 1 counting ``what``."""

    def parse(text):
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"takes a number of {what} >= 1, e.g. 2; got {text!r}")
        return int(text)

    return parse


def __getattr__(name):
    if name == "INIT_FORMS":
        return init_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------ the core's own record


def _default(model, value, *, data, seed):
    return []


#: What the core itself provides: the ``default`` form (no init: what the command line runs without
#: ``--init``) and the functions that act on any model.
CORE = Method(
    name="core",
    title="the builders' own initialization; initializing any model by spec, freezing, redrawing",
    paper="none: the package's own functions",
    package=__package__,
    docs="docs/initialize.md",
    forms=(InitForm("default", "the model builder's own initialization", _default, "weights", alone=True),),
    exports={
        "freeze_spatial": ".freezing",
        "reinitialize": ".reinit",
        "load_frozen_model": ".freezing",
        "initialize": ".methods",
        "parse_init_spec": ".methods",
        "fgsm_accuracy": ".evaluation",
    },
    public={"": ("fgsm_accuracy", "freeze_spatial", "load_frozen_model", "initialize", "parse_init_spec",
                 "reinitialize")},
    model_functions=("freeze_spatial", "reinitialize"),
    pure=(".", ".methods", ".validation", ".datasets", ".arguments"),
)


def form_usage():
    """``"NAME | NAME[:ARG] | NAME:ARG | ..."``: every form's usage, for a help text."""
    return " | ".join(form.usage() for form in init_forms().values())


def parse_init_spec(spec):
    """The :class:`InitPart` list of ``spec``, in the order the forms are applied.

    ``ValueError`` (one line, naming the bad part and the forms) for an
    unknown form, a bad or missing argument, a form that stands alone
    (:attr:`InitForm.alone`) combined with another, or two forms of one stage;
    ``TypeError`` for a non-str. A form's :attr:`InitForm.base` is added when no
    form of the base's stage is given.

    Example (``docs/initialize.md`` lists the forms):
        >>> [(p.name, p.value) for p in parse_init_spec(spec)]
    """
    validation.text(spec, "init")
    parts = []
    received = validation.shown(spec)
    for text in spec.split("+"):
        name, colon, arg = text.partition(":")
        shown_part = validation.shown(text, 100)
        form = init_forms().get(name)
        if form is None:
            raise ValueError(f"`init` part {shown_part} is not one of {form_usage()}. "
                             f"Received: init={received}")
        if form.arg is None and colon:
            raise ValueError(f"`init` part {shown_part}: {name} takes no argument. Received: init={received}")
        if form.arg is not None and not arg and (colon or form.default is None):
            raise ValueError(f"`init` part {shown_part} needs its argument: {form.usage()}. "
                             f"Received: init={received}")
        value = form.default_value()
        if arg:
            try:
                value = form.parse(arg)
            except ValueError as err:
                raise ValueError(f"`init` part {shown_part}: {name} {validation.clipped(str(err))}. "
                                 f"Received: init={received}") from None
        parts.append(InitPart(form, value))
    alone = [p.name for p in parts if p.form.alone]
    if len(parts) > 1 and alone:
        raise ValueError(f"`init` {alone[0]!r} cannot be combined with other forms. "
                         f"Received: init={received}")
    stages = [p.form.stage for p in parts]
    repeated = sorted({s for s in stages if stages.count(s) > 1})
    if repeated:
        clash = [p.name for p in parts if p.form.stage in repeated]
        raise ValueError(f"`init` combines {' and '.join(clash)}, which act on the same {repeated[0]} stage; "
                         f"use one of them. Received: init={received}")
    for part in list(parts):
        base = init_forms()[part.form.base] if part.form.base is not None else None
        if base is not None and base.stage not in {p.form.stage for p in parts}:
            parts.append(InitPart(base, base.default_value()))
    return sorted(parts, key=lambda p: STAGES.index(p.form.stage))


def load_parts(parts, loaded=None):
    """``parts`` with each argument that its form loads (``InitForm.load``, e.g. a teacher file)
    replaced by the loaded object; ``loaded`` (``{argument: object}``) is used and filled as a cache."""
    loaded = {} if loaded is None else loaded
    out = []
    for part in parts:
        if part.form.load is not None and isinstance(part.value, (str, os.PathLike)):
            if part.value not in loaded:
                loaded[part.value] = part.form.load(part.value)
            part = InitPart(part.form, loaded[part.value])
        out.append(part)
    return out


def check_parts(model, parts, *, seed=None):
    """Raises what :func:`initialize` with ``parts`` would raise on ``model``, without data.

    Applies each form to ``model`` (a throwaway: it is changed), except the forms that
    measure data, whose ``check`` runs instead.
    """
    for part, part_seed in zip(parts, part_seeds(seed, len(parts)), strict=True):
        if part.form.needs_data:
            if part.form.check is not None:
                part.form.check(model, part.value)
        else:
            part.form.apply(model, part.value, data=None, seed=part_seed)


def part_seeds(seed, count):
    """The seeds of ``count`` forms applied in turn: ``seed``, then each derived from the previous one."""
    seeds = [seed]
    for _ in range(count - 1):
        seeds.append(None if seeds[-1] is None else validation.derive_seed(seeds[-1]))
    return seeds


def initialize(model, spec, *, data=None, seed=None):
    """Applies an init spec to a built ``model``; returns the variable paths written, in order.

    Args:
        model: a built ``keras.Model`` (the package's, keras.applications,
            KerasHub or your own).
        spec: an init spec (forms joined by ``+``, see :func:`parse_init_spec`
            and :func:`init_forms`), or the list it parses to.
        data: images ``(N, H, W, C)`` as the model's input is scaled, for the
            forms that measure them (:attr:`InitForm.needs_data`).
        seed: ``None`` or an int; each later form gets a seed derived from it.

    Example:
        >>> model = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
        >>> paths = keras_structinit.initialize(model, spec, seed=0)  # spec: see docs/initialize.md
    """
    paths = [path for _, written in apply_parts(model, spec, data=data, seed=seed) for path in written]
    return list(dict.fromkeys(paths))


def _spec_parts(spec):
    if isinstance(spec, str):
        return parse_init_spec(spec)
    if isinstance(spec, (list, tuple)) and all(isinstance(p, InitPart) for p in spec):
        return list(spec)
    hint = (f"; join forms with '+', e.g. {validation.shown('+'.join(spec), 200)}"
            if isinstance(spec, (list, tuple)) and spec and all(isinstance(p, str) for p in spec) else "")
    raise TypeError(f"`spec` must be an init spec (a str such as 'NAME+NAME:ARG') or the list of "
                    f"InitPart that parse_init_spec returns. Received: spec={validation.shown(spec, 200)} "
                    f"of type {type(spec).__name__}{hint}")


def apply_parts(model, spec, *, data=None, seed=None):
    """:func:`initialize`, returning ``[(part, paths it wrote), ...]`` in the order applied (what
    ``structinit init`` reports: the form that last wrote a variable is its initializer).

    All or nothing: where a form refuses the model (an error from any part), every variable's
    value and ``trainable`` flag are restored before the error propagates."""
    parts = _spec_parts(spec)
    seed = validation.optional(validation.random_seed, seed, "seed")
    missing = [p.name for p in parts if p.form.needs_data and data is None]
    if missing:
        raise ValueError(f"`data` is needed by init {', '.join(missing)}: images (N, H, W, C) scaled as the "
                         "model's input is")
    import keras

    saved = [(v, keras.ops.convert_to_numpy(v), v.trainable) for v in getattr(model, "variables", ())]
    try:
        return [(part, list(part.form.apply(model, part.value, data=data, seed=part_seed)))
                for part, part_seed in zip(parts, part_seeds(seed, len(parts)), strict=True)]
    except BaseException:
        for variable, value, trainable in saved:
            variable.assign(value)
            variable.trainable = trainable
        raise
