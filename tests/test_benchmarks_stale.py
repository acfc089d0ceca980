"""Staleness of recorded results (issue 59, point 3): which code an entry depends on, and whether it
changed after the commit its results record, in a temporary git repository."""

import shutil
import subprocess

import pytest

from benchmarks import BENCH_DIR, bench_utils
from benchmarks.bench_utils import SAME_CODE_ENV, Comparison, by_seed, code_provenance
from benchmarks.run import changed_files, code_records, resumed_code, stale_status
from benchmarks.suite import CPU, Benchmark

from conftest import once_per_suite

pytestmark = [
    once_per_suite("staleness is git and plain Python"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

BENCH = Benchmark(name="selection_accuracy", script="selection_accuracy.py", depends=("extra.py",))


@pytest.fixture
def repo(tmp_path):
    def git(*args):
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    files = [
        "keras_structinit/recipes/training.py",
        "keras_structinit/models/vit.py",
        "keras_structinit/selection/select.py",
        "keras_structinit/lc/layers.py",
        "benchmarks/selection_accuracy.py",
        "benchmarks/lc_accuracy.py",
        "extra.py",
        "README.md",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("one\n")
    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    git("add", ".")
    git("commit", "-q", "-m", "one")

    def commit(message):
        git("add", ".")
        git("commit", "-q", "-m", message)

    return tmp_path, git("rev-parse", "HEAD"), commit


def _head(root):
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _result(commit, runs=()):
    return {"code": {"commit": commit, "dirty": False}, "runs": list(runs)}


def test_an_entry_depends_on_the_recipes_models_its_init_its_script_and_what_it_declares():
    deps = BENCH.dependencies
    for path in (
        "keras_structinit/recipes",
        "keras_structinit/models",
        "keras_structinit/selection",
        "keras_structinit/datasets",
        "benchmarks/selection_accuracy.py",
        "extra.py",
    ):
        assert path in deps
    assert "keras_structinit/lc" not in deps and "keras_structinit/mimetic" not in deps
    outside = Benchmark(name="fake", script="/somewhere/else/fake_bench.py").dependencies
    assert not any(p.startswith("benchmarks/") for p in outside)
    for bench in CPU:  # every declared path exists in this checkout
        for path in bench.dependencies:
            assert (BENCH_DIR.parent / path).exists(), (bench.name, path)


def test_unrelated_changes_leave_an_entry_fresh_and_its_code_changes_make_it_stale(repo):
    root, first, commit = repo
    assert stale_status(BENCH, [_result(first)], root) is None
    (root / "README.md").write_text("two\n")
    (root / "keras_structinit/lc/layers.py").write_text("two\n")  # another method's code
    (root / "benchmarks/lc_accuracy.py").write_text("two\n")  # another entry's script
    commit("unrelated")
    assert stale_status(BENCH, [_result(first)], root) is None

    (root / "keras_structinit/selection/select.py").write_text("two\n")  # not committed yet
    assert changed_files(first, BENCH.dependencies, root) == ["keras_structinit/selection/select.py"]
    assert stale_status(BENCH, [_result(first)], root) == f"stale (1 file(s) changed since {first[:7]})"
    commit("selection changed")
    assert stale_status(BENCH, [_result(first)], root) == f"stale (1 file(s) changed since {first[:7]})"
    (root / "keras_structinit/recipes/new_stream.py").write_text("new\n")  # untracked
    (root / "extra.py").write_text("two\n")  # declared by the entry
    assert changed_files(first, BENCH.dependencies, root) == [
        "extra.py",
        "keras_structinit/recipes/new_stream.py",
        "keras_structinit/selection/select.py",
    ]
    # A result of today's commit is fresh only when the tree holds no further change.
    now = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert stale_status(BENCH, [_result(now)], root) == f"stale (2 file(s) changed since {now[:7]})"
    commit("all")
    now = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert stale_status(BENCH, [_result(now)], root) is None
    # One run of an older commit makes the whole entry stale.
    mixed = _result(now, [{"seed": 0, "code": {"commit": first, "dirty": False}}])
    since = ", ".join(sorted((first[:7], now[:7])))  # in the order of their hashes
    assert stale_status(BENCH, [mixed], root) == f"stale (3 file(s) changed since {since})"


def test_a_resume_after_unrelated_commits_records_the_code_it_shares_and_pairs(repo, monkeypatch):
    root, first, commit = repo
    earlier = _result(first, [{"seed": 0, "code": {"commit": first, "dirty": False}}])
    assert resumed_code(BENCH, [earlier], root) is None  # HEAD is the runs' commit: nothing to say
    (root / "README.md").write_text("two\n")
    (root / "benchmarks/lc_accuracy.py").write_text("two\n")  # another entry's script
    commit("unrelated")
    second = _head(root)
    assert resumed_code(BENCH, [earlier], root) == first
    dirty = _result(first, [{"seed": 0, "code": {"commit": first, "dirty": True}}])
    assert resumed_code(BENCH, [dirty], root) is None  # the earlier runs' code is not the commit's
    mixed = _result(first, [{"seed": 0, "code": {"commit": second, "dirty": False}}])
    assert resumed_code(BENCH, [mixed], root) is None  # no single commit to pair with
    resumed = _result(first, [{"seed": 0, "code": {"commit": second, "dirty": False, "same_code_as": first}}])
    assert resumed_code(BENCH, [resumed], root) == first  # a second resume keeps the first commit

    # The process the runner starts records both commits; a clean tree only.
    monkeypatch.setenv(SAME_CODE_ENV, first)
    bench_utils._code_at.cache_clear()
    assert code_provenance(root) == {"commit": second, "dirty": False, "same_code_as": first}
    monkeypatch.setenv(SAME_CODE_ENV, second)
    assert code_provenance(root) == {"commit": second, "dirty": False}
    (root / "README.md").write_text("three\n")
    bench_utils._code_at.cache_clear()
    monkeypatch.setenv(SAME_CODE_ENV, first)
    assert code_provenance(root) == {"commit": second, "dirty": True}
    bench_utils._code_at.cache_clear()

    # Runs of one seed on the two commits pair only where the later one says it shares the code.
    def runs(variant, code, acc):
        return [
            {"variant": variant, "seed": s, "val_accuracy": acc + s / 100, "code": code} for s in range(3)
        ]

    old, new = {"commit": first, "dirty": False}, {"commit": second, "dirty": False}
    for later, paired in ((new, False), ({**new, "same_code_as": first}, True)):
        data = {"runs": runs("a", old, 0.5) + runs("b", later, 0.4)}
        pair = Comparison(
            "a - b", *(by_seed([r for r in data["runs"] if r["variant"] == v]) for v in "ab"), data
        )
        assert (pair.why_unpaired is None) is paired, pair.why_unpaired
        assert pair.mixed_code is not paired

    (root / "keras_structinit/selection/select.py").write_text("two\n")  # the entry's own code
    commit("selection changed")
    assert resumed_code(BENCH, [earlier], root) is None


def test_a_result_without_a_commit_or_with_a_foreign_one_is_stale(repo):
    root, first, _ = repo
    assert stale_status(BENCH, [{"runs": [{"seed": 0}]}], root) == "stale (no commit recorded)"
    assert stale_status(BENCH, [{"results": {"jax": {"median_s": 1}}}], root) == "stale (no commit recorded)"
    one_without = _result(first, [{"seed": 0, "code": {"commit": first, "dirty": False}}, {"seed": 1}])
    assert stale_status(BENCH, [one_without], root) == "stale (no commit recorded)"
    assert stale_status(BENCH, [{"code": None}], root) == "stale (no commit recorded)"  # run without git
    assert stale_status(BENCH, [_result("0" * 40)], root) == "stale (commit 0000000 not in this repository)"
    assert stale_status(BENCH, [], root) is None  # nothing recorded: "to run", not stale


def test_code_records_are_found_wherever_a_writer_puts_them():
    code = {"commit": "a" * 40, "dirty": False}
    data = {
        "code": code,
        "results": {"jax": {"code": code}},
        "records": [{"code": code}],
        "runs": [{"seed": 0, "code": code}],
        "config": {"code": "not a record"},
    }
    assert code_records(data) == [code] * 4
    assert code_records({"benchmark": "x"}) == [None]


def test_layout_comments_and_docstrings_leave_an_entry_fresh_and_code_does_not(repo):
    root, _, commit = repo
    select = root / "keras_structinit/selection/select.py"
    select.write_text('def pick(x):\n    """Old words."""\n    return x[::2]  # every second\n')
    commit("real code")
    base = _head(root)
    # What `ruff format` and a reworded docstring or comment do: the same syntax tree.
    select.write_text(
        "def pick(x):\n    '''New words,\n    two lines.'''\n\n    return x[\n        ::2\n    ]\n"
    )
    assert changed_files(base, BENCH.dependencies, root) == []
    commit("layout")
    assert stale_status(BENCH, [_result(base)], root) is None
    # A docstring removed or added is no code change either; a changed constant is.
    select.write_text("def pick(x):\n    return x[::2]\n")
    assert stale_status(BENCH, [_result(base)], root) is None
    select.write_text("def pick(x):\n    return x[::3]\n")
    assert stale_status(BENCH, [_result(base)], root) == f"stale (1 file(s) changed since {base[:7]})"
    # A string that is not a docstring is code; so is a file that no longer parses.
    select.write_text('def pick(x):\n    y = "old words"\n    return x[::2]\n')
    assert changed_files(base, BENCH.dependencies, root) == ["keras_structinit/selection/select.py"]
    select.write_text("def pick(x:\n")
    assert changed_files(base, BENCH.dependencies, root) == ["keras_structinit/selection/select.py"]


def test_a_new_or_changed_suite_entry_leaves_the_scripts_other_entries_current(repo):
    """Adding an entry to a script's ``SUITE`` (or changing one, whose arguments the runner checks
    itself) is no change to the code its recorded entries ran; the rest of the script is."""
    root, _, commit = repo
    script = root / "benchmarks/selection_accuracy.py"
    script.write_text(
        'SEEDS = ("--seeds", "0")\n\ndef main():\n    return 1\n\n'
        'SUITE = {"cpu": (dict(name="selection_accuracy", args=SEEDS),)}\n'
    )
    commit("one entry")
    base = _head(root)
    script.write_text(
        'SEEDS = ("--seeds", "0")\n\ndef main():\n    return 1\n\n'
        'SUITE: dict = {"cpu": (dict(name="selection_accuracy", args=SEEDS), dict(name="new", args=()))}\n'
    )
    assert stale_status(BENCH, [_result(base)], root) is None
    script.write_text(  # a constant the entries use is code
        'SEEDS = ("--seeds", "1")\n\ndef main():\n    return 1\n\n'
        'SUITE = {"cpu": (dict(name="selection_accuracy", args=SEEDS),)}\n'
    )
    assert changed_files(base, BENCH.dependencies, root) == ["benchmarks/selection_accuracy.py"]
    script.write_text(  # so is the script's code, and a SUITE that is not the module's
        'SEEDS = ("--seeds", "0")\n\ndef main():\n    SUITE = 2\n    return 1\n\n'
        'SUITE = {"cpu": (dict(name="selection_accuracy", args=SEEDS),)}\n'
    )
    assert changed_files(base, BENCH.dependencies, root) == ["benchmarks/selection_accuracy.py"]


def test_a_reworded_help_text_leaves_an_entry_fresh_and_a_changed_default_does_not(repo):
    root, _, commit = repo
    select = root / "keras_structinit/selection/select.py"

    def flag(default, words):
        return f'def add(parser):\n    parser.add_argument("--epochs", default={default}, help="{words}")\n'

    select.write_text(flag(4, "(default 4)"))
    commit("a flag")
    base = _head(root)
    select.write_text(flag(4, "epochs per run"))
    assert changed_files(base, BENCH.dependencies, root) == []
    select.write_text(flag(3, "epochs per run"))
    assert changed_files(base, BENCH.dependencies, root) == ["keras_structinit/selection/select.py"]


def test_the_demos_code_stales_the_demo_entry_alone(repo):
    """``bench_utils.COMMAND_ONLY`` (the demo, and the ``Run`` value of ``structinit train`` with its
    output folder) is left out of every entry's dependencies but the one that names it; no benchmark
    script calls it."""
    root, _, commit = repo
    path = "keras_structinit/cli/demo.py"
    assert path in bench_utils.COMMAND_ONLY
    covariance = Benchmark(name="covariance_convergence", script="covariance_accuracy.py")
    demo = next(b for b in CPU if b.name == "demo")
    assert "keras_structinit/covariance" in covariance.dependencies
    assert covariance.excluded == bench_utils.COMMAND_ONLY
    assert (
        demo.excluded == tuple(p for p in bench_utils.COMMAND_ONLY if p != path) and path in demo.dependencies
    )
    for file in bench_utils.COMMAND_ONLY:
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).write_text("DEFAULTS = {'epochs': 4}\n")
    (root / "keras_structinit/covariance").mkdir(parents=True, exist_ok=True)
    (root / "keras_structinit/covariance/apply.py").write_text("x = 1\n")
    commit("covariance")
    base = _head(root)
    for file in bench_utils.COMMAND_ONLY:
        (root / file).write_text("DEFAULTS = {'epochs': 3}\n")
    assert stale_status(covariance, [_result(base)], root) is None
    assert stale_status(demo, [_result(base)], root) == f"stale (1 file(s) changed since {base[:7]})"
    (root / "keras_structinit/covariance/apply.py").write_text("x = 2\n")
    assert stale_status(covariance, [_result(base)], root) == f"stale (1 file(s) changed since {base[:7]})"
    # No script names these modules or what they define (the demo, a Run, its checks and files).
    names = ("run_demo", "Run(", "CheckedRun", "RunFiles", "expand_parts")
    for script in sorted(BENCH_DIR.glob("*.py")):
        text = script.read_text()
        for file in bench_utils.COMMAND_ONLY:
            assert file.removesuffix(".py").replace("/", ".") not in text, (script.name, file)
        assert not [name for name in names if name in text], script.name
