"""The weight-selection entries' teachers, students and split (issue 79, points 2 and 5): every entry
of ``benchmarks/selection_accuracy.py`` (and of ``selection_mimetic.py`` and ``selection_setup.py``,
which run it) trains one teacher per student seed, at least three, on images of the fixed split's
training part disjoint from the students', reports on the split's test part (which chose nothing),
and its results record the parts as ``teacher_data`` and ``student_data`` and the split (the test
part's digest among it) as ``split``.

The entries' plans are checked on 50,000 synthetic 4x4 images whose pixels spell their index and
whose labels are CIFAR-10's in source order (5,000 a class, class after class, so the split's parts
are the shared CIFAR-10's, digests included), read through the same ``load_split`` calls as the
script's (so the positions an entry records are the images it trains on): teachers', students',
test and validation images pairwise disjoint for every seed. A tiny run of the script (synthetic
images, three seeds) records three teachers, each run's parts and each teacher's, the split, the
students' test accuracy, and resumes without training a teacher again for runs that are done.
"""

import json

import numpy as np
import pytest
from test_cli import write_tiny_cifar

from benchmarks import RESULTS_DIR
from benchmarks import selection_accuracy as sa
from benchmarks import selection_mimetic as sm
from benchmarks import selection_setup as ss
from benchmarks.bench_utils import (
    CIFAR10_TEST_SHA256,
    CIFAR10_VALIDATION_SHA256,
    accuracy_of,
    cifar_split,
    data_provenance,
    index_digest,
    load_split,
)
from benchmarks.suite import SUITES

from conftest import REPO_ROOT, once_per_suite

#: The scripts whose entries train weight-selection teachers, and the module that parses each.
SCRIPTS = {"selection_accuracy.py": sa, "selection_mimetic.py": sm, "selection_setup.py": ss}
#: CIFAR-10's training split: 50,000 images, 40,000 in the fixed split's training part.
TRAINING_SPLIT = 50_000
TRAINING_PART = 40_000


def _entries():
    seen = {}
    for suite, benches in SUITES.items():
        for bench in benches:
            if bench.script in SCRIPTS:
                seen[(suite.split("-")[0], bench.name)] = bench
    return sorted(seen.items())


ENTRIES = _entries()


def _parsed(bench):
    module = SCRIPTS[bench.script]
    return module.parse_args([*bench.args, "--data", str(REPO_ROOT), "--out", "results"])


