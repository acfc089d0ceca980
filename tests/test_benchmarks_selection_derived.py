"""The CPU suite's ``selection_derived`` entry (issue 60): weight selection by the plan derived from two
keras.applications MobileNetV2 models, run by ``benchmarks/selection_accuracy.py --model mobilenet_v2``.

The entry is declared with its models, variants and seeds; a tiny run of the script (100 synthetic
images, one epoch, one seed) writes results whose uniform student started from the teacher's
reference uniform slices (the rule of ``tests/test_selection_derived.py``) on every variable but the
classifier, and whose record names the plan and the fraction of the student's variables selected.
"""

import json

import keras
import numpy as np
import pytest
from test_selection_derived import normalized, uniform_slice

from benchmarks import selection_accuracy as sa
from benchmarks.suite import CPU

from conftest import REPO_ROOT, once_per_suite, to_numpy

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entry on torch")

pytest.importorskip("keras_structinit.selection.derive", reason="no derived selection plan (issue 60)")

NAME = "selection_derived"


def _entry():
    found = [b for b in CPU if b.name == NAME]
    if not found:
        pytest.skip(f"no {NAME!r} entry in the CPU suite")
    return found[0]


def _value(args, option):
    return args[args.index(option) + 1]


def test_entry_declares_models_variants_and_seeds():
    bench = _entry()
    args = list(bench.args)
    assert bench.script == "selection_accuracy.py"
    assert _value(args, "--name") == NAME and _value(args, "--model") == "mobilenet_v2"
    assert args[args.index("--variants") + 1 : args.index("--seeds")] == ["random_init", "uniform"]
    assert args[args.index("--seeds") + 1 :] == ["0", "1", "2"]
    assert bench.estimated and bench.minutes > 0
    # Issue 79: one teacher per seed, on the 37,000 images of the split's 40,000-image training part
    # the students' 3,000 leave.
    assert bench.artifacts == tuple(f"{NAME}_teacher_seed{s}.keras" for s in range(3))
    assert "keras_structinit/selection" in bench.dependencies
    parsed = sa.parse_args([*args, "--data", str(REPO_ROOT)])  # any existing path passes the check
    assert (parsed.teacher_alpha, parsed.student_alpha) == (1.0, 0.5)
    assert (parsed.student_train_size, parsed.teacher_train_size, parsed.teacher_epochs) == (3000, 37000, 4)
    student_data, teacher_data = sa.data_parts({"name": "x"}, 40000, 3000, parsed.teacher_train_size)
    assert student_data["indices"] == [0, 3000] and teacher_data["indices"] == [3000, 40000]
    config = sa.architecture(parsed)
    assert config["model"] == "mobilenet_v2" and "patch_size" not in config
    smoke = sa.parse_args([*bench.smoke_args, "--data", str(REPO_ROOT)])
    assert (smoke.name, smoke.model, smoke.variants) == (NAME, "mobilenet_v2", ["random_init", "uniform"])


def test_vit_only_variants_are_refused_for_mobilenet(capsys):
    with pytest.raises(SystemExit) as exit_info:
        sa.parse_args(
            ["--model", "mobilenet_v2", "--variants", "trunc_normal_init", "--data", str(REPO_ROOT)]
        )
    assert exit_info.value.code == 2
    assert "--variants trunc_normal_init need --model vit" in capsys.readouterr().err


@pytest.fixture
def one_torch_thread():
    """MobileNetV2's many small ops on two torch threads stall at every op's barrier on a busy 2-core
    machine (measured 8 s a step instead of 0.2 s): the tiny run takes one thread."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_tiny_run_starts_the_uniform_student_from_the_teachers_uniform_slices(tmp_path, one_torch_thread):
    rng = np.random.default_rng(0)
    data_path = tmp_path / "tiny.npz"
    np.savez(
        data_path,
        x=rng.integers(0, 256, (100, 32, 32, 3), dtype=np.uint8),
        y=np.repeat(np.arange(10), 10).astype(np.int32),
    )
    out = tmp_path / "out"
    argv = ["--data", str(data_path), "--out", str(out), "--name", NAME, "--model", "mobilenet_v2"]
    argv += ["--teacher-epochs", "1", "--student-train-size", "32", "--student-epochs", "1"]
    argv += ["--probe-epochs", "1", "--batch-size", "32", "--variants", "random_init", "uniform"]
    sa.main([*argv, "--seeds", "0"])

    data = json.loads((out / f"{NAME}.json").read_text())
    runs = {r["variant"]: r for r in data["runs"]}
    assert sorted(runs) == ["random_init", "uniform"]
    uniform, random_init = runs["uniform"], runs["random_init"]
    assert uniform["teacher_id"] == "T0" and uniform["selection_family"] == "derived"
    # The split's 80 training images of 100 (10 validation, 10 test): the teacher takes the 48 left.
    assert uniform["teacher_data"]["indices"] == [32, 80] and uniform["student_data"]["indices"] == [0, 32]
    assert "selected_fraction" not in random_init and "teacher_id" not in random_init
    assert 0 <= uniform["test_accuracy"] <= 1 and 0 <= uniform["probe_accuracy"] <= 1
    assert "val_accuracy" not in uniform  # no validation images by default: nothing is chosen
    assert data["config"]["split"]["test"]["size"] == 10

    # The students a run starts from, rebuilt: the records name these weights.
    teacher = keras.saving.load_model(out / sa.teacher_file(NAME, 0), compile=False)
    assert sa.fingerprint(teacher) == data["teachers"]["T0"]["fingerprint"]
    student, record = sa.init_student(data["config"], "uniform", 0, teacher)
    assert record["init_fingerprint"] == uniform["init_fingerprint"]
    own, _ = sa.init_student(data["config"], "random_init", 0, teacher)
    assert sa.fingerprint(own) == random_init["init_fingerprint"] != uniform["init_fingerprint"]

    teacher_vars = {normalized(v.path): v for v in teacher.weights}
    own_vars = {v.path: v for v in own.weights}
    selected = 0
    for v in student.weights:
        if v.path.startswith("predictions/"):  # the classifier keeps the seed's own init
            np.testing.assert_array_equal(to_numpy(v), to_numpy(own_vars[v.path]), err_msg=v.path)
            continue
        expected = uniform_slice(to_numpy(teacher_vars[normalized(v.path)]), tuple(v.shape))
        np.testing.assert_array_equal(to_numpy(v), expected, err_msg=v.path)
        selected += 1
    assert selected == len(student.weights) - 2
    assert uniform["selected_fraction"] == selected / len(student.weights)

    text = (out / f"{NAME}.md").read_text()
    fraction = f"derived, {100 * uniform['selected_fraction']:.1f} % of the student's variables selected"
    assert fraction in text and "keras.applications MobileNetV2 (alpha 0.5" in text
    # What the suite report reads: the paired difference per seed, and the headline.
    (comparison, *_) = sa.comparisons(NAME, data)
    assert comparison.label == "uniform − random_init" and comparison.seeds == [0]
    headline, _ = sa.headline(NAME, data)
    assert headline.startswith("test accuracy: random_init")
