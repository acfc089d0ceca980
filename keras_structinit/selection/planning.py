"""The selection plan: for every student variable, its teacher variable and the indices per axis (NumPy).

:func:`plan_selection` works on ``{path: shape}`` dictionaries, so it needs no
Keras and no weights; :func:`take` applies one entry to a teacher array.
Steps, one function each, in one direction: find the families and describe
every variable once (:func:`_describe`: its block and the role of each axis);
*layer selection* maps each student block to a teacher block of the same stage
(:func:`_map_blocks`, :func:`~.indices.layer_indices`); *component mapping*
pairs a student variable with the teacher variable of the same component key
in the mapped block (:func:`_match`, :attr:`~.families.VariableRole.key`, also
across families of one kind); *element selection* draws one index set per
dimension role (:func:`_role_indices`, :func:`~.indices.element_indices`), so
that tensors sharing a dimension share indices (``random_inconsistent`` draws
per tensor), and :func:`_entry` turns them into each variable's indices (Sec. 3
of Xu et al.).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from keras_structinit.selection.families import FAMILIES, SAME, TOKENS
from keras_structinit.selection.indices import (
    ELEMENT_METHODS,
    LAYER_METHODS,
    VALUE_METHODS,
    element_indices,
    l1_indices,
    layer_indices,
    magnitude_elements,
)
from keras_structinit.selection.resample import grid_layout, resize_tokens
from keras_structinit.utils import validation

__all__ = [
    "HEAD_MODES",
    "Entry",
    "NoFamilyError",
    "Plan",
    "check_skip",
    "detect_family",
    "plan_selection",
    "take",
]

HEAD_MODES = ("flatten", "fused", "select")
#: The attention projections in the order of a fused ``qkv`` axis (timm's ``(3 D, D)`` Linear).
QKV = ("query", "key", "value")


@dataclass
class Entry:
    """One student variable: where it comes from and which teacher indices each axis keeps.

    ``indices[a]`` is ``None`` when axis ``a`` is kept whole (equal sizes).
    ``merge`` lists pairs of adjacent axes selected as one flattened axis
    (attention heads x head_dim with ``heads="flatten"`` or ``"fused"``); their index array
    sits at the first axis of the pair, ``None`` at the second.
    ``resize`` is ``(axis, student_tokens)`` when a position embedding's
    token axis is resized (``resize_position_embeddings=True``), else ``()``.
    ``teacher_shape`` is the teacher variable's shape with leading size-1 axes
    aligned to the student's rank. ``elements`` (``element_selection="magnitude"``
    only) holds the flat row-major indices of the teacher elements kept, in order
    (after the resize, if any); ``indices`` is then all ``None``.
    """

    student_path: str
    teacher_path: str
    roles: tuple
    indices: list
    merge: tuple = ()
    resize: tuple = ()
    teacher_shape: tuple = ()
    elements: object = None


@dataclass
class Plan:
    """Every :class:`Entry`, what was skipped, what found no teacher variable, and the block map.

    ``classifier`` lists the student's classifier variables (kept at their initialization unless
    ``copy_head``, then in ``skipped`` too)."""

    family: str
    entries: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    classifier: list = field(default_factory=list)
    unmatched: list = field(default_factory=list)
    block_map: dict = field(default_factory=dict)
    role_indices: dict = field(default_factory=dict)
    derived: object = None  # a derive.Derived for a plan derived from the two models


class NoFamilyError(ValueError):
    """A model of no hand-written family: :func:`~.select.select_weights` then derives the plan from
    the two models (:mod:`.derive`), unless the closest family places at least half of the model's
    variables (``placed``): a family's model with a few variables of its own (a user's head) is
    still refused, naming them."""

    placed = 0.0


def _skipped(path, key, skip):
    return any(p == s or p.startswith(s + "/") for s in skip for p in (path, key))


def check_skip(skip, paths):
    """``ValueError`` for an entry of ``skip`` that matches none of ``paths`` (the student's variable
    paths) nor their families' component keys, naming the layers it could have meant."""
    paths = [*paths, *(p.split("/", 1)[1] for p in paths if p.count("/") > 1)]  # a model's name leading
    missing = [s for s in skip if not any(_skipped(p, p, (s,)) for p in paths)]
    if not missing:
        return
    keys = {r.key for f in FAMILIES.values() for r in map(f.describe, paths) if r is not None and r.key}
    for s in missing:
        if any(_skipped(k, k, (s,)) for k in keys):
            continue
        layers = sorted({p.rsplit("/", n)[0] for p in [*paths, *keys] for n in range(1, p.count("/") + 1)})
        close = difflib.get_close_matches(s, layers, n=5, cutoff=0.6)
        hint = f"did you mean {', '.join(map(repr, close))}?" if close else f"its layers include {layers[:8]}"
        raise ValueError(
            f"`skip=(...)` entry {s!r} matches no layer of the student; {hint} (each entry is a prefix of "
            "the student's variable paths: 'head' matches 'head/kernel', not 'head_norm/gamma')"
        )


