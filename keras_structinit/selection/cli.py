"""``structinit select``: a student saved as ``.keras``, initialized by weight selection from a teacher."""

from __future__ import annotations

import json
import os

from keras_structinit.models.spec import ModelSpec
from keras_structinit.selection.classifier import find_classifier
from keras_structinit.selection.select import selection_report
from keras_structinit.selection.teachers import load_teacher
from keras_structinit.utils.arguments import INPUT_ERRORS, OVERWRITE_HINT, check_teacher, usage_error
from keras_structinit.utils.io_utils import atomic_path, check_output, check_unlocked, locked_outputs

__all__ = ["plan_student", "run", "select_student"]


def _student_kwargs(text):
    if text is None:
        return {}
    try:
        kwargs = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"--student-kwargs must be a JSON object: {err}. Received: {text!r}") from None
    if not isinstance(kwargs, dict):
        raise ValueError(
            f"--student-kwargs must be a JSON object, e.g. '{{\"num_classes\": 100}}'. Received: {text!r}"
        )
    return kwargs


#: What a student taken as saved is, by :attr:`ModelSpec.kind`, in messages.
_SAVED = {"keras_file": "a .keras file", "preset": "a preset folder", "keras_hub": "a KerasHub preset"}


def _student_spec(student):
    """``--student`` parsed by the one grammar of a model (:class:`~keras_structinit.models.spec.ModelSpec`):
    a zoo name or ``keras.applications:NAME`` is built (sized to the teacher), a ``.keras`` file or a
    preset is taken as saved (its weights then replaced)."""
    spec = ModelSpec.parse(student, "--student")
    if spec.kind == "applications" and spec.weights is not None:
        raise ValueError(
            f"--student {student!r}: a student is built without weights (weight selection gives it the "
            f"teacher's); write keras.applications:{spec.target}"
        )
    return spec


def _build_student(spec, classes, input_shape, kwargs):
    """The student model: keras.applications (no weights, logits; no classifier when ``classes`` is
    ``None``) or the zoo."""
    if spec.kind == "applications":
        if classes is None:
            return spec.load(input_shape=input_shape, **{"include_top": False, **kwargs})
        return spec.load(input_shape=input_shape, classes=classes, **kwargs)
    return spec.build(classes, input_shape, **kwargs)


def _class_argument(spec, kwargs, head_classes):
    """Takes the student's class count out of ``kwargs`` (``num_classes``, or keras.applications' own
    ``classes``): ``None`` when none is given. Values that disagree with each other or with
    ``--head-classes`` are a one-line error naming both."""
    names = ("classes", "num_classes") if spec.kind == "applications" else ("num_classes",)
    given = {name: kwargs.pop(name) for name in names if name in kwargs}
    if head_classes is not None:
        given["--head-classes"] = len(head_classes)
    for name, value in given.items():
        if name != "--head-classes" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"--student-kwargs {name} must be a number of classes >= 1. Received: {value!r}")
    if len(set(given.values())) > 1:
        (a, x), (b, y) = list(given.items())[:2]
        where = lambda name: name if name.startswith("--") else f"--student-kwargs {name}"  # noqa: E731
        raise ValueError(f"{where(a)}={x} conflicts with {where(b)}={y}: give one number of classes")
    return next(iter(given.values()), None)


def _check_classes(spec, kwargs, classes, teacher):
    """``ValueError`` for a class count given to a student that has no classifier, or missing for a
    zoo student of a teacher that has none."""
    applications = spec.kind == "applications"
    if applications and classes is not None and not kwargs.get("include_top", True):
        raise ValueError(
            f"--student-kwargs gives {classes} classes to a student with no classifier "
            f"({spec.text}, include_top=false); drop the classes or the include_top"
        )
    if not applications and classes is None and find_classifier(teacher) is None:
        raise ValueError(
            f"--student-kwargs needs num_classes: the teacher outputs {tuple(teacher.output_shape)}, "
            "features rather than class logits (e.g. a KerasHub backbone), and a zoo student has a "
            "classifier"
        )


