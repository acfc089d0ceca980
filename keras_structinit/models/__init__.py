"""Models used by the papers, as functional Keras 3 models."""

from keras_structinit.models.convmixer import convmixer

__all__ = ["convmixer"]
