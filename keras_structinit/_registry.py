"""Registers every Keras-serializable object of the package with Keras.

Each class registers itself when the module that defines it is imported
(``keras.saving.register_keras_serializable(package="keras_structinit")``). A ``.keras`` file
may name classes whose modules nothing has imported yet, so :func:`register` imports all of
those modules at once. It needs Keras, which ``import keras_structinit`` does not import (so
that ``--backend`` can still choose the backend and the math modules stay Keras-free), so it
runs (once) when the package is imported after Keras, and when one of the package's public
names is first looked up with Keras loaded (:func:`register_if_ready`, called by the package's
module ``__getattr__``, PEP 562). No import hook is involved.
"""

from __future__ import annotations

import importlib
import sys

#: The core's modules defining ``register_keras_serializable`` objects; each method record adds its
#: own (:func:`keras_structinit.methods.serializable_modules`). Tests check the list is complete.
CORE_SERIALIZABLE_MODULES = (
    "keras_structinit.layers",
    "keras_structinit.recipes.optimizers",
    "keras_structinit.recipes.schedules",
)

_state = {"registered": False}


def serializable_modules():
    """Every module that registers serializable objects: the core's, then the method records'."""
    from keras_structinit import methods

    return CORE_SERIALIZABLE_MODULES + methods.serializable_modules()


def register():
    """Imports every module that registers serializable objects (once; imports Keras)."""
    if _state["registered"]:
        return
    _state["registered"] = True
    for name in serializable_modules():
        importlib.import_module(name)


def importing():
    """Whether a module of the package is being imported: registering then could import a module
    that imports it back, half-initialized (``ImportError: cannot import name``)."""
    return any(
        getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
        if name == "keras_structinit" or name.startswith("keras_structinit.")
    )


def register_if_ready():
    """Registers when Keras is loaded and no module of the package is being imported."""
    if not _state["registered"] and "keras" in sys.modules and not importing():
        register()
