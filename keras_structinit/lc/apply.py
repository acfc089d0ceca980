"""Model-level functions of LC blocks (Gavrikov & Keuper).

::

    fold_model(model) -> keras.Model                      # every LCConv2D as one Conv2D (Eq. 1)
    apply_pointwise_l1(model, *, l1=5e-5, layers=None) -> paths   # Eq. 5
    prune_pointwise(model, *, ratio, layers=None) -> paths  # global magnitude pruning of 1x1 weights
    pointwise_sparsity(model, *, layers=None) -> dict(total, zeros, sparsity)
    parameter_counts(model) -> dict(total, learnable, nonzero)

The LC blocks' 1x1 kernels are found by :func:`find_pointwise_kernels` (the ``"lc_pointwise"``
selector of the method's record).
"""

from __future__ import annotations

import keras
import numpy as np

from keras_structinit.engine.contract import check_model, model_function
from keras_structinit.engine.walker import find, iter_layers
from keras_structinit.layers.conv import Conv2D
from keras_structinit.lc.layers import LCConv2D
from keras_structinit.lc.pruning import magnitude_masks
from keras_structinit.utils import validation

__all__ = [
    "apply_pointwise_l1",
    "find_pointwise_kernels",
    "fold_model",
    "lc_pointwise_kernel",
    "parameter_counts",
    "pointwise_sparsity",
    "prune_pointwise",
]

# Normalization statistics: state, not parameters (PyTorch does not count them either).
_STATISTICS = (
    (keras.layers.BatchNormalization, ("moving_mean", "moving_variance")),
    (keras.layers.Normalization, ("mean", "variance")),
)


def lc_pointwise_kernel(layer):
    """The 1x1 kernel of a built LC block (``LCConv2D``), or ``None``."""
    return layer.pointwise_kernel if isinstance(layer, LCConv2D) else None


def find_pointwise_kernels(model, layers=None):
    """``[(layer, pointwise_kernel), ...]`` of the model's LC blocks (``LCConv2D``), in model order.

    ``layers`` and the errors as in :func:`keras_structinit.engine.walker.find_kernels`.
    """
    return find(model, "lc_pointwise", layers)


def _to_numpy(variable):
    return np.asarray(keras.ops.convert_to_numpy(variable))


@model_function
def apply_pointwise_l1(model, *, l1=5e-5, layers=None):
    """Attaches ``keras.regularizers.L1(l1)`` to the 1x1 kernels of the model's LC blocks.

    Training then minimizes ``loss + l1 * sum |P|`` over all pointwise weights
    ``P`` (Eq. 5; the paper's ``lambda = 5e-5``). The regularizer is saved in
    each layer's config (``pointwise_regularizer``).

    Args:
        model: a built ``keras.Model``; compile it after this call.
        l1: ``lambda > 0``.
        layers: optional list of LC layer names/objects to restrict to.

    Returns:
        The regularized kernels' paths, in model order.

    Example:
        >>> apply_pointwise_l1(model, l1=5e-5)
        ['stem_conv/pointwise_kernel', ...]
    """
    l1 = validation.positive_float(l1, "l1")
    found = find_pointwise_kernels(model, layers=layers)
    for layer, kernel in found:
        layer.pointwise_regularizer = kernel.regularizer = keras.regularizers.L1(l1)
    return [kernel.path for _, kernel in found]


@model_function
def prune_pointwise(model, *, ratio, layers=None):
    """Global unstructured magnitude pruning of all LC 1x1 weights (no fine-tuning).

    The ``round(ratio * n)`` pointwise weights of smallest ``|w|`` over all LC
    blocks together (``n`` weights) are set to zero
    (:func:`keras_structinit.lc.pruning.magnitude_masks`); the paper uses
    ``ratio = 0.7`` after training. :func:`pointwise_sparsity` measures the result.

    Args:
        model: a built ``keras.Model``.
        ratio: fraction in ``[0, 1)`` to prune.
        layers: optional list of LC layer names/objects to restrict to.

    Returns:
        The pruned kernels' paths, in model order.

    Example:
        >>> prune_pointwise(model, ratio=0.7)
        ['stem_conv/pointwise_kernel', ...]
        >>> pointwise_sparsity(model)["sparsity"]
        0.7
    """
    ratio = validation.rate(ratio, "ratio")
    found = find_pointwise_kernels(model, layers=layers)
    values = [_to_numpy(kernel) for _, kernel in found]
    masks = magnitude_masks(values, ratio)
    for (_, kernel), value, mask in zip(found, values, masks, strict=True):
        kernel.assign(np.where(mask, value, 0).astype(value.dtype))
    return [kernel.path for _, kernel in found]


