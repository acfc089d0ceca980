"""The classifier is the student's (issue 77): whatever its name, the layer that owns the classes axis
keeps the student's initialization unless ``copy_head`` (``--copy-head``), as in the paper (the
authors' script skips every head key); ``skip`` entries that match nothing are refused naming the
layers meant; ``--student-kwargs`` takes keras.applications' own ``classes``; two backbones select
with no classes asked. Models built from config at 32x32 with 10 classes (no downloads)."""

import keras
import numpy as np
import pytest
from test_selection_derived import user_builder

from conftest import to_numpy
from selection_helpers import assert_selected_slices, fingerprint, randomize, teacher_slice

A = keras.applications
KEPT = "classifier: keeps the student's init (copy_head=True, --copy-head on the command line, copies it)"


def _app(builder, **kwargs):
    return lambda: builder(weights=None, input_shape=(32, 32, 3), classes=10, **kwargs)


PAIRS = {
    "mobilenet_v2": (_app(A.MobileNetV2, alpha=1.0), _app(A.MobileNetV2, alpha=0.5), "predictions"),
    "efficientnet": (_app(A.EfficientNetB3), _app(A.EfficientNetB0), "predictions"),
    "resnet": (_app(A.ResNet101), _app(A.ResNet50), "predictions"),
    "user_functional": (lambda: user_builder(64, 4), lambda: user_builder(32, 2), None),
}


def _classifier_name(student, expected):
    from keras_structinit.selection.classifier import find_classifier

    found = find_classifier(student)
    assert found is not None and found.classes == 10
    if expected is not None:
        assert found.name == expected
    else:  # Keras's automatic name (dense, dense_1, ...): the user's model's last layer
        assert found.name == student.layers[-1].name and found.name.startswith("dense")
    return found.name


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_classifier_keeps_the_students_init_and_copy_head_copies_it(name):
    from keras_structinit.selection import plan, select_weights, selection_report

    make_teacher, make_student, expected = PAIRS[name]
    teacher, student = randomize(make_teacher()), make_student()
    head = _classifier_name(student, expected)
    kernel = f"{head}/kernel"
    own = to_numpy(student.get_layer(head).kernel).copy()
    text = str(plan(student, teacher))
    assert f"  {kernel}: {KEPT}" in text and f"{kernel} (" not in text.split("Keep their")[0]
    before = fingerprint(teacher)
    report = selection_report(student, teacher=teacher, write=True)
    assert fingerprint(teacher) == before and report.unmatched == []
    assert report.skipped == [kernel, f"{head}/bias"] == report.classifier
    assert_selected_slices(teacher, student, report)  # every other variable: the teacher's slice
    np.testing.assert_array_equal(to_numpy(student.get_layer(head).kernel), own)  # the student's own init
    t_head = teacher.layers[-1].name  # the user's teacher names its dense otherwise
    copied = plan(student, teacher, copy_head=True)
    assert f"{kernel} ({own.shape[0]}, 10) <- {t_head}/kernel (" in str(copied)
    assert "(classifier: copied)" in str(copied) and copied.skipped == []
    select_weights(student, teacher=teacher, copy_head=True)
    t_kernel = to_numpy(teacher.get_layer(t_head).kernel)
    entry = next(e for e in copied.entries if e["student"] == kernel)
    np.testing.assert_array_equal(to_numpy(student.get_layer(head).kernel), teacher_slice(t_kernel, entry))


def test_a_skip_that_matches_no_layer_names_the_close_ones():
    from keras_structinit.selection import select_weights

    teacher, student = user_builder(64, 4), user_builder(32, 2)
    before = fingerprint(student)
    with pytest.raises(
        ValueError, match=r"`skip=\(\.\.\.\)` entry 'dens' matches no layer.*did you mean 'dense"
    ) as err:
        select_weights(student, teacher=teacher, skip=("dens",))
    assert "\n" not in str(err.value) and fingerprint(student) == before
    with pytest.raises(TypeError, match="`skip` must be a tuple"):
        select_weights(student, teacher=teacher, skip="dense")
    with pytest.raises(TypeError, match="`copy_head`"):
        select_weights(student, teacher=teacher, copy_head="yes")
    # an explicit skip still works as before, besides the classifier
    head = student.layers[-1].name
    norm = [layer.name for layer in student.layers if isinstance(layer, keras.layers.BatchNormalization)][-1]
    paths = select_weights(student, teacher=teacher, skip=(norm,))
    assert not any(p.startswith((f"{norm}/", f"{head}/")) for p in paths) and len(paths) == 26 - 4


def test_the_pure_plan_keeps_the_familys_head_and_checks_skip():
    import keras_structinit as ks
    from keras_structinit.selection import plan_selection

    def shapes(model):
        return {v.path: tuple(v.shape) for v in model.weights}

    teacher = shapes(ks.models.vit(4, 32, 2, 4, num_classes=5, input_shape=(16, 16, 3)))
    student = shapes(ks.models.vit(4, 16, 2, 2, num_classes=5, input_shape=(16, 16, 3)))
    kept = plan_selection(teacher, student)
    assert kept.skipped == kept.classifier == ["head/kernel", "head/bias"]
    copied = plan_selection(teacher, student, copy_head=True)
    assert copied.skipped == [] and "head/kernel" in [e.student_path for e in copied.entries]
    with pytest.raises(ValueError, match="'haed' matches no layer.*did you mean 'head'"):
        plan_selection(teacher, student, skip=("haed",))


