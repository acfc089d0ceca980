"""``select_weights``: write a larger teacher's selected weights into a student of its family.

The plan (which teacher variable and indices feed each student variable) is
pure NumPy (:mod:`.planning`); this module reads the teacher's values, writes the
student's and reports what it did. The teacher is only read.
"""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_structinit.engine import walker
from keras_structinit.engine.contract import check_model, model_function
from keras_structinit.selection.classifier import classifier_reason, find_classifier
from keras_structinit.selection.planning import NoFamilyError, check_skip, plan_selection, take
from keras_structinit.selection.teachers import load_teacher
from keras_structinit.utils import validation
from keras_structinit.utils.io_utils import check_output, write_json
from keras_structinit.utils.reporting import format_table

__all__ = ["SelectionPlan", "SelectionReport", "plan", "select_weights", "selection_report"]

#: The options of :func:`select_weights` that reach the plan (and the report), in its order.
OPTIONS = (
    "layer_selection",
    "element_selection",
    "heads",
    "skip",
    "seed",
    "strict",
    "family",
    "resize_position_embeddings",
    "head_classes",
    "copy_head",
)


class SelectionReport:
    """What :func:`select_weights` writes (see :func:`selection_report`).

    Attributes:
        family: the family adapter used.
        options: the selection options.
        entries: one dict per student variable written: ``student``,
            ``teacher``, ``student_shape``, ``teacher_shape`` and ``indices``
            (per axis a list of teacher indices, or ``"all"``; a flattened
            heads x head_dim pair is reported on its first axis). With
            ``element_selection="magnitude"``, ``indices`` is ``"magnitude"`` and
            ``elements`` holds the teacher's flat (row-major) indices kept, in order
            (an int64 array; a list in :meth:`to_dict`).
        skipped: student variables left at their initialization by ``skip``, and the
            classifier's unless ``copy_head``.
        unmatched: student variables with no teacher variable (``strict=False``).
        block_map: per stage, student block -> teacher block.
        kept: ``{student variable: why it keeps its initialization}``.
        left_out: the teacher blocks no student block comes from (a derived plan).
        classifier: the student's classifier variables (kept, or selected with ``copy_head``).
    """

    def __init__(
        self, family, options, entries, skipped, unmatched, block_map, kept=None, left_out=(), classifier=()
    ):
        self.family = family
        self.options = options
        self.entries = entries
        self.skipped = skipped
        self.unmatched = unmatched
        self.block_map = block_map
        self.kept = dict(kept or {})
        for path in skipped:
            self.kept.setdefault(path, f"skip={tuple(options.get('skip', ()))}")
        for path in unmatched:
            self.kept.setdefault(path, "no counterpart in the teacher")
        self.left_out = list(left_out)
        self.classifier = list(classifier)

    def to_dict(self):
        return {
            "family": self.family,
            "options": self.options,
            "block_map": {
                str(group): {str(s): t for s, t in blocks.items()} for group, blocks in self.block_map.items()
            },
            "entries": [
                {**e, "elements": e["elements"].tolist()} if "elements" in e else e for e in self.entries
            ],
            "skipped": self.skipped,
            "unmatched": self.unmatched,
            "kept": self.kept,
            "left_out": self.left_out,
            "classifier": self.classifier,
        }

    def to_json(self, path, overwrite=False):
        """Writes :meth:`to_dict` to ``path`` (atomically; an existing file only with ``overwrite``)."""
        write_json(check_output(path, "path", overwrite=overwrite), self.to_dict())
        return os.fspath(path)

    def summary(self):
        """A markdown table: every student variable, its teacher variable and what each axis kept."""

        def kept(entry):
            if "elements" in entry:
                total = int(np.prod(entry["teacher_shape"]))
                return f"{len(entry['elements'])}/{total} elements of largest magnitude"
            parts = []
            for axis, (chosen, t) in enumerate(zip(entry["indices"], entry["teacher_shape"], strict=True)):
                if chosen == "all":
                    continue
                if isinstance(chosen, str):
                    parts.append(f"axis {axis}: {chosen}")
                    continue
                parts.append(
                    f"axis {axis}: {len(chosen)}/{t}" if chosen is not None else f"axis {axis}: merged"
                )
            return ", ".join(parts) or "all"

        rows = [
            *self.entries,
            *({"student": p, "teacher": "(skipped)", "student_shape": "", "kept": ""} for p in self.skipped),
            *(
                {"student": p, "teacher": "(no match)", "student_shape": "", "kept": ""}
                for p in self.unmatched
            ),
        ]
        return format_table(
            rows,
            (
                ("student variable", "student"),
                ("teacher variable", "teacher"),
                ("shape", lambda r: str(tuple(r["student_shape"])) if r["student_shape"] != "" else ""),
                ("kept", lambda r: r.get("kept", None) if "indices" not in r else kept(r)),
            ),
        )

    def __repr__(self):
        return (
            f"SelectionReport(family={self.family!r}, {len(self.entries)} selected, "
            f"{len(self.skipped)} skipped, {len(self.unmatched)} unmatched)"
        )