def detect_family(paths, what="model"):
    """The name of the first family whose rules describe every one of ``paths`` (a model's variables).

    ``ValueError`` naming, for the closest family, the variables it cannot place.
    """
    best = None
    for name, family in FAMILIES.items():
        missing = [p for p in paths if family.describe(p) is None]
        if not missing:
            return name
        if best is None or len(missing) < len(best[1]):
            best = (name, missing)
    name, missing = best
    placed = 1 - len(missing) / max(len(paths), 1)
    error = NoFamilyError(
        f"The {what} is not of one supported family (families: {sorted(FAMILIES)}); "
        f"closest: {name!r}, which cannot place {len(missing)} variable(s), e.g. {missing[:3]}."
        + (
            " Skip them (skip=...), or pass family='derived' to derive the plan from the two models."
            if placed >= 0.5
            else ""
        )
    )
    error.placed = placed  # the closest family's share: a family model with a few extras when >= 0.5
    raise error


def _families(family, teacher_paths, student_paths):
    if family != "auto":
        validation.one_of(family, "family", tuple(FAMILIES))
        return FAMILIES[family], FAMILIES[family]
    teacher = FAMILIES[detect_family(teacher_paths, "teacher")]
    student = FAMILIES[detect_family(student_paths, "student")]
    if teacher.kind != student.kind:
        raise ValueError(
            f"The teacher and the student are not of one supported family: the teacher is {teacher.name!r} "
            f"({teacher.description}), the student {student.name!r} ({student.description})."
        )
    return teacher, student


def _resolve_last(role, groups):
    """``width_last`` is the width of the last stage (the head reads it)."""
    if role == "width_last" and groups:
        return f"width{max(groups)}"
    return role


