"""Finding the layers and kernel variables the package's methods act on."""

from __future__ import annotations

import math
from numbers import Integral

import keras

# Kernel attribute of each depthwise layer type.
_DEPTHWISE_TYPES = (
    (keras.layers.DepthwiseConv1D, "kernel"),
    (keras.layers.DepthwiseConv2D, "kernel"),
    (keras.layers.SeparableConv1D, "depthwise_kernel"),
    (keras.layers.SeparableConv2D, "depthwise_kernel"),
)
_CONV_TYPES = (keras.layers.Conv1D, keras.layers.Conv2D, keras.layers.Conv3D)


def iter_layers(model):
    """Yields every sub-layer of ``model`` once, depth-first in model order.

    For functional and sequential models ``model.layers`` is in topological
    order; nested models and layers that own sub-layers are descended into.
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


def depthwise_kernel(layer):
    """The spatial depthwise kernel variable of ``layer``, or ``None``.

    A layer qualifies when it is a ``DepthwiseConv1D/2D`` or
    ``SeparableConv1D/2D`` (its depthwise kernel) or a ``Conv1D/2D/3D`` whose
    ``groups`` equals its input channels (kernel ``(*k, 1, C)``, ``groups > 1``),
    and the filter has more than one pixel. The layer must be built.
    """
    attr = next((a for cls, a in _DEPTHWISE_TYPES if isinstance(layer, cls)), None)
    if attr is not None:
        kernel = getattr(layer, attr, None)
    elif isinstance(layer, _CONV_TYPES) and getattr(layer, "groups", 1) > 1:
        kernel = getattr(layer, "kernel", None)
        if kernel is not None and kernel.shape[-2] != 1:
            kernel = None
    else:
        kernel = None
    if kernel is None or math.prod(kernel.shape[:-2]) <= 1:
        return None
    return kernel


def spatial_depthwise_convs(model, layers=None):
    """``[(layer, kernel_variable), ...]`` of the spatial depthwise convs, in order.

    Args:
        model: a built ``keras.Model`` or layer.
        layers: optional list of layer names or layer objects to restrict to;
            each must be a spatial depthwise conv of ``model``.

    Raises:
        ValueError: the model is unbuilt, has no spatial depthwise convs, or a
            requested layer is missing or not a spatial depthwise conv.
    """
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(
            f"`model` must be a keras.Model or keras.layers.Layer. Received: {type(model).__name__}"
        )
    if not model.built:
        raise ValueError(
            f"`model` ({model.name}) must be built before its kernels can be "
            "re-initialized: call it on data or build it with an input shape."
        )
    candidates = list(iter_layers(model)) + [model]
    found = [(layer, depthwise_kernel(layer)) for layer in candidates]
    found = [(layer, kernel) for layer, kernel in found if kernel is not None]
    if layers is not None:
        found = _restrict(found, candidates, layers)
    if not found:
        raise ValueError(
            f"`model` ({model.name}) has no spatial depthwise convolutions "
            "(DepthwiseConv1D/2D, SeparableConv1D/2D, or Conv with groups == "
            "input channels and a kernel larger than 1 pixel)."
        )
    return found


def _restrict(found, candidates, layers):
    if isinstance(layers, (str, keras.layers.Layer)) or not isinstance(
        layers, (list, tuple)
    ):
        raise TypeError(
            "`layers` must be a list of layer names or layer objects. "
            f"Received: layers={layers!r}"
        )
    by_name = {layer.name: layer for layer in candidates}
    wanted = set()
    for item in layers:
        if isinstance(item, str):
            if item not in by_name:
                raise ValueError(
                    f"`layers` names {item!r}, which is not a layer of the model."
                )
            item = by_name[item]
        elif not isinstance(item, keras.layers.Layer):
            raise TypeError(
                "`layers` must contain layer names or layer objects. "
                f"Received an item {item!r}."
            )
        if not any(layer is item for layer, _ in found):
            raise ValueError(
                f"`layers` includes {item.name!r}, which is not a spatial "
                "depthwise convolution of the model."
            )
        wanted.add(id(item))
    return [(layer, kernel) for layer, kernel in found if id(layer) in wanted]


def resolve_seed_generator(seed):
    """A ``keras.random.SeedGenerator`` from ``None``, an int or a generator.

    An int gives a new generator seeded with it, so a call using it is
    reproducible while successive draws differ.
    """
    if isinstance(seed, keras.random.SeedGenerator):
        return seed
    if seed is None or (isinstance(seed, Integral) and not isinstance(seed, bool)):
        return keras.random.SeedGenerator(seed)
    raise TypeError(
        "`seed` must be None, an int or a keras.random.SeedGenerator. "
        f"Received: seed={seed!r}"
    )
