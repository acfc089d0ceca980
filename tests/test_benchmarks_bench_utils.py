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
