"""Lazy attributes for package namespaces (PEP 562 module ``__getattr__`` and ``__dir__``).

Kind namespaces (``initializers``, ``callbacks``, ...) re-export objects that
live in the method subpackages. Importing those eagerly would import Keras
and every method on ``import keras_structinit`` and create import cycles
(a method module importing ``initializers.base`` would run ``initializers``'
``__init__``, which imports the method module back). Each namespace instead
declares ``name -> module`` and resolves a name on first access, as
``lazy_loader.attach`` (Scientific Python SPEC 1) does::

    __getattr__, __dir__, _ = lazy_exports(__name__, {
        "ConvCovariance": "keras_structinit.covariance.initializers",
    })

An exported name is never the name of a submodule of the namespace: ``import pkg.name`` must give
that module (a test checks every package).
"""

from __future__ import annotations

import importlib
import sys

from keras_structinit import _hooks


def lazy_exports(module_name, exports, derived=None):
    """``(__getattr__, __dir__, __all__)`` for a module exporting ``exports`` lazily; its ``dir()``
    lists its public names (its ``__all__``) and dunders only, as ``dir(keras_structinit)`` does.

    ``exports`` maps a public name to the module that defines it. ``derived``, a function
    returning more such names (the method records' exports), is called on the first look-up
    or ``dir()``; with it, the module leaves ``__all__`` to ``__getattr__``, which then answers
    it too.
    """
    table = {}

    def names():
        if not table:
            table.update(exports)
            if derived is not None:
                table.update(derived())
        return table

    def __getattr__(name):
        if name == "__all__" and derived is not None:
            return sorted(names())
        # The static names first: resolving them never calls ``derived`` (which imports the
        # method records, and may run while one of those modules is still importing).
        target = exports.get(name) or (None if name.startswith("__") else names().get(name))
        if target is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(target), name)
        setattr(sys.modules[module_name], name, value)  # later look-ups skip __getattr__
        if _hooks.after_lookup is not None:
            _hooks.after_lookup()
        return value

    def __dir__():  # the public names (the module's own ``__all__``, else the exports) and dunders
        namespace = vars(sys.modules[module_name])
        dunders = {name for name in namespace if name.startswith("__") and name.endswith("__")}
        return sorted(set(namespace.get("__all__") or names()) | dunders | {"__all__"})

    return __getattr__, __dir__, sorted(exports)
