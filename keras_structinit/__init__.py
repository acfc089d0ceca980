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
from keras_structinit._lazy import lazy_exports

__version__ = "0.2.0"

_SUBMODULES = (
    "alignment",
    "callbacks",
    "cli",
    "covariance",
    "datasets",
    "freezing",
    "initializers",
    "layers",
    "lc",
    "methods",
    "mimetic",
    "models",
    "recipes",
    "reporting",
    "selection",
    "validation",
    "viz",
    "walker",
)

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        **{name: f"keras_structinit.{name}" for name in _SUBMODULES},
        "align_conv_layers": "keras_structinit.alignment.apply",
        "apply_conv_covariance": "keras_structinit.covariance.apply",
        "apply_covariance_transfer": "keras_structinit.covariance.apply",
        "apply_filter_transfer": "keras_structinit.covariance.filter_transfer",
        "transfer_filters": "keras_structinit.covariance.filter_transfer",
        "apply_torch_uniform": "keras_structinit.initializers.torch_default",
        "apply_mean_shift": "keras_structinit.mimetic.apply",
        "freeze_spatial": "keras_structinit.freezing",
        "initialize": "keras_structinit.methods",
        "parse_init_spec": "keras_structinit.methods",
        "load_frozen_model": "keras_structinit.freezing",
        "select_weights": "keras_structinit.selection.select",
    },
)

_registry.install()