def selection_report(
    model,
    *,
    teacher,
    layers=None,
    seed=0,
    layer_selection="first_n",
    element_selection="uniform",
    heads="flatten",
    skip=(),
    strict=True,
    family="auto",
    resize_position_embeddings=False,
    head_classes=None,
    copy_head=False,
    write=False,
):
    """What :func:`select_weights` writes into ``model``, as a :class:`SelectionReport`.

    With ``write=False`` (default) nothing is written; with ``write=True`` the
    selection is also applied, from the same plan (for a caller that wants
    both). The other arguments as in :func:`select_weights`.
    """
    validation.boolean(write, "write")
    options = {name: value for name, value in locals().items() if name in OPTIONS}
    return _select(model, teacher, layers, options, write=write)


@model_function
def select_weights(
    model,
    *,
    teacher,
    layers=None,
    seed=0,
    layer_selection="first_n",
    element_selection="uniform",
    heads="flatten",
    skip=(),
    strict=True,
    family="auto",
    resize_position_embeddings=False,
    head_classes=None,
    copy_head=False,
):
    """Initializes the student ``model`` with selected weights of a larger ``teacher`` (Xu et al., ICLR 2024).

    Each student variable ``W_s`` gets ``W_t[i_0, i_1, ...]``: the teacher
    variable of the same component in the mapped block, at one index set per
    axis. Indices are consistent: one set per dimension role (see
    :mod:`keras_structinit.selection.families`). :func:`selection_report` says,
    without writing, which teacher variable and indices feed each student variable.

    Args:
        model: the student, a built ``keras.Model`` of the teacher's family, no larger
            along any axis; written in place.
        teacher: a built ``keras.Model``, a ``.keras`` path or anything
            :func:`~keras_structinit.selection.load_teacher` accepts; only read.
        layers: optional list of the student's layer names/objects: only their
            variables are written (the others keep their initialization).
        seed: seed of the random element selections.
        layer_selection: ``"first_n"`` (default), ``"last_n"``, ``"mid_n"`` or
            ``"uniform"``, per stage.
        element_selection: ``"uniform"`` (default), ``"consecutive"``,
            ``"random"`` (consistent), ``"random_inconsistent"``, or the pruning
            baselines of the paper's Table 7, chosen per tensor from the teacher's
            values: ``"l1"`` (along each axis that shrinks, the slices of largest
            L1 norm) and ``"magnitude"`` (the elements of largest ``|w|``,
            squeezed into the student's shape in their row-major order); see
            :mod:`keras_structinit.selection.indices`.
        heads: ``"flatten"``, ``"fused"`` or ``"select"`` (see
            :func:`~keras_structinit.selection.planning.plan_selection`).
        skip: path prefixes (such as layer names) that keep the student's initialization,
            besides the classifier; one that matches no variable is a ``ValueError`` naming
            the layers it may mean.
        strict: raise on a student variable with no teacher variable.
        family: a family name, ``"auto"`` (a hand-written family when one describes both
            models, else the plan derived from the two models' structure,
            :mod:`keras_structinit.selection.derive`) or ``"derived"``.
        resize_position_embeddings: allow a student with another token count
            (image size): the teacher's position grid is resized bilinearly,
            the class token kept (an extension; see
            :mod:`~keras_structinit.selection.resample`). The report lists
            that axis as ``"bilinear T->S"``.
        head_classes: a derived plan's classifier for other classes: the teacher's
            output rows (class indices), one per student class, in order (copies the classifier).
        copy_head: also select the classifier (the layer that owns the classes axis, whatever its
            name: :mod:`~keras_structinit.selection.classifier`); by default it keeps the
            student's initialization, as in the paper.

    Returns:
        The student variables' paths written, in the plan's order.

    Example:

    >>> teacher = ks.models.vit(4, 384, 8, 6, num_classes=10, input_shape=(32, 32, 3))
    >>> student = ks.models.vit(4, 192, 8, 3, num_classes=10, input_shape=(32, 32, 3))
    >>> paths = select_weights(student, teacher=teacher)
    """
    options = {name: value for name, value in locals().items() if name in OPTIONS}
    report = _select(model, teacher, layers, options, write=True)
    return [entry["student"] for entry in report.entries]


