"""The init grammar and :func:`initialize`: one record per init form, everything else derived.

An init spec names one or more forms joined by ``+``, each ``NAME`` or
``NAME:ARG``, e.g. ``"conv-cov:cifar-p2+mean-shift:0.2"``. :data:`INIT_FORMS`
holds one :class:`InitForm` record per form: its argument, how that argument
is checked, the function that applies it and what it acts on. The command
line's ``--init`` choices and help, its checks and the benchmarks all read
these records; nothing else spells the grammar.

Forms act on the model in stage order, whatever order the spec gives them
(teacher weights, then spatial filters, then data-aligned convs, then MLP
blocks), at most one form per stage. The first form applied gets ``seed``;
each later one a seed derived from it
(:func:`~keras_structinit.mimetic.shift_seed` applied once per step), so
adding a form never changes what the earlier ones draw.

This module imports no Keras; the apply functions are imported when used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from keras_structinit import validation

__all__ = ["INIT_FORMS", "InitForm", "InitPart", "form_usage", "initialize", "parse_init_spec"]

#: Stages in the order forms are applied.
STAGES = ("weights", "spatial", "data", "mlp")


@dataclass(frozen=True)
class InitForm:
    """One ``--init`` form.

    Attributes:
        name: the form's name in a spec (``"conv-cov"``).
        summary: one line for ``--help``.
        apply: called as ``apply(model, value, *, data, seed)``; returns the variable paths it
            wrote (each applier imports its method when called).
        stage: one of :data:`STAGES` (when it acts, and what it competes with).
        arg: the argument's placeholder (``"PRESET"``), ``None`` for a form without one.
        default: the argument when the spec omits it; ``None`` makes it required.
        parse: ``str -> value``; raises ``ValueError`` (its message is put after the form).
        reads_file: the argument is a path the run reads (never to be written over).
        targets: what the form acts on, as ``walker`` selectors (for checks and docs).
        needs_data: the form measures images (``initialize(..., data=images)``).
    """

    name: str
    summary: str
    apply: Callable[..., list]
    stage: str
    arg: str | None = None
    default: Any = None
    parse: Callable[[str], Any] | None = None
    reads_file: bool = False
    targets: tuple = ()
    needs_data: bool = False

    def usage(self):
        """``name``, ``name[:ARG]`` or ``name:ARG``."""
        if self.arg is None:
            return self.name
        return f"{self.name}[:{self.arg}]" if self.default is not None else f"{self.name}:{self.arg}"


@dataclass(frozen=True)
class InitPart:
    """One parsed form of a spec: its record and its argument's value."""

    form: InitForm
    value: Any = None

    @property
    def name(self):
        return self.form.name


# ------------------------------------------------------------------ argument parsers


def _preset(text):
    from keras_structinit.covariance.schedule import PRESETS

    if text not in PRESETS:
        raise ValueError(f"unknown ConvCovariance preset {text!r}; presets: {sorted(PRESETS)}")
    return text


def _existing_file(what, suffix=None):
    def parse(text):
        if suffix is not None and not text.endswith(suffix):
            raise ValueError(f"needs {what} ({suffix})")
        if not os.path.isfile(text):
            raise ValueError(f"{what} not found: {text!r}")
        return text

    return parse


def _finite_number(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"takes a finite number, e.g. 0.05; got {text!r}")
    return value


def _layer_count(text):
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"takes a number of conv layers >= 1, e.g. 2; got {text!r}")
    return int(text)


# ------------------------------------------------------------------ appliers


def _default(model, value, *, data, seed):
    return []


def _torch_uniform(model, value, *, data, seed):
    from keras_structinit.initializers.torch_default import apply_torch_uniform

    return apply_torch_uniform(model, seed=seed)


def _conv_cov(model, value, *, data, seed):
    from keras_structinit.covariance.apply import apply_conv_covariance

    return apply_conv_covariance(model, preset=value, seed=seed)


def _cov_transfer(model, value, *, data, seed):
    from keras_structinit.covariance.apply import apply_covariance_transfer

    return apply_covariance_transfer(model, bank=value, seed=seed)


def _select(model, value, *, data, seed):
    from keras_structinit.selection.select import select_weights

    return [entry["student"] for entry in select_weights(value, model, seed=seed).entries]


def _mean_shift(model, value, *, data, seed):
    from keras_structinit.mimetic.apply import apply_mean_shift

    return apply_mean_shift(model, b=value, seed=seed)


def _data_aligned(model, value, *, data, seed):
    from keras_structinit.alignment.apply import align_conv_layers

    return align_conv_layers(model, data, num_layers=value, seed=seed)


def _mimetic_default_b():
    from keras_structinit.mimetic import DEFAULT_B

    return DEFAULT_B


