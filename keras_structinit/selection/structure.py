"""The structure of a Keras model that a derived selection plan reads (:mod:`.derive`).

:func:`describe_model` gives every variable's axis roles (dimension nodes of a union-find over the
channels of the functional graph, or :data:`~.families.SAME`, :data:`~.families.TOKENS`,
:data:`CLASSES`) and :func:`model_keys` each variable's ``(stage, block, component)``, from the
variable paths or, for layers with Keras's automatic names, from the graph. The rules are in
:mod:`.derive`'s docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from keras_structinit.selection.families import SAME, TOKENS

__all__ = ["CLASSES", "Dimensions", "describe_model", "model_keys", "mostly_automatic"]

CLASSES = "=classes"

_MERGES = {"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "add", "subtract", "multiply"}
_NORMS = {
    "BatchNormalization",
    "LayerNormalization",
    "GroupNormalization",
    "RMSNormalization",
    "SyncBatchNormalization",
    "UnitNormalization",
}
_CONVS = {"Conv1D", "Conv2D", "Conv3D", "Dense"}
_DEPTHWISE = {"DepthwiseConv1D", "DepthwiseConv2D"}
_SEPARABLE = {"SeparableConv1D", "SeparableConv2D"}


class Dimensions:
    """A union-find over dimension nodes (ints), with composite nodes made of parts in order."""

    def __init__(self):
        self.parent = []
        self.size = []
        self.parts = {}  # composite node -> list of part nodes

    def new(self, size, parts=None):
        self.parent.append(len(self.parent))
        self.size.append(size)
        if parts is not None:
            self.parts[len(self.parent) - 1] = list(parts)
        return len(self.parent) - 1

    def find(self, node):
        while self.parent[node] != node:
            self.parent[node] = self.parent[self.parent[node]]
            node = self.parent[node]
        return node

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            if a in self.parts or b in self.parts:  # a composite stays the root
                a, b = (a, b) if a in self.parts else (b, a)
            self.parent[b] = a
        return a


@dataclass
class _Structure:
    """One model, described: every variable's axis roles (dimension nodes or markers) and its key."""

    dims: Dimensions
    roles: dict = field(default_factory=dict)  # path -> tuple of node ints / SAME / TOKENS / CLASSES
    layer_of: dict = field(default_factory=dict)  # path -> (layer name, class name)
    order: list = field(default_factory=list)  # weighted layer names, topological
    graph_keys: dict = field(default_factory=dict)  # path -> key (graph fallback)
    prefix: str = ""  # the model's name, when its layers' names start with it (keras.applications ConvNeXt)
    root: str = ""  # a model read with no graph: its name, which leads its variables' paths until a reload


def _channels(tensor):
    shape = getattr(tensor, "shape", None)
    if not shape:
        return None
    return shape[-1]


def _graph_nodes(model):
    """``[(operation, node)]`` of ``model``'s functional graph, in topological order (``[]`` if none)."""
    try:
        from keras.src.ops.function import make_node_key
    except ImportError:  # pragma: no cover - another Keras layout
        return []
    keys = getattr(model, "_nodes", None)
    if keys is None:
        return []
    found = []
    for op in model.operations:
        for i, node in enumerate(op._inbound_nodes):
            if make_node_key(op, i) in keys:
                found.append((op, node))
    return found


def _flat(tensors):
    out = []
    for t in tensors if isinstance(tensors, (list, tuple)) else [tensors]:
        if isinstance(t, (list, tuple)):
            out.extend(_flat(t))
        elif isinstance(t, dict):
            out.extend(_flat(list(t.values())))
        else:
            out.append(t)
    return out