def plan_selection(
    teacher_shapes,
    student_shapes,
    *,
    family="auto",
    layer_selection="first_n",
    element_selection="uniform",
    heads="flatten",
    skip=(),
    seed=0,
    strict=True,
    resize_position_embeddings=False,
    teacher_values=None,
    classifier=None,
    copy_head=False,
):
    """Plans weight selection from ``teacher_shapes`` into ``student_shapes`` (``{path: shape}``).

    Args:
        family: a name in :data:`~.families.FAMILIES` or ``"auto"``.
        layer_selection: one of :data:`~.indices.LAYER_METHODS`, per stage.
        element_selection: one of :data:`~.indices.ELEMENT_METHODS`. ``"l1"`` and ``"magnitude"``
            (Table 7's pruning baselines) choose per tensor from ``teacher_values``.
        heads: ``"flatten"`` selects over the flattened heads x head_dim axis of attention kernels, one
            index set for query, key, value and the output projection's input; ``"fused"`` selects the
            query, key and value rows as the authors' code does on timm's fused ``qkv`` weight, uniformly
            over its ``3 D`` rows (``element_selection="uniform"`` only), the output projection's input as
            ``"flatten"``; the two are equal when the widths divide (384 -> 192), not otherwise
            (384 -> 320: 32 of the 320 query rows and 32 value rows differ). Both need only the flattened
            width ``heads x head_dim`` to shrink, as the authors' code (which sees a ``(3 D, D)`` matrix)
            does: the student may have more or fewer heads and a larger head_dim (96 wide with 4 heads of
            24 -> 64 wide with 2 heads of 32). ``"select"`` keeps whole heads (chosen uniformly) and
            selects head_dim within them, so neither may grow.
        skip: path prefixes left at the student's own initialization (``"head"`` matches ``head/kernel``,
            not ``head_norm/gamma``), matched against the variable paths and the family's component keys;
            besides the classifier. Variables they match need not belong to the family (a user's own head
            around a backbone). An entry that matches nothing is a ``ValueError`` naming the layers it may
            mean.
        seed: seed of the random element methods.
        strict: raise when a student variable outside ``skip`` has no teacher variable; otherwise list it
            in ``Plan.unmatched``.
        resize_position_embeddings: when the token counts differ (another image size), resize the
            teacher's position grid bilinearly to the student's and keep the class token
            (:mod:`~keras_structinit.selection.resample`; an extension, not in the paper). Otherwise a
            differing token count is an error.
        teacher_values: for ``element_selection="l1"`` or ``"magnitude"``: a function of a teacher
            variable's path returning its value (an array), called once per variable selected from.
        classifier: ``(teacher paths, student paths)``: each model's classifier variables
            (:func:`~.classifier.find_classifier` finds them in Keras models); ``None``: the family's own
            head (the variables of component ``head``).
        copy_head: select the student's classifier from the teacher's too; by default it keeps the
            student's initialization, as in the paper.

    Returns:
        A :class:`Plan`, with the student's classifier variables in ``Plan.classifier``.
    """
    _check_arguments(
        teacher_shapes,
        student_shapes,
        (layer_selection, element_selection, heads, skip, seed, strict, resize_position_embeddings),
        teacher_values,
        copy_head,
    )
    t_fam, s_fam, head, skip = _heads(family, teacher_shapes, student_shapes, skip, classifier, copy_head)
    plan = Plan(t_fam.name if t_fam is s_fam else f"{t_fam.name} -> {s_fam.name}", classifier=head)
    students, teachers = _describe(s_fam, student_shapes, skip), _describe(t_fam, teacher_shapes)
    plan.block_map = _map_blocks(students, teachers, layer_selection)
    pending, role_sizes = _match(
        plan, students, teachers, teacher_shapes, student_shapes, skip, resize_position_embeddings, heads
    )
    _check_matched(plan, strict)
    options = (heads, element_selection, seed, teacher_values)
    _select_elements(plan, pending, role_sizes, students, student_shapes, options)
    return plan


def _check_matched(plan, strict):
    """With ``strict``, a student variable with no teacher variable is an error."""
    if strict and plan.unmatched:
        raise ValueError(
            f"{len(plan.unmatched)} student variable(s) have no teacher variable, e.g. {plan.unmatched[:3]}; "
            "pass `strict=False` to leave them at their initialization, or `skip=(...)` to skip them."
        )


def _select_elements(plan, pending, role_sizes, students, student_shapes, options):
    """Element selection (Sec. 3 of Xu et al.): ``plan.role_indices``, one index set per role, and
    ``plan.entries``, each matched variable's :class:`Entry`, by value for ``"l1"``/``"magnitude"``."""
    heads, element_selection, seed, teacher_values = options
    rng = np.random.default_rng(seed)
    plan.role_indices = _role_indices(role_sizes, heads, element_selection, rng)
    plan.entries = [
        _entry(plan.role_indices, heads, rng, student_shapes[match[0]], *match, key=students[match[0]].key)
        for match in pending
    ]
    if element_selection in VALUE_METHODS:
        plan.entries = [
            _by_values(
                e, element_selection, teacher_values(e.teacher_path), tuple(student_shapes[e.student_path])
            )
            for e in plan.entries
        ]


def _heads(family, teacher_shapes, student_shapes, skip, classifier, copy_head):
    """``(teacher family, student family, the student's classifier paths, the skip with them)``.

    What ``skip`` names is left alone: it takes no part in finding the family either (a user's own
    head around a KerasHub backbone, say, is of no family), nor does a classifier left alone.
    """
    t_head, s_head = ((), ()) if classifier is None or copy_head else classifier
    t_fam, s_fam = _families(
        family,
        [p for p in teacher_shapes if not _skipped(p, p, skip) and p not in t_head],
        [p for p in student_shapes if not _skipped(p, p, skip) and p not in s_head],
    )
    if classifier is None:
        roles = {p: s_fam.describe(p) for p in student_shapes}
        head = [p for p, r in roles.items() if r is not None and r.key.split("/")[0] == "head"]
    else:
        head = [p for p in student_shapes if p in classifier[1]]
    return t_fam, s_fam, head, tuple(skip) + (() if copy_head else tuple(head))


