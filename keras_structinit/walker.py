"""The one model walker: finds the layers and variables a method acts on.

Every public function that changes a model has the same shape::

    apply_X(model, *, layers=None, seed=None, ...) -> list[str]   # variable paths

and gets its targets from :func:`find_kernels`, which walks nested models,
layers that own sub-layers (KerasHub blocks) and shared layers (visited once)
in model order. Two kinds of kernel are recognised:

* ``"depthwise"``: the spatial kernel of ``DepthwiseConv1D/2D``, the depthwise
  kernel of ``SeparableConv1D/2D``, and ``Conv1D/2D/3D`` kernels with
  ``groups > 1`` and one input channel per group (ConvNeXt's form);
* ``"all_spatial"``: those plus every other convolution kernel (``Conv*D``,
  ``Conv*DTranspose``, the spatial kernel of an LC block's
  :class:`~keras_structinit.layers.LCConv2D` unless it is sliced from a shared
  bank) whose filter has more than one pixel, i.e. everything but 1x1
  (pointwise) convolutions.

:func:`find_pointwise_kernels` finds the 1x1 kernels of LC blocks the same way, and
:func:`find_mlp_kernels` the first Dense / 1x1 conv of each MLP block (by the
names in :data:`MLP_FIRST_LAYERS`).

Example:
    >>> found = find_kernels(model, which="all_spatial")
    >>> [kernel.path for _, kernel in found]
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import sys
import warnings
from numbers import Integral

import keras

from keras_structinit import validation

__all__ = [
    "KINDS",
    "MLP_FIRST_LAYERS",
    "depthwise_kernel",
    "find_kernels",
    "find_mlp_kernels",
    "find_pointwise_kernels",
    "is_depthwise_layout",
    "iter_layers",
    "model_function",
    "seed_generator",
    "spatial_kernel",
]

#: What :func:`find_kernels` can look for.
KINDS = ("depthwise", "all_spatial")

_DEPTHWISE_TYPES = (
    (keras.layers.DepthwiseConv1D, "kernel"),
    (keras.layers.DepthwiseConv2D, "kernel"),
    (keras.layers.SeparableConv1D, "depthwise_kernel"),
    (keras.layers.SeparableConv2D, "depthwise_kernel"),
)
_CONV_TYPES = (
    keras.layers.Conv1D,
    keras.layers.Conv2D,
    keras.layers.Conv3D,
    keras.layers.Conv1DTranspose,
    keras.layers.Conv2DTranspose,
    keras.layers.Conv3DTranspose,
)


def iter_layers(model):
    """Yields every sub-layer of ``model`` once, depth-first in model order.

    Functional and sequential models list their layers in topological order;
    nested models and layers owning sub-layers are descended into; a layer
    used twice is yielded once.
    """
    seen = set()

    def visit(layer):
        children = (
            layer.layers
            if isinstance(layer, keras.Model)
            else layer._flatten_layers(include_self=False, recursive=False)
        )
        for child in children:
            if id(child) in seen:
                continue
            seen.add(id(child))
            yield child
            yield from visit(child)

    yield from visit(model)


def _spatial(kernel):
    return kernel is not None and math.prod(kernel.shape[:-2]) > 1


def depthwise_kernel(layer):
    """The spatial depthwise kernel variable of a built ``layer``, or ``None``."""
    attr = next((a for cls, a in _DEPTHWISE_TYPES if isinstance(layer, cls)), None)
    if attr is not None:
        kernel = getattr(layer, attr, None)
    elif isinstance(layer, _CONV_TYPES) and getattr(layer, "groups", 1) > 1:
        kernel = getattr(layer, "kernel", None)
        if kernel is not None and kernel.shape[-2] != 1:
            kernel = None
    else:
        kernel = None
    return kernel if _spatial(kernel) else None


def is_depthwise_layout(layer):
    """Whether ``layer``'s spatial kernel is ``(*k, C, multiplier)`` (fan-in ``prod(k)``)."""
    return isinstance(layer, tuple(cls for cls, _ in _DEPTHWISE_TYPES))


def _is_lc_block(layer):
    # No LC block can exist before its module is imported, so the walker need not import it.
    module = sys.modules.get("keras_structinit.lc.layers")
    return module is not None and isinstance(layer, module.LCConv2D)


def spatial_kernel(layer):
    """Any convolution kernel of a built ``layer`` with more than one pixel, or ``None``."""
    kernel = depthwise_kernel(layer)
    if kernel is None and isinstance(layer, _CONV_TYPES):
        kernel = getattr(layer, "kernel", None)
    elif kernel is None and _is_lc_block(layer):
        kernel = layer.spatial_kernel  # None when sliced from a shared bank
    return kernel if _spatial(kernel) else None


