"""What a model argument names, parsed once: :class:`ModelSpec`.

A model is named by text in one of four forms: a zoo name (``convmixer-256/8``, declared by
the zoo modules, :mod:`keras_structinit.models.zoo`), ``keras.applications:NAME`` (built without
weights; ``keras.applications:NAME:weights.h5`` loads that file), a ``.keras`` file or a
KerasHub preset folder. :meth:`ModelSpec.parse` reads the text once; the spec builds the
model (:meth:`~ModelSpec.build`), fits a loaded model's head to the data
(:meth:`~ModelSpec.fitted`) and says what frozen spatial filters mean for it
(:meth:`~ModelSpec.builder_arguments`, :meth:`~ModelSpec.freeze`). ``structinit train``,
``init`` and ``inspect`` resolve their models here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import keras

from keras_structinit import validation
from keras_structinit.freezing import freeze_spatial
from keras_structinit.models.registry import zoo_entry
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.sources import APPLICATIONS, application_builder, load_model
from keras_structinit.walker import find_kernels

__all__ = ["KINDS", "ModelSpec", "fit_head", "model_from"]

#: The forms of a model argument (:attr:`ModelSpec.kind`).
KINDS = ("zoo", "applications", "keras_file", "preset")
_OTHER_FORMS = "or a .keras file, keras.applications:NAME or a KerasHub preset folder"


@dataclass(frozen=True)
class ModelSpec:
    """A model argument, parsed (see the module docstring).

    Attributes:
        text: the argument as given.
        kind: one of :data:`KINDS`.
        entry: a zoo name's :class:`~keras_structinit.models.zoo.ZooEntry` (``None`` otherwise).
        params: the builder arguments a zoo name sets (``{"dim": 256, "depth": 8}``).
        weights: a ``keras.applications:NAME:FILE``'s weights file (``None`` otherwise).
        name: how messages spell the argument (```model```, ``--model``, ``MODEL``).
    """

    text: str
    kind: str
    entry: ZooEntry | None = None
    params: Mapping = field(default_factory=dict)
    weights: str | None = None
    name: str = field(default="`model`", compare=False)

    @classmethod
    def parse(cls, text, name="`model`"):
        """The spec of ``text``: ``keras.applications:...``, a ``.keras`` path or an existing folder
        (a KerasHub preset) first, else a zoo name. ``TypeError`` for a non-str, ``ValueError``
        naming ``model`` and the accepted forms for unknown text, ``FileNotFoundError`` for a
        missing ``.keras`` file. ``name`` spells the argument in messages."""
        shown = name
        validation.text(text, shown)
        if text.startswith(APPLICATIONS):
            constructor, _, weights = text[len(APPLICATIONS) :].partition(":")
            if not weights and application_builder(constructor) is None:
                raise ValueError(
                    f"{shown} {text!r}: keras.applications has no model {constructor!r} "
                    "(e.g. keras.applications:ConvNeXtTiny)"
                )
            return cls(text, "applications", weights=weights or None, name=shown)
        if text.endswith(".keras"):
            if not os.path.exists(text):
                raise FileNotFoundError(f"{shown} {text!r} does not exist")
            return cls(text, "keras_file", name=shown)
        if os.path.isdir(text):
            return cls(text, "preset", name=shown)
        try:
            entry, params = zoo_entry(text)
        except ValueError as err:
            raise ValueError(f"{err}; {_OTHER_FORMS}") from None
        return cls(text, "zoo", entry=entry, params=params, name=shown)

    @property
    def family(self):
        """A zoo model's builder name (``"convmixer"``), else ``None``."""
        return None if self.entry is None else self.entry.family

    @property
    def sized(self):
        """Whether :meth:`build` makes the model of the sizes it is given (a zoo model, or a
        ``keras.applications`` one without weights); otherwise the model is loaded as saved."""
        return self.kind == "zoo" or (self.kind == "applications" and self.weights is None)

    @property
    def freezes_itself(self):
        """Whether the builder takes ``frozen`` and freezes its own spatial filters (an LCResNet)."""
        return self.entry is not None and self.entry.freezes_itself

    def build(self, num_classes, input_shape, **kwargs):
        """The model: a zoo one built with ``kwargs`` (its builder's arguments), a
        ``keras.applications`` one built without weights, of ``num_classes`` logits and
        ``input_shape``; a loaded one as saved (``kwargs`` then refused)."""
        if self.kind == "zoo":
            return self.entry.build(self.params, num_classes, input_shape, kwargs, name=self.text)
        self.check_kwargs(kwargs)
        if self.sized:
            constructor = application_builder(self.text[len(APPLICATIONS) :])
            return constructor(
                weights=None, input_shape=input_shape, classes=num_classes, classifier_activation=None
            )
        return load_model(self.text, name=self.name.strip("`"))

    def check_kwargs(self, kwargs):
        """``ValueError`` for builder arguments (``kwargs``) given with a model not built by the zoo."""
        if kwargs and self.kind != "zoo":
            raise ValueError(
                f"{', '.join(f'`{k}`' for k in kwargs)} apply to the zoo's models; "
                f"{self.name} {self.text!r} brings its own"
            )

    def fitted(self, num_classes, input_shape, image_shape=None, new_head=False, spell=None, **kwargs):
        """``(model, note)``: :meth:`build`, then for a model not built by the zoo the check against
        the data and the new head if asked (:func:`fit_head`)."""
        model = self.build(num_classes, input_shape, **kwargs)
        if self.kind == "zoo":
            return model, None
        return fit_head(model, self.text, num_classes, image_shape, new_head, spell or (lambda f: f"`{f}`"))

    def builder_arguments(self, frozen):
        """What ``frozen`` adds to the builder's arguments: ``{"frozen": frozen}`` for a model that
        freezes itself (:attr:`freezes_itself`), else nothing (see :meth:`freeze`)."""
        return {"frozen": bool(frozen)} if self.freezes_itself else {}

    def freeze(self, model, frozen):
        """Freezes ``model``'s spatial filters if ``frozen`` and the builder has not (a model that
        freezes itself got :meth:`builder_arguments`); the paths of its frozen spatial kernels."""
        if self.freezes_itself:
            return [v.path for _, v in find_kernels(model, "all_spatial") if not v.trainable]
        return freeze_spatial(model) if frozen else []


