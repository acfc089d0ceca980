"""The benchmarks' shared runner: which backends ``--all-backends`` runs, and how."""

import importlib.util
import subprocess
import sys

from benchmarks import BENCH_DIR, bench_utils

from conftest import once_per_suite

pytestmark = once_per_suite("the runner's backend choice and launch are plain Python")


def _without(monkeypatch, missing):
    real = importlib.util.find_spec
    monkeypatch.setattr(bench_utils.importlib.util, "find_spec",
                        lambda name, *a: None if name == missing else real(name, *a))


def test_installed_backends_leaves_out_a_missing_package_and_says_so(monkeypatch, capsys):
    _without(monkeypatch, "tensorflow")
    assert bench_utils.installed_backends() == ["jax", "torch"]
    assert capsys.readouterr().out == "[tensorflow] skipped: the tensorflow package is not installed\n"
    assert bench_utils.installed_backends(announce=False) == ["jax", "torch"]
    assert capsys.readouterr().out == ""


def test_all_backends_runs_one_subprocess_per_installed_backend(monkeypatch, capsys):
    _without(monkeypatch, "tensorflow")
    commands = []
    monkeypatch.setattr(bench_utils.subprocess, "run",
                        lambda command, cwd, check: commands.append((command, cwd)))

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
