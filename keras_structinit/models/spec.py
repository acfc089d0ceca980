"""What a model argument names, parsed once: :class:`ModelSpec`, the one grammar of a model.

Every command and function that takes a model or a teacher (``--model``, ``--distill-from``,
``select --teacher/--student``, ``init``, ``inspect``, :func:`load_model`, ``load_teacher``) reads
its text here, and each form means the same model everywhere (:data:`FORMS`):

* a zoo name (``convmixer-256/8``, declared by the zoo modules, :mod:`keras_structinit.models.zoo`);
* ``keras.applications:NAME`` (built without weights) or ``keras.applications:NAME:WEIGHTS``, where
  ``WEIGHTS`` is what the constructor's ``weights=`` takes: ``imagenet`` (downloaded) or a weights
  file. Pretrained weights are asked for only this way;
* a ``.keras`` file;
* a KerasHub preset: a local folder (``backbone.save_to_preset(DIR)``), or ``keras_hub:PRESET`` (a
  preset name or a ``kaggle://``/``hf://`` handle, downloaded);
* ``keras_cv:PRESET`` (a KerasCV backbone preset, a name or a local folder).

:meth:`ModelSpec.parse` reads the text once; the spec builds or loads the model
(:meth:`~ModelSpec.build`, :meth:`~ModelSpec.load`), fits a loaded model's head to the data
(:meth:`~ModelSpec.fitted`) and says what frozen spatial filters mean for it
(:meth:`~ModelSpec.builder_arguments`, :meth:`~ModelSpec.freeze`). The loaders are in
:mod:`keras_structinit.models.loading`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import keras

from keras_structinit.engine.contract import check_model
from keras_structinit.engine.freezing import freeze_spatial
from keras_structinit.engine.walker import find_kernels
from keras_structinit.models import loading
from keras_structinit.models.registry import zoo_entry
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

__all__ = ["FORMS", "KINDS", "ModelSpec", "fit_head", "load_model", "model_from"]

APPLICATIONS, HUB, CV = "keras.applications:", "keras_hub:", "keras_cv:"
#: The forms of a model argument (:attr:`ModelSpec.kind`).
KINDS = ("zoo", "applications", "keras_file", "preset", "keras_hub", "keras_cv")
#: ``(form, example, what it means)`` of every form; the help and the docs show these, and a test
#: parses every form they show.
FORMS = (
    ("NAME", "convmixer-256/8", "a model of the package's zoo, built"),
    ("keras.applications:NAME", "keras.applications:ResNet50", "built without weights"),
    (
        "keras.applications:NAME:WEIGHTS",
        "keras.applications:ResNet50:imagenet",
        "with the weights its `weights=` takes: imagenet (downloaded) or a weights file",
    ),
    ("FILE.keras", "model.keras", "a saved model, loaded as saved"),
    ("DIR", "presets/vit_small", "a KerasHub preset folder, loaded as saved"),
    (
        "keras_hub:PRESET",
        "keras_hub:vit_base_patch16_224_imagenet",
        "a KerasHub preset name or handle, downloaded",
    ),
    ("keras_cv:PRESET", "keras_cv:resnet50_v2_imagenet", "a KerasCV backbone preset (name or folder)"),
)
_OTHER_FORMS = "or " + ", ".join(form for form, _, _ in FORMS[1:])


@dataclass(frozen=True)
class ModelSpec:
    """A model argument, parsed (see the module docstring).

    Attributes:
        text: the argument as given.
        kind: one of :data:`KINDS`.
        entry: a zoo name's :class:`~keras_structinit.models.zoo.ZooEntry` (``None`` otherwise).
        params: the builder arguments a zoo name sets (``{"dim": 256, "depth": 8}``).
        weights: ``keras.applications:NAME:WEIGHTS``'s ``WEIGHTS`` (``None`` otherwise).
        target: what the form names after its prefix: the constructor, the file, the folder or the
            preset (the zoo name for a zoo model).
        name: how messages spell the argument (```model```, ``--model``, ``MODEL``).
    """

    text: str
    kind: str
    entry: ZooEntry | None = None
    params: Mapping = field(default_factory=dict)
    weights: str | None = None
    target: str = ""
    name: str = field(default="`model`", compare=False)

    @classmethod
    def parse(cls, text, name="`model`"):
        """The spec of ``text`` (a str or ``os.PathLike``), in the order of :data:`FORMS`' prefixes,
        then a ``.keras`` path, an existing folder, else a zoo name. ``TypeError`` for another
        type, ``ValueError`` naming ``name`` and the accepted forms for unknown text,
        ``FileNotFoundError`` for a missing file or a path that does not exist."""
        if isinstance(text, os.PathLike):
            text = os.fspath(text)
        validation.text(text, name)
        if text.startswith(APPLICATIONS):
            constructor, _, weights = text[len(APPLICATIONS) :].partition(":")
            if loading.application_builder(constructor) is None:
                raise ValueError(
                    f"{name} {text!r}: keras.applications has no model {constructor!r} "
                    "(e.g. keras.applications:ConvNeXtTiny)"
                )
            if weights and weights != "imagenet" and not os.path.isfile(weights):
                raise FileNotFoundError(
                    f"{name} {text!r}: the weights file {weights!r} does not exist (WEIGHTS is imagenet "
                    "or a weights file)"
                )
            return cls(text, "applications", weights=weights or None, target=constructor, name=name)
        for prefix, kind in ((HUB, "keras_hub"), (CV, "keras_cv")):
            if text.startswith(prefix):
                if not text[len(prefix) :]:
                    raise ValueError(f"{name} {text!r} names no preset (e.g. {prefix}PRESET)")
                return cls(text, kind, target=text[len(prefix) :], name=name)
        if "://" in text:  # a kaggle:// or hf:// handle is KerasHub's
            return cls(text, "keras_hub", target=text, name=name)
        if text.endswith(".keras"):
            if not os.path.exists(text):
                raise FileNotFoundError(f"{name} {text!r} does not exist")
            return cls(text, "keras_file", target=text, name=name)
        if os.path.isdir(text):
            if not os.path.isfile(os.path.join(text, "config.json")):
                raise ValueError(f"{name} {text!r} is a folder without config.json, not a KerasHub preset")
            return cls(text, "preset", target=text, name=name)
        try:
            entry, params = zoo_entry(text)
        except ValueError as err:
            if text.startswith((".", os.path.sep)) or text.count(os.path.sep) > 1:
                raise FileNotFoundError(f"{name} {text!r} does not exist") from None
            hint = ""
            if loading.application_builder(text.partition(":")[0]) is not None:
                hint = f" (keras.applications' {text.partition(':')[0]}: write keras.applications:{text})"
            said = (
                str(err).replace("`model`", name).replace("Received: model=", f"Received: {name.strip('`')}=")
            )
            raise ValueError(f"{said}; {_OTHER_FORMS}{hint}") from None
        return cls(text, "zoo", entry=entry, params=params, target=text, name=name)

    def load(self, *, max_model_bytes=None, **kwargs):
        """The model as its form means it: a zoo model built with ``kwargs`` (its builder's), a
        keras.applications one built with ``kwargs`` (``input_shape``, ``classes``, ...; logits out),
        a saved or preset one loaded (``kwargs`` go to its loader)."""
        spelled = self.name.strip("`")
        if self.kind == "zoo":
            classes, shape = kwargs.pop("classes", 10), kwargs.pop("input_shape", (32, 32, 3))
            return self.entry.build(self.params, classes, shape, kwargs, name=self.text)
        if self.kind == "applications":
            return loading.build_application(
                self.target, self.weights, spelled, max_model_bytes=max_model_bytes, **kwargs
            )
        if self.kind == "keras_file":
            return loading.load_keras_file(self.target, spelled, max_model_bytes=max_model_bytes, **kwargs)
        if self.kind == "keras_cv":
            return loading.load_cv_preset(self.target, spelled, **kwargs)
        return loading.load_hub_preset(self.target, spelled, local=self.kind == "preset", **kwargs)

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
            return self.load(input_shape=input_shape, classes=num_classes)
        return self.load()

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


def load_model(spec, *, name="model", max_model_bytes=None, **kwargs):
    """The model ``spec`` names: a built ``keras.Model`` (returned as is), or text in one of
    :data:`FORMS` (:meth:`ModelSpec.load`; ``kwargs`` go to its builder or loader).

    Args:
        spec: a ``keras.Model``, a str or ``os.PathLike`` (see :data:`FORMS`), or a :class:`ModelSpec`.
        name: how errors name the argument (``"teacher"``, ``"--student"``, ``"MODEL"``).
        max_model_bytes: the most bytes of variables a ``.keras`` or weights file may declare, checked
            before it is read (default: :func:`~keras_structinit.utils.model_files.max_model_bytes_scope`'s
            bound, else 4 GiB).

    Example:

    >>> model = load_model("keras.applications:ConvNeXtTiny:imagenet", include_preprocessing=False)
    >>> model = load_model("/data/presets/vit_small")   # a KerasHub preset folder
    """
    if isinstance(spec, keras.Model):
        return check_model(spec, name)
    if not isinstance(spec, (str, os.PathLike, ModelSpec)):
        forms = ", ".join(form for form, _, _ in FORMS)
        raise TypeError(f"`{name}` must be a keras.Model or one of {forms}. Received: {name}={spec!r}")
    parsed = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec, f"`{name}`")
    return parsed.load(max_model_bytes=max_model_bytes, **kwargs)


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
    shape = model.output_shape if isinstance(model.output_shape, tuple) else None
    if shape is not None and len(shape) in (3, 4):  # a backbone: tokens or a feature map
        return _backbone_head(model, spec, num_classes, new_head, spell)
    outputs = shape[-1] if shape is not None else None
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


def _backbone_head(model, spec, num_classes, new_head, spell):
    """``(model, note)`` for a backbone, whose output is a token sequence ``(B, T, D)`` or a feature map
    ``(B, H, W, C)``: with ``new_head``, the family's pooling (its class token, the first token,
    where it has one, as KerasHub's ViT and DeiT classifiers read it; else the global average) then a
    linear Dense of ``num_classes`` (logits)."""
    shape = model.output_shape
    kind = "token sequence" if len(shape) == 3 else "feature map"
    if not new_head:
        raise ValueError(
            f"{spell('model')} {spec!r} is a backbone: it ends in a {kind} of shape {shape[1:]}, not "
            f"{num_classes} classes: pass {spell('new_head')} to add its pooling and a Dense of {num_classes}"
        )
    # The backbone is nested whole, so that it saves and loads as its library's own object.
    inputs = keras.Input(model.input_shape[1:], name="images")
    features = model(inputs)
    if len(shape) == 4:
        pooled, how = (
            keras.layers.GlobalAveragePooling2D(name="head_pool")(features),
            "global average pooling",
        )
    elif _has_class_token(model, shape[1]):
        crop = keras.layers.Cropping1D((0, shape[1] - 1), name="head_class_token")
        pooled = keras.layers.Reshape((shape[2],), name="head_pool")(crop(features))
        how = "its class token (the first of its tokens)"
    else:
        pooled, how = (
            keras.layers.GlobalAveragePooling1D(name="head_pool")(features),
            "the average of its tokens",
        )
    head = keras.layers.Dense(num_classes, name=f"head_{num_classes}")
    note = (
        f"New head: {how}, then Dense {head.name!r} of {num_classes} outputs, linear: it gives logits "
        f"({model.name} is a backbone ending in a {kind} of shape {shape[1:]})"
    )
    return keras.Model(inputs, head(pooled), name=model.name), note


def _has_class_token(model, tokens):
    """Whether a token backbone leads with a class token: its config says so (KerasHub's ViT,
    ``use_class_token``), or it has more tokens than image patches (DeiT: class and distillation)."""
    config = model.get_config()
    if "use_class_token" in config:
        return bool(config["use_class_token"])
    image, patch = config.get("image_shape"), config.get("patch_size")
    if image is None or patch is None or None in image[:2]:
        return False
    patch = (patch, patch) if isinstance(patch, int) else tuple(patch)
    return tokens > (image[0] // patch[0]) * (image[1] // patch[1])


def _name(activation):
    return getattr(activation, "__name__", type(activation).__name__)
