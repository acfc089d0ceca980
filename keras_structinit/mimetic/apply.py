"""Model-level function of the mimetic MLP init::

    apply_mean_shift(model, *, b=None, mode="constant", variance=None, base=None,
                     redraw=True, layers=None, seed=None) -> paths

The first Dense / 1x1 conv of each MLP block is found by :func:`find_mlp_kernels`
(the ``"mlp_first"`` selector of the method's record), by the names in
:data:`~keras_structinit.mimetic.blocks.MLP_FIRST_LAYERS`.
"""

from __future__ import annotations

import keras

from keras_structinit import validation
from keras_structinit.contract import model_function
from keras_structinit.initializer_base import seed_generator
from keras_structinit.mimetic.blocks import MLP_FIRST_PATTERN
from keras_structinit.mimetic.initializers import MeanShift, check_base
from keras_structinit.mimetic.shift import resolve_shift
from keras_structinit.walker import dense_kernel, find

__all__ = ["apply_mean_shift", "find_mlp_kernels", "mlp_first_kernel"]

def mlp_first_kernel(layer):
    """The kernel of a built layer that is the first Dense / 1x1 conv of an MLP block, or ``None``."""
    kernel = dense_kernel(layer)
    return kernel if kernel is not None and MLP_FIRST_PATTERN.search(kernel.path) else None


def find_mlp_kernels(model, layers=None):
    """``[(layer, kernel), ...]`` of the first Dense / 1x1 conv of every MLP block, in model order.

    With ``layers=None`` the layers are recognised by name (:data:`MLP_FIRST_LAYERS`:
    the package's ConvNeXt and ViT, keras.applications ConvNeXt, KerasHub's
    ViT); ``layers`` names them in any other model (each a ``Dense`` or a 1x1
    convolution). Errors as in :func:`keras_structinit.walker.find_kernels`; an unknown
    model with ``layers=None`` gets a ``ValueError`` listing the names looked for.
    """
    return find(model, "mlp_first" if layers is None else "dense", layers)


@model_function
def apply_mean_shift(model, *, b=None, mode="constant", variance=None, base=None, redraw=True, layers=None,
                     seed=None):
    """Re-initializes the first layer ``W1`` of every MLP block with :class:`MeanShift`.

    Each kernel is drawn anew as ``base + b`` (``mode="constant"``, Eq. 2) or
    ``base + b_n 1^T`` with ``b_n ~ N(b, variance)`` per input
    (``"per_input"``, Eq. 1); with ``redraw=False`` the kernel's current values
    are the base and only the shift is added (``--init mean-shift`` does this
    after ``torch-default``, so that ``b = 0`` leaves the baseline as it was).
    Only the first layers' kernels change: not their biases, not the second
    layers, attention or the head.

    Recognised without ``layers`` (:data:`MLP_FIRST_LAYERS`):
    the package's ConvNeXt, hierarchical and isotropic (``{prefix}_pointwise_1``),
    and ViT (``block_{i}_mlp_1``), keras.applications ConvNeXt
    (``..._pointwise_conv_1``) and KerasHub's ``ViTBackbone`` (``mlp/dense_1``).

    Args:
        model: a built ``keras.Model`` (nested models are searched).
        b, mode, variance: as in :class:`MeanShift` (``b=None``: its default).
        base: the initializer of the unshifted kernel, as in
            :class:`MeanShift`; ``None``: PyTorch's default uniform (the
            paper's baseline), drawn from ``seed``. A base with an int seed
            draws the same values for every layer of one shape.
        redraw: ``False`` shifts the kernels' current values instead of drawing
            a base (``base`` must then be ``None``).
        layers: optional list of layer names or objects: restricts the
            recognised layers, or names the first layers of another model's
            MLP blocks (each a ``Dense`` or a 1x1 convolution).
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``;
            every layer gets different samples.

    Returns:
        The re-initialized kernel variables' paths, in model order.

    Raises:
        ValueError: no MLP block found (the message lists the names looked
            for), or a bad ``b``, ``mode``, ``variance`` or ``base``.

    Example:
        >>> paths = apply_mean_shift(model, b=0.05, seed=0)
        ['block_1_pointwise_1/kernel', ...]
    """
    resolve_shift(b, mode, variance)  # validate before walking
    if not validation.boolean(redraw, "redraw") and base is not None:
        raise ValueError(f"`base` must be None with `redraw=False` (the kernels' values are the base). "
                         f"Received: base={base!r}")
    base = "zeros" if not redraw else None if base is None else check_base(base)
    found = find_mlp_kernels(model, layers=layers)
    generator = seed_generator(seed)
    init = MeanShift(base=base, b=b, mode=mode, variance=variance, seed=generator)
    for _, kernel in found:
        drawn = init(tuple(kernel.shape), dtype=kernel.dtype)
        kernel.assign(drawn if redraw else keras.ops.add(kernel, drawn))
    return [kernel.path for _, kernel in found]