def _check_arguments(teacher_shapes, student_shapes, options, teacher_values, copy_head):
    layer_selection, element_selection, heads, skip, seed, strict, resize_position_embeddings = options
    validation.one_of(layer_selection, "layer_selection", LAYER_METHODS)
    validation.one_of(element_selection, "element_selection", ELEMENT_METHODS)
    validation.one_of(heads, "heads", HEAD_MODES)
    if heads == "fused" and element_selection != "uniform":
        raise ValueError(
            "`heads`='fused' selects the fused qkv rows uniformly, as the authors' code: "
            "it needs element_selection='uniform'. "
            f"Received: element_selection={element_selection!r}"
        )
    validation.boolean(strict, "strict")
    validation.boolean(resize_position_embeddings, "resize_position_embeddings")
    validation.random_seed(seed, "seed")
    for shapes, name in ((teacher_shapes, "teacher_shapes"), (student_shapes, "student_shapes")):
        if not isinstance(shapes, dict):
            raise TypeError(
                f"`{name}` must be a dict {{variable path: shape}}. "
                f"Received: {name} of type {type(shapes).__name__}"
            )
    if not isinstance(skip, (tuple, list)) or not all(isinstance(s, str) for s in skip):
        raise TypeError(f"`skip` must be a tuple of path prefixes (strings). Received: skip={skip!r}")
    validation.boolean(copy_head, "copy_head")
    check_skip(skip, student_shapes)
    if element_selection in VALUE_METHODS and not callable(teacher_values):
        raise TypeError(
            f"`element_selection`={element_selection!r} reads the teacher's values: pass "
            "`teacher_values`, a function of a teacher variable's path returning its value. "
            f"Received: teacher_values={teacher_values!r}"
        )


def _describe(family, shapes, skip=None):
    """``{path: VariableRole or None}``: each variable's place in ``family``, described once.

    With ``skip`` (the student), a variable the family cannot place must be skipped (it is
    ``None`` then); without (the teacher), it is simply ``None``.
    """
    roles = {}
    for path in shapes:
        role = family.describe(path)
        if role is None and skip is not None and not _skipped(path, path, skip):
            raise ValueError(f"Student variable {path!r} is not part of the {family.name!r} family.")
        roles[path] = role
    return roles


def _map_blocks(students, teachers, layer_selection):
    """Layer selection, per stage: ``{stage: {student block: teacher block}}``."""
    block_map = {}

    def blocks(roles, group):
        return sorted(
            {r.block for r in roles.values() if r is not None and r.block is not None and r.group == group}
        )

    for group in sorted(
        {r.group for r in students.values() if r is not None and r.block is not None}, key=str
    ):
        s_blocks, t_blocks = blocks(students, group), blocks(teachers, group)
        where = "the blocks" if group is None else f"the blocks of stage {group}"
        if not t_blocks:
            raise ValueError(f"The teacher has no blocks where the student has {where}.")
        chosen = layer_indices(len(t_blocks), len(s_blocks), layer_selection, what=where)
        block_map[group] = {s: t_blocks[i] for s, i in zip(s_blocks, chosen, strict=True)}
    return block_map


