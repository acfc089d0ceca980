"""Measuring a model's filter statistics (Eq. 3, 4): the Keras glue of
:meth:`FilterCovariance.from_model <keras_structinit.covariance.bank.FilterCovariance.from_model>`.

It reads the kernels (found by the walker) and the patch embedding of a built model and hands the
NumPy math (:func:`~keras_structinit.covariance.fit.filter_statistics`) their values. It returns
the bank's constructor arguments and does not import :mod:`.bank`, which stays NumPy only and
imports this module only when a model is measured.
"""

from __future__ import annotations

import keras

from keras_structinit.covariance.fit import filter_statistics
from keras_structinit.engine.contract import check_model
from keras_structinit.engine.walker import find_kernels, iter_layers
from keras_structinit.utils import validation

__all__ = ["measure_model", "patch_embedding_size"]


def measure_model(model, layers=None, patch_size="infer"):
    """The constructor arguments of the bank of ``model``'s spatial depthwise convs (see
    :meth:`FilterCovariance.from_model`, which documents the arguments and the errors)."""
    check_model(model)  # before the patch size is read off its layers
    if isinstance(patch_size, str):
        if patch_size != "infer":
            raise ValueError(
                f'`patch_size` must be "infer", a positive int or None. Received: patch_size={patch_size!r}'
            )
        patch_size = patch_embedding_size(model)
    else:
        patch_size = validation.optional(validation.positive_int, patch_size, "patch_size")
    found = find_kernels(model, which="depthwise", layers=layers)
    sizes = {tuple(int(s) for s in kernel.shape[:-2]) for _, kernel in found}
    if len(sizes) != 1:
        described = ", ".join(f"{layer.name}: {tuple(kernel.shape[:-2])}" for layer, kernel in found)
        raise ValueError(
            "All measured layers must share one kernel size, but they have "
            f"{described}. Pass `layers=` to select layers of one size."
        )
    kernel_size = sizes.pop()
    means, covariances, paths = [], [], []
    for layer, kernel in found:
        try:
            mean, cov = filter_statistics(keras.ops.convert_to_numpy(kernel.value))
        except ValueError as err:
            raise ValueError(f"Layer {layer.name!r}: {err}") from None
        covariances.append(cov)
        means.append(mean)
        paths.append(getattr(layer, "path", None) or layer.name)
    return dict(
        means=means,
        covariances=covariances,
        kernel_size=kernel_size,
        layer_paths=paths,
        source_name=getattr(model, "name", None),
        patch_size=patch_size,
    )


def patch_embedding_size(model):
    """Patch size of ``model``'s patch embedding (see :meth:`FilterCovariance.from_model`), or None."""
    layers = [model] if isinstance(model, keras.layers.Layer) and not isinstance(model, keras.Model) else []
    for layer in layers + list(iter_layers(model)):
        if not isinstance(layer, keras.layers.Conv2D) or getattr(layer, "groups", 1) != 1:
            continue
        kernel = tuple(int(k) for k in layer.kernel_size)
        strides = tuple(int(s) for s in layer.strides)
        if kernel == strides and kernel[0] == kernel[1]:
            return kernel[0]
        return None
    return None