def _select(student, teacher, layers, options, write):
    """Plans the selection into ``student``, writes it when ``write``; the :class:`SelectionReport`."""
    teacher = load_teacher(teacher)
    student = check_model(student, "model")
    t_vars = {v.path: v for v in teacher.weights}
    s_vars = {v.path: v for v in student.weights}
    plan, heads = _plan(teacher, student, t_vars, s_vars, options)
    entries = plan.entries
    if layers is not None:
        chosen = {v.path for layer in walker.resolve_layers(student, layers) for v in layer.weights}
        entries = [entry for entry in entries if entry.student_path in chosen]
    described = [
        {
            "student": entry.student_path,
            "teacher": entry.teacher_path,
            "student_shape": list(s_vars[entry.student_path].shape),
            "teacher_shape": list(t_vars[entry.teacher_path].shape),
            **(
                {"indices": "magnitude", "elements": entry.elements}
                if entry.elements is not None
                else {
                    "indices": [
                        _indices_json(entry, a, entry.teacher_shape) for a in range(len(entry.indices))
                    ]
                }
            ),
        }
        for entry in entries
    ]
    report_options = {**options, "skip": list(options["skip"])}
    if report_options.get("head_classes") is None:
        report_options.pop("head_classes", None)  # the families' reports as before
    else:
        report_options["head_classes"] = [int(c) for c in report_options["head_classes"]]
    report_options.pop("family")
    if write:
        values = [
            _selected_values(t_vars[entry.teacher_path], entry, s_vars[entry.student_path])
            for entry in entries
        ]  # all checked before the student is touched
        for entry, value in zip(entries, values, strict=True):
            s_vars[entry.student_path].assign(value)
    derived = plan.derived
    if derived is not None:
        for entry, rules in zip(described, (derived.rules[e.student_path] for e in entries), strict=True):
            entry["rules"] = list(rules)
    return SelectionReport(
        plan.family,
        report_options,
        described,
        plan.skipped,
        plan.unmatched,
        plan.block_map,
        kept=_kept(plan, options["skip"], heads),
        left_out=() if derived is None else derived.left_out,
        classifier=plan.classifier,
    )


def _kept(plan, skip, heads):
    """``{student variable: why it keeps its initialization}``: the classifier's reason, the user's
    ``skip``, and the derived plan's own reasons."""
    kept = {} if plan.derived is None else dict(plan.derived.kept)
    reason = classifier_reason(*heads, plan.derived is not None) if heads[1] is not None else ""
    for path in plan.skipped:
        kept[path] = reason if path in plan.classifier else f"skip={tuple(skip)}"
    return kept


def _plan(teacher, student, t_vars, s_vars, options):
    """``(plan, (teacher's classifier, student's classifier))``: the hand-written family's plan when one
    describes both models, else the derived one. The classifiers (:func:`find_classifier`) keep the
    student's initialization unless ``copy_head`` (or ``head_classes``, which selects its rows)."""
    options = dict(options)
    family, head_classes = options.pop("family"), options.pop("head_classes", None)
    copy_head = options.pop("copy_head", False)
    validation.boolean(copy_head, "copy_head")
    if isinstance(options["skip"], (tuple, list)):  # a wrong type: plan_selection names it
        check_skip(options["skip"], s_vars)
    heads = find_classifier(teacher), find_classifier(student)
    values = lambda path: keras.ops.convert_to_numpy(t_vars[path])  # noqa: E731
    plan = None
    if family != "derived":
        try:
            plan = plan_selection(
                {p: tuple(v.shape) for p, v in t_vars.items()},
                {p: tuple(v.shape) for p, v in s_vars.items()},
                family=family,
                **options,
                teacher_values=values,
                classifier=tuple(() if h is None else h.paths for h in heads),
                copy_head=copy_head,
            )
        except NoFamilyError as err:
            if family != "auto" or err.placed >= 0.5:  # a family's model with extras: name them
                raise
        if plan is not None and head_classes is not None:
            raise ValueError(
                f"`head_classes` selects a derived plan's classifier rows; the {plan.family!r} "
                "family selects its classifier whole (copy_head=True) or not at all. Pass "
                "family='derived' to derive the plan."
            )
    if plan is None:
        plan = _derived(teacher, student, heads[1], head_classes, copy_head, options, values)
        plan.classifier = [] if heads[1] is None else list(heads[1].paths)
    if options["strict"] and not plan.entries and plan.classifier and not copy_head and head_classes is None:
        _plan(teacher, student, t_vars, s_vars, {**options, "family": family, "copy_head": True})
        raise ValueError(  # the classifier maps: nothing else does
            "Nothing to select: the student's only variables the teacher can give are its classifier's "
            f"({', '.join(plan.classifier)}), which keep their initialization; pass `copy_head=True` "
            "(--copy-head) to select them."
        )
    return plan, heads