def model_from(spec, *, input_shape=None, classes=None, name="MODEL"):
    """The model ``spec`` names (:class:`ModelSpec`), a zoo or ``keras.applications:NAME`` one of
    ``input_shape`` (default ``(32, 32, 3)`` / ``(224, 224, 3)``) and ``classes`` (10 / 1000); a
    loaded one as saved (then the two are refused). ``spec`` may be text or a :class:`ModelSpec`."""
    parsed = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec, name)
    if not parsed.sized and (input_shape or classes):
        raise ValueError(
            f"`input_shape` and `classes` apply to zoo and keras.applications models; "
            f"{parsed.name} {parsed.text!r} brings its own"
        )
    shape, count = ((32, 32, 3), 10) if parsed.kind == "zoo" else ((224, 224, 3), 1000)
    return parsed.build(classes or count, input_shape or shape)


def fit_head(model, spec, num_classes, image_shape, new_head, spell):
    """``(model, note)``: a loaded ``model`` checked against the data: its input takes ``image_shape``
    and its last layer has ``num_classes`` outputs, or, with ``new_head``, a new last Dense that has;
    ``note`` is the line that states the new head (``None`` without one). ``spell(field)`` spells a
    field in messages (```model```, ``--model``).

    The new head is linear: it gives logits, as the package's own models do. It replaces the last
    Dense, and a final ``Softmax``/``Activation`` layer after it, which would make its outputs
    probabilities (issue 64); the note names what was dropped."""
    if image_shape is not None:
        wanted = tuple(model.input_shape[1:]) if isinstance(model.input_shape, tuple) else None
        if wanted is not None and any(w not in (None, g) for w, g in zip(wanted, image_shape, strict=False)):
            raise ValueError(
                f"{spell('model')} {spec!r} takes inputs of shape {wanted}; the images of "
                f"{spell('data')} are {image_shape}"
            )
    outputs = model.output_shape[-1] if isinstance(model.output_shape, tuple) else None
    if outputs == num_classes:
        return model, None
    if not new_head:
        raise ValueError(
            f"{spell('model')} {spec!r} ends in {outputs} outputs; the data has {num_classes} "
            f"classes: pass {spell('new_head')} to give it a new last Dense of {num_classes}"
        )
    last = dense = model.layers[-1]
    if isinstance(last, (keras.layers.Softmax, keras.layers.Activation)):
        history = getattr(last.input, "_keras_history", None)
        dense = history.operation if history is not None else last
    if not isinstance(dense, keras.layers.Dense):
        ends = " then a ".join(type(layer).__name__ for layer in dict.fromkeys((dense, last)))
        raise ValueError(
            f"{spell('new_head')} replaces a last Dense layer (and a Softmax or Activation "
            f"after it); {spell('model')} ends in a {ends}"
        )
    head = keras.layers.Dense(num_classes, name=f"{dense.name}_{num_classes}")
    dropped = [] if _name(dense.activation) == "linear" else [f"its {_name(dense.activation)}"]
    if dense is not last:
        kind = "softmax" if isinstance(last, keras.layers.Softmax) else _name(last.activation)
        dropped.append(f"the {kind} layer {last.name!r} after it")
    note = (
        f"New head: Dense {head.name!r} of {num_classes} outputs, linear: it gives logits, in place of "
        f"{dense.name!r} ({outputs} outputs"
        + (f"; {' and '.join(dropped)} not kept" if dropped else "")
        + ")"
    )
    return keras.Model(model.inputs, head(dense.input), name=model.name), note


def _name(activation):
    return getattr(activation, "__name__", type(activation).__name__)