def _match(
    plan,
    students,
    teachers,
    teacher_shapes,
    student_shapes,
    skip,
    resize_position_embeddings,
    heads="flatten",
):
    """Component mapping: each student variable's teacher variable and axis roles, checked.

    Fills ``plan.skipped`` and ``plan.unmatched``; returns ``(pending, role_sizes)``: one
    ``(student path, teacher path, roles, resize, teacher shape)`` per matched variable, and
    ``{role: (teacher size, student size, where first seen)}``.
    """
    groups = {int(g) for g in plan.block_map if g is not None and str(g).isdigit()}
    teacher_by_key = {(r.group, r.block, r.key): p for p, r in teachers.items() if r is not None}
    pending, role_sizes = [], {}
    for path in student_shapes:
        role = students[path]
        if role is None or _skipped(path, role.key, skip):
            plan.skipped.append(path)
            continue
        block = None if role.block is None else plan.block_map[role.group][role.block]
        teacher_path = teacher_by_key.get((role.group, block, role.key))
        if teacher_path is None:
            plan.unmatched.append(path)
            continue
        t_roles = teachers[teacher_path].roles
        if not _same_roles(t_roles, role.roles):
            raise ValueError(
                f"Student variable {path!r} and its teacher variable {teacher_path!r} do not play the same "
                f"role: axes {role.roles} in the student, {t_roles} in the teacher."
            )
        t_shape, s_shape = _aligned(tuple(teacher_shapes[teacher_path]), tuple(student_shapes[path]))
        if len(t_shape) != len(s_shape):
            raise ValueError(
                f"Student variable {path!r} has shape {s_shape} but its teacher "
                f"variable {teacher_path!r} has shape {t_shape}."
            )
        roles = tuple(_resolve_last(r, groups) for r in role.scoped())
        resize = ()
        for axis, (r, t, s) in enumerate(zip(roles, t_shape, s_shape, strict=True)):
            what = f"axis {axis} of {path!r}"
            if r == TOKENS and t != s and resize_position_embeddings:
                grid_layout(t, s, what)  # raises unless both are a class token and a square grid
                resize = (axis, s)
                continue
            if r in (SAME, TOKENS):
                if t != s:
                    hint = (
                        " (a different image size: pass resize_position_embeddings=True to resize "
                        "the position grid)"
                        if r == TOKENS
                        else ""
                    )
                    raise ValueError(
                        f"The teacher and the student must have the same size along {what}: "
                        f"teacher {t_shape} ({teacher_path!r}), student {s_shape}{hint}."
                    )
                continue
            flattened = heads in ("flatten", "fused") and r.startswith(("heads@", "head_dim@"))
            if s > t and not flattened:  # heads x head_dim flattened: only their product must shrink
                element_indices(t, s, what=what)  # raises, naming the axis
            if role_sizes.setdefault(r, (t, s, what))[:2] != (t, s):
                t0, s0, first = role_sizes[r]
                raise ValueError(
                    f"Dimension {r!r} is {t} -> {s} along {what} but {t0} -> {s0} along {first}."
                )
        pending.append((path, teacher_path, roles, resize, t_shape))
    return pending, role_sizes


def _role_indices(role_sizes, heads, element_selection, rng):
    """Element selection: one index set per role (``None`` per role for ``random_inconsistent``,
    which draws per tensor axis)."""
    sizes = _flatten_heads(role_sizes) if heads in ("flatten", "fused") else role_sizes
    consistent = element_selection != "random_inconsistent" and element_selection not in VALUE_METHODS
    chosen = {}
    for r in sorted(sizes):
        t, s, what = sizes[r]
        method = "uniform" if r.startswith("heads@") else element_selection  # heads="select"
        chosen[r] = element_indices(t, s, method, rng, what) if consistent else None
    return chosen


def _fused_rows(t, s, part):
    """The teacher rows of projection ``part`` (0, 1, 2: query, key, value) that the authors' code
    keeps when it selects ``3 s`` of the ``3 t`` rows of a fused ``qkv`` weight uniformly."""
    fused = element_indices(3 * t, 3 * s, "uniform")[part * s : (part + 1) * s] - part * t
    assert fused.min() >= 0 and fused.max() < t  # the uniform rule never crosses a projection's rows
    return fused


def _entry(role_indices, heads, rng, s_shape, path, teacher_path, roles, resize, t_shape, key=""):
    """The :class:`Entry` of one matched student variable: the teacher indices of each axis."""
    indices, merge = [], []
    part = next((i for i, name in enumerate(QKV) if f"/{name}/" in key), None)
    axis = 0
    while axis < len(roles):
        r = roles[axis]
        pair = axis + 1 < len(roles) and _is_head_pair(r, roles[axis + 1])
        if heads in ("flatten", "fused") and pair:
            flat = "attn@" + r[len("heads@") :]
            t, s = t_shape[axis] * t_shape[axis + 1], s_shape[axis] * s_shape[axis + 1]
            chosen = role_indices[flat] if heads == "flatten" or part is None else _fused_rows(t, s, part)
            if chosen is None:
                chosen = element_indices(t, s, "random", rng, f"axes {axis}-{axis + 1} of {path!r}")
            indices += [_none_if_whole(chosen, t), None]
            merge.append((axis, axis + 1))
            axis += 2
            continue
        if r in (SAME, TOKENS):
            indices.append(None)
        else:
            chosen = role_indices[r]
            if chosen is None:
                chosen = element_indices(
                    t_shape[axis], s_shape[axis], "random", rng, f"axis {axis} of {path!r}"
                )
            indices.append(_none_if_whole(chosen, t_shape[axis]))
        axis += 1
    return Entry(path, teacher_path, roles, indices, tuple(merge), resize, t_shape)


