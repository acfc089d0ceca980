"""Lazy attributes for package namespaces (PEP 562 module ``__getattr__``).

Kind namespaces (``initializers``, ``callbacks``, ...) re-export objects that
live in the method subpackages. Importing those eagerly would import Keras
and every method on ``import keras_structinit`` and create import cycles
(a method module importing ``initializers.base`` would run ``initializers``'
``__init__``, which imports the method module back). Each namespace instead
declares ``name -> module`` and resolves a name on first access::

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {
        "ConvCovariance": "keras_structinit.covariance.initializers",
        "layers": "keras_structinit.layers",          # a submodule
    })
"""

from __future__ import annotations

import importlib
import sys


def lazy_exports(module_name, exports, derived=None):
    """``(__getattr__, __dir__, __all__)`` for a module exporting ``exports`` lazily.

    ``exports`` maps a public name to the module that defines it; a name that
    equals the last component of its module path is the module itself.
    ``derived``, a function returning more such names (the method records'
    exports), is called on the first look-up or ``dir()``; with it, the
    module leaves ``__all__`` to ``__getattr__``, which then answers it too.
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
        target = exports.get(name) or names().get(name)
        if target is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module = importlib.import_module(target)
        value = (
            module
            if target.rsplit(".", 1)[-1] == name and not hasattr(module, name)
            else getattr(module, name)
        )
        setattr(sys.modules[module_name], name, value)  # later look-ups skip __getattr__
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[module_name])) | set(names()))

    return __getattr__, __dir__, sorted(exports)
