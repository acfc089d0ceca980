"""Freezing spatial filters ("frozen filters" of the covariance paper)."""

from __future__ import annotations

from keras_structinit.layer_utils import spatial_depthwise_convs


def freeze_spatial(model, include_bias=False, layers=None):
    """Marks the kernels of spatial depthwise/grouped convs non-trainable.

    Only the kernel *variables* are frozen (``variable.trainable = False``), so
    biases and BatchNorm parameters of the same layers keep training unless
    ``include_bias=True``.

    Keras fixes the set of trainable variables when training starts: freeze
    before ``compile``/``fit``, or re-``compile`` with a fresh optimizer after
    freezing an already-trained model.

    Args:
        model: a built ``keras.Model``.
        include_bias: also freeze the biases of those layers.
        layers: optional list of layer names/objects to restrict to.

    Returns:
        The frozen variables' paths, in model order.
    """
    if getattr(model, "compiled", False) and getattr(getattr(model, "optimizer", None), "built", False):
        raise ValueError(
            f"`model` ({model.name}) has already been trained with its optimizer: "
            "Keras fixed its trainable variables then. Call freeze_spatial before "
            "the first fit, or re-compile with a fresh optimizer after freezing."
        )
    paths = []
    for layer, kernel in spatial_depthwise_convs(model, layers=layers):
        frozen = [kernel]
        bias = getattr(layer, "bias", None)
        if include_bias and bias is not None:
            frozen.append(bias)
        for variable in frozen:
            variable.trainable = False
            paths.append(variable.path)
    return paths
