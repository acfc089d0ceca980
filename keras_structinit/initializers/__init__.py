"""``keras.Initializer`` subclasses, one module per method."""

from keras_structinit.initializers.conv_covariance import ConvCovariance
from keras_structinit.initializers.covariance_transfer import CovarianceTransfer
from keras_structinit.initializers.torch_default import TorchDefaultUniform

__all__ = ["ConvCovariance", "CovarianceTransfer", "TorchDefaultUniform"]
