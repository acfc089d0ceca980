"""MLP blocks and self-attention layers found by structure, not by name (issue 63).

An **MLP block** is a Dense / 1x1 convolution / ``EinsumDense`` (a 2-D kernel) that widens the
features (``d -> h``, ``h > d``), an activation, and a second such layer that narrows them back
(``h -> d``):

* in a functional graph (the model or a nested functional model), the first layer's output runs
  through one consumer at a time (activations, dropout, a depthwise convolution as in MiT's
  Mix-FFN: nothing that mixes features) to the second, whose output reaches an ``Add`` (the
  residual) through at most a few such layers; the activation is the first layer's own or one
  on the way;
* inside a layer that owns sub-layers (KerasHub's and keras.applications' blocks, which have no
  graph to read), the two are consecutive among the block's Dense-like layers (attention
  projections left out) under one parent that is not a functional model; the activation is the
  first layer's own, an activation layer between them, the parent's (``activation``,
  ``act_layer``, ...) or one the parent's ``call`` applies by name (MiT's Mix-FFN: ``ops.nn.gelu``
  after its depthwise conv). The residual add happens in the parent's ``call`` and is not checked.

A **self-attention layer** is ``keras.layers.MultiHeadAttention`` or a layer with an int
``num_heads`` whose own Dense children are a fused ``qkv`` (``d -> 3 H k``) and an output
projection (``H k -> d``), as KerasHub's Swin ``WindowAttention``, or separate query, key, value
and output Dense layers (``d -> H k`` three times, ``H k_v -> d``), in that order. Relative
position tables (Swin's ``relative_position_bias_table``) are not projections and stay as built.

A **cross-attention** (:func:`is_cross_attention`) is such a layer whose key/value come from
another input than its query: a ``MultiHeadAttention`` called in a functional graph with ``value``
(or ``key``) another tensor than ``query``; without a graph (inside KerasHub's and your own
blocks), one built with key/value shapes other than the query's, or named ``cross`` (KerasHub's
``TransformerDecoder``: ``cross_attention``). A fused ``qkv`` layer reads one input: self-attention.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass

import keras
import numpy as np

from keras_structinit.engine.walker import dense_kernel
from keras_structinit.mimetic.blocks import ATTENTION_DESCRIPTION, MLP_STRUCTURE

__all__ = [
    "ATTENTION_DESCRIPTION",
    "MLP_STRUCTURE",
    "AttentionProjections",
    "MLPBlock",
    "attention_projections",
    "dense_like",
    "find_mlp_blocks",
    "is_cross_attention",
]


_MAX_BETWEEN = 4  # layers between the two kernels, or between the second and the residual add
_ACTIVATION_NAMES = (
    "activation",
    "relu",
    "gelu",
    "silu",
    "swish",
    "elu",
    "sigmoid",
    "tanh",
    "mish",
    "softplus",
    "hardswish",
    "hard_swish",
)
_PARENT_ACTIVATION = (
    "activation",
    "act",
    "act_layer",
    "activation_fn",
    "intermediate_activation",
    "_activation",
    "_intermediate_activation",
)


@dataclass(frozen=True)
class MLPBlock:
    """One MLP block: the first (widening) layer and kernel, the second (narrowing) one, the
    layers between them, and how it was found (``"graph"`` or ``"sub-layers"``)."""

    first: object
    first_kernel: object
    second: object
    second_kernel: object
    between: tuple
    found_in: str

    @property
    def width(self):
        """``(d, h)``: the block's input width and hidden width."""
        return dense_like(self.first)[1:]


def dense_like(layer):
    """``(kernel, fan_in, fan_out)`` of a built Dense, 1x1 convolution or ``EinsumDense`` with a 2-D
    kernel, or ``None``."""
    kernel = dense_kernel(layer)
    if kernel is None and isinstance(layer, keras.layers.EinsumDense):
        kernel = getattr(layer, "kernel", None)
        if kernel is not None and len(kernel.shape) != 2:
            kernel = None
    if kernel is None:
        return None
    return kernel, int(np.prod(kernel.shape[:-1])), int(kernel.shape[-1])


def _is_linear(activation):
    return activation is None or getattr(activation, "__name__", None) == "linear"


def _is_activation(op):
    if isinstance(op, keras.layers.Activation):
        return not _is_linear(op.activation)
    name = type(op).__name__.lower()
    return any(word in name for word in _ACTIVATION_NAMES)


def _own_activation(layer):
    return not _is_linear(getattr(layer, "activation", None))


def _parent_activation(layer):
    for attr in _PARENT_ACTIVATION:
        value = getattr(layer, attr, None)
        if callable(value) and not isinstance(value, keras.layers.Layer) and not _is_linear(value):
            return True
        if isinstance(value, str) and value not in ("linear", ""):
            return True
        if isinstance(value, keras.layers.Layer) and _is_activation(value):
            return True
    return False


