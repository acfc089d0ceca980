"""How a zoo module declares its model names beside its builder: a tuple ``ZOO`` of :class:`ZooEntry`.

After timm's ``@register_model``: the builder's module says which names build it, with which
arguments, and what freezing its spatial filters means for it. :mod:`keras_structinit.models.registry`
collects the declarations; ``available_models()``, ``--model``'s help and
:class:`~keras_structinit.models.spec.ModelSpec` derive from them. Pure Python: no Keras.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["FIXED_BY_NAME", "ZooEntry"]

#: The builder arguments a name fixes: passing one of them again is an error.
FIXED_BY_NAME = frozenset({"dim", "depth", "width", "expansion", "heads", "patch_size"})


@dataclass(frozen=True)
class ZooEntry:
    """One model name (``"vgg16"``) or form (``"convmixer-H/D"``) of the zoo.

    Attributes:
        form: the name, or the form as ``available_models()`` lists it.
        builder: ``builder(num_classes=..., input_shape=..., **params)`` returns the model.
        pattern: for a form, a regex (matched whole, on the lower-cased name) whose named groups
            are the builder's int arguments; ``None`` for a fixed name (``form`` itself).
        params: the builder arguments a fixed name sets.
        check: for a form, ``check(params)`` tells whether the numbers are valid; ``why`` says
            what is needed when they are not.
        note: what ``--model``'s help adds after the form (``" (D = 6n + 2)"``).
        shown: how ``--model``'s help lists the name; entries that share one are listed once
            (``"convnext-atto|femto|pico|nano|tiny"``). Default: ``form + note``.
        freezes_itself: the builder takes ``frozen`` and freezes its own spatial filters (an
            LCResNet's LC blocks, kept frozen in the ``.keras`` config); otherwise frozen
            filters are frozen after the model is built and initialized
            (:func:`keras_structinit.engine.freezing.freeze_spatial`).
    """

    form: str
    builder: Callable
    pattern: str | None = None
    params: Mapping = field(default_factory=dict)
    check: Callable | None = None
    why: str = ""
    note: str = ""
    shown: str | None = None
    freezes_itself: bool = False

    @property
    def family(self):
        """The builder's name (``"convmixer"``, ``"convnext_atto"``)."""
        return self.builder.__name__

    @property
    def help(self):
        """How ``--model``'s help lists this entry."""
        return self.shown if self.shown is not None else self.form + self.note

    def match(self, key):
        """``(params, ok)`` when the lower-cased ``key`` is this name or of this form, else ``None``;
        ``ok`` is ``False`` when a form's numbers fail :attr:`check`."""
        if self.pattern is None:
            return (dict(self.params), True) if key == self.form else None
        found = re.fullmatch(self.pattern, key)
        if found is None:
            return None
        params = {**self.params, **{k: int(v) for k, v in found.groupdict().items()}}
        return params, self.check is None or bool(self.check(params))

    def build(self, params, num_classes, input_shape, kwargs, *, name):
        """The builder called with ``params`` (what the name ``name`` sets) updated by ``kwargs``;
        a ``ValueError`` for a keyword argument that the name fixes."""
        for key, value in kwargs.items():
            if key in FIXED_BY_NAME and key in params:
                raise ValueError(
                    f"`{key}` is set by the model name; leave it out of the keyword "
                    f"arguments. Received: model={name!r}, {key}={value!r}"
                )
        return self.builder(num_classes=num_classes, input_shape=input_shape, **{**params, **kwargs})
