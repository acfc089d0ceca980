"""Backend-agnostic ops the package's layers are built on (as Keras keeps ``ops/nn.py`` apart from its
layers): :func:`~keras_structinit.ops.depthwise.depthwise_conv2d`, the fast depthwise convolution."""

from keras_structinit.ops.depthwise import (
    IMPLEMENTATIONS,
    depthwise_conv2d,
    select_implementation,
    shifted_depthwise_conv2d,
)

__all__ = ["IMPLEMENTATIONS", "depthwise_conv2d", "select_implementation", "shifted_depthwise_conv2d"]