@functools.cache
def _call_applies_activation(cls):
    """Whether ``cls.call``'s source applies an activation by name (MiT's ``MixFFN`` calls
    ``ops.nn.gelu`` between its layers and holds no activation attribute)."""
    try:
        source = inspect.getsource(cls.call)
    except (OSError, TypeError):
        return False
    return re.search(r"\b(?:gelu|relu|silu|swish|elu|tanh|sigmoid|mish)\s*\(", source) is not None


def _parent_applies_activation(layer):
    return _parent_activation(layer) or _call_applies_activation(type(layer))


def _consumers(model):
    """``{id(op): [op, ...]}`` over the nodes of one functional model."""
    consumers = {}
    for nodes in model._nodes_by_depth.values():
        for node in nodes:
            for tensor in node.input_tensors:
                producer = tensor._keras_history.operation
                consumers.setdefault(id(producer), []).append(node.operation)
    return consumers


def _graph_blocks(model):
    consumers = _consumers(model)
    blocks = []
    for op in model.operations:
        first = dense_like(op)
        if first is None or first[2] <= first[1]:
            continue
        path, current, second = [], op, None
        for _ in range(_MAX_BETWEEN + 1):
            nxt = consumers.get(id(current), [])
            if len(nxt) != 1:
                break
            current = nxt[0]
            if dense_like(current) is not None:
                second = current
                break
            path.append(current)
        if second is None:
            continue
        kernel2, fan_in2, fan_out2 = dense_like(second)
        if (fan_in2, fan_out2) != (first[2], first[1]):
            continue
        if not (_own_activation(op) or any(_is_activation(p) for p in path)):
            continue
        if not _reaches_add(consumers, second):
            continue
        blocks.append(MLPBlock(op, first[0], second, kernel2, tuple(path), "graph"))
    return blocks


def _reaches_add(consumers, op):
    current = op
    for _ in range(_MAX_BETWEEN + 1):
        nxt = consumers.get(id(current), [])
        if any(type(n).__name__ == "Add" for n in nxt):
            return True
        if len(nxt) != 1 or dense_like(nxt[0]) is not None:
            return False
        current = nxt[0]
    return False


def _functional(layer):
    return isinstance(layer, keras.Model) and hasattr(layer, "_nodes_by_depth")


def find_mlp_blocks(model):
    """Every :class:`MLPBlock` of a built ``model`` (nested models and sub-layers searched), in
    model order; ``[]`` where there is none."""
    parent = {}
    order = []
    seen_attention = set()

    def visit(layer):
        children = (
            layer.layers
            if isinstance(layer, keras.Model)
            else layer._flatten_layers(include_self=False, recursive=False)
        )
        for child in children:
            if id(child) in parent:
                continue
            parent[id(child)] = layer
            order.append(child)
            if attention_projections(child) is not None or id(layer) in seen_attention:
                seen_attention.add(id(child))
            visit(child)

    visit(model)
    by_first = {}
    for layer in [model, *order]:
        if _functional(layer):
            for block in _graph_blocks(layer):
                by_first.setdefault(id(block.first), block)
    # within sub-layers: consecutive Dense-like layers under a parent that is no functional model
    dense = [
        layer
        for layer in order
        if id(layer) not in seen_attention
        and dense_like(layer) is not None
        and not _functional(parent[id(layer)])
    ]
    for a, b in zip(dense, dense[1:], strict=False):
        if id(a) in by_first:
            continue
        ka, din, dh = dense_like(a)
        kb, bin_, bout = dense_like(b)
        if not (dh > din and (bin_, bout) == (dh, din)):
            continue
        common = _common_parent(parent, a, b)
        if common is None or _functional(common):
            continue
        start, stop = order.index(a), order.index(b)
        between = tuple(order[start + 1 : stop])
        if not (
            _own_activation(a)
            or any(_is_activation(x) for x in between)
            or _parent_applies_activation(parent[id(a)])
            or _parent_applies_activation(common)
        ):
            continue
        by_first[id(a)] = MLPBlock(a, ka, b, kb, between, "sub-layers")
    rank = {id(layer): i for i, layer in enumerate(order)}
    return sorted(by_first.values(), key=lambda block: rank.get(id(block.first), -1))


def _common_parent(parent, a, b):
    ancestors = []
    node = a
    while id(node) in parent:
        node = parent[id(node)]
        ancestors.append(node)
    node = b
    while id(node) in parent:
        node = parent[id(node)]
        if any(node is x for x in ancestors):
            return node
    return None


# ------------------------------------------------------------------ self-attention