def lc_pointwise_kernel(layer):
    """The 1x1 kernel of a built LC block (``LCConv2D``), or ``None``."""
    return getattr(layer, "pointwise_kernel", None) if _is_lc_block(layer) else None


def dense_kernel(layer):
    """The kernel of a built ``Dense`` layer or 1x1 convolution (``groups == 1``), or ``None``."""
    if isinstance(layer, keras.layers.Dense):
        return getattr(layer, "kernel", None)
    if isinstance(layer, _CONV_TYPES[:3]) and getattr(layer, "groups", 1) == 1:
        kernel = getattr(layer, "kernel", None)
        return kernel if kernel is not None and math.prod(kernel.shape[:-2]) == 1 else None
    return None


#: The first layer of an MLP block: ``(model family, layer name, regex)``, the regex
#: matching the end of the kernel's variable path (the names ``selection/families.py`` maps).
MLP_FIRST_LAYERS = (
    ("the package's ConvNeXt", "{prefix}_pointwise_1", r"\w*_pointwise_1"),
    ("the package's ViT", "block_{i}_mlp_1", r"block_\d+_mlp_1"),
    ("keras.applications ConvNeXt", "{model}_stage_{s}_block_{b}_pointwise_conv_1", r"\w+_pointwise_conv_1"),
    ("KerasHub ViTBackbone", "dense_1 in each block's mlp", r"mlp/dense_1"),
)
_MLP_FIRST = re.compile(r"(?:^|/)(?:" + "|".join(p for *_, p in MLP_FIRST_LAYERS) + r")/kernel$")


def mlp_first_kernel(layer):
    """The kernel of a built layer that is the first Dense / 1x1 conv of an MLP block, or ``None``."""
    kernel = dense_kernel(layer)
    return kernel if kernel is not None and _MLP_FIRST.search(kernel.path) else None


_SELECTORS = {
    "depthwise": depthwise_kernel,
    "all_spatial": spatial_kernel,
    "lc_pointwise": lc_pointwise_kernel,
    "mlp_first": mlp_first_kernel,
    "dense": dense_kernel,
}
_SINGULAR = {
    "depthwise": "spatial depthwise convolution",
    "all_spatial": "spatial convolution",
    "lc_pointwise": "LC block",
    "mlp_first": "first layer of an MLP block",
    "dense": "Dense layer or 1x1 convolution",
}
_DESCRIPTIONS = {
    "depthwise": (
        "spatial depthwise convolutions (DepthwiseConv1D/2D, SeparableConv1D/2D, or Conv "
        "with groups == input channels and a kernel larger than 1 pixel)"
    ),
    "all_spatial": (
        "spatial convolutions (any Conv/DepthwiseConv/SeparableConv kernel larger than 1x1, "
        "or an LCConv2D's own spatial kernel)"
    ),
    "lc_pointwise": "LC blocks (keras_structinit.layers.LCConv2D)",
    "mlp_first": (
        "MLP blocks: looked for the first Dense / 1x1 conv of each, named "
        + "; ".join(f"{name} ({family})" for family, name, _ in MLP_FIRST_LAYERS)
        + "; pass `layers=[...]` to name the first layers of another model's MLP blocks"
    ),
    "dense": "Dense layers or 1x1 convolutions (groups 1)",
}


def check_model(model, name="model"):
    """``TypeError`` unless ``model`` is a Keras layer/model, ``ValueError`` unless built."""
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(
            f"`{name}` must be a keras.Model or keras.layers.Layer. "
            f"Received: {name} of type {type(model).__name__}"
        )
    if not model.built:
        raise ValueError(
            f"`{name}` ({model.name}) must be built before its variables can be changed: "
            "call it on data or build it with an input shape."
        )
    return model


def find_kernels(model, which="depthwise", layers=None, *, name="model"):
    """``[(layer, kernel_variable), ...]`` of ``which`` kind, in model order.

    Args:
        model: a built ``keras.Model`` or layer (nested models are searched).
        which: ``"depthwise"`` or ``"all_spatial"`` (see the module docstring).
        layers: optional list of layer names or layer objects restricting the
            search; each must be a matching layer of ``model``.
        name: how error messages name ``model`` (e.g. ``"source"``).

    Raises:
        TypeError: ``model`` is not a Keras layer, ``layers`` is not a list of
            names/layers.
        ValueError: ``model`` is unbuilt, nothing matches, or a requested layer
            is missing or of another kind.
    """
    validation.one_of(which, "which", KINDS)
    return _find(model, which, layers, name)


def find_pointwise_kernels(model, layers=None):
    """``[(layer, pointwise_kernel), ...]`` of the model's LC blocks (``LCConv2D``), in model order.

    ``layers`` and the errors as in :func:`find_kernels`.
    """
    return _find(model, "lc_pointwise", layers)


