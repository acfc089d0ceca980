"""The derived plan (issue 60) against the hand-written families: one mechanism.

Where a family describes both models its plan is used; here the plan derived from the two models'
structure (``family="derived"``) must be the same plan, entry for entry (student variable, teacher
variable, indices per axis), for the uniform and consecutive element rules (the random ones draw per
dimension in each plan's own order, so their draws differ while both stay consistent).
"""

import pytest

import keras_structinit as ks

from selection_helpers import randomize

IMAGE = (16, 16, 3)


def _entries(report):
    return [(e["student"], e["teacher"], e["indices"]) for e in report.entries]


def assert_plans_agree(teacher, student, **options):
    from keras_structinit.selection import selection_report

    family = selection_report(student, teacher=teacher, **options)
    derived = selection_report(student, teacher=teacher, family="derived", **options)
    assert family.family != "derived" and derived.family == "derived"
    assert _entries(derived) == _entries(family)
    assert derived.skipped == family.skipped and derived.unmatched == family.unmatched == []
    return family


def _resnet(dim):
    return ks.models.resnet18_gn(
        num_classes=5, input_shape=IMAGE, groups=2, widths=(dim, 2 * dim, 2 * dim, 4 * dim)
    )


PACKAGE = {
    "convnext": (
        lambda: ks.models.convnext((3, 3), (16, 32), num_classes=5, input_shape=IMAGE),
        lambda: ks.models.convnext((2, 1), (8, 16), num_classes=5, input_shape=IMAGE),
    ),
    "convmixer": (
        lambda: ks.models.convmixer(16, 3, kernel_size=3, patch_size=2, num_classes=5, input_shape=IMAGE),
        lambda: ks.models.convmixer(8, 2, kernel_size=3, patch_size=2, num_classes=5, input_shape=IMAGE),
    ),
    "resnet": (lambda: _resnet(16), lambda: _resnet(8)),
}


@pytest.mark.parametrize("element_selection", ["uniform", "consecutive"])
@pytest.mark.parametrize("name", sorted(PACKAGE))
def test_the_package_families_plans_are_derived(name, element_selection):
    teacher, student = randomize(PACKAGE[name][0]()), PACKAGE[name][1]()
    report = assert_plans_agree(teacher, student, element_selection=element_selection)
    assert report.family == name


def _ecosystem():
    from test_selection_ecosystem import app_convnext, hub_resnet, hub_vit

    return {
        "keras_hub_vit": (lambda: hub_vit(32, 4, 4), lambda: hub_vit(16, 2, 2), {"heads": "select"}),
        "keras_hub_resnet_bottleneck": (
            lambda: hub_resnet((64, 32), (2, 3), "bottleneck_block"),
            lambda: hub_resnet((64, 16), (1, 2), "bottleneck_block", stem=8),
            {},
        ),
        "keras_hub_resnet_basic": (
            lambda: hub_resnet((64, 32), (2, 2), "basic_block", stem=64),
            lambda: hub_resnet((64, 16), (1, 1), "basic_block", stem=64),
            {},
        ),
        # the family skips the head by its key ("head"); the derived plan by its path
        "keras_convnext": (
            lambda: app_convnext((16, 32, 32, 64), (2, 2, 3, 2), "teacher"),
            lambda: app_convnext((8, 16, 16, 32), (1, 1, 2, 1), "student"),
            {"skip": ("head", "student_head_dense")},
        ),
    }


@pytest.mark.parametrize(
    "name", ["keras_convnext", "keras_hub_resnet_basic", "keras_hub_resnet_bottleneck", "keras_hub_vit"]
)
def test_the_ecosystem_families_plans_are_derived(name):
    pytest.importorskip("keras_hub")
    teacher, student, options = _ecosystem()[name]
    report = assert_plans_agree(randomize(teacher()), student(), **options)
    assert report.family == name


def test_plan_prints_a_familys_plan_too():
    from keras_structinit.selection import plan

    teacher = ks.models.vit(4, 64, 4, 4, num_classes=10, input_shape=IMAGE)
    student = ks.models.vit(4, 32, 2, 2, num_classes=10, input_shape=IMAGE)
    text = str(plan(student, teacher))
    assert text.startswith("Selection plan (vit): 38 student variable(s) from the teacher, 2 keep their")
    assert (
        "block_1_attention/query/kernel (32, 2, 16) <- block_1_attention/query/kernel (64, 4, 16): "
        "uniform 0:64:2, uniform 0:64:2, (flattened with the previous axis)"
    ) in text
    kept = "classifier: keeps the student's init (copy_head=True, --copy-head on the command line, copies it)"
    assert text.endswith(f"Keep their initialization (2):\n  head/kernel: {kept}\n  head/bias: {kept}")
