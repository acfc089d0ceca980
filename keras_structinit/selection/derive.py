"""A selection plan derived from the two models' structure, for models of no hand-written family.

:mod:`.families` describes eleven families by regular expressions. Every other
pair of a larger and a smaller model of one architecture (keras.applications'
ResNet101 -> ResNet50, EfficientNetB3 -> B0, a KerasHub DINOV2, a user's own
builder called at two sizes) gets its plan from the models themselves, in the
paper's three steps (Xu et al., "Initializing Models with Larger Ones", Sec. 3):

1. **Dimensions** (what consistency needs, Sec. 3.3): a union-find over the
   channel axis of every tensor of the functional graph (:class:`~.structure.Dimensions`).
   ``Add``/``Multiply``/... join their inputs' and output's channels; a
   normalization, an activation, a pooling or a depthwise convolution with
   multiplier 1 carries its input's channel to its output; a ``Conv``/``Dense``
   kernel's axis -2 is its input's channel and axis -1 (and the bias) its
   output's. A ``Concatenate`` along the channels makes a *composite*
   dimension, its parts in order; a ``Flatten`` one of ``H x W`` copies of its
   input's channels. A layer with no graph inside (a subclassed layer such as
   KerasHub's ``DINOV2Encoder``) ties an axis to its input's or output's
   channels when the size matches (joining the two when they have one size),
   an axis of a variable named ``position``
   must keep its size, and every other axis of one size inside it is one
   dimension (tying more axes than needed never breaks consistency).
   The model output's channel is the *classes* when only the last layer's
   variables have it and that layer is a ``Dense`` or a convolution.
2. **Layer selection and component mapping**: a variable path names its block
   when a component reads ``block``/``layer`` with an index (``conv4_block7_1_conv``
   -> stage ``conv4_``, block 7, component ``_1_conv``; ``block2b_expand_conv``
   -> stage ``block2``, block ``b``; ``encoder/layers_3/norm1/gamma``); a student
   stage of N blocks takes the teacher's blocks of :func:`~.indices.layer_indices`
   (first N by default), and a variable maps to the teacher variable of the
   same component in the mapped block; other variables map by their path.
   Layers with Keras's automatic names (``conv2d_13``) are keyed by their class and
   their rank among automatic layers of that class; when most layers are
   automatic (a user's builder), the graph gives the blocks instead
   (:func:`~.structure._graph_keys`): a block ends at a residual ``Add`` and starts after
   the layer that feeds its shortcut, consecutive blocks of one layout are a
   stage (a block of another layout, such as a projection block, opens one),
   and components are matched by (layer type, kernel rank, rank in the block).
3. **Element selection**: one index set per student dimension (and teacher
   size), from :func:`~.indices.element_indices`, so tensors that share a
   dimension share indices by construction. A composite (concatenated)
   dimension takes each part's indices, shifted by the part's offset in the
   teacher, in the parts' order: it stays consistent with every part. The
   classifier (:mod:`.classifier`) keeps the student's initialization, as in the
   paper, unless ``copy_head=True``: then its classes axis is kept whole when the
   sizes agree, and otherwise keeps the student's initialization too ("head with
   other classes"); ``head_classes`` selects its rows.

Each axis is selected on its own (an attention's heads axis like any other,
as ``heads="select"`` does for the families). What is not derived: fused
``qkv`` rows (``heads="fused"``), KerasHub's stored layouts that differ from
the built ones, and resized position embeddings; those stay with the
hand-written families.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from keras_structinit.selection.classifier import other_classes
from keras_structinit.selection.families import SAME, TOKENS
from keras_structinit.selection.indices import VALUE_METHODS, layer_indices
from keras_structinit.selection.planning import Plan, _by_values, _entry, _role_indices, _skipped
from keras_structinit.selection.structure import CLASSES, describe_model, model_keys, mostly_automatic

__all__ = ["Derived", "derive_plan", "rule_text"]

# -- the plan -----------------------------------------------------------------------------------------


@dataclass
class Derived:
    """What :func:`derive_plan` adds to a :class:`~.planning.Plan`: why variables keep their
    initialization, the teacher blocks left out, and each entry's rule per axis."""

    kept: dict = field(default_factory=dict)  # student path -> reason
    left_out: list = field(default_factory=list)  # teacher block labels
    rules: dict = field(default_factory=dict)  # student path -> tuple of per-axis rule texts


