"""timm's and ConvNeXt's default initialization, the weight-selection paper's baseline.

Xu et al. (ICLR 2024, Sec. 4, "Random initialization baseline") describe timm's default for ViT-T
and ConvNeXt-F as a truncated normal of standard deviation 0.02 on linear and convolution layers
(zero biases). timm's ``trunc_normal_`` truncates at +-2 in absolute value, i.e. +-100 standard
deviations at 0.02: its draws are ``N(0, 0.02^2)`` (see :func:`keras_structinit.models.common.trunc_normal`).
timm's ViT code applies it to ``nn.Linear`` only (its patch-embedding conv keeps PyTorch's
default), ConvNeXt's to ``nn.Conv2d`` and ``nn.Linear``; this form is the text's reading, on every
conv and Dense kernel.
"""

from __future__ import annotations

import keras

from keras_structinit import validation
from keras_structinit.baseline.torch_default import conv_and_dense_variables
from keras_structinit.contract import model_function
from keras_structinit.initializer_base import seed_generator
from keras_structinit.walker import iter_layers

__all__ = ["apply_trunc_normal"]


@model_function
def apply_trunc_normal(model, *, layers=None, seed=None, std=0.02):
    """Re-initializes every conv and Dense kernel as ``N(0, std^2)`` and zeroes their biases.

    The layers are those :func:`~keras_structinit.baseline.torch_default.apply_torch_default` draws
    (``Dense``, ``EinsumDense``, ``Conv*``, ``DepthwiseConv*``, ``SeparableConv*``); normalization
    layers, embeddings, tokens and layer scales keep their values.

    Args:
        model: a built ``keras.Model``.
        layers: optional list of layer names/objects to restrict to.
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``.
        std: the standard deviation (default 0.02, Xu et al., Sec. 4).

    Returns:
        The re-initialized variables' paths (kernel, then bias), in model order.
    """
    std = validation.positive_float(std, "std")
    found = conv_and_dense_variables(model, layers, "the truncated normal init draws")
    generator = seed_generator(seed)
    biases = {id(getattr(layer, "bias", None)) for layer in [*iter_layers(model), model]}
    for variable, _ in found:
        shape = tuple(variable.shape)
        if id(variable) in biases:
            variable.assign(keras.ops.zeros(shape, dtype=variable.dtype))
        else:
            variable.assign(keras.random.normal(shape, stddev=std, dtype=variable.dtype, seed=generator))
    return [variable.path for variable, _ in found]
