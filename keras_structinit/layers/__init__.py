"""Layers: fast depthwise convolution and the blocks' building pieces (layer scale,
stochastic depth, ViT's class token and position embedding)."""

from keras_structinit.layers.class_token import ClassToken
from keras_structinit.layers.depthwise import DepthwiseConv2D, GroupedConv2D, depthwise_conv2d
from keras_structinit.layers.layer_scale import LayerScale
from keras_structinit.layers.position_embedding import PositionEmbedding
from keras_structinit.layers.stochastic_depth import StochasticDepth

__all__ = [
    "ClassToken",
    "DepthwiseConv2D",
    "GroupedConv2D",
    "LayerScale",
    "PositionEmbedding",
    "StochasticDepth",
    "depthwise_conv2d",
]
