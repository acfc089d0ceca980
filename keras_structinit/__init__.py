"""keras_structinit: structured initialization and frozen/selected weights for Keras 3."""

from keras_structinit import covariance, initializers, layers, models
from keras_structinit.freezing import freeze_spatial
from keras_structinit.initializers.conv_covariance import apply_conv_covariance

__version__ = "0.1.0"

__all__ = [
    "apply_conv_covariance",
    "covariance",
    "freeze_spatial",
    "initializers",
    "layers",
    "models",
]
