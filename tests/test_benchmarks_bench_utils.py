"""The benchmarks' shared runner: which backends ``--all-backends`` runs, and how."""

import importlib.util
import subprocess
import sys

import pytest

from benchmarks import BENCH_DIR, bench_utils

from conftest import once_per_suite

pytestmark = once_per_suite("the runner's backend choice and launch are plain Python")


def _without(monkeypatch, missing):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        bench_utils.importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a)
    )


def test_installed_backends_leaves_out_a_missing_package_and_says_so(monkeypatch, capsys):
    _without(monkeypatch, "tensorflow")
    assert bench_utils.installed_backends() == ["jax", "torch"]
    assert capsys.readouterr().out == "[tensorflow] skipped: the tensorflow package is not installed\n"
    assert bench_utils.installed_backends(announce=False) == ["jax", "torch"]
    assert capsys.readouterr().out == ""


def test_all_backends_runs_one_subprocess_per_installed_backend(monkeypatch, capsys):
    _without(monkeypatch, "tensorflow")
    commands = []
    monkeypatch.setattr(
        bench_utils.subprocess, "run", lambda command, cwd, check: commands.append((command, cwd))
    )

    def parse_args(argv):
        parser = bench_utils.backend_parser("test")
        parser.add_argument("--repeats")
        return parser.parse_args(argv)

    def never(*args):
        raise AssertionError("the parent process runs no backend itself")

    script = BENCH_DIR / "selection_speed.py"
    argv = ["--all-backends", "--repeats", "2"]
    bench_utils.run_per_backend(script, "name", parse_args, never, never, argv)
    root = BENCH_DIR.parent
    assert commands == [
        ([sys.executable, "-m", "benchmarks.selection_speed", "--backend", backend, "--repeats", "2"], root)
        for backend in ("jax", "torch")
    ]
    assert "[tensorflow] skipped" in capsys.readouterr().out


