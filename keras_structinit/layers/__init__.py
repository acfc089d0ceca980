"""Layers: fast depthwise convolution."""

from keras_structinit.layers.depthwise import DepthwiseConv2D, GroupedConv2D, depthwise_conv2d

__all__ = ["DepthwiseConv2D", "GroupedConv2D", "depthwise_conv2d"]
