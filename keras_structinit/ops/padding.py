"""PyTorch's ``padding=k // 2``, as ``padding="symmetric"`` on the package's conv and pooling layers.

Keras' ``"same"`` pads a total of ``max((ceil(n / s) - 1) s + d (k - 1) + 1 - n, 0)``
pixels and puts the odd one after: at stride 2 on an even size with ``k = 3`` it pads
``(0, 1)``, so output pixel ``i`` is centred on input ``2i + 1``. A PyTorch model
(``nn.Conv2d(..., padding=1)``) pads ``(1, 1)`` and centres it on ``2i``, as an
option-A shortcut ``x[:, ::2, ::2]`` does. ``"symmetric"`` pads ``p = d * (k // 2)``
on both sides of each spatial axis at any stride, so a layer built after a PyTorch
reference computes what the reference computes::

    out = floor((n + 2p - d (k - 1) - 1) / s) + 1

At stride 1 with odd ``k`` this is ``"same"``.
"""

from __future__ import annotations

from keras import ops

__all__ = ["SYMMETRIC", "symmetric_output_size", "symmetric_pad", "symmetric_padding"]

#: The padding name the package's layers accept besides Keras' own.
SYMMETRIC = "symmetric"


def symmetric_padding(kernel_size, dilation_rate=1):
    """``p = d * (k // 2)`` per spatial axis (tuples of equal length, or ints for every axis)."""
    kernel_size = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,)
    dilation = (
        tuple(dilation_rate)
        if isinstance(dilation_rate, (tuple, list))
        else (dilation_rate,) * len(kernel_size)
    )
    return tuple(d * (k // 2) for k, d in zip(kernel_size, dilation, strict=True))


def symmetric_output_size(size, kernel_size, stride, dilation=1):
    """The output size of one axis after ``p = d * (k // 2)`` on both sides (``None`` stays ``None``)."""
    if size is None:
        return None
    pad = dilation * (kernel_size // 2)
    return (size + 2 * pad - dilation * (kernel_size - 1) - 1) // stride + 1


def symmetric_pad(inputs, kernel_size, dilation_rate=1, data_format="channels_last", value=0.0):
    """``inputs`` padded by ``p = d * (k // 2)`` with ``value`` on both sides of each spatial axis.

    ``value=-inf`` gives a max-pool PyTorch's padding (padded pixels never win).
    """
    pads = symmetric_padding(kernel_size, dilation_rate)
    spatial = [(p, p) for p in pads]
    widths = [(0, 0), *spatial, (0, 0)] if data_format == "channels_last" else [(0, 0), (0, 0), *spatial]
    if not any(pads):
        return inputs
    return ops.pad(inputs, widths, constant_values=value)