def test_a_script_started_again_runs_as_a_module_of_the_benchmarks_package(tmp_path):
    launch, root = bench_utils.script_command(BENCH_DIR / "lc_speed.py")
    assert launch[1:] == ["-m", "benchmarks.lc_speed"] and root == BENCH_DIR.parent
    out = subprocess.run([*launch, "--help"], cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "--backends" in out.stdout


def test_benchmark_rand_augment_flags_take_named_forms_only():
    """--rand-augment names the form it applies (issue 58, point 3): Keras' (2, 0.4) was called
    "as in the paper"; the suites' entries pass a papers' form."""
    import argparse

    from benchmarks import bench_utils, covariance_accuracy, covariance_transfer
    from benchmarks.suite import SUITES

    assert bench_utils.rand_augment_form("torchvision:n2-m12") == "torchvision:n2-m12"
    for bad in ("2,0.4", "keras:n2-f0.4", "m9", "timm"):
        with pytest.raises(argparse.ArgumentTypeError, match="named form"):
            bench_utils.rand_augment_form(bad)
    assert bench_utils.rand_augment_text(True) == "Keras' (2, 0.4)"  # what older records meant
    assert bench_utils.rand_augment_text(None) == "off"
    for module in (covariance_accuracy, covariance_transfer):
        argv = [module.EXPERIMENTS[0], "--rand-augment", "timm:m9-n2-mstd0.5-inc1"]
        assert module.parse_args(argv).rand_augment == "timm:m9-n2-mstd0.5-inc1"
    for suite in SUITES.values():
        for bench in suite:
            for args in (bench.args, *bench.more_args):
                if "--rand-augment" in args:
                    form = args[list(args).index("--rand-augment") + 1]
                    assert bench_utils.rand_augment_form(form) == form, bench.name


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_shards_split_a_plan_without_overlap_and_share_its_costly_runs(count):
    # alignment_accuracy's plan: (variant, seed, iterations), iterations innermost (100, 1000).
    plan = [(v, s, it) for s in range(3) for v in range(6) for it in (100, 1000)]
    parts = [bench_utils.shard_of(plan, (i, count)) for i in range(count)]
    assert sorted(sum(parts, [])) == sorted(plan)
    assert all(part == [run for run in plan if run in part] for part in parts)  # plan order kept
    sizes = [len(part) for part in parts]
    assert max(sizes) - min(sizes) <= 1
    costly = [sum(run[2] == 1000 for run in part) for part in parts]
    assert max(costly) - min(costly) <= 1, costly  # dealing in turn gave shard 2/2 all 18
    assert bench_utils.shard_of(plan, (1, 2))[:3] == [(0, 0, 1000), (1, 0, 100), (2, 0, 1000)]


# ----------------------------------------------------------------------------
# The fixed split (issue 79, point 5): training, validation and a test part that chose nothing
# ----------------------------------------------------------------------------
import numpy as np  # noqa: E402

#: CIFAR-10's training labels in source order (5,000 a class, class after class).
CIFAR10_LABELS = np.repeat(np.arange(10), 5000)


def test_the_three_parts_are_disjoint_and_cover_the_set_with_their_sizes():
    split = bench_utils.cifar_split(CIFAR10_LABELS)
    parts = {name: split.part(name) for name in bench_utils.SPLIT_PARTS}
    assert {name: len(p) for name, p in parts.items()} == {"train": 40000, "validation": 5000, "test": 5000}
    union = np.concatenate(list(parts.values()))
    assert len(np.unique(union)) == len(union) == 50000  # disjoint, and all of it
    for name, indices in parts.items():
        assert np.all(np.diff(indices) > 0), name  # sorted, no repeats
    for name in ("validation", "test"):  # stratified: 500 of each class
        assert np.bincount(CIFAR10_LABELS[parts[name]], minlength=10).tolist() == [500] * 10
    record = split.record()
    assert record["test"] == {"size": 5000, "sha256": bench_utils.index_digest(parts["test"])}
    assert record["total"] == 50000 and record["seed"] == bench_utils.SPLIT_SEED


def test_the_digests_are_stable_and_name_the_sets_not_their_order():
    split = bench_utils.cifar_split(CIFAR10_LABELS)
    assert split.digest("test") == bench_utils.CIFAR10_TEST_SHA256
    assert split.digest("validation") == bench_utils.CIFAR10_VALIDATION_SHA256
    assert bench_utils.cifar_split(CIFAR10_LABELS).digest("train") == split.digest("train")
    shuffled = np.random.default_rng(1).permutation(split.test)
    assert bench_utils.index_digest(shuffled) == split.digest("test")
    assert bench_utils.index_digest([3, 17, 42]) == __import__("hashlib").sha256(b"3,17,42").hexdigest()


def test_the_validation_part_is_the_held_out_split_the_defaults_were_chosen_on():
    from keras_structinit.datasets import stratified_split

    split = bench_utils.cifar_split(CIFAR10_LABELS)
    _, held_out = stratified_split(CIFAR10_LABELS, 0.1, 0)  # load_cifar(validation_split=0.1, seed=0)
    assert np.array_equal(split.validation, held_out)


def test_the_split_refuses_sizes_that_leave_no_training_images():
    with pytest.raises(ValueError, match="leave training images"):
        bench_utils.cifar_split(np.repeat(np.arange(2), 5), test_size=5, validation_size=5)
    with pytest.raises(ValueError, match="test_size"):
        bench_utils.cifar_split(CIFAR10_LABELS, test_size=-1)


def test_load_split_gives_nested_training_subsets_and_records_what_it_used(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 50)
    images = rng.integers(0, 256, (200, 8, 8, 3), dtype=np.uint8)
    images[:, 0, 0, 0] = np.arange(200) % 256  # which source image each is
    np.savez(tmp_path / "d.npz", x=images, y=labels)
    small = bench_utils.load_split(tmp_path / "d.npz", train_size=10, validation_size=0, test_size=8)
    large = bench_utils.load_split(tmp_path / "d.npz", train_size=30, validation_size=6)
    assert small.validation is None and "validation" not in small.record["used"]
    assert len(small.train[0]) == 10 and len(small.test[0]) == 8 and len(large.validation[0]) == 6
    first = {int(v) for v in small.train[0][:, 0, 0, 0]}
    assert first <= {int(v) for v in large.train[0][:, 0, 0, 0]}  # a smaller size is a subset
    assert not first & {int(v) for v in large.test[0][:, 0, 0, 0]}  # never the test part
    used = large.record["used"]
    assert used["test"]["size"] == large.record["test"]["size"]  # all of the test part by default
    assert used["test"]["sha256"] == large.record["test"]["sha256"]
    assert small.record["used"]["test"]["sha256"] != small.record["test"]["sha256"]  # a subset
    with pytest.raises(ValueError, match="train_offset"):
        bench_utils.load_split(tmp_path / "d.npz", train_size=10_000)


def test_a_result_says_which_split_its_numbers_come_from():
    record = bench_utils.cifar_split(CIFAR10_LABELS).record()
    record["used"] = {"test": {"size": 2000, "sha256": "x"}}
    note = bench_utils.split_note({"split": record})
    assert note.startswith("test part: 2,000 of its 5,000 images (sha256 b5c99020ddf8)")
    assert "chose" in bench_utils.split_note({"held_out": "stratified 10% of the training split, seed 0"})
    assert bench_utils.accuracy_of({"val_accuracy": 0.5, "test_accuracy": 0.25}) == 0.25
    assert bench_utils.accuracy_of({"val_accuracy": 0.5}) == 0.5  # recorded before the split