def describe_model(model):
    """The :class:`_Structure` of ``model`` (functional: from its graph; otherwise every
    variable of the model is read as one layer with no graph inside)."""
    dims = Dimensions()
    s = _Structure(dims)
    tensor_dim, made_by = {}, {}

    def dim_of(tensor):
        key = id(tensor)
        if key not in tensor_dim:
            tensor_dim[key] = dims.new(_channels(tensor))
        return tensor_dim[key]

    graph = _graph_nodes(model)
    if not graph:
        _opaque(s, model, None, None, model.name)
        s.order.append(model.name)
        s.root = model.name
        return s
    for op, node in graph:
        inputs = [t for t in _flat(node.input_tensors) if hasattr(t, "shape")]
        outputs = [t for t in _flat(node.output_tensors) if hasattr(t, "shape")]
        in_dims = [dim_of(t) for t in inputs]
        out_dims = [dim_of(t) for t in outputs]
        kind = type(op).__name__
        made_by.update((id(t), (op.name, kind)) for t in outputs)
        weights = _own_weights(op)
        if weights:
            s.order.append(op.name)
            for v in weights:
                s.layer_of[v.path] = (op.name, kind)
        i = in_dims[0] if in_dims else None
        o = out_dims[0] if out_dims else None
        if not weights:
            _carry(dims, op, kind, inputs, outputs, in_dims, out_dims)
            continue
        if kind in _NORMS and getattr(op, "axis", -1) in (-1, [-1], len(inputs[0].shape) - 1):
            dims.union(i, o)
            for v in weights:
                s.roles[v.path] = (i,) if len(v.shape) == 1 else _aside(v, dims, i)
        elif kind in _CONVS and getattr(op, "groups", 1) == 1:
            for v in weights:
                if v.name == "kernel" or v.path.endswith("/kernel"):
                    s.roles[v.path] = (SAME,) * (len(v.shape) - 2) + (i, o)
                else:
                    s.roles[v.path] = (o,)
        elif kind in _DEPTHWISE | _SEPARABLE:
            multiplier = getattr(op, "depth_multiplier", 1)
            inner = i if multiplier == 1 else dims.new(dims.size[i] * multiplier if dims.size[i] else None)
            if kind in _DEPTHWISE and multiplier == 1:
                dims.union(i, o)
            for v in weights:
                name = v.path.rsplit("/", 1)[-1]
                if name in ("kernel", "depthwise_kernel"):
                    s.roles[v.path] = (SAME,) * (len(v.shape) - 2) + (i, SAME)
                elif name == "pointwise_kernel":
                    s.roles[v.path] = (SAME,) * (len(v.shape) - 2) + (inner, o)
                else:
                    s.roles[v.path] = (o,)
        else:
            _opaque(s, op, i, o, op.name, weights)
    for t in _flat(model.outputs):  # the classes: only the last layer's variables have them
        root = dims.find(dim_of(t))
        holders = {
            s.layer_of[p][0]
            for p, r in s.roles.items()
            if any(isinstance(x, int) and dims.find(x) == root for x in r)
        }
        if len(holders) == 1 and made_by.get(id(t)) in {(name, kind) for name in holders for kind in _CONVS}:
            for p, r in s.roles.items():
                s.roles[p] = tuple(CLASSES if isinstance(x, int) and dims.find(x) == root else x for x in r)
    _graph_keys(s, graph)
    prefix = f"{model.name}_"
    if sum(name.startswith(prefix) for name in s.order) * 2 > len(s.order):
        s.prefix = prefix
    return s


def _own_weights(op):
    seen, out = set(), []
    for v in getattr(op, "weights", ()):
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _aside(v, dims, channel):
    return tuple(channel if n == dims.size[channel] else SAME for n in v.shape)


def _carry(dims, op, kind, inputs, outputs, in_dims, out_dims):
    """How a layer without variables passes its channels on."""
    if not out_dims:
        return
    o = out_dims[0]
    if kind in _MERGES and len(in_dims) >= 2:
        for i, t in zip(in_dims, inputs, strict=True):
            if _channels(t) == dims.size[o]:
                dims.union(i, o)
        return
    if kind in ("Concatenate", "concatenate") and len(in_dims) >= 2:
        axis = getattr(op, "axis", -1)
        rank = len(outputs[0].shape)
        if axis in (-1, rank - 1):
            dims.parts[dims.find(o)] = list(in_dims)
        return
    if kind == "Flatten" and len(in_dims) == 1 and len(inputs[0].shape) >= 3:
        spatial = inputs[0].shape[1:-1]
        if all(n is not None for n in spatial):
            dims.parts[dims.find(o)] = [in_dims[0]] * int(np.prod(spatial))
        return
    if len(in_dims) == 1 and len(out_dims) == 1 and _channels(inputs[0]) == dims.size[o]:
        dims.union(in_dims[0], o)


def _opaque(s, layer, i, o, name, weights=None):
    """A layer with no graph inside: axes tied by size (see the module docstring)."""
    weights = _own_weights(layer) if weights is None else weights
    dims, local = s.dims, {}
    for v in weights:
        s.layer_of.setdefault(v.path, (name, type(layer).__name__))
        roles = []
        for n in v.shape:
            if o is not None and n == s.dims.size[o]:
                if i is not None and n == s.dims.size[i]:
                    dims.union(i, o)  # a layer that keeps the width (a transformer encoder): one dimension
                roles.append(o)
            elif i is not None and n == s.dims.size[i]:
                roles.append(i)
            elif "position" in v.path.rsplit("/", 1)[-1]:
                roles.append(TOKENS)
            else:
                roles.append(local.setdefault(n, dims.new(n)))
        s.roles[v.path] = tuple(roles)


# -- keys: which teacher variable each student variable maps to -------------------------------------

_BLOCK = re.compile(r"(?:^|(?<=[_/]))(?:block|blocks|layer|layers)_?(?P<idx>\d+)(?P<letter>[a-z])?(?=[_/]|$)")


