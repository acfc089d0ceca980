"""The one model walker: finds the layers and variables a method acts on.

Every function that changes a model (:mod:`keras_structinit.engine.contract`) gets its targets from
:func:`find` (or :func:`find_kernels`), which walks nested models, layers that own sub-layers
(KerasHub blocks) and shared layers (visited once) in model order, asking a *selector* for each
layer's variable. The walker's own selectors:

* ``"depthwise"``: the spatial kernel of ``DepthwiseConv1D/2D``, the depthwise
  kernel of ``SeparableConv1D/2D``, and ``Conv1D/2D/3D`` kernels with
  ``groups > 1`` and one input channel per group (ConvNeXt's form);
* ``"all_spatial"``: those plus every other convolution kernel (``Conv*D``,
  ``Conv*DTranspose``, and a layer's own ``spatial_kernel`` variable) whose filter
  has more than one pixel, i.e. everything but 1x1 (pointwise) convolutions;
* ``"dense"``: ``Dense`` kernels and 1x1 convolutions (groups 1).

Methods add their own selectors in their records (:class:`keras_structinit.methods.Selector`);
the walker knows no method.

Example:
    >>> found = find_kernels(model, which="all_spatial")
    >>> [kernel.path for _, kernel in found]
"""

from __future__ import annotations

import math

import keras

from keras_structinit import _hooks
from keras_structinit.engine.contract import check_model
from keras_structinit.utils import validation

__all__ = [
    "KINDS",
    "SPATIAL_KERNEL",
    "dense_kernel",
    "depthwise_kernel",
    "find",
    "find_kernels",
    "is_depthwise_layout",
    "iter_layers",
    "own_variables",
    "resolve_layers",
    "selector",
    "spatial_kernel",
]

#: What :func:`find_kernels` can look for.
KINDS = ("depthwise", "all_spatial")
#: A layer holding a variable under this attribute (``None``: it has none of its own) is a
#: spatial convolution for ``"all_spatial"``.
SPATIAL_KERNEL = "spatial_kernel"

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


def own_variables(layer):
    """The variables ``layer`` created itself, trainable first (not its sub-layers')."""
    return [*layer._trainable_variables, *layer._non_trainable_variables]


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


def spatial_kernel(layer):
    """Any convolution kernel of a built ``layer`` with more than one pixel, or ``None``."""
    kernel = depthwise_kernel(layer)
    if kernel is None and isinstance(layer, _CONV_TYPES):
        kernel = getattr(layer, "kernel", None)
    elif kernel is None and isinstance(getattr(layer, SPATIAL_KERNEL, None), keras.Variable):
        kernel = getattr(layer, SPATIAL_KERNEL)
    return kernel if _spatial(kernel) else None


def dense_kernel(layer):
    """The kernel of a built ``Dense`` layer or 1x1 convolution (``groups == 1``), or ``None``."""
    if isinstance(layer, keras.layers.Dense):
        return getattr(layer, "kernel", None)
    if isinstance(layer, _CONV_TYPES[:3]) and getattr(layer, "groups", 1) == 1:
        kernel = getattr(layer, "kernel", None)
        return kernel if kernel is not None and math.prod(kernel.shape[:-2]) == 1 else None
    return None


_CORE_SELECTORS = {
    "depthwise": (
        depthwise_kernel,
        "spatial depthwise convolution",
        "spatial depthwise convolutions (DepthwiseConv1D/2D, SeparableConv1D/2D, or Conv "
        "with groups == input channels and a kernel larger than 1 pixel)",
    ),
    "all_spatial": (
        spatial_kernel,
        "spatial convolution",
        "spatial convolutions (any Conv/DepthwiseConv/SeparableConv kernel larger than 1x1, "
        f"or a layer's own `{SPATIAL_KERNEL}` variable)",
    ),
    "dense": (dense_kernel, "Dense layer or 1x1 convolution", "Dense layers or 1x1 convolutions (groups 1)"),
}


def selector(which):
    """``(find, singular, description)`` of the selector ``which``: the walker's own
    (:data:`KINDS` and ``"dense"``) or one a method record adds
    (:func:`keras_structinit.methods.selectors`, handed down through :mod:`._hooks`)."""
    if which in _CORE_SELECTORS:
        return _CORE_SELECTORS[which]
    added = _hooks.record_selectors() if _hooks.record_selectors is not None else {}
    if which not in added:
        validation.one_of(which, "which", (*_CORE_SELECTORS, *added))
    found = added[which]
    return found.find, found.singular, found.description


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
    return find(model, which, layers, name=name)


def find(model, which, layers=None, *, name="model"):
    """``[(layer, variable), ...]`` that the selector ``which`` finds in ``model``, in model order.

    ``which`` is a walker selector (``"depthwise"``, ``"all_spatial"``, ``"dense"``) or
    one a method record adds (:func:`keras_structinit.methods.selectors`); ``layers`` and the errors as in
    :func:`find_kernels`.
    """
    check_model(model, name)
    select, singular, description = selector(which)
    candidates = list(iter_layers(model)) + [model]
    found = [(layer, select(layer)) for layer in candidates]
    found = [(layer, kernel) for layer, kernel in found if kernel is not None]
    if layers is not None:
        found = _restrict(found, model, layers, singular, description)
    if not found:
        raise ValueError(f"`{name}` ({model.name}) has no {description}.")
    return found


def resolve_layers(model, layers):
    """The layers of ``model`` that ``layers`` (a list of layer names or layer objects) names.

    ``TypeError`` for anything but such a list, ``ValueError`` for a name or layer not in ``model``.
    """
    if isinstance(layers, (str, keras.layers.Layer)) or not isinstance(layers, (list, tuple)):
        raise TypeError(
            f"`layers` must be a list of layer names or layer objects. Received: layers={layers!r}"
        )
    candidates = [*iter_layers(model), model]
    by_name = {layer.name: layer for layer in candidates}
    chosen = []
    for item in layers:
        if isinstance(item, str):
            if item not in by_name:
                raise ValueError(f"`layers` names {item!r}, which is not a layer of the model.")
            item = by_name[item]
        elif not isinstance(item, keras.layers.Layer):
            raise TypeError(f"`layers` must contain layer names or layer objects. Received an item {item!r}.")
        elif not any(item is layer for layer in candidates):
            raise ValueError(f"`layers` includes {item.name!r}, which is not a layer of the model.")
        chosen.append(item)
    return chosen


def _restrict(found, model, layers, singular, description):
    wanted = set()
    for item in resolve_layers(model, layers):
        if not any(layer is item for layer, _ in found):
            raise ValueError(
                f"`layers` includes {item.name!r}, which is not a {singular} of the model; "
                f"expected {description}."
            )
        wanted.add(id(item))
    return [(layer, kernel) for layer, kernel in found if id(layer) in wanted]