@dataclass(frozen=True)
class AttentionProjections:
    """The four projections of one self-attention layer as ``(d, H, k)`` / ``(H, k_v, d)`` views:
    ``kernels()`` reads them, ``write(q, k, v, o)`` writes them back into the layer's variables;
    ``variables`` are the variables written, ``layout`` ``"multi-head"``, ``"fused-qkv"`` or
    ``"separate"``."""

    layer: object
    layout: str
    variables: tuple
    heads: int

    @property
    def query_kernel(self):
        return self.variables[0]

    def shapes(self):
        """``(q, k, v, o)`` shapes in the ``(d, H, k)`` / ``(H, k_v, d)`` layout."""
        if self.layout == "multi-head":
            return tuple(tuple(v.shape) for v in self.variables)
        if self.layout == "fused-qkv":
            qkv, proj = self.variables
            d, width = qkv.shape
            k = width // 3 // self.heads
            return (d, self.heads, k), (d, self.heads, k), (d, self.heads, k), (self.heads, k, proj.shape[1])
        q, k, v, o = self.variables
        h = self.heads
        return (
            (q.shape[0], h, q.shape[1] // h),
            (k.shape[0], h, k.shape[1] // h),
            (v.shape[0], h, v.shape[1] // h),
            (h, o.shape[0] // h, o.shape[1]),
        )

    def kernels(self):
        """``[q, k, v, o]`` as NumPy arrays in the ``(d, H, k)`` / ``(H, k_v, d)`` layout."""
        values = [np.asarray(keras.ops.convert_to_numpy(v)) for v in self.variables]
        shapes = self.shapes()
        if self.layout == "fused-qkv":
            qkv, proj = values
            parts = np.split(qkv, 3, axis=1)
            return [p.reshape(s) for p, s in zip(parts, shapes[:3], strict=True)] + [proj.reshape(shapes[3])]
        return [v.reshape(s) for v, s in zip(values, shapes, strict=True)]

    def write(self, q, k, v, o):
        """Writes the four ``(d, H, k)`` / ``(H, k_v, d)`` arrays into the layer's variables."""
        if self.layout == "fused-qkv":
            d = q.shape[0]
            values = [np.concatenate([q.reshape(d, -1), k.reshape(d, -1), v.reshape(d, -1)], axis=1), o]
        else:
            values = [q, k, v, o]
        for variable, value in zip(self.variables, values, strict=True):
            variable.assign(keras.ops.cast(np.reshape(value, variable.shape), variable.dtype))


def _plain_dense(layer):
    kernel = getattr(layer, "kernel", None) if isinstance(layer, keras.layers.Dense) else None
    return kernel if kernel is not None and len(kernel.shape) == 2 else None


def attention_projections(layer):
    """The :class:`AttentionProjections` of a built self-attention ``layer``, or ``None``."""
    if isinstance(layer, keras.layers.MultiHeadAttention):
        if not layer.built:
            return None
        parts = [
            getattr(getattr(layer, name, None), "kernel", None)
            for name in ("query_dense", "key_dense", "value_dense", "output_dense")
        ]
        if any(p is None for p in parts):
            return None
        return AttentionProjections(layer, "multi-head", tuple(parts), int(parts[0].shape[1]))
    heads = getattr(layer, "num_heads", None)
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1 or not layer.built:
        return None
    children = layer._flatten_layers(include_self=False, recursive=False)
    if any(isinstance(c, keras.layers.MultiHeadAttention) for c in children):
        return None  # a block holding an attention layer, not one
    kernels = [k for k in (_plain_dense(c) for c in children) if k is not None]
    if len(kernels) == 2:
        qkv, proj = kernels
        d, width = qkv.shape
        if width % (3 * heads) == 0 and tuple(proj.shape) == (width // 3, d):
            return AttentionProjections(layer, "fused-qkv", (qkv, proj), heads)
    if len(kernels) == 4:
        q, k, v, o = kernels
        d, m = q.shape
        if (
            tuple(k.shape) == (d, m)
            and v.shape[0] == d
            and m % heads == 0
            and v.shape[1] % heads == 0
            and tuple(o.shape) == (v.shape[1], d)
        ):
            return AttentionProjections(layer, "separate", (q, k, v, o), heads)
    return None


def _node_is_self(layer, node):
    """Whether a ``MultiHeadAttention`` call node takes key and value from its query; ``None``
    where the call's arguments cannot be read."""
    arguments = getattr(node, "arguments", None)
    try:
        bound = inspect.signature(layer.call).bind_partial(*arguments.args, **arguments.kwargs)
    except (AttributeError, TypeError):
        return None
    query, value = bound.arguments.get("query"), bound.arguments.get("value")
    key = bound.arguments.get("key")
    if query is None or value is None:
        return None
    return value is query and (key is None or key is query)


def _named_cross(layer, projections):
    names = [layer.name, *(v.path for v in projections.variables[:1])]
    return any("cross" in str(name).lower() for name in names)


def is_cross_attention(layer):
    """Whether a self-attention candidate ``layer`` (one :func:`attention_projections` finds) is a
    cross-attention: its key/value from another input than its query (see the module's text);
    ``False`` for a layer that is no attention layer."""
    projections = attention_projections(layer)
    if projections is None:
        return False
    if projections.layout == "fused-qkv":
        return False  # one input, split three ways
    if isinstance(layer, keras.layers.MultiHeadAttention):
        calls = [_node_is_self(layer, node) for node in getattr(layer, "_inbound_nodes", ())]
        if calls and all(call is not None for call in calls):
            return not all(calls)
        shapes = getattr(layer, "_build_shapes_dict", None) or {}
        query = shapes.get("query_shape")
        others = [shapes.get("value_shape"), shapes.get("key_shape")]
        if query is not None and any(s is not None and tuple(s) != tuple(query) for s in others):
            return True
    return _named_cross(layer, projections)