def _snake(name):
    """Keras's automatic layer name of a class (``DepthwiseConv2D`` -> ``depthwise_conv2d``)."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def _automatic(layer_name, kind):
    return re.fullmatch(re.escape(_snake(kind)) + r"(?:_\d+)?", layer_name) is not None


def _name_key(path):
    """``(stage, block, component, label)`` from a path naming its block, else ``None``."""
    found = list(_BLOCK.finditer(path))
    if not found:
        return None
    m = found[-1]
    if m["letter"]:  # EfficientNet: block2b -> stage "block2", block 1
        stage = path[: m.start("letter")]
        block = ord(m["letter"]) - ord("a")
    else:
        stage = path[: m.start("idx")]
        block = int(m["idx"])
    return stage, block, path[m.end() :], path[: m.end()]


def model_keys(s, use_graph):
    """``{path: (stage, block, component)}`` and ``{(stage, block): label}``."""
    if use_graph:
        return dict(s.graph_keys), {}
    ranks, auto_rank, keys, labels = {}, {}, {}, {}
    for name in s.order:
        kind = next(k for p, (n, k) in s.layer_of.items() if n == name)
        if _automatic(name, kind):
            auto_rank[name] = ranks.setdefault(kind, 0)
            ranks[kind] += 1
    for path, (name, kind) in s.layer_of.items():
        if s.prefix:  # "teacher_stage_0_block_1_..." and "student_stage_0_block_1_..." are one component
            path_key = re.sub(rf"(^|/){re.escape(s.prefix)}", r"\1", path)
        else:
            path_key = path
        if s.root and path_key.startswith(f"{s.root}/"):  # a fresh subclassed model's paths name it
            path_key = path_key[len(s.root) + 1 :]
        path_key = re.sub(r"/variable_\d+$", "/variable", path_key)  # an unnamed variable's counter
        if name in auto_rank:
            rest = path[len(name) :] if path.startswith(name) else "/" + path.rsplit("/", 1)[-1]
            keys[path] = ("", None, f"{kind}#{auto_rank[name]}{rest}")
            continue
        named = _name_key(path_key)
        if named is None:
            keys[path] = ("", None, path_key)
        else:
            stage, block, component, label = named
            keys[path] = (stage, block, component)
            labels[(stage, block)] = label
    return keys, labels


def _graph_keys(s, graph):
    """Keys from the graph (blocks end at residual ``Add`` merges); see the module docstring."""
    producer = {}
    for n, (_op, node) in enumerate(graph):
        for t in _flat(node.output_tensors):
            producer[id(t)] = n
    blocks = []  # (start, end) positions, end inclusive
    for n, (op, node) in enumerate(graph):
        if type(op).__name__ in ("Add", "add"):
            sources = [producer.get(id(t), -1) for t in _flat(node.input_tensors)]
            start = min(sources) + 1
            if blocks and start <= blocks[-1][1]:
                start = blocks[-1][1] + 1
            blocks.append((start, n))
    weighted = {name for name in s.order}
    layouts = []
    for start, end in blocks:
        layouts.append(
            tuple((type(op).__name__, _rank(op)) for op, _ in graph[start : end + 1] if op.name in weighted)
        )

    def gap_before(b):  # weighted layers between block b - 1 and block b
        return b > 0 and any(graph[k][0].name in weighted for k in range(blocks[b - 1][1] + 1, blocks[b][0]))

    runs = []  # runs of consecutive blocks of one layout
    for b, layout in enumerate(layouts):
        if b == 0 or gap_before(b) or layout != layouts[b - 1]:
            runs.append([b])
        else:
            runs[-1].append(b)
    stages = []  # a lone block of its own layout (a projection block) opens the next run's stage
    for run in runs:
        if stages and len(stages[-1]) == 1 and not gap_before(run[0]):
            stages[-1].extend(run)
        else:
            stages.append(list(run))
    stage_of = [0] * len(blocks)
    for k, members in enumerate(stages):
        for b in members:
            stage_of[b] = k
    stage = len(stages) - 1
    segment_of = {}
    for b, (start, end) in enumerate(blocks):
        for n in range(start, end + 1):
            segment_of[n] = (f"stage{stage_of[b]}", b - stage_of.index(stage_of[b]))
    counters = {}
    last_stage = -1
    for n, (op, _node) in enumerate(graph):
        if op.name not in weighted:
            continue
        if n in segment_of:
            group, block = segment_of[n]
            last_stage = int(group[len("stage") :])
        else:
            group = "before" if last_stage < 0 else f"after{last_stage}" if last_stage < stage else "after"
            block = None
        ident = (type(op).__name__, _rank(op))
        count = counters.setdefault((group, block, ident), 0)
        counters[(group, block, ident)] = count + 1
        for v in _own_weights(op):
            name = v.path.rsplit("/", 1)[-1]
            s.graph_keys[v.path] = (group, block, f"{ident[0]}/{ident[1]}#{count}/{name}")
    if not blocks:
        s.graph_keys.clear()


def _rank(op):
    kernel = [v for v in getattr(op, "weights", ()) if "kernel" in v.path.rsplit("/", 1)[-1]]
    return len(kernel[0].shape) if kernel else 0


def mostly_automatic(s):
    kinds = {}
    for name, kind in s.layer_of.values():
        kinds[name] = kind
    auto = sum(_automatic(n, k) for n, k in kinds.items())
    return bool(kinds) and auto * 2 > len(kinds)