#: Every init form, in the order ``--help`` lists them.
INIT_FORMS = {
    form.name: form
    for form in (
        InitForm("default", "the model builder's own initialization", _default, "weights"),
        InitForm("torch-uniform", "PyTorch's default U[-1/sqrt(fan_in), 1/sqrt(fan_in)] on depthwise kernels",
                 _torch_uniform, "spatial", targets=("depthwise",)),
        InitForm("conv-cov", "ConvCovariance on depthwise kernels (Trockman et al. 2023, Eq. 10-11)",
                 _conv_cov, "spatial", arg="PRESET", default="cifar-p2", parse=_preset,
                 targets=("depthwise",)),
        InitForm("cov-transfer", "covariance transfer from a FilterCovariance bank (.npz)",
                 _cov_transfer, "spatial", arg="PATH",
                 parse=_existing_file("a covariance bank saved by FilterCovariance.save"), reads_file=True,
                 targets=("depthwise",)),
        InitForm("select", "weight selection from a larger teacher (Xu et al. 2024)", _select,
                 "weights", arg="TEACHER.keras", parse=_existing_file("a teacher .keras file", ".keras"),
                 reads_file=True),
        InitForm("data-aligned", "the first L Conv2D layers from the images' patch covariance "
                 "(Maennel et al. 2020)", _data_aligned, "data", arg="L", default=1,
                 parse=_layer_count, targets=("all_spatial",), needs_data=True),
        InitForm("mean-shift", "mimetic mean shift of each MLP block's first layer (Trockman & Kolter)",
                 _mean_shift, "mlp", arg="B", default="mimetic.DEFAULT_B", parse=_finite_number,
                 targets=("mlp_first",)),
    )
}


def form_usage():
    """``"default | torch-uniform | conv-cov[:PRESET] | ..."``: the forms for a help text."""
    return " | ".join(form.usage() for form in INIT_FORMS.values())


def _default_value(form):
    return _mimetic_default_b() if form.default == "mimetic.DEFAULT_B" else form.default


def parse_init_spec(spec):
    """The :class:`InitPart` list of ``spec``, in the order the forms are applied.

    ``ValueError`` (one line, naming the bad part and the forms) for an
    unknown form, a bad or missing argument, ``default`` combined with
    another form, or two forms of one stage; ``TypeError`` for a non-str.

    Example:
        >>> [(p.name, p.value) for p in parse_init_spec("mean-shift:0.1+conv-cov")]
        [('conv-cov', 'cifar-p2'), ('mean-shift', 0.1)]
    """
    validation.text(spec, "init")
    parts = []
    for text in spec.split("+"):
        name, colon, arg = text.partition(":")
        form = INIT_FORMS.get(name)
        if form is None:
            raise ValueError(f"`init` part {text!r} is not one of {form_usage()}. Received: init={spec!r}")
        if form.arg is None and colon:
            raise ValueError(f"`init` part {text!r}: {name} takes no argument. Received: init={spec!r}")
        if form.arg is not None and not arg and (colon or form.default is None):
            raise ValueError(f"`init` part {text!r} needs its argument: {form.usage()}. "
                             f"Received: init={spec!r}")
        value = _default_value(form)
        if arg:
            try:
                value = form.parse(arg)
            except ValueError as err:
                raise ValueError(f"`init` part {text!r}: {name} {err}. Received: init={spec!r}") from None
        parts.append(InitPart(form, value))
    if len(parts) > 1 and any(p.name == "default" for p in parts):
        raise ValueError(f"`init` 'default' cannot be combined with other forms. Received: init={spec!r}")
    stages = [p.form.stage for p in parts]
    repeated = sorted({s for s in stages if stages.count(s) > 1})
    if repeated:
        clash = [p.name for p in parts if p.form.stage in repeated]
        raise ValueError(f"`init` combines {' and '.join(clash)}, which act on the same {repeated[0]} stage; "
                         f"use one of them. Received: init={spec!r}")
    return sorted(parts, key=lambda p: STAGES.index(p.form.stage))


def part_seeds(seed, count):
    """The seeds of ``count`` forms applied in turn: ``seed``, then each derived from the previous one."""
    from keras_structinit.mimetic.shift import shift_seed

    seeds = [seed]
    for _ in range(count - 1):
        seeds.append(None if seeds[-1] is None else shift_seed(seeds[-1]))
    return seeds


def initialize(model, spec, *, data=None, seed=None):
    """Applies an init spec to a built ``model``; returns the variable paths written, in order.

    Args:
        model: a built ``keras.Model`` (the package's, keras.applications,
            KerasHub or your own).
        spec: an init spec (``"conv-cov+mean-shift"``, see :func:`parse_init_spec`
            and :data:`INIT_FORMS`), or the list it parses to.
        data: images ``(N, H, W, C)`` as the model's input is scaled, for the
            forms that measure them (``data-aligned``).
        seed: ``None`` or an int; each later form gets a seed derived from it.

    Example:
        >>> model = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
        >>> paths = keras_structinit.initialize(model, "conv-cov+mean-shift", seed=0)
    """
    parts = parse_init_spec(spec) if isinstance(spec, str) else list(spec)
    seed = validation.optional(validation.random_seed, seed, "seed")
    missing = [p.name for p in parts if p.form.needs_data and data is None]
    if missing:
        raise ValueError(f"`data` is needed by init {', '.join(missing)}: images (N, H, W, C) scaled as the "
                         "model's input is")
    paths = []
    for part, part_seed in zip(parts, part_seeds(seed, len(parts)), strict=True):
        paths += part.form.apply(model, part.value, data=data, seed=part_seed)
    return paths
