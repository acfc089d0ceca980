"""Models used by the papers, as functional Keras 3 models returning logits."""

# The blocks' layers live in `keras_structinit.layers`; also importable from here.
from keras_structinit.layers import ClassToken, LayerScale, PositionEmbedding, StochasticDepth
from keras_structinit.models.convmixer_model import convmixer
from keras_structinit.models.convnext_model import (
    convnext,
    convnext_atto,
    convnext_femto,
    convnext_isotropic,
    convnext_nano,
    convnext_pico,
    convnext_tiny,
)
from keras_structinit.models.lcresnet_model import lcresnet
from keras_structinit.models.registry import available_models, build_model, parse_model_name
from keras_structinit.models.resnet18_gn_model import resnet18_gn
from keras_structinit.models.simple_cnn_model import simple_cnn
from keras_structinit.models.spec import ModelSpec
from keras_structinit.models.vgg16_model import vgg16
from keras_structinit.models.vit_model import vit, vit_small, vit_tiny

__all__ = [
    "ClassToken",
    "LayerScale",
    "PositionEmbedding",
    "ModelSpec",
    "StochasticDepth",
    "available_models",
    "build_model",
    "convmixer",
    "convnext",
    "convnext_atto",
    "convnext_femto",
    "convnext_isotropic",
    "convnext_nano",
    "convnext_pico",
    "convnext_tiny",
    "lcresnet",
    "parse_model_name",
    "resnet18_gn",
    "simple_cnn",
    "vgg16",
    "vit",
    "vit_small",
    "vit_tiny",
]