def _same_roles(a, b):
    """Equal axis roles, up to leading ``SAME`` axes of the longer one."""
    if len(a) < len(b):
        a, b = b, a
    extra = len(a) - len(b)
    return a[extra:] == b and all(r == SAME for r in a[:extra])


def _aligned(t_shape, s_shape):
    """The teacher's shape with leading size-1 axes added or dropped to match the student's rank
    (a KerasHub position embedding is ``(N, d)``, the package's ``(1, N, d)``)."""
    extra = len(s_shape) - len(t_shape)
    if extra > 0 and all(n == 1 for n in s_shape[:extra]):
        return (1,) * extra + t_shape, s_shape
    if extra < 0 and all(n == 1 for n in t_shape[:-extra]):
        return t_shape[-extra:], s_shape
    return t_shape, s_shape


def _is_head_pair(first, second):
    return (
        isinstance(first, str)
        and isinstance(second, str)
        and first.startswith("heads@")
        and second == "head_dim@" + first[len("heads@") :]
    )


def _flatten_heads(role_sizes):
    """Role sizes with each attention's ``heads@B`` x ``head_dim@B`` as one ``attn@B`` role."""
    sizes = dict(role_sizes)
    for r, (t, s, what) in role_sizes.items():
        if r.startswith("heads@"):
            scope = r[len("heads@") :]
            td, sd, _ = sizes.pop("head_dim@" + scope)
            del sizes[r]
            what = f"{what} and the next axis (heads x head_dim, flattened)"
            element_indices(t * td, s * sd, what=what)  # raises when the flattened width grows
            sizes["attn@" + scope] = (t * td, s * sd, what)
    return sizes


def _none_if_whole(chosen, size):
    return None if len(chosen) == size and np.array_equal(chosen, np.arange(size)) else chosen


def _merged(array, entry):
    """``array`` (the teacher variable) reshaped to ``entry``'s teacher shape, its token axis resized
    when ``entry.resize`` says so, and each merged pair of axes flattened into one; with the
    index array of each of its axes."""
    array = np.asarray(array)
    if entry.teacher_shape:
        array = array.reshape(entry.teacher_shape)
    if entry.resize:
        axis, tokens = entry.resize
        array = resize_tokens(array, tokens, axis, what=repr(entry.student_path))
    merged = {a: b for a, b in entry.merge}
    if merged:
        shape, axis = [], 0
        while axis < array.ndim:
            if axis in merged:
                shape.append(array.shape[axis] * array.shape[axis + 1])
                axis += 2
            else:
                shape.append(array.shape[axis])
                axis += 1
        array = array.reshape(shape)
        return array, [ix for a, ix in enumerate(entry.indices) if a - 1 not in merged]
    return array, list(entry.indices)


def _by_values(entry, method, value, student_shape):
    """``entry`` with the indices of a value-based element method, read from the teacher's ``value``:
    per axis the largest-L1 slices (``"l1"``), or the largest-magnitude elements (``"magnitude"``)."""
    what = f"teacher variable {entry.teacher_path!r} (for {entry.student_path!r})"
    array, indices = _merged(value, entry)
    if method == "magnitude":
        entry.elements = magnitude_elements(array, student_shape, what)
        entry.indices = [None] * len(entry.indices)
        return entry
    second = {b for _, b in entry.merge}
    axes = [a for a in range(len(entry.indices)) if a not in second]  # the merged view's axes
    for view_axis, (axis, chosen) in enumerate(zip(axes, indices, strict=True)):
        if chosen is not None:  # an axis that shrinks: the same count, chosen by L1 norm
            entry.indices[axis] = l1_indices(array, view_axis, len(chosen), what)
    return entry


def take(array, entry, student_shape):
    """The student's value: ``array`` (the teacher variable) at ``entry``'s indices, as ``student_shape``."""
    array, indices = _merged(array, entry)
    if entry.elements is not None:  # magnitude: the kept elements, squeezed in their row-major order
        return array.reshape(-1)[entry.elements].reshape(student_shape)
    for axis, chosen in enumerate(indices):
        if chosen is not None:
            array = np.take(array, chosen, axis=axis)
    return array.reshape(student_shape)
