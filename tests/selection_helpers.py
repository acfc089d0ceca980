"""Helpers of the weight-selection tests: random teachers, fingerprints, the reported slices."""

import hashlib

import numpy as np

from conftest import to_numpy


def randomize(model, seed=0):
    """Distinct random values in every variable (BatchNorm statistics included)."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.standard_normal(tuple(v.shape)).astype("float32") + (1.0 if "variance" in v.path else 0))
    return model


def fingerprint(model):
    return {v.path: hashlib.sha256(to_numpy(v).tobytes()).hexdigest() for v in model.weights}


def teacher_slice(teacher_value, entry):
    """The teacher value at the report's indices (a flattened heads x head_dim pair reports its
    indices on its first axis and ``None`` on its second)."""
    value, indices = np.asarray(teacher_value), entry["indices"]
    if "elements" in entry:  # element_selection="magnitude": flat row-major indices, squeezed
        return value.reshape(-1)[entry["elements"]].reshape(entry["student_shape"])
    extra = len(indices) - value.ndim  # leading size-1 axes, e.g. a KerasHub (N, d) position embedding
    value = value.reshape((1,) * extra + value.shape if extra >= 0 else value.shape[-extra:])
    a = out = 0
    while a < len(indices):
        chosen = indices[a]
        if a + 1 < len(indices) and indices[a + 1] is None:
            shape = value.shape
            value = value.reshape(shape[:out] + (shape[out] * shape[out + 1],) + shape[out + 2 :])
            a += 1
        if chosen != "all":
            value = np.take(value, chosen, axis=out)
        a += 1
        out += 1
    return value.reshape(entry["student_shape"])


def assert_selected_slices(teacher, student, report):
    """Every written student variable equals its teacher variable at the reported indices."""
    teacher_vars = {v.path: v for v in teacher.weights}
    student_vars = {v.path: v for v in student.weights}
    written = {e["student"] for e in report.entries}
    assert written | set(report.skipped) | set(report.unmatched) == set(student_vars)
    for entry in report.entries:
        np.testing.assert_array_equal(
            to_numpy(student_vars[entry["student"]]),
            teacher_slice(to_numpy(teacher_vars[entry["teacher"]]), entry),
            err_msg=entry["student"],
        )


def select_with_report(student, *, teacher, **options):
    """``select_weights(student, teacher=teacher, ...)``; returns its ``selection_report``, checking that
    the report names exactly the paths written."""
    from keras_structinit.selection import select_weights, selection_report

    report = selection_report(student, teacher=teacher, **options)
    assert select_weights(student, teacher=teacher, **options) == [e["student"] for e in report.entries]
    return report


def select_and_check(teacher, student, **options):
    """``select_weights`` with the checks every pair gets: the teacher unchanged, every written student
    variable its teacher slice, nothing unmatched. Returns the report."""
    before = fingerprint(teacher)
    report = select_with_report(student, teacher=teacher, **options)
    assert fingerprint(teacher) == before  # the teacher is only read
    assert report.unmatched == []
    assert_selected_slices(teacher, student, report)
    return report


def indices_of(report, places):
    """The reported indices at each ``(student variable, axis)`` of ``places``."""
    entries = {e["student"]: e for e in report.entries}
    return [entries[path]["indices"][axis] for path, axis in places]