@pytest.fixture(scope="module")
def mobilenet_teacher(tmp_path_factory):
    teacher = randomize(PAIRS["mobilenet_v2"][0]())
    path = tmp_path_factory.mktemp("head") / "teacher.keras"
    teacher.save(path)
    return teacher, str(path)


def _cli(capsys, argv, status=0):
    from keras_structinit import cli

    assert cli.main(["select", *argv]) == status
    out, err = capsys.readouterr()
    if status:
        assert err.count("\n") == 1, err
    return out + err


def test_cli_plan_marks_the_classifier_and_copy_head_copies_it(mobilenet_teacher, capsys):
    _, teacher = mobilenet_teacher
    argv = ["--teacher", teacher, "--student", "keras.applications:MobileNetV2", "--plan"]
    kwargs = ["--student-kwargs", '{"alpha": 0.5, "classes": 10}']  # keras.applications' own argument
    out = _cli(capsys, [*argv, *kwargs])
    assert f"  predictions/kernel: {KEPT}" in out and "predictions/kernel (1280" not in out
    out = _cli(capsys, [*argv, *kwargs, "--copy-head"])
    assert (
        "predictions/kernel (1280, 10) <- predictions/kernel (1280, 10): whole, whole (classifier: copied)"
        in out
    )
    err = _cli(capsys, [*argv, *kwargs, "--skip", "predictoins"], status=2)
    assert "--skip PREFIX entry 'predictoins' matches no layer" in err and "did you mean 'predictions'" in err


@pytest.mark.parametrize(
    "kwargs, extra, message",
    [
        ('{"alpha": 0.5, "classes": 10, "num_classes": 10}', [], None),  # equal values: accepted
        (
            '{"alpha": 0.5, "classes": 10, "num_classes": 5}',
            [],
            "--student-kwargs classes=10 conflicts with --student-kwargs num_classes=5",
        ),
        (
            '{"alpha": 0.5, "classes": 10}',
            ["--head-classes", "1,2"],
            "--student-kwargs classes=10 conflicts with --head-classes=2",
        ),
        ('{"alpha": 0.5, "classes": "ten"}', [], "--student-kwargs classes must be a number of classes"),
    ],
)
def test_cli_student_kwargs_take_the_class_argument_of_keras_applications(
    mobilenet_teacher, capsys, kwargs, extra, message
):
    _, teacher = mobilenet_teacher
    argv = ["--teacher", teacher, "--student", "keras.applications:MobileNetV2", "--plan"]
    out = _cli(capsys, [*argv, "--student-kwargs", kwargs, *extra], status=2 if message else 0)
    assert message in out if message else "predictions/kernel: classifier" in out


def test_a_keras_applications_student_of_a_backbone_teacher_has_no_classifier(mobilenet_teacher):
    from keras_structinit.selection.cli import plan_student

    teacher = A.MobileNetV2(weights=None, input_shape=(32, 32, 3), include_top=False, alpha=1.0)
    shown = plan_student(teacher, "keras.applications:MobileNetV2", {"alpha": 0.5})
    assert shown.classifier == [] and shown.kept == {} and shown.unmatched == []
    with pytest.raises(ValueError, match="gives 10 classes to a student with no classifier"):
        plan_student(
            teacher, "keras.applications:MobileNetV2", {"alpha": 0.5, "classes": 10, "include_top": False}
        )


def test_two_keras_hub_backbones_select_with_no_classes_asked(tmp_path, capsys):
    pytest.importorskip("keras_hub")
    from test_selection_ecosystem import hub_vit

    teacher, student = randomize(hub_vit(32, 4, 4)), hub_vit(16, 2, 2)
    paths = {}
    for name, model in (("teacher", teacher), ("student", student)):
        paths[name] = str(tmp_path / f"{name}.keras")
        model.save(paths[name])
    argv = ["--teacher", paths["teacher"], "--student", paths["student"]]
    out = _cli(capsys, [*argv, "--plan"])
    assert out.startswith("Selection plan (keras_hub_vit): ") and "Keep their" not in out
    err = _cli(capsys, [*argv, "--plan", "--student-kwargs", '{"num_classes": 999}'], status=2)
    assert "--student-kwargs applies to zoo and keras.applications students, not to a .keras file" in err
    out_file = tmp_path / "out.keras"
    assert "Wrote" in _cli(capsys, [*argv, "--out", str(out_file)])
    selected = keras.saving.load_model(out_file)
    report = __import__("keras_structinit").selection.selection_report(selected, teacher=teacher)
    assert report.skipped == [] and report.classifier == []
    assert_selected_slices(teacher, selected, report)
