"""The method records and their discovery: each method declares itself once; the rest derives.

A method is one folder: ``keras_structinit/<name>/method.py`` holding ``METHOD = Method(...)``
(a third-party package declares the module holding its record under the entry-point
group ``keras_structinit.methods``). The record names the method's init forms, its
public exports per namespace, its serializable modules, the walker selectors it adds,
its sections of ``structinit inspect``, its command-line subcommands and its paper setups;
:func:`records` finds them (the core's own record, ``core/method.py``, among them), and the
CLI's ``--init`` help, the lazy exports of ``keras_structinit``, ``.initializers``, ``.callbacks``
and ``.layers``, ``_registry``, :mod:`.inspection` and the walker's selectors read them (nothing
else names a method, this module included).

Import the records' types from :mod:`keras_structinit.methods`, the public place; this module is
where they live. It imports no Keras and no method: the records are imported when
:func:`records` is first called.
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

from keras_structinit import _hooks

#: Stages in the order forms are applied.
STAGES = ("weights", "spatial", "data", "attention", "mlp")
#: The namespaces a record exports into (``""``: ``keras_structinit`` itself).
NAMESPACES = ("", "initializers", "callbacks", "layers")
#: Entry-point group of methods defined outside this package: ``"keras_structinit.methods"``, named
#: after the module their records import their types from. A group's name, not an import (spelled so
#: that ``tests/architecture.py``, which reads a module path in a string as a lazy import, does not
#: take it for one).
ENTRY_POINT_GROUP = __package__  # "keras_structinit.methods", the records' public place


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
        resolve: ``resolve(model, value) -> value``: the concrete argument a model-dependent
            one (e.g. ``auto``) stands for on ``model``, applied and reported in its place;
            ``None`` keeps the value.
        expand: ``expand(model, value, *, data, teacher) -> (spec, lines)``: a form standing for a
            concrete spec chosen per model (``auto``), applied in its place; ``lines`` say why.
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
    resolve: Callable[[Any, Any], Any] | None = None
    expand: Callable[..., tuple] | None = None

    def usage(self):
        """``name``, ``name[:ARG]`` or ``name:ARG``."""
        if self.arg is None:
            return self.name
        return f"{self.name}[:{self.arg}]" if self.default is not None else f"{self.name}:{self.arg}"

    def default_value(self):
        return self.default() if callable(self.default) else self.default


@dataclass(frozen=True)
class Selector:
    """What a method acts on, for :mod:`keras_structinit.engine.walker`.

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
    """A section that a method adds to the report of :func:`keras_structinit.methods.inspection.inspect`
    (``structinit inspect``), or its part of another method's section.

    Attributes:
        section: the section's key in the report (``report.<section>``, ``to_dict()[section]``).
        function: ``"module:function"`` (the module relative to the record's package when it starts
            with ``.``), imported when a model is inspected. A section's function is called as
            ``f(model, *, data, parts)`` (``data``: ``None``, images or ``(images, labels)``, read
            with :func:`keras_structinit.methods.inspection.images_and_labels`), ``parts`` being the loaded
            functions of the parts added to it, and returns the section
            (:mod:`keras_structinit.methods.inspection` says what it holds); a part's function is called
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
        setups: :class:`~keras_structinit.methods.setup_records.PaperSetup` records of the paper's experiments
            (``--paper``).
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
        object.__setattr__(
            self, "commands", tuple(dataclasses.replace(c, module=absolute(c.module)) for c in self.commands)
        )
        object.__setattr__(
            self,
            "inspectors",
            tuple(dataclasses.replace(i, function=absolute(i.function)) for i in self.inspectors),
        )
        object.__setattr__(self, "pure", tuple(absolute(m) for m in self.pure))
        unknown = [n for names in self.public.values() for n in names if n not in self.exports]
        unknown += [n for n in self.model_functions if n not in self.exports]
        if unknown or set(self.public) - set(NAMESPACES):
            raise ValueError(
                f"method {self.name!r}: public names {unknown} are not exports, or "
                f"namespaces {sorted(set(self.public) - set(NAMESPACES))} are unknown"
            )


def _builtin_record_modules():
    """``keras_structinit.<name>.method`` for every folder of this package holding a ``method.py``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    package = __package__.rpartition(".")[0]
    return [
        f"{package}.{name}.method"
        for name in sorted(os.listdir(root))
        if os.path.isfile(os.path.join(root, name, "method.py"))
    ]


def _record_of(obj, where):
    record = getattr(obj, "METHOD", obj)
    if not isinstance(record, Method):
        raise TypeError(
            f"{where} must be a Method record or a module defining METHOD = Method(...); "
            f"got {type(record).__name__}"
        )
    return record


@functools.cache
def records():
    """Every :class:`Method`: this package's (by :attr:`Method.order`, then folder name: the core's
    first), then plug-ins."""
    builtin = [_record_of(importlib.import_module(m), m) for m in _builtin_record_modules()]
    found = sorted(builtin, key=lambda r: r.order)
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
            raise ValueError(
                f"inspector {part.function!r} adds to section {part.section!r}, which no "
                f"record declares; sections: {sorted(sections)}"
            )
        sections[part.section][1].append(part)
    return sections


def figure_names():
    """The PNG files the records' inspectors may write, in the sections' order."""
    return tuple(
        name for inspector, parts in inspectors().values() for i in (inspector, *parts) for name in i.figures
    )


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
