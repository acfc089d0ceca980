"""Spatial kernels sliced from one shared random tensor (pure NumPy, float64).

Weight sharing (Gavrikov & Keuper, App. D) keeps a single frozen tensor
``W_s ~ U[-1, 1]`` per model. An LC layer whose spatial kernel has
``n = kh * kw * c_in * c_out`` entries takes the prefix ``W_s[0 : n]`` and
scales it by PyTorch's default bound for that conv::

    K = s * reshape(W_s[0 : n], (c_out, c_in, kh, kw)),   s = 1 / sqrt(c_in * kh * kw)   (1)

so every kernel is distributed exactly as ``torch.nn.Conv2d``'s default
``U[-s, s]``. Flatten order: (1) is PyTorch's ``(c_out, c_in, kh, kw)``
``weight.view(-1)`` order, transposed to Keras' ``(kh, kw, c_in, c_out)``
layout, i.e. ``K[i, j, c, o] = s * W_s[((o * c_in + c) * kh + i) * kw + j]``.
This way a PyTorch model sharing the same ``W_s`` gets the same filters, and
each ``kh x kw`` filter is a contiguous run of ``W_s``.

* Global sharing: ``len(W_s)`` = the largest kernel's ``n``, so every prefix fits.
* Recycled sharing: a shorter ``W_s`` holding a whole number of ``kh x kw``
  filters (e.g. 1/16 of the largest kernel) is repeated end to end until the
  prefix fits: ``tile(W_s)[0 : n]``; each filter is then a whole copy of one
  of the bank's filters.

Example:
    >>> bank = np.arange(36.0)
    >>> bank_kernel(bank, (3, 3, 2, 2))[:, :, 1, 0]     # filter (o=0, c=1): bank[9:18]
    array([[ 9., 10., 11.],
           [12., 13., 14.],
           [15., 16., 17.]])
"""

from __future__ import annotations

import math

import numpy as np

from keras_structinit.utils import validation

__all__ = ["bank_kernel", "bank_size", "check_bank_fits", "kernel_scale"]


def _kernel_shape(shape):
    shape = validation.positive_ints(shape, "shape")
    if len(shape) != 4:
        raise ValueError(
            f"`shape` must be a conv kernel shape (kh, kw, c_in, c_out). Received: shape={shape}"
        )
    return shape


def kernel_scale(shape):
    """``s = 1 / sqrt(c_in * kh * kw)`` of a Keras kernel shape ``(kh, kw, c_in, c_out)``."""
    kh, kw, c_in, _ = _kernel_shape(shape)
    return 1.0 / math.sqrt(c_in * kh * kw)


def check_bank_fits(size, shape, recycle):
    """``ValueError`` unless a bank of ``size`` entries can provide a kernel of ``shape``.

    Without recycling the kernel's ``n`` entries must fit (``n <= size``); with
    it, the bank must hold a whole number of ``kh x kw`` filters so that
    repeating it repeats whole filters.
    """
    kh, kw, _, _ = shape = _kernel_shape(shape)
    n = math.prod(shape)
    if n <= size:
        return
    if not recycle:
        raise ValueError(
            f"The shared kernel bank holds {size} values but a spatial kernel of shape {shape} needs "
            f"{n}: use a bank of at least {n} values (global sharing: the largest kernel's size) "
            "or recycle=True."
        )
    if size % (kh * kw):
        raise ValueError(
            f"A recycled bank must hold a whole number of {kh}x{kw} filters: its size ({size}) must be "
            f"a multiple of {kh * kw} to provide the kernel of shape {shape}."
        )


def bank_kernel(bank, shape, recycle=False):
    """Eq. (1) without the scale ``s``: the unscaled Keras kernel of ``shape`` from ``bank``.

    Args:
        bank: 1-D array ``W_s``.
        shape: ``(kh, kw, c_in, c_out)``.
        recycle: repeat ``bank`` when it is shorter than the kernel.

    Returns:
        float64 array of ``shape``.
    """
    bank = np.asarray(bank, dtype=np.float64).reshape(-1)
    if bank.size == 0:
        raise ValueError("`bank` must hold at least one value. Received: an empty bank")
    kh, kw, c_in, c_out = shape = _kernel_shape(shape)
    check_bank_fits(bank.size, shape, recycle)
    n = math.prod(shape)
    values = np.tile(bank, -(-n // bank.size))[:n]
    return values.reshape(c_out, c_in, kh, kw).transpose(2, 3, 1, 0)


def bank_size(shapes, fraction=None):
    """``len(W_s)`` for the kernels of ``shapes``.

    ``fraction=None`` (global sharing): the largest kernel's entry count.
    A fraction in ``(0, 1]`` (recycled sharing, the paper's 1/16): that part
    of the largest kernel, rounded to a whole number (at least one) of the
    largest kernel's ``kh x kw`` filters.

    Example:
        >>> bank_size([(3, 3, 64, 8192)]), bank_size([(3, 3, 64, 8192)], 1 / 16)
        (4718592, 294912)
    """
    if not isinstance(shapes, (list, tuple)) or not shapes:
        raise TypeError(f"`shapes` must be a non-empty list of kernel shapes. Received: shapes={shapes!r}")
    shapes = [_kernel_shape(s) for s in shapes]
    largest = max(shapes, key=math.prod)
    if fraction is None:
        return math.prod(largest)
    fraction = validation.fraction(fraction, "fraction", "a number in (0, 1]")
    if fraction == 0.0:
        raise ValueError(f"`fraction` must be a number in (0, 1]. Received: fraction={fraction!r}")
    pixels = largest[0] * largest[1]
    filters = largest[2] * largest[3]
    return pixels * max(1, round(fraction * filters))
