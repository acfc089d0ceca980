"""Layers: fast depthwise and patch (kernel == strides) convolutions and the blocks' building pieces
(layer scale, stochastic depth, ViT's class token and position embedding, ResNet's zero-padding
shortcut), ``padding="symmetric"`` (PyTorch's ``k // 2``) on the convs and ``MaxPooling2D``, plus
the layers the method records declare (LC blocks: ``LCConv2D``, ``SharedKernelBank``),
imported on first use."""

from keras_structinit import methods
from keras_structinit._lazy import lazy_exports
from keras_structinit.layers.class_token import ClassToken  # noqa: F401
from keras_structinit.layers.conv import Conv2D, patch_conv2d  # noqa: F401
from keras_structinit.layers.depthwise import DepthwiseConv2D, GroupedConv2D  # noqa: F401
from keras_structinit.layers.layer_scale import LayerScale  # noqa: F401
from keras_structinit.layers.pooling import MaxPooling2D  # noqa: F401
from keras_structinit.layers.position_embedding import PositionEmbedding  # noqa: F401
from keras_structinit.layers.shortcut import ZeroPadShortcut  # noqa: F401
from keras_structinit.layers.stochastic_depth import StochasticDepth  # noqa: F401
from keras_structinit.ops.depthwise import depthwise_conv2d  # noqa: F401

_CORE = {
    "ClassToken": "keras_structinit.layers.class_token",
    "Conv2D": "keras_structinit.layers.conv",
    "DepthwiseConv2D": "keras_structinit.layers.depthwise",
    "GroupedConv2D": "keras_structinit.layers.depthwise",
    "LayerScale": "keras_structinit.layers.layer_scale",
    "MaxPooling2D": "keras_structinit.layers.pooling",
    "PositionEmbedding": "keras_structinit.layers.position_embedding",
    "StochasticDepth": "keras_structinit.layers.stochastic_depth",
    "ZeroPadShortcut": "keras_structinit.layers.shortcut",
    "depthwise_conv2d": "keras_structinit.ops.depthwise",
    "patch_conv2d": "keras_structinit.layers.conv",
}
__getattr__, __dir__, _ = lazy_exports(__name__, _CORE, lambda: methods.namespace_exports("layers"))
