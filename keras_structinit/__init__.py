"""keras_structinit: structured initialization and frozen/selected weights for Keras 3.

Public API by kind: :mod:`.initializers`, :mod:`.layers`, :mod:`.callbacks`,
:mod:`.models`, :mod:`.recipes`, :mod:`.datasets`; one subpackage per method
(:mod:`.covariance`, :mod:`.lc`, ...) with its math and its ``apply_*`` functions, all of
the form ``apply_X(model, *, layers=None, seed=None, ...) -> list[str]``; and the functions that
act on any model (:func:`initialize`, :func:`freeze_spatial`, :func:`inspect`, ...). ``__all__``
lists them, and ``dir()`` shows nothing else; the package's other modules (``validation``,
``io_utils``, ...) are internal, importable by their full name.

The names are imported on first use (module ``__getattr__``, PEP 562), so ``import
keras_structinit`` is cheap and imports no backend (``structinit --backend`` chooses it later).
The package's serializable Keras objects are registered with Keras when the package is imported
after Keras, or else when one of its public names is first used once Keras is loaded
(:mod:`._registry`): import Keras first, as ``import keras`` before ``import keras_structinit``
does, and ``.keras`` files load.
"""

import importlib as _importlib
import importlib.util as _importlib_util
import sys as _sys

from keras_structinit import _hooks, _registry
from keras_structinit import methods as _methods  # hands the records' selectors to the walker

__version__ = "0.2.0"

#: The public names the core defines, by module; each method's package and public functions come
#: from its record (:func:`_public`).
_CORE = {
    "callbacks": "keras_structinit.callbacks",
    "datasets": "keras_structinit.datasets",
    "initializers": "keras_structinit.initializers",
    "inspect": "keras_structinit.methods.inspection",
    "layers": "keras_structinit.layers",
    "models": "keras_structinit.models",
    "recipes": "keras_structinit.recipes",
}
_table = {}


def _public():
    """``{public name: module}``: :data:`_CORE`, each method package of this distribution (a record's
    package that holds its exports; the core's record holds none) and the records' exports into
    ``keras_structinit``."""
    if not _table:
        packages = {
            r.package.rsplit(".", 1)[-1]: r.package
            for r in _methods.records()
            if r.package.startswith(__name__ + ".")
            and any(module.startswith(r.package + ".") for module in r.exports.values())
        }
        _table.update({**_CORE, **packages, **_methods.namespace_exports("")})
    return _table


def __getattr__(name):
    if name == "__all__":
        return sorted(_public())
    # The core's names first: they never read the records (whose modules may still be importing).
    target = _CORE.get(name)
    if target is None and not name.startswith("__"):
        if not _table and _registry.importing() and _importlib_util.find_spec(f"{__name__}.{name}"):
            # ``from keras_structinit import x`` in a module being imported: the import system imports
            # the submodule, and the records (perhaps among the modules importing) are not read.
            raise AttributeError(f"module {__name__!r} has no attribute {name!r} yet")
        target = _public().get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _importlib.import_module(target)
    value = module if target.rsplit(".", 1)[-1] == name else getattr(module, name)
    globals()[name] = value  # later look-ups skip __getattr__
    _registry.register_if_ready()
    return value


def __dir__():
    dunders = {name for name in globals() if name.startswith("__") and name.endswith("__")}
    return sorted(set(_public()) | dunders | {"__all__"})


def _load_model(spec, **kwargs):
    """:func:`keras_structinit.models.spec.load_model`, handed down to the methods (:mod:`._hooks`)."""
    return _importlib.import_module("keras_structinit.models.spec").load_model(spec, **kwargs)


def _parse_model(spec, name):
    """:meth:`keras_structinit.models.spec.ModelSpec.parse`, handed down to the methods (:mod:`._hooks`)."""
    return _importlib.import_module("keras_structinit.models.spec").ModelSpec.parse(spec, name)


_hooks.load_model = _load_model
_hooks.parse_model = _parse_model
_hooks.register_serializables = _registry.register  # before a model file is read
_hooks.after_lookup = _registry.register_if_ready  # after a name is first looked up
if "keras" in _sys.modules:  # imported after Keras: register the package's classes now
    _registry.register()