@model_function
def pointwise_sparsity(model, *, layers=None):
    """``dict(total, zeros, sparsity)`` of the LC blocks' 1x1 weights: their count, how many are
    zero, and ``zeros / total``."""
    values = [_to_numpy(kernel) for _, kernel in find_pointwise_kernels(model, layers=layers)]
    total = sum(v.size for v in values)
    zeros = sum(int(np.count_nonzero(v == 0)) for v in values)
    return {"total": total, "zeros": zeros, "sparsity": zeros / total}


def parameter_counts(model):
    """``dict(total, learnable, nonzero)`` counted as PyTorch counts parameters.

    * ``total``: entries of every distinct weight variable (a shared bank
      once), excluding normalization statistics (BatchNorm moving mean and
      variance; ``Normalization`` mean and variance) and random-seed state;
    * ``learnable``: those the optimizer updates (``model.trainable_weights``);
    * ``nonzero``: those not equal to zero (pruned weights are zeros).

    Keras' ``model.count_params()`` also counts the normalization statistics.

    Example:
        >>> parameter_counts(keras_structinit.models.lcresnet(20, 16, 1))
        {'total': 302234, 'learnable': 34538, 'nonzero': ...}
    """
    check_model(model)
    statistics = set()
    for layer in [model, *iter_layers(model)]:
        for cls, names in _STATISTICS:
            if isinstance(layer, cls):
                statistics.update(id(getattr(layer, n)) for n in names if getattr(layer, n, None) is not None)
    trainable = {id(v) for v in model.trainable_weights}
    counts = {"total": 0, "learnable": 0, "nonzero": 0}
    for variable in model.weights:
        if id(variable) in statistics:
            continue
        size = int(np.prod(variable.shape))
        counts["total"] += size
        counts["learnable"] += size if id(variable) in trainable else 0
        counts["nonzero"] += int(np.count_nonzero(_to_numpy(variable)))
    return counts


def fold_model(model):
    """An equivalent model with every :class:`LCConv2D` replaced by its folded ``Conv2D`` (Eq. 1).

    Each LC block becomes ``keras.layers.Conv2D(filters, kernel_size,
    strides, padding)`` of the same name with kernel ``layer.fold()`` (and the
    pointwise bias, if any); every other layer is copied with its weights.
    For export and inference: one conv instead of two, and ``E`` times fewer
    intermediate channels.

    Args:
        model: a built functional or sequential ``keras.Model`` (nested
            models are cloned too).

    Returns:
        A new ``keras.Model`` giving the same outputs (up to float error).
        A model without LC blocks is a ``ValueError``.

    Example:
        >>> plain = fold_model(model)
        >>> np.allclose(plain(x), model(x), rtol=1e-5, atol=1e-6)
        True
    """
    check_model(model)
    if not any(isinstance(layer, LCConv2D) for layer in model._flatten_layers()):
        raise ValueError(f"`model` ({model.name}) has no LC blocks (LCConv2D layers): nothing to fold.")
    pairs = []

    def clone(layer):
        if isinstance(layer, LCConv2D):
            new = Conv2D(  # the package's: it also takes padding="symmetric"
                layer.filters,
                layer.kernel_size,
                strides=layer.strides,
                padding=layer.padding,
                use_bias=layer.use_bias,
                dtype=layer.dtype_policy,
                name=layer.name,
            )
        else:
            new = layer.__class__.from_config(layer.get_config())
        pairs.append((layer, new))
        return new

    folded = keras.models.clone_model(model, clone_function=clone, recursive=True)
    for old, new in pairs:
        if isinstance(old, LCConv2D):
            weights = [old.fold().astype(new.kernel.dtype)]
            if old.use_bias:
                weights.append(_to_numpy(old.bias))
            new.set_weights(weights)
        elif isinstance(old, keras.layers.Layer):  # not operations such as the `x + y` of a functional model
            new.set_weights(old.get_weights())
    return folded
