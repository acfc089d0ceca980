"""timm's and ConvNeXt's default initialization, the weight-selection paper's baseline.

Xu et al. (ICLR 2024, Sec. 4, "Random initialization baseline") describe timm's default for ViT-T
and ConvNeXt-F as a truncated normal of standard deviation 0.02 on linear and convolution layers
(zero biases). timm's ``trunc_normal_`` truncates at +-2 in absolute value, i.e. +-100 standard
deviations at 0.02: its draws are ``N(0, 0.02^2)`` (see :func:`keras_structinit.models.common.trunc_normal`).
The form draws exactly that: ``N(0, std^2)`` truncated to ``[-2, 2]`` in absolute value (the bound
bites only for ``std`` near 1 or above: at ``std = 1`` it is +-2 standard deviations), one NumPy draw
per kernel (:mod:`keras_structinit.baseline.sampling`: backend-free, nothing traced per shape).
timm's ViT code applies it to ``nn.Linear`` only (its patch-embedding conv keeps PyTorch's
default), ConvNeXt's to ``nn.Conv2d`` and ``nn.Linear``; this form is the text's reading, on every
conv and Dense kernel.
"""

from __future__ import annotations

import numpy as np

from keras_structinit.baseline.sampling import assign, truncated_normal, variable_rngs
from keras_structinit.baseline.torch_default import conv_and_dense_variables
from keras_structinit.engine.contract import model_function
from keras_structinit.engine.initializer_base import check_seed
from keras_structinit.engine.walker import iter_layers
from keras_structinit.utils import validation

__all__ = ["BOUND", "apply_trunc_normal"]

#: timm's ``trunc_normal_`` bounds ``[-2, 2]``, in absolute value (not in standard deviations).
BOUND = 2.0


@model_function
def apply_trunc_normal(model, *, layers=None, seed=None, std=0.02):
    """Re-initializes every conv and Dense kernel as ``N(0, std^2)`` truncated to ``[-2, 2]`` (timm's
    ``trunc_normal_``, :data:`BOUND`) and zeroes their biases.

    The layers are those :func:`~keras_structinit.baseline.torch_default.apply_torch_default` draws
    (``Dense``, ``EinsumDense``, ``Conv*``, ``DepthwiseConv*``, ``SeparableConv*``); normalization
    layers, embeddings, tokens and layer scales keep their values.

    Args:
        model: a built ``keras.Model``.
        layers: optional list of layer names/objects to restrict to.
        seed: ``None``, an int (reproducible: the same values on every backend) or a
            ``keras.random.SeedGenerator``; each kernel is drawn in NumPy, in one call, from a
            generator seeded from ``seed`` and its place in the model
            (:func:`~keras_structinit.baseline.sampling.variable_rngs`).
        std: the standard deviation of the normal before truncation (default 0.02, Xu et al., Sec. 4).

    Returns:
        The re-initialized variables' paths (kernel, then bias), in model order.
    """
    std = validation.positive_float(std, "std")
    check_seed(seed)
    found = conv_and_dense_variables(model, layers, "the truncated normal init draws")
    biases = {id(getattr(layer, "bias", None)) for layer in [*iter_layers(model), model]}
    kernels = [variable for variable, _ in found if id(variable) not in biases]
    for variable, rng in zip(kernels, variable_rngs(seed, model, kernels), strict=True):
        assign(variable, truncated_normal(rng, tuple(variable.shape), std, BOUND))
    for variable, _ in found:
        if id(variable) in biases:
            assign(variable, np.zeros(tuple(variable.shape)))
    return [variable.path for variable, _ in found]
