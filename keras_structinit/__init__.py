"""keras_structinit: structured initialization and frozen/selected weights for Keras 3."""

# `covariance` first: it re-exports FilterCovariance from covariance_transfer,
# which the other modules import.
from keras_structinit import covariance  # isort: skip
from keras_structinit import callbacks, initializers, layers, models, recipes
from keras_structinit.filter_transfer import transfer_filters
from keras_structinit.freezing import freeze_spatial
from keras_structinit.initializers.conv_covariance import apply_conv_covariance
from keras_structinit.initializers.covariance_transfer import apply_covariance_transfer

__version__ = "0.1.0"

__all__ = [
    "apply_conv_covariance",
    "apply_covariance_transfer",
    "callbacks",
    "covariance",
    "freeze_spatial",
    "initializers",
    "layers",
    "models",
    "recipes",
    "transfer_filters",
]
