"""Registers every Keras-serializable object of the package with Keras.

``import keras_structinit`` does not import Keras (pure-math modules stay
Keras-free), yet a ``.keras`` file that uses the package's layers,
initializers or schedules must load after ``import keras_structinit``. So the
serializable modules are imported as soon as Keras is loaded: at once when it
already is, otherwise when the import that brought Keras in has finished.

"Finished" matters: when a module of this package is what imports Keras,
registering in the middle of that module's own import would re-enter it
half-initialized. A meta-path finder therefore wraps the loaders of ``keras``
and of this package's modules while registration is pending, counts how
many of them are executing, and registers when Keras is loaded and that
count is back to zero.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

#: The core's modules defining ``register_keras_serializable`` objects; each method record adds its
#: own (:func:`keras_structinit.methods.serializable_modules`). Tests check the list is complete.
CORE_SERIALIZABLE_MODULES = (
    "keras_structinit.layers",
    "keras_structinit.recipes.optimizers",
    "keras_structinit.recipes.schedules",
)


def serializable_modules():
    """Every module that registers serializable objects: the core's, then the method records'."""
    from keras_structinit import methods

    return CORE_SERIALIZABLE_MODULES + methods.serializable_modules()


_state = {"registered": False, "executing": 0}


def register():
    """Imports every module that registers serializable objects (once)."""
    if _state["registered"]:
        return
    _state["registered"] = True
    for finder in [f for f in sys.meta_path if isinstance(f, _WatchImports)]:
        sys.meta_path.remove(finder)
    for name in serializable_modules():
        importlib.import_module(name)


def _maybe_register():
    if not _state["registered"] and _state["executing"] == 0 and "keras" in sys.modules:
        register()


class _WatchImports(importlib.abc.MetaPathFinder):
    """Wraps the loaders of ``keras`` and ``keras_structinit.*`` until registration."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "keras" and not fullname.startswith("keras_structinit."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_maybe_register(module):
            _state["executing"] += 1
            try:
                exec_module(module)
            finally:
                _state["executing"] -= 1
            _maybe_register()

        spec.loader.exec_module = exec_then_maybe_register
        return spec


def install():
    """Registers now if Keras is loaded, else as soon as an import brings it in."""
    if "keras" in sys.modules:
        register()
    elif not any(isinstance(finder, _WatchImports) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WatchImports())