@pytest.fixture(scope="module")
def indexed_data(tmp_path_factory):
    """An .npz of 50,000 synthetic 4x4 images labelled as CIFAR-10's training split is (5,000 a class,
    class after class); each image's first three pixels' red values spell its index."""
    index = np.arange(TRAINING_SPLIT)
    x = np.zeros((TRAINING_SPLIT, 4, 4, 3), np.uint8)
    x[:, 0, 0, 0], x[:, 0, 1, 0], x[:, 0, 2, 0] = index % 256, index // 256 % 256, index // 65536
    path = tmp_path_factory.mktemp("indexed") / "indexed.npz"
    np.savez(path, x=x, y=np.repeat(np.arange(10), TRAINING_SPLIT // 10))
    return path


def _ids(images):
    x = images[0].astype(np.int64)
    return x[:, 0, 0, 0] + 256 * x[:, 0, 1, 0] + 65536 * x[:, 0, 2, 0]


def test_every_selection_entry_is_found():
    names = {name for (_, name), _ in ENTRIES}
    assert {
        "selection_accuracy",
        "selection_table7",
        "selection_five_seeds",
        "selection_derived",
        "selection_mimetic",
        "selection_setup",
    } <= names


@pytest.mark.parametrize("key", [key for key, _ in ENTRIES], ids=lambda key: "-".join(key))
def test_each_entry_plans_a_teacher_per_seed_on_images_its_students_never_see(key, indexed_data):
    bench = dict(ENTRIES)[key]
    args = _parsed(bench)
    with sm.with_mimetic_variant():  # selection_mimetic's variant among the tables, as while it runs
        teachers = sa.planned_teachers(args)
    # At least three teachers, one per student seed, each trained with its student's seed.
    assert len(teachers) >= 3 and sorted(teachers) == sorted(args.seeds)
    assert len(set(teachers.values())) == len(teachers)
    assert bench.artifacts == tuple(path.name for path in teachers.values())
    assert bench.artifacts == sa.teacher_files(args.name, args.seeds)
    # The split as the script loads it: the students' images, the test part it reports on, the
    # validation images it evaluates where asked (none by default; here the whole part, to check it).
    parts = load_split(
        indexed_data, train_size=args.student_train_size, validation_size=None, test_size=args.test_size
    )
    assert parts.record["train"]["size"] == TRAINING_PART
    assert parts.record["test"]["sha256"] == CIFAR10_TEST_SHA256  # the fixed test part
    assert parts.record["validation"]["sha256"] == CIFAR10_VALIDATION_SHA256
    assert args.test_size is None and parts.record["used"]["test"] == parts.record["test"]  # all of it
    assert args.validation_size == 0  # nothing in the study is chosen: no validation images by default
    student_data, teacher_data = sa.data_parts(
        {"name": "x", "sha256": "0"}, TRAINING_PART, args.student_train_size, args.teacher_train_size
    )
    (s0, s1), (t0, t1) = student_data["indices"], teacher_data["indices"]
    assert (s0, s1) == (0, args.student_train_size) and s1 <= t0 < t1 <= TRAINING_PART
    assert args.teacher_train_size is None or t1 - t0 == args.teacher_train_size
    students = _ids(sa.part_images(indexed_data, student_data))
    assert len(students) == args.student_train_size == len(set(students))
    np.testing.assert_array_equal(students, _ids(parts.train))  # the images the script trains them on
    assert index_digest(students) == parts.record["used"]["train"]["sha256"]
    test, validation = set(_ids(parts.test)), set(_ids(parts.validation))
    assert len(test) == 5_000 and len(validation) == 5_000
    for seed in args.seeds:  # every seed's teacher trains on the same positions, with its own seed
        teacher = _ids(sa.part_images(indexed_data, teacher_data))
        assert len(teacher) == t1 - t0 == len(set(teacher))
        named = {"teacher": set(teacher), "students": set(students), "test": test, "validation": validation}
        for a, first in named.items():
            for b, second in named.items():
                assert a == b or not first & second, (seed, a, b)


@once_per_suite("reads recorded JSON: no backend")
@pytest.mark.parametrize("name", sorted({name for (suite, name), _ in ENTRIES if suite == "cpu"}))
def test_every_recorded_result_names_disjoint_parts_and_a_teacher_per_seed(name):
    """Issue 79's acceptance on the recorded CPU results: the config and every run record the students'
    and the teachers' images as ``{name, sha256, indices}`` of one file, disjoint; every student seed
    has a teacher of its own, trained with that seed on the teachers' images; 3 teachers or more."""
    path = RESULTS_DIR / "cpu" / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path.name} not recorded")
    data = json.loads(path.read_text())
    config = data["config"]
    students, teachers = config["student_data"], config["teacher_data"]
    for part in (students, teachers):
        assert {"name", "sha256", "indices"} <= set(part) and len(part["sha256"]) == 64
    assert (students["name"], students["sha256"]) == (teachers["name"], teachers["sha256"])
    (s0, s1), (t0, t1) = students["indices"], teachers["indices"]
    assert 0 <= s0 < s1 <= t0 < t1 <= TRAINING_PART  # disjoint ranges of one order
    for run in data["runs"]:
        assert (run["student_data"], run["teacher_data"]) == (students, teachers)
    seeds = sorted({run["seed"] for run in data["runs"]})
    by_seed = {teacher["seed"]: teacher for teacher in data["teachers"].values()}
    assert len(by_seed) == len(data["teachers"]) >= 3 and sorted(by_seed) == seeds
    assert all(teacher["data"] == teachers for teacher in by_seed.values())


def test_the_parts_must_fit_disjoint_in_the_training_images():
    provenance = {"name": "cifar10-train-jpeg.zip", "sha256": "0" * 64}
    student, teacher = sa.data_parts(provenance, TRAINING_PART, 3_000)
    assert student == {**provenance, "indices": [0, 3_000], "order": sa.ORDER}
    assert teacher == {**provenance, "indices": [3_000, 40_000], "order": sa.ORDER}
    assert sa.data_parts(provenance, TRAINING_PART, 3_000, 20_000)[1]["indices"] == [3_000, 23_000]
    for sizes in ((40_000, None), (3_000, 37_001), (0, 10)):
        with pytest.raises(ValueError, match="disjoint"):
            sa.data_parts(provenance, TRAINING_PART, *sizes)


def test_a_teacher_pattern_must_name_the_seed(capsys):
    base = ["--data", str(REPO_ROOT), "--out", "o"]
    with pytest.raises(SystemExit):
        sa.parse_args([*base, "--teacher", "t.keras"])
    assert "--teacher must hold {seed}" in capsys.readouterr().err
    args = sa.parse_args([*base, "--teacher", "t{seed}.keras", "--seeds", "3", "4", "5"])
    assert {s: p.name for s, p in sa.planned_teachers(args).items()} == {
        3: "t3.keras",
        4: "t4.keras",
        5: "t5.keras",
    }
    assert sa.planned_teachers(sa.parse_args([*base, "--variants", "random_init"])) == {}


@once_per_suite("the script's bookkeeping; the suite runs the entries on torch")
def test_tiny_run_records_three_teachers_on_images_disjoint_from_the_students(tmp_path):
    data_path = write_tiny_cifar(tmp_path / "tiny.npz", 100, 0)
    out = tmp_path / "out"
    argv = ["--data", data_path, "--out", str(out), "--backend", "torch"]
    argv += ["--student-dim", "16", "--student-heads", "2", "--student-depth", "1", "--teacher-depth", "1"]
    argv += ["--teacher-epochs", "1", "--student-train-size", "32", "--teacher-train-size", "40"]
    argv += ["--student-epochs", "1", "--probe-epochs", "1", "--batch-size", "32", "--validation-size", "5"]
    argv += ["--variants", "random_init", "uniform", "--seeds", "0", "1", "2"]
    sa.main(argv)

    data = json.loads((out / "selection_accuracy.json").read_text())
    config, teachers = data["config"], data["teachers"]
    provenance = data_provenance(data_path)
    assert config["student_data"] == {**provenance, "indices": [0, 32], "order": sa.ORDER}
    assert config["teacher_data"] == {**provenance, "indices": [32, 72], "order": sa.ORDER}
    assert config["teacher_train_size"] == 40
    # The split (issue 79, point 5): of 100 images 10 validation, 10 test, 80 training; its digests.
    x, y = (np.load(data_path)[k] for k in ("x", "y"))
    split = cifar_split(y)
    assert config["split"]["test"] == {"size": 10, "sha256": index_digest(split.test)}
    assert config["split"]["validation"]["sha256"] == index_digest(split.validation)
    assert config["split"]["train"]["size"] == 80 and "held_out" not in config
    assert config["split"]["used"]["validation"]["size"] == 5
    assert sorted(teachers) == ["T0", "T1", "T2"]
    assert [teachers[t]["seed"] for t in ("T0", "T1", "T2")] == [0, 1, 2]
    assert len({t["fingerprint"] for t in teachers.values()}) == 3
    students = set(_ids_of_images(sa.part_images(data_path, config["student_data"])[0], x))
    assert index_digest(sorted(students)) == config["split"]["used"]["train"]["sha256"]
    test, validation = set(split.test.tolist()), set(split.validation.tolist())
    assert len(data["runs"]) == 6
    for run in data["runs"]:
        assert run["student_data"] == config["student_data"] and run["teacher_data"] == config["teacher_data"]
        # Reported on the test part; the validation images asked for measured beside it.
        assert 0 <= run["test_accuracy"] <= 1 and accuracy_of(run) == run["test_accuracy"]
        assert 0 <= run["val_accuracy"] <= 1 and 0 <= run["probe_val_accuracy"] <= 1
        if run["variant"] == "uniform":
            teacher = teachers[run["teacher_id"]]
            assert teacher["seed"] == run["seed"] and teacher["data"] == run["teacher_data"]
            assert 0 <= teacher["test_accuracy"] <= 1
            seen = set(_ids_of_images(sa.part_images(data_path, teacher["data"])[0], x))
            assert teacher["images"]["sha256"] == index_digest(sorted(seen))
            named = {"teacher": seen, "students": students, "test": test, "validation": validation}
            assert len(seen) == 40 and len(students) == 32
            for a, first in named.items():
                for b, second in named.items():
                    assert a == b or not first & second, (run["seed"], a, b)
        else:
            assert "teacher_id" not in run
    text = (out / "selection_accuracy.md").read_text()
    assert "the students train on images [0, 32), the teachers on [32, 72)" in text
    assert "One teacher per student seed" in text
    assert "| uniform | T0, T1, T2 |" in text
    assert f"accuracy on the test part: 10 of its 10 images (sha256 {index_digest(split.test)[:12]})" in text
    assert "| test acc. % (mean ± std) |" in text
    headline, _ = sa.headline("selection_accuracy", data)
    assert headline.startswith("test accuracy: random_init")

    # Resumed without seed 1's teacher file: its runs are done, so no teacher is trained again.
    (out / sa.teacher_file("selection_accuracy", 1)).unlink()
    sa.main(argv)
    again = json.loads((out / "selection_accuracy.json").read_text())
    assert sorted(again["teachers"]) == ["T0", "T1", "T2"] and len(again["runs"]) == 6


def _ids_of_images(images, train_images):
    """Positions in ``train_images`` of each of ``images`` (random images: no two alike)."""
    rows = {image.tobytes(): i for i, image in enumerate(train_images)}
    return [rows[image.tobytes()] for image in images]


ARCHIVED = ("accuracy", "five_seeds", "table7", "derived", "mimetic", "setup")


@pytest.mark.parametrize("name", [f"selection_{n}" for n in ARCHIVED])
def test_the_runs_whose_teacher_saw_the_students_images_are_archived(name):
    """The entries' results before issue 79 are kept in results/archive/ (not read by the report,
    which reads results/<suite>/), named and marked for what they were; they still render."""
    from benchmarks import report

    archive = report.RESULTS_DIR / "archive"
    path = archive / f"{name}_teacher_saw_students.json"
    data = json.loads(path.read_text())
    assert "student_data" not in data["config"] and sorted(sa.teachers_of(data)) == ["A"]
    assert (
        path.with_suffix(".md")
        .read_text()
        .startswith("> Archived by issue 79: **the teacher saw the students' images.**")
    )
    assert f"`{name}" in (archive / "README.md").read_text()  # its note there
    module = ss if name == "selection_setup" else sm if name == "selection_mimetic" else sa
    text = module.render_markdown(data)
    assert "Teacher A:" in text and "the teacher saw the students' images" in text
    # Recorded before the split: read as held-out accuracy (accuracy_of falls back on val_accuracy).
    assert "accuracy on the 5,000 held-out images" in text and "| held-out acc. % (mean ± std) |" in text
    assert all("test_accuracy" not in run for run in data["runs"])
    headline, _ = module.headline(name, data)
    assert headline.startswith("plain setup: " if name == "selection_setup" else "held-out accuracy: ")
