"""``structinit select``: a student saved as ``.keras``, initialized by weight selection from a teacher."""

from __future__ import annotations

import json
import os

from keras_structinit.arguments import INPUT_ERRORS, OVERWRITE_HINT, check_teacher, usage_error
from keras_structinit.io_utils import atomic_path, check_output, check_unlocked, locked_outputs
from keras_structinit.models.registry import build_model, parse_model_name
from keras_structinit.selection.select import selection_report
from keras_structinit.selection.teachers import application_builder, load_teacher
from keras_structinit.sources import load_model

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


APPLICATIONS = "keras.applications:"


def _check_student(student):
    """A zoo name, a ``.keras`` path or ``keras.applications:NAME``; ``ValueError`` otherwise."""
    if student.endswith(".keras"):
        if not os.path.isfile(student):
            raise ValueError(f"--student {student!r} does not exist")
    elif student.startswith(APPLICATIONS):
        name = student[len(APPLICATIONS) :]
        if application_builder(name) is None:
            raise ValueError(
                f"--student {student!r}: keras.applications has no model {name!r} "
                "(e.g. keras.applications:ConvNeXtTiny)"
            )
    else:
        parse_model_name(student)


def _build_student(student, num_classes, input_shape, kwargs):
    """The student model: from a ``.keras`` file (its weights are then replaced), keras.applications
    (no weights, logits) or the zoo."""
    if student.endswith(".keras"):
        if kwargs:
            raise ValueError(
                "--student-kwargs applies to zoo and keras.applications students, not to a "
                f".keras file ({student!r})"
            )
        return load_model(student, name="--student")  # the same checked .keras reader, in --student's name
    if student.startswith(APPLICATIONS):
        builder = application_builder(student[len(APPLICATIONS) :])
        kwargs = {"classifier_activation": None, **kwargs}
        return builder(weights=None, input_shape=input_shape, classes=num_classes, **kwargs)
    return build_model(student, num_classes, input_shape, **kwargs)


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
    _check_student(student)
    inputs = [spec for spec in (teacher, student) if isinstance(spec, (str, os.PathLike))]
    check_unlocked(files=[(out, "--out"), (report, "--report")])  # before "exists: pass --overwrite"
    out = check_output(out, "--out", overwrite=overwrite, inputs=inputs, hint=OVERWRITE_HINT)
    if report is not None:
        report = check_output(
            report, "--report", overwrite=overwrite, inputs=[*inputs, out], hint=OVERWRITE_HINT
        )
    with locked_outputs(files=[(out, "--out"), (report, "--report")]):  # another select writing them: refused
        return _select(teacher, student, out, student_kwargs, report, options)


def _models(teacher, student, student_kwargs):
    """``(teacher model, student model)``."""
    teacher = load_teacher(teacher)
    kwargs = dict(student_kwargs or {})
    if "num_classes" not in kwargs and len(teacher.output_shape) != 2:
        raise ValueError(
            f"--student-kwargs needs num_classes: the teacher outputs {tuple(teacher.output_shape)}, "
            "features rather than class logits (e.g. a KerasHub backbone)"
        )
    num_classes = kwargs.pop("num_classes", int(teacher.output_shape[-1]))
    input_shape = tuple(kwargs.pop("input_shape", teacher.input_shape[1:]))
    return teacher, _build_student(student, num_classes, input_shape, kwargs)


def plan_student(teacher, student, student_kwargs=None, **options):
    """The :class:`~keras_structinit.selection.select.SelectionPlan` of ``teacher`` -> ``student``
    (specs as in :func:`select_student`); nothing is written."""
    from keras_structinit.selection.select import plan

    _check_student(student)
    teacher, model = _models(teacher, student, student_kwargs)
    return plan(model, teacher, **options)


def _select(teacher, student, out, student_kwargs, report, options):
    teacher, model = _models(teacher, student, student_kwargs)
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
        _check_student(args.student)
        options = dict(
            layer_selection=args.layer_selection,
            element_selection=args.element_selection,
            heads=args.heads,
            skip=tuple(args.skip),
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