def find_mlp_kernels(model, layers=None):
    """``[(layer, kernel), ...]`` of the first Dense / 1x1 conv of every MLP block, in model order.

    With ``layers=None`` the layers are recognised by name (:data:`MLP_FIRST_LAYERS`:
    the package's ConvNeXt and ViT, keras.applications ConvNeXt, KerasHub's
    ViT); ``layers`` names them in any other model (each a ``Dense`` or a 1x1
    convolution). Errors as in :func:`find_kernels`; an unknown model with
    ``layers=None`` gets a ``ValueError`` listing the names looked for.
    """
    return _find(model, "mlp_first" if layers is None else "dense", layers)


def _find(model, which, layers, name="model"):
    check_model(model, name)
    select = _SELECTORS[which]
    candidates = list(iter_layers(model)) + [model]
    found = [(layer, select(layer)) for layer in candidates]
    found = [(layer, kernel) for layer, kernel in found if kernel is not None]
    if layers is not None:
        found = _restrict(found, candidates, layers, which)
    if not found:
        raise ValueError(f"`{name}` ({model.name}) has no {_DESCRIPTIONS[which]}.")
    return found


def _restrict(found, candidates, layers, which):
    if isinstance(layers, (str, keras.layers.Layer)) or not isinstance(layers, (list, tuple)):
        raise TypeError(
            f"`layers` must be a list of layer names or layer objects. Received: layers={layers!r}"
        )
    by_name = {layer.name: layer for layer in candidates}
    wanted = set()
    for item in layers:
        if isinstance(item, str):
            if item not in by_name:
                raise ValueError(f"`layers` names {item!r}, which is not a layer of the model.")
            item = by_name[item]
        elif not isinstance(item, keras.layers.Layer):
            raise TypeError(f"`layers` must contain layer names or layer objects. Received an item {item!r}.")
        if not any(layer is item for layer, _ in found):
            raise ValueError(
                f"`layers` includes {item.name!r}, which is not a {_SINGULAR[which]} of the model; "
                f"expected {_DESCRIPTIONS[which]}."
            )
        wanted.add(id(item))
    return [(layer, kernel) for layer, kernel in found if id(layer) in wanted]


def check_seed(seed):
    """``seed`` if it is ``None``, an int (returned as ``int``) or a ``keras.random.SeedGenerator``.

    Int seeds must lie in ``[0, 2**32 - 1]`` (:func:`keras_structinit.validation.random_seed`):
    Keras on JAX holds a seed as a uint32, so other ints would work on TensorFlow and
    torch but overflow on JAX; every backend refuses them here instead.
    """
    if seed is None or isinstance(seed, keras.random.SeedGenerator):
        return seed
    expected = "None, an int in [0, 2**32 - 1] or a keras.random.SeedGenerator"
    if not (isinstance(seed, Integral) and not isinstance(seed, bool)):
        raise TypeError(f"`seed` must be {expected}. Received: seed={seed!r} of type {type(seed).__name__}")
    low, high = validation.SEED_RANGE
    if not low <= seed <= high:
        raise ValueError(f"`seed` must be {expected}. Received: seed={seed!r}")
    return int(seed)


def seed_generator(seed):
    """A ``keras.random.SeedGenerator`` from ``None``, an int or a generator.

    An int gives a new generator seeded with it, so a call using it is
    reproducible while successive draws differ.
    """
    seed = check_seed(seed)
    return seed if isinstance(seed, keras.random.SeedGenerator) else keras.random.SeedGenerator(seed)


def model_function(*legacy_positional):
    """Decorator for ``apply_X(model, *, ...)`` functions.

    Checks ``model`` (a built Keras layer/model) and accepts, for one release,
    the keyword arguments named in ``legacy_positional`` given positionally
    after ``model`` as older versions allowed, with a ``DeprecationWarning``.
    """

    def decorate(fn):
        params = inspect.signature(fn).parameters
        unknown = [p for p in legacy_positional if p not in params]
        if unknown:  # pragma: no cover - programming error
            raise TypeError(f"{fn.__name__} has no parameters {unknown}")

        @functools.wraps(fn)
        def wrapper(model, *args, **kwargs):
            if args:
                if len(args) > len(legacy_positional):
                    raise TypeError(
                        f"{fn.__name__}() takes `model` as its only positional argument; "
                        "pass the others by keyword."
                    )
                warnings.warn(
                    f"Passing {', '.join(legacy_positional[: len(args)])} to {fn.__name__}() "
                    "positionally is deprecated; pass them by keyword.",
                    DeprecationWarning,
                    stacklevel=2,
                )
                for name, value in zip(legacy_positional[: len(args)], args, strict=True):
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got multiple values for `{name}`")
                    kwargs[name] = value
            check_model(model)
            return fn(model, **kwargs)

        return wrapper

    return decorate