def select_student(teacher, student, out, student_kwargs=None, report=None, overwrite=False, **options):
    """Builds ``student``, selects ``teacher``'s weights into it, saves it to ``out``.

    ``student`` is a zoo name (:func:`~keras_structinit.models.build_model`), a
    ``.keras`` file (its architecture; every selected weight is replaced) or
    ``"keras.applications:NAME"`` (built without weights, logits out).

    ``teacher`` is anything :func:`~keras_structinit.selection.load_teacher`
    accepts (a model, a ``.keras`` path, a KerasHub preset...); the student gets the
    teacher's number of classes and input shape unless ``student_kwargs``
    says otherwise. ``options`` go to :func:`select_weights`. The file is
    written atomically; ``out`` and ``report`` may not be the teacher's file
    (nor each other), nor exist unless ``overwrite``. Returns ``(student
    model, SelectionReport)``.
    """
    if not str(out).endswith(".keras"):
        raise ValueError(f"--out must be a .keras path. Received: {out!r}")
    _student_spec(student)
    inputs = [spec for spec in (teacher, student) if isinstance(spec, (str, os.PathLike))]
    check_unlocked(files=[(out, "--out"), (report, "--report")])  # before "exists: pass --overwrite"
    out = check_output(out, "--out", overwrite=overwrite, inputs=inputs, hint=OVERWRITE_HINT)
    if report is not None:
        report = check_output(
            report, "--report", overwrite=overwrite, inputs=[*inputs, out], hint=OVERWRITE_HINT
        )
    with locked_outputs(files=[(out, "--out"), (report, "--report")]):  # another select writing them: refused
        return _select(teacher, student, out, student_kwargs, report, options)


def _models(teacher, student, student_kwargs, head_classes=None):
    """``(teacher model, student model)``. The student gets the teacher's classes and input shape
    unless ``student_kwargs`` (or ``head_classes``, one class each) say otherwise; a student of
    keras.applications has no classifier when the teacher has none and no classes are given. A
    ``.keras`` student is as saved: no ``student_kwargs``, no classes asked."""
    teacher = load_teacher(teacher)
    spec = _student_spec(student)
    if not spec.sized:
        if student_kwargs:
            raise ValueError(
                "--student-kwargs applies to zoo and keras.applications students, not to "
                f"{_SAVED.get(spec.kind, 'a saved model')} ({student!r}), whose architecture (and classes, "
                "if it has a classifier) is its own"
            )
        return teacher, spec.load()  # the checked reader of its form, as --student
    kwargs = dict(student_kwargs or {})
    classes = _class_argument(spec, kwargs, head_classes)
    _check_classes(spec, kwargs, classes, teacher)
    if classes is None:
        head = find_classifier(teacher)
        classes = None if head is None or not kwargs.get("include_top", True) else head.classes
    input_shape = tuple(kwargs.pop("input_shape", teacher.input_shape[1:]))
    return teacher, _build_student(spec, classes, input_shape, kwargs)


def plan_student(teacher, student, student_kwargs=None, **options):
    """The :class:`~keras_structinit.selection.select.SelectionPlan` of ``teacher`` -> ``student``
    (specs as in :func:`select_student`); nothing is written."""
    from keras_structinit.selection.select import plan

    _student_spec(student)
    teacher, model = _models(teacher, student, student_kwargs, options.get("head_classes"))
    return plan(model, teacher, **options)


def _select(teacher, student, out, student_kwargs, report, options):
    teacher, model = _models(teacher, student, student_kwargs, options.get("head_classes"))
    selection = selection_report(model, teacher=teacher, write=True, **options)
    with atomic_path(out) as tmp:
        model.save(tmp)
    if report is not None:
        selection.to_json(report, overwrite=True)  # checked above
    return model, selection


def _head_classes(text):
    if text is None:
        return None
    try:
        classes = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(
            f"--head-classes must be comma-separated class indices, e.g. 3,5,7. Received: {text!r}"
        ) from None
    if min(classes) < 0:
        raise ValueError(f"--head-classes must be class indices >= 0. Received: {text!r}")
    return classes


def run(args):
    """Runs ``structinit select``; one-line errors (exit 2) for bad input, before anything is written.
    With ``--plan``, prints the plan and writes nothing."""
    try:
        check_teacher(args.teacher, "--teacher")
        _student_spec(args.student)
        options = dict(
            layer_selection=args.layer_selection,
            element_selection=args.element_selection,
            heads=args.heads,
            skip=tuple(args.skip or ()),
            copy_head=bool(getattr(args, "copy_head", False)),
            seed=args.seed,
            resize_position_embeddings=args.resize_position_embeddings,
            head_classes=_head_classes(getattr(args, "head_classes", None)),
        )
        if getattr(args, "plan", False):
            print(
                plan_student(args.teacher, args.student, _student_kwargs(args.student_kwargs), **options),
                flush=True,
            )
            return 0
        if args.out is None:
            raise ValueError("--out is required (unless --plan)")
        model, selection = select_student(
            args.teacher,
            args.student,
            args.out,
            _student_kwargs(args.student_kwargs),
            args.report,
            overwrite=args.overwrite,
            **options,
        )
    except INPUT_ERRORS as err:
        return usage_error("select", err)
    print(selection.summary())
    print(
        f"\nSelected {len(selection.entries)} variables of {model.name} from {args.teacher} "
        f"({selection.family}; {len(selection.skipped)} kept their initialization). Wrote {args.out}"
        + (f" and {args.report}" if args.report else ""),
        flush=True,
    )
    return 0
