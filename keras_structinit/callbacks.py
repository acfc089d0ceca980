"""Keras callbacks of every method (implemented in the method subpackages)."""

from keras_structinit._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "PrunePointwise": "keras_structinit.lc.callbacks",
        "RecordFilterCovariance": "keras_structinit.covariance.callbacks",
        "RecordInitialNorms": "keras_structinit.alignment.callbacks",
        "SelectWeightsFrom": "keras_structinit.selection.callbacks",
    },
)