def rule_text(chosen, t, element_selection):
    """How one axis was selected, in words: ``"whole"``, ``"uniform 0:t:step"``, ..."""
    if chosen is None:
        return "whole"
    chosen = np.asarray(chosen)
    s = len(chosen)
    if element_selection == "uniform":
        if t % s == 0 and np.array_equal(chosen, np.arange(s) * (t // s)):
            return f"uniform 0:{t}:{t // s}"
        if np.array_equal(chosen, np.round(np.linspace(0, t - 1, s)).astype(np.int64)):
            return f"uniform round(linspace(0, {t - 1}, {s}))"
    if np.array_equal(chosen, np.arange(s)):
        return f"first {s} of {t}"
    return f"{s} of {t}: {chosen.tolist() if s <= 8 else chosen[:8].tolist() + ['...']}"


def derive_plan(
    teacher,
    student,
    *,
    layer_selection="first_n",
    element_selection="uniform",
    heads="flatten",
    skip=(),
    seed=0,
    strict=True,
    head_classes=None,
    teacher_values=None,
    resize_position_embeddings=False,
):
    """The :class:`~.planning.Plan` of ``teacher`` -> ``student`` (two built Keras models), derived
    from their structure; ``plan.derived`` is a :class:`Derived`. Options as in
    :func:`~.planning.plan_selection`; ``head_classes``: the teacher's output rows (a list of
    ints, one per student class) for a classifier of other classes.

    ``ValueError`` (one line) naming the first student layer that cannot map when ``strict``.
    """
    if heads == "fused":
        raise ValueError(
            "`heads`='fused' (the authors' fused qkv rows) needs a hand-written family; "
            "the derived plan selects each axis on its own (as heads='select')."
        )
    if resize_position_embeddings:
        raise ValueError(
            "`resize_position_embeddings` needs a hand-written family (ViT); the derived "
            "plan keeps position embeddings at their size."
        )
    t_s, s_s = describe_model(teacher), describe_model(student)
    use_graph = (
        mostly_automatic(t_s) and mostly_automatic(s_s) and bool(t_s.graph_keys) and bool(s_s.graph_keys)
    )
    t_keys, t_labels = model_keys(t_s, use_graph)
    s_keys, _ = model_keys(s_s, use_graph)
    t_shapes = {v.path: tuple(v.shape) for v in teacher.weights}
    s_shapes = {v.path: tuple(v.shape) for v in student.weights}
    plan = Plan("derived")
    info = Derived()
    plan.derived = info
    _select_blocks(plan, s_keys, t_keys, t_labels, layer_selection)
    pending, role_sizes, parts_needed, first_bad = _map_components(
        plan, (s_s, t_s), (s_keys, t_keys), (s_shapes, t_shapes), skip, head_classes
    )
    if strict and first_bad is not None:
        path, why = first_bad
        layer = s_s.layer_of.get(path, (path.rsplit("/", 1)[0],))[0]
        raise ValueError(
            f"Cannot derive a selection plan: student layer {layer!r} cannot map ({why}; "
            f"variable {path!r}); pass `strict=False` to keep such variables at their "
            "initialization."
        )
    rng = np.random.default_rng(seed)
    role_indices = _dimension_indices(role_sizes, parts_needed, element_selection, head_classes, rng)
    plan.entries = _entries(pending, role_indices, s_s.dims, head_classes, rng)
    if element_selection in VALUE_METHODS:
        plan.entries = [
            _by_values(e, element_selection, teacher_values(e.teacher_path), s_shapes[e.student_path])
            for e in plan.entries
        ]
    for e in plan.entries:
        info.rules[e.student_path] = tuple(
            "magnitude" if e.elements is not None else rule_text(ix, t, element_selection)
            for ix, t in zip(e.indices, e.teacher_shape, strict=True)
        )
    return plan


def _select_blocks(plan, s_keys, t_keys, t_labels, layer_selection):
    """Layer selection, per stage: fills ``plan.block_map`` (``{stage: {student block: teacher
    block}}``, :func:`~.indices.layer_indices`) and ``plan.derived.left_out``."""

    def blocks(keys, stage):
        return sorted({k[1] for k in keys.values() if k[0] == stage and k[1] is not None})

    for stage in sorted({k[0] for k in s_keys.values() if k[1] is not None}):
        s_blocks, t_blocks = blocks(s_keys, stage), blocks(t_keys, stage)
        if not t_blocks:
            continue
        if len(s_blocks) > len(t_blocks):
            raise ValueError(
                f"The student has {len(s_blocks)} blocks in stage {stage!r}, the teacher "
                f"{len(t_blocks)}: selection only shrinks."
            )
        chosen = layer_indices(
            len(t_blocks), len(s_blocks), layer_selection, what=f"the blocks of stage {stage!r}"
        )
        plan.block_map[stage] = {s: t_blocks[i] for s, i in zip(s_blocks, chosen, strict=True)}
        used = set(plan.block_map[stage].values())
        plan.derived.left_out += [
            t_labels.get((stage, b), f"{stage} block {b}") for b in t_blocks if b not in used
        ]


def _map_components(plan, described, keys, shapes, skip, head_classes):
    """Component mapping: each student variable's teacher variable in the mapped block, checked axis
    by axis (:func:`_axes`). ``described``, ``keys`` and ``shapes`` are ``(student's, teacher's)``.

    Fills ``plan.skipped``, ``plan.unmatched`` and ``plan.derived.kept``; returns ``(pending,
    role_sizes, parts_needed, first_bad)``: one ``(path, teacher path, shape, teacher shape, roles)``
    per matched variable, each dimension's sizes, the composite dimensions' parts, and the first
    variable that cannot map with why (or ``None``).
    """
    (s_s, t_s), (s_keys, t_keys), (s_shapes, t_shapes) = described, keys, shapes
    info = plan.derived
    by_key = {k: p for p, k in t_keys.items()}
    pending, role_sizes, parts_needed = [], {}, {}
    first_bad = None
    for path, s_shape in s_shapes.items():
        own = path[len(s_s.root) + 1 :] if s_s.root and path.startswith(f"{s_s.root}/") else path
        if _skipped(path, own, skip):  # a fresh subclassed model's paths lead with its name
            plan.skipped.append(path)
            info.kept[path] = f"skip={tuple(skip)}"
            continue
        key = s_keys.get(path)
        roles = s_s.roles.get(path)
        if key is None or roles is None:
            info.kept[path] = "not placed in the student's graph"
            plan.unmatched.append(path)
            first_bad = first_bad or (path, "it is not placed in the student's graph")
            continue
        stage, block, component = key
        t_block = block if block is None else plan.block_map.get(stage, {}).get(block)
        t_path = by_key.get((stage, t_block, component))
        if t_path is None:
            info.kept[path] = "no counterpart in the teacher"
            plan.unmatched.append(path)
            first_bad = first_bad or (path, "the teacher has no counterpart")
            continue
        t_shape = t_shapes[t_path]
        t_roles = t_s.roles.get(t_path, ())
        problem = _axes(
            path, s_shape, t_shape, roles, t_roles, s_s.dims, t_s.dims, head_classes, role_sizes, parts_needed
        )
        if problem:
            info.kept[path] = problem
            plan.unmatched.append(path)
            if not problem.startswith("head with other classes"):
                first_bad = first_bad or (path, f"{problem} (teacher {t_path!r})")
            continue
        pending.append((path, t_path, s_shape, t_shape, roles))
    return pending, role_sizes, parts_needed, first_bad


def _dimension_indices(role_sizes, parts_needed, element_selection, head_classes, rng):
    """Element selection: one index set per student dimension and teacher size; a composite
    (concatenated) dimension takes its parts' sets, each shifted by its part's teacher offset;
    ``head_classes`` selects the classes."""
    role_indices = _role_indices(role_sizes, "select", element_selection, rng)
    for role, (parts, offsets) in parts_needed.items():
        chosen = [role_indices.get(p) for p in parts]
        if any(c is None for c in chosen):
            role_indices[role] = None
        else:
            role_indices[role] = np.concatenate([c + off for c, off in zip(chosen, offsets, strict=True)])
    if head_classes is not None:
        role_indices[CLASSES] = np.asarray(head_classes, dtype=np.int64)
    return role_indices


def _entries(pending, role_indices, dims, head_classes, rng):
    """Each matched variable's :class:`~.planning.Entry`, its axes named by their dimension (and
    teacher size); the classes axis takes ``head_classes`` when given."""
    entries = []
    for path, t_path, s_shape, t_shape, roles in pending:
        names = tuple(_role_name(r, t, dims, head_classes) for r, t in zip(roles, t_shape, strict=True))
        entry = _entry(role_indices, "select", rng, s_shape, path, t_path, names, (), t_shape)
        if CLASSES in names and head_classes is not None:
            entry.indices = [
                np.asarray(head_classes, dtype=np.int64) if n == CLASSES else ix
                for n, ix in zip(names, entry.indices, strict=True)
            ]
        entries.append(entry)
    return entries


def _role_name(role, t, dims, head_classes=None):
    if role == CLASSES and head_classes is None:
        return SAME  # the same classes: kept whole
    if isinstance(role, int):
        return f"d{dims.find(role)}:{t}"
    return role


def _axes(path, s_shape, t_shape, roles, t_roles, s_dims, t_dims, head_classes, role_sizes, parts_needed):
    """Checks one student variable against its teacher variable, axis by axis; records each
    dimension's sizes. Returns a reason it cannot map, or ``""``."""
    if len(s_shape) != len(t_shape) or len(roles) != len(s_shape):
        return f"shape {s_shape} against the teacher's {t_shape}"
    for axis, (r, t, s) in enumerate(zip(roles, t_shape, s_shape, strict=True)):
        what = f"axis {axis} of {path!r}"
        if r == CLASSES:
            if t != s and head_classes is None:
                return other_classes(t, s)
            if t != s or head_classes is not None:
                head = np.asarray(head_classes)
                if head.ndim != 1 or len(head) != s or head.min() < 0 or head.max() >= t:
                    raise ValueError(
                        f"`head_classes` must list {s} teacher classes in [0, {t}). "
                        f"Received: {head_classes!r}"
                    )
            continue
        if r in (SAME, TOKENS) or (axis < len(t_roles) and t_roles[axis] in (SAME, TOKENS) and t == s):
            if t != s:
                return f"{what} must keep its size: teacher {t}, student {s}"
            continue
        if s > t:
            return f"{what} is larger in the student ({s} > {t})"
        root = s_dims.find(r)
        name = f"d{root}:{t}"
        if root in s_dims.parts:
            t_root = (
                t_dims.find(t_roles[axis]) if axis < len(t_roles) and isinstance(t_roles[axis], int) else None
            )
            s_parts = s_dims.parts[root]
            t_parts = t_dims.parts.get(t_root) if t_root is not None else None
            if t_parts is None or len(t_parts) != len(s_parts):
                return (
                    f"{what} concatenates {len(s_parts)} parts, the teacher's "
                    f"{'none' if t_parts is None else len(t_parts)}"
                )
            t_sizes = [t_dims.size[p] for p in t_parts]
            offsets = np.concatenate([[0], np.cumsum(t_sizes)[:-1]]).astype(np.int64)
            names = []
            for sp, tsize in zip(s_parts, t_sizes, strict=True):
                pr, ss = s_dims.find(sp), s_dims.size[sp]
                pname = f"d{pr}:{tsize}"
                role_sizes.setdefault(pname, (tsize, ss, what))
                names.append(pname)
            parts_needed[name] = (names, offsets)
            continue
        if role_sizes.setdefault(name, (t, s, what))[:2] != (t, s):
            t0, s0, first = role_sizes[name]
            return f"{what} is {t} -> {s} but its dimension is {t0} -> {s0} along {first}"
    return ""
