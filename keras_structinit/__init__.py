"""keras_structinit: structured initialization and frozen/selected weights for Keras 3.

Public API by kind: :mod:`.initializers`, :mod:`.layers`, :mod:`.callbacks`,
:mod:`.models`, :mod:`.recipes`, :mod:`.datasets`; one subpackage per method
(:mod:`.covariance`, :mod:`.lc`, ...) with its math and its ``apply_*`` functions, all of
the form ``apply_X(model, *, layers=None, seed=None, ...) -> list[str]``.
Submodules and functions are imported on first use, so ``import
keras_structinit`` is cheap and imports no backend; the package's serializable
Keras objects are registered as soon as Keras itself is imported, so saved
``.keras`` files load after ``import keras_structinit`` (see :mod:`._registry`).
"""

from keras_structinit import _registry
from keras_structinit import methods as _methods  # noqa: F401 - hands the records' selectors to the walker
from keras_structinit._lazy import lazy_exports

__version__ = "0.2.0"

#: The core's submodules; each method's package and public functions come from its record.
_SUBMODULES = (
    "arguments",
    "callbacks",
    "cli",
    "contract",
    "datasets",
    "evaluation",
    "freezing",
    "initializer_base",
    "initializers",
    "inspection",
    "io_utils",
    "layers",
    "methods",
    "models",
    "ops",
    "recipes",
    "reporting",
    "validation",
    "viz",
    "walker",
)


def _from_records():
    from keras_structinit import methods

    packages = {
        r.package.rsplit(".", 1)[-1]: r.package
        for r in methods.records()
        if r.package.startswith(__name__ + ".")
    }
    return {**packages, **methods.namespace_exports("")}


__getattr__, __dir__, _ = lazy_exports(
    __name__,
    {**{name: f"{__name__}.{name}" for name in _SUBMODULES}, "inspect": f"{__name__}.inspection"},
    _from_records,
)

_registry.install()
