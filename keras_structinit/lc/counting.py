"""Parameter arithmetic of LCResNets (pure Python), for Table 1 of Gavrikov & Keuper.

An LC block ``c_in -> filters`` with expansion ``E`` and kernel ``k`` holds

    spatial = k^2 * c_in * filters * E,    pointwise = filters * E * filters     (1)

(no conv biases). LCResNet-D-WxE (He et al.'s CIFAR ResNet with every spatial
conv an LC block) has a stem block ``3 -> W`` and ``(D - 2) / 6`` basic blocks
of two LC blocks in each of three stages of widths ``W, 2W, 4W``; each LC
block is followed by BatchNorm (``2 * filters`` parameters: gamma and beta;
moving statistics are not parameters, as in PyTorch), and the head is
``Dense(4W -> classes)`` with bias. Option-A shortcuts have no parameters;
option B adds a 1x1 conv and a BatchNorm where the shape changes.

With sharing, the stored spatial parameters are the bank's ``len(W_s)``
(:func:`~keras_structinit.lc.sharing.bank_size`); pruning a ratio ``rho`` of
the pointwise weights removes ``round(rho * pointwise)`` non-zeros.

Example (Table 1, LCResNet-20-16x128):
    >>> lcresnet_parameter_counts(20, 16, 128, frozen=False)["total"]
    38428650
"""

from __future__ import annotations

import math

from keras_structinit.lc.pruning import pruned_count
from keras_structinit.lc.sharing import bank_size
from keras_structinit.utils import validation

__all__ = ["SHARING", "check_depth", "lcresnet_convs", "lcresnet_parameter_counts"]

#: Weight-sharing schemes of :func:`keras_structinit.models.lcresnet`.
SHARING = (None, "global", "recycled")


def check_depth(depth):
    """``depth`` if it is ``6 n + 2`` with ``n >= 1`` (8, 14, 20, 32, 44, 56, 110, ...)."""
    depth = validation.positive_int(depth, "depth")
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"`depth` must be 6n + 2 with n >= 1 (8, 14, 20, 32, ...). Received: depth={depth}")
    return depth


def lcresnet_convs(depth, width, in_channels=3):
    """``[(c_in, filters, stride), ...]`` of an LCResNet's LC blocks, in model order.

    The stem, then per basic block its first (strided at the start of stages
    2 and 3) and second conv.
    """
    depth = check_depth(depth)
    width = validation.positive_int(width, "width")
    in_channels = validation.positive_int(in_channels, "in_channels")
    convs = [(in_channels, width, 1)]
    c_in = width
    for stage in range(3):
        filters = width * 2**stage
        for block in range((depth - 2) // 6):
            stride = 2 if stage > 0 and block == 0 else 1
            convs += [(c_in, filters, stride), (filters, filters, 1)]
            c_in = filters
    return convs


def lcresnet_parameter_counts(
    depth=20,
    width=16,
    expansion=1,
    kernel_size=3,
    num_classes=10,
    in_channels=3,
    frozen=True,
    shortcut="A",
    sharing=None,
    recycle_fraction=1 / 16,
    prune_ratio=None,
):
    """``dict(total, learnable, nonzero, spatial, pointwise)`` of an LCResNet, by Eq. (1).

    ``spatial`` is the stored spatial count (the bank's size with sharing);
    ``nonzero`` assumes every weight is non-zero except the pruned ones.
    """
    expansion = validation.positive_int(expansion, "expansion")
    k = validation.positive_int(kernel_size, "kernel_size")
    num_classes = validation.positive_int(num_classes, "num_classes")
    validation.boolean(frozen, "frozen")
    validation.one_of(shortcut, "shortcut", ("A", "B"))
    if sharing not in SHARING:
        raise ValueError(f"`sharing` must be one of {SHARING}. Received: sharing={sharing!r}")
    convs = lcresnet_convs(depth, width, in_channels)
    shapes = [(k, k, c_in, filters * expansion) for c_in, filters, _ in convs]
    spatial = sum(math.prod(s) for s in shapes)
    if sharing is not None:
        spatial = bank_size(shapes, None if sharing == "global" else recycle_fraction)
    pointwise = sum(filters * expansion * filters for _, filters, _ in convs)
    others = sum(2 * filters for _, filters, _ in convs) + 4 * width * num_classes + num_classes
    if shortcut == "B":
        others += sum(c_in * f + 2 * f for c_in, f, _ in convs[1:] if c_in != f)
    total = spatial + pointwise + others
    pruned = 0 if prune_ratio is None else pruned_count(pointwise, prune_ratio)
    return {
        "total": total,
        "learnable": total - spatial if (frozen or sharing is not None) else total,
        "nonzero": total - pruned,
        "spatial": spatial,
        "pointwise": pointwise,
    }
