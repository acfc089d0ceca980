"""``keras.Initializer`` subclasses of every method (implemented in the method subpackages)."""

from keras_structinit._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "ConvCovariance": "keras_structinit.covariance.initializers",
        "CovarianceTransfer": "keras_structinit.covariance.initializers",
        "DataAligned": "keras_structinit.alignment.initializers",
        "MeanShift": "keras_structinit.mimetic.initializers",
        "TorchDefaultUniform": "keras_structinit.initializers.torch_default",
    },
)
