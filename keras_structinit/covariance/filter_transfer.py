"""Direct filter transfer: copy learned depthwise filters between models.

This is the baseline that covariance transfer (Trockman et al., ICLR 2023) is
compared against: instead of sampling new filters from a learned covariance,
a target model's depthwise filters are set to copies of a trained source
model's filters, layer by layer, matched by relative depth.
"""

from __future__ import annotations

import math

import keras
import numpy as np

from keras_structinit.covariance.schedule import depth_fractions
from keras_structinit.engine.contract import check_model, model_function
from keras_structinit.engine.walker import find_kernels
from keras_structinit.utils import validation

__all__ = ["apply_filter_transfer"]


def _nearest_source(fraction, source_fractions):
    """Index of the source depth fraction nearest ``fraction`` (ties: lower)."""
    gaps = [abs(fraction - s) for s in source_fractions]
    best = min(gaps)
    # Tolerate float noise so exact ties go to the lower index.
    return next(i for i, g in enumerate(gaps) if g <= best + 1e-12)


def _pick_filters(num_source, num_target, rng):
    """Indices of the source filters copied to each of ``num_target`` slots."""
    if num_target <= num_source:
        return rng.choice(num_source, size=num_target, replace=False)
    repeats, remainder = divmod(num_target, num_source)
    tiled = np.tile(np.arange(num_source), repeats)
    extra = rng.choice(num_source, size=remainder, replace=False)
    return np.concatenate([tiled, extra])


@model_function
def apply_filter_transfer(model, *, source, layers=None, seed=None):
    """Copies a trained ``source`` model's depthwise filters into ``model``.

    Both models must be built. Their spatial depthwise convolutions are found
    with :func:`keras_structinit.engine.walker.find_kernels` (model order). Target
    layer ``j`` of ``D_t`` (depth fraction
    ``depth_fractions(D_t)[j]``) copies from the source layer with the nearest
    depth fraction, ties going to the shallower layer.

    A kernel ``(kh, kw, a, b)`` is viewed as ``H = a * b`` filters of size
    ``kh x kw``. With ``H_t`` target and ``H_s`` source filters:

    * ``H_t <= H_s``: ``H_t`` distinct source filters are chosen at random
      (without replacement);
    * ``H_t > H_s``: every source filter is used ``H_t // H_s`` times, and the
      remaining ``H_t % H_s`` slots get a random subset of distinct source
      filters.

    Sub-sampled filters come in random order; tiled filters keep the source
    order. Biases and all other weights are left untouched, and ``source`` is
    only read.

    Args:
        model: the built target ``keras.Model`` whose depthwise kernels are
            overwritten.
        source: a built, usually trained, ``keras.Model``; never modified.
        layers: optional list of target layer names/objects to restrict to
            (depth fractions are spread over these).
        seed: ``None`` (fresh randomness each call) or an int in
            ``[0, 2**32 - 1]``, which makes the choice of filters reproducible
            (a NumPy ``Generator`` is seeded with it).

    Returns:
        The paths of the target kernel variables that were assigned, in order.

    Example:
        >>> apply_filter_transfer(big, source=small, seed=0)

    Raises:
        ValueError: a model is unbuilt or has no spatial depthwise convs, or a
            target layer's kernel size differs from its matched source layer's.
        TypeError: ``seed`` is not ``None`` or an int (``ValueError`` for an int
            outside ``[0, 2**32 - 1]``).
    """
    seed = validation.optional(validation.random_seed, seed, "seed")
    rng = np.random.default_rng(seed)
    check_model(source, "source")
    source_convs = find_kernels(source, which="depthwise", name="source")
    target_convs = find_kernels(model, which="depthwise", layers=layers)
    source_fracs = depth_fractions(len(source_convs))
    target_fracs = depth_fractions(len(target_convs))

    # Match and validate every layer before changing any weights.
    plan = []
    for (t_layer, t_kernel), fraction in zip(target_convs, target_fracs, strict=True):
        s_layer, s_kernel = source_convs[_nearest_source(fraction, source_fracs)]
        t_size = tuple(int(d) for d in t_kernel.shape[:-2])
        s_size = tuple(int(d) for d in s_kernel.shape[:-2])
        if t_size != s_size:
            raise ValueError(
                f"Kernel sizes differ: target layer {t_layer.name!r} has {t_size} "
                f"but its matched source layer {s_layer.name!r} has {s_size}. "
                "Direct transfer needs equal filter sizes."
            )
        plan.append((t_kernel, s_kernel, t_size))

    paths = []
    for t_kernel, s_kernel, size in plan:
        n = math.prod(size)
        # Copy (np.array) so that nothing written can alias the source variable.
        s_filters = np.array(keras.ops.convert_to_numpy(s_kernel.value)).reshape(n, -1)
        t_shape = tuple(int(d) for d in t_kernel.shape)
        num_target = math.prod(t_shape[-2:])
        chosen = _pick_filters(s_filters.shape[1], num_target, rng)
        values = s_filters[:, chosen].reshape(t_shape)
        t_kernel.assign(keras.ops.cast(values, t_kernel.dtype))
        paths.append(t_kernel.path)
    return paths