def _derived(teacher, student, head, head_classes, copy_head, options, values):
    """The plan derived from the two models, the student's classifier ``head`` skipped unless
    ``copy_head`` or ``head_classes`` (its rows)."""
    from keras_structinit.selection.derive import derive_plan

    keep = head is not None and not copy_head and head_classes is None
    options = {**options, "skip": tuple(options["skip"]) + (head.paths if keep else ())}
    return derive_plan(teacher, student, head_classes=head_classes, teacher_values=values, **options)


def _selected_values(source, entry, target):
    """The teacher's values for ``target`` (``ValueError`` naming the variable if any is NaN or inf)."""
    value = take(keras.ops.convert_to_numpy(source), entry, tuple(target.shape))
    bad = np.size(value) - np.count_nonzero(np.isfinite(value))
    if bad:
        raise ValueError(
            f"`teacher` variable {entry.teacher_path!r} has {bad} non-finite (NaN or inf) value(s) among "
            f"those selected for {entry.student_path!r}; the student was left unchanged. Was the teacher "
            "trained to divergence?"
        )
    return value.astype(keras.backend.standardize_dtype(target.dtype))


def _indices_json(entry, axis, teacher_shape):
    chosen = entry.indices[axis]
    if entry.resize and entry.resize[0] == axis:
        return f"bilinear {teacher_shape[axis]}->{entry.resize[1]}"
    if any(axis == b for _, b in entry.merge):
        return None  # the second axis of a flattened pair: see the first
    return "all" if chosen is None else np.asarray(chosen).tolist()


class SelectionPlan(SelectionReport):
    """A :class:`SelectionReport` that prints as the plan (:func:`plan`): per student variable its
    teacher variable and the rule per axis, what keeps its initialization and why, and the
    teacher blocks left out."""

    def rules(self, entry):
        """The rule per axis of one entry (a dict of :attr:`entries`), in words."""
        from keras_structinit.selection.derive import rule_text

        if "rules" in entry:
            return list(entry["rules"])
        if entry["indices"] == "magnitude":
            return ["magnitude"] * len(entry["teacher_shape"])
        method = self.options.get("element_selection", "uniform")
        out = []
        for axis, chosen in enumerate(entry["indices"]):
            if chosen is None:
                out.append("(flattened with the previous axis)")
            elif isinstance(chosen, str):
                out.append("whole" if chosen == "all" else chosen)
            else:
                t = entry["teacher_shape"][axis] if axis < len(entry["teacher_shape"]) else len(chosen)
                if axis + 1 < len(entry["indices"]) and entry["indices"][axis + 1] is None:
                    t *= entry["teacher_shape"][axis + 1]
                out.append(rule_text(chosen, t, method))
        return out

    def text(self):
        lines = [
            f"Selection plan ({self.family}): {len(self.entries)} student variable(s) from the "
            f"teacher, {len(self.kept)} keep their initialization"
        ]
        for entry in self.entries:
            lines.append(
                f"  {entry['student']} {tuple(entry['student_shape'])} <- {entry['teacher']} "
                f"{tuple(entry['teacher_shape'])}: {', '.join(self.rules(entry)) or 'whole'}"
                + (" (classifier: copied)" if entry["student"] in self.classifier else "")
            )
        if self.kept:
            lines.append(f"Keep their initialization ({len(self.kept)}):")
            lines += [f"  {path}: {why}" for path, why in self.kept.items()]
        if self.left_out:
            lines.append(f"Teacher blocks left out ({len(self.left_out)}): {', '.join(self.left_out)}")
        return "\n".join(lines)

    def __str__(self):
        return self.text()


def plan(student, teacher, **options):
    """The selection plan of ``teacher`` -> ``student``, written nowhere: ``print(plan(student, teacher))``
    lists, per student variable, its teacher variable and the index rule per axis (``whole``,
    ``uniform 0:t:step``, ...), the variables that keep their initialization and why, and (for a
    plan derived from the two models) the teacher blocks left out. ``options`` as in
    :func:`select_weights`. Returns a :class:`SelectionPlan`."""
    report = selection_report(student, teacher=teacher, **options)
    shown = SelectionPlan.__new__(SelectionPlan)
    shown.__dict__.update(report.__dict__)
    return shown
