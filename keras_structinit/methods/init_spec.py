"""Init specs: their grammar (:func:`parse_init_spec`) and applying them (:func:`initialize`).

An init spec names one or more forms joined by ``+``, each ``NAME`` or
``NAME:ARG``, e.g. ``"A:ARG+B"`` (the forms: ``docs/initialize.md``; each is an
:class:`~keras_structinit.methods.method_records.InitForm` of a method record). Forms act on the model in
stage order, whatever order the spec gives them (whole-model weights, then spatial filters,
then data-measuring convs, then attention layers, then MLP blocks), at most one form per stage. The first form
applied gets ``seed``; each later one a seed derived from the previous one
(:func:`~keras_structinit.utils.validation.derive_seed`), so adding a form never changes what
the earlier ones draw.

Import these from :mod:`keras_structinit.methods` (or ``keras_structinit.initialize``), the public
place. This module imports Keras only in :func:`apply_parts`; appliers import their method when called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from keras_structinit.methods.method_records import STAGES, InitForm, init_forms
from keras_structinit.utils import validation


@dataclass(frozen=True)
class InitPart:
    """One parsed form of a spec: its record and its argument's value."""

    form: InitForm
    value: Any = None

    @property
    def name(self):
        return self.form.name


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
            raise ValueError(
                f"`init` part {shown_part} is not one of {form_usage()}. Received: init={received}"
            )
        if form.arg is None and colon:
            raise ValueError(f"`init` part {shown_part}: {name} takes no argument. Received: init={received}")
        if form.arg is not None and not arg and (colon or form.default is None):
            raise ValueError(
                f"`init` part {shown_part} needs its argument: {form.usage()}. Received: init={received}"
            )
        value = form.default_value()
        if arg:
            try:
                value = form.parse(arg)
            except ValueError as err:
                raise ValueError(
                    f"`init` part {shown_part}: {name} {validation.clipped(str(err))}. "
                    f"Received: init={received}"
                ) from None
        parts.append(InitPart(form, value))
    alone = [p.name for p in parts if p.form.alone]
    if len(parts) > 1 and alone:
        raise ValueError(
            f"`init` {alone[0]!r} cannot be combined with other forms. Received: init={received}"
        )
    stages = [p.form.stage for p in parts]
    repeated = sorted({s for s in stages if stages.count(s) > 1})
    if repeated:
        clash = [p.name for p in parts if p.form.stage in repeated]
        raise ValueError(
            f"`init` combines {' and '.join(clash)}, which act on the same {repeated[0]} stage; "
            f"use one of them. Received: init={received}"
        )
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


def initialize(model, spec, *, data=None, seed=None, teacher=None):
    """Applies an init spec to a built ``model``; returns the variable paths written, in order.

    Args:
        model: a built ``keras.Model`` (the package's, keras.applications,
            KerasHub or your own).
        spec: an init spec (forms joined by ``+``, see :func:`parse_init_spec`
            and :func:`init_forms`), or the list it parses to.
        data: images ``(N, H, W, C)`` as the model's input is scaled, for the
            forms that measure them (:attr:`InitForm.needs_data`).
        seed: ``None`` or an int; each later form gets a seed derived from it.
        teacher: a teacher ``.keras`` path, read by a form that chooses per model
            (:attr:`InitForm.expand`, ``auto``); ``None`` for none.

    Example:
        >>> model = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
        >>> paths = keras_structinit.initialize(model, spec, seed=0)  # spec: see docs/initialize.md
    """
    applied = apply_parts(model, spec, data=data, seed=seed, teacher=teacher)
    paths = [path for _, written in applied for path in written]
    return list(dict.fromkeys(paths))


def _spec_parts(spec):
    if isinstance(spec, str):
        return parse_init_spec(spec)
    if isinstance(spec, (list, tuple)) and all(isinstance(p, InitPart) for p in spec):
        return list(spec)
    hint = (
        f"; join forms with '+', e.g. {validation.shown('+'.join(spec), 200)}"
        if isinstance(spec, (list, tuple)) and spec and all(isinstance(p, str) for p in spec)
        else ""
    )
    raise TypeError(
        f"`spec` must be an init spec (a str such as 'NAME+NAME:ARG') or the list of "
        f"InitPart that parse_init_spec returns. Received: spec={validation.shown(spec, 200)} "
        f"of type {type(spec).__name__}{hint}"
    )


def expand_parts(model, spec, *, data=None, teacher=None):
    """``(parts, spec text, lines)``: the parts of ``spec``, a form that stands for a spec chosen per
    model (:attr:`InitForm.expand`, which stands alone) replaced by that spec's parts (arguments
    loaded), the concrete spec and the lines saying why; ``spec`` as given (text: ``None`` for a
    list of parts) and ``[]`` otherwise."""
    parts = _spec_parts(spec)
    expanding = [p for p in parts if p.form.expand is not None]
    if not expanding:
        return parts, spec if isinstance(spec, str) else None, []
    text, lines = expanding[0].form.expand(model, expanding[0].value, data=data, teacher=teacher)
    return load_parts(parse_init_spec(text)), text, list(lines)


def apply_parts(model, spec, *, data=None, seed=None, teacher=None):
    """:func:`initialize`, returning ``[(part, paths it wrote), ...]`` in the order applied (what
    ``structinit init`` reports: the form that last wrote a variable is its initializer).

    A part whose form has a ``resolve`` is returned with the argument it resolved to on ``model``
    (e.g. an argument ``auto`` standing for a preset chosen per model). All or nothing: where a form refuses
    the model (an error from any part), every variable's value and ``trainable`` flag are
    restored before the error propagates. A form that chooses a spec per model (``auto``) is
    replaced by the parts it chooses (:func:`expand_parts`)."""
    parts, _, _ = expand_parts(model, spec, data=data, teacher=teacher)
    seed = validation.optional(validation.random_seed, seed, "seed")
    parts = [InitPart(p.form, p.form.resolve(model, p.value)) if p.form.resolve else p for p in parts]
    missing = [p.name for p in parts if p.form.needs_data and data is None]
    if missing:
        raise ValueError(
            f"`data` is needed by init {', '.join(missing)}: images (N, H, W, C) scaled as the "
            "model's input is"
        )
    for part in parts:  # a form that can refuse without writing refuses before any part writes
        if part.form.check is not None:
            part.form.check(model, part.value)
    import keras

    saved = [(v, keras.ops.convert_to_numpy(v), v.trainable) for v in getattr(model, "variables", ())]
    try:
        return [
            (part, list(part.form.apply(model, part.value, data=data, seed=part_seed)))
            for part, part_seed in zip(parts, part_seeds(seed, len(parts)), strict=True)
        ]
    except BaseException:
        for variable, value, trainable in saved:
            variable.assign(value)
            variable.trainable = trainable
        raise
