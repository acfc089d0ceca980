"""Layers: fast depthwise and patch (kernel == strides) convolutions, LC blocks (``LCConv2D`` with its
``SharedKernelBank``) and the blocks' building pieces (layer scale, stochastic
depth, ViT's class token and position embedding, ResNet's zero-padding shortcut)."""

from keras_structinit.layers.class_token import ClassToken
from keras_structinit.layers.conv import Conv2D, patch_conv2d
from keras_structinit.layers.depthwise import DepthwiseConv2D, GroupedConv2D, depthwise_conv2d
from keras_structinit.layers.layer_scale import LayerScale
from keras_structinit.layers.position_embedding import PositionEmbedding
from keras_structinit.layers.shortcut import ZeroPadShortcut
from keras_structinit.layers.stochastic_depth import StochasticDepth
from keras_structinit.lc.layers import LCConv2D, SharedKernelBank

__all__ = [
    "ClassToken",
    "Conv2D",
    "DepthwiseConv2D",
    "GroupedConv2D",
    "LCConv2D",
    "LayerScale",
    "PositionEmbedding",
    "SharedKernelBank",
    "StochasticDepth",
    "ZeroPadShortcut",
    "depthwise_conv2d",
    "patch_conv2d",
]
