"""Every benchmark result names its code (git commit, dirty or not) and its data (name and digest),
never a path of the machine that ran it (issue 59, point 2)."""

import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest

from benchmarks import BENCH_DIR, RESULTS_DIR, bench_utils
from benchmarks.suite import FOLDERS

from conftest import once_per_suite

pytestmark = once_per_suite("provenance is plain Python and git")

#: An absolute path of some machine: Unix home, root, temporary and work folders, or a Windows drive.
ABSOLUTE = re.compile(r"/work/|/home/|/root/|/tmp/|/Users/|\b[A-Za-z]:\\")
#: Folders under results/ that git ignores: scratch output of local runs, never committed.
IGNORED = {"local", "parts", "sources"}
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _committed_text_files():
    for path in sorted(RESULTS_DIR.rglob("*")):
        parts = set(path.relative_to(RESULTS_DIR).parts)
        if path.is_file() and not parts & IGNORED and path.suffix in {".json", ".md", ".txt", ".csv"}:
            yield path
    yield BENCH_DIR / "REPORT.md"


def test_the_pattern_finds_the_paths_it_is_meant_to_find():
    for text in (
        '"data": "/work/shared/datasets/x.zip"',
        "--out /tmp/lc",
        "/home/u/x",
        "/root/x",
        '"C:\\\\Users\\\\x"',
        "C:\\data\\x",
    ):
        assert ABSOLUTE.search(text), text
    for text in ('"data": {"name": "x.zip"}', "results/cpu/x.json", "a / b", "1/255", "\\n"):
        assert not ABSOLUTE.search(text), text


def test_no_result_and_not_the_report_holds_an_absolute_path():
    found = []
    for path in _committed_text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = ABSOLUTE.search(line)
            if match:
                snippet = line[max(0, match.start() - 30) :][:90]
                found.append(f"{path.relative_to(BENCH_DIR)}:{number}: ...{snippet}")
    assert not found, "absolute paths in results:\n" + "\n".join(found)


def _repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (root / "code.py").write_text("x = 1\n")
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / "benchmarks" / "results" / "r.json").write_text("{}\n")
    (root / "keras_structinit" / "core").mkdir(parents=True)
    (root / "keras_structinit" / "core" / "evidence.json").write_text("{}\n")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    return root, git


@needs_git
def test_code_provenance_is_the_commit_and_whether_code_changed(tmp_path):
    root, git = _repo(tmp_path)
    bench_utils._code_at.cache_clear()
    assert bench_utils.code_provenance(root) == {"commit": git("rev-parse", "HEAD"), "dirty": False}
    # What the benchmarks write themselves does not make the code dirty...
    (root / "benchmarks" / "results" / "r.json").write_text('{"runs": []}\n')
    (root / "benchmarks" / "REPORT.md").write_text("report\n")
    (root / "keras_structinit" / "core" / "evidence.json").write_text('{"rows": []}\n')  # the report's
    bench_utils._code_at.cache_clear()
    assert bench_utils.code_provenance(root)["dirty"] is False
    # ...a changed or a new source file does.
    (root / "code.py").write_text("x = 2\n")
    bench_utils._code_at.cache_clear()
    assert bench_utils.code_provenance(root)["dirty"] is True
    git("checkout", "-q", "code.py")
    (root / "new.py").write_text("y = 1\n")
    bench_utils._code_at.cache_clear()
    assert bench_utils.code_provenance(root)["dirty"] is True
    bench_utils._code_at.cache_clear()


def test_code_provenance_is_none_outside_git(tmp_path, monkeypatch):
    bench_utils._code_at.cache_clear()
    monkeypatch.setattr(bench_utils, "git", lambda root, *args: None)
    assert bench_utils.code_provenance(tmp_path) is None
    bench_utils._code_at.cache_clear()


def test_data_is_a_name_and_a_digest_computed_once_per_version(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_utils, "DIGEST_CACHE", tmp_path / "cache" / "digests.json")
    data = tmp_path / "images.zip"
    data.write_bytes(b"some images")
    expected = hashlib.sha256(b"some images").hexdigest()
    assert bench_utils.data_provenance(data) == {"name": "images.zip", "sha256": expected}
    assert bench_utils.data_provenance(str(data)) == {"name": "images.zip", "sha256": expected}
    # The second call reads the cache, not the file: a planted entry for the same mtime and size wins.
    cache = json.loads(bench_utils.DIGEST_CACHE.read_text())
    (key,) = cache
    assert key.startswith(str(data.resolve()) + "|")
    bench_utils.DIGEST_CACHE.write_text(json.dumps({key: "planted"}))
    assert bench_utils.data_provenance(data)["sha256"] == "planted"
    # A new version of the file (other size and mtime) is read again.
    data.write_bytes(b"other images!")
    os.utime(data, ns=(1, 10**18))
    assert bench_utils.data_provenance(data)["sha256"] == hashlib.sha256(b"other images!").hexdigest()


def test_data_that_is_not_here_is_its_name_and_a_folder_digests_its_files(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_utils, "DIGEST_CACHE", tmp_path / "digests.json")
    assert bench_utils.data_provenance(tmp_path / "gone.zip") == {"name": "gone.zip"}
    assert bench_utils.data_provenance(None) is None
    with pytest.raises(TypeError, match="path"):
        bench_utils.data_provenance(3)
    folder = tmp_path / "set"
    (folder / "cat").mkdir(parents=True)
    (folder / "cat" / "a.jpg").write_bytes(b"a")
    first = bench_utils.data_provenance(folder)
    assert first["name"] == "set" and len(first["sha256"]) == 64
    (folder / "cat" / "a.jpg").write_bytes(b"b")
    assert bench_utils.data_provenance(folder)["sha256"] != first["sha256"]
    assert bench_utils.data_label(first) == f"set (sha256 {first['sha256'][:12]})"
    assert bench_utils.data_label("/some/where/old.zip") == "old.zip"


@needs_git
def test_a_resumable_result_records_the_commit_for_the_file_and_each_new_run(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_utils, "DIGEST_CACHE", tmp_path / "digests.json")
    data_file = tmp_path / "train.zip"
    data_file.write_bytes(b"pixels")
    config = {"data": bench_utils.data_provenance(data_file)}
    (tmp_path / "out").mkdir()
    # A file from before provenance: its run keeps no commit (it has none to keep).
    (tmp_path / "out" / "x.json").write_text(json.dumps({"config": config, "runs": [{"seed": 0}]}))
    data, save = bench_utils.resumable_results(tmp_path / "out", "x", config, lambda d: "md\n")
    data["runs"].append({"seed": 1})
    save()
    written = json.loads((tmp_path / "out" / "x.json").read_text())
    head = subprocess.run(
        ["git", "-C", str(bench_utils.package_root()), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert written["code"]["commit"] == head and isinstance(written["code"]["dirty"], bool)
    assert "code" not in written["runs"][0]
    assert written["runs"][1]["code"] == written["code"]
    assert written["config"]["data"] == {"name": "train.zip", "sha256": hashlib.sha256(b"pixels").hexdigest()}
    assert str(tmp_path) not in (tmp_path / "out" / "x.json").read_text()


@needs_git
def test_a_per_backend_result_records_the_commit_per_backend(tmp_path):
    bench_utils.save_results(tmp_path, "t", "jax", {"median_s": 1.0}, lambda d: "md\n")
    written = json.loads((tmp_path / "t.json").read_text())
    assert written["code"]["commit"] == written["results"]["jax"]["code"]["commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", written["code"]["commit"])


@needs_git
def test_a_per_backend_run_records_the_code_it_started_on(tmp_path, monkeypatch):
    """An edit made while a timing runs (another engineer's, or the next commit's) is not the code
    the run measured: the record is the tree as the process started."""
    import argparse

    root, _ = _repo(tmp_path)
    monkeypatch.setattr(bench_utils, "package_root", lambda: root)
    bench_utils._code_at.cache_clear()

    def parse_args(argv):
        return argparse.Namespace(all_backends=False, backend=None, out=tmp_path / "out")

    def run_backend(args):
        (root / "code.py").write_text("x = 2\n")  # the tree changes while it runs
        return "jax", {"median_s": 1.0}

    try:
        bench_utils.run_per_backend(__file__, "t", parse_args, run_backend, lambda d: "md\n", [])
    finally:
        bench_utils._code_at.cache_clear()
    written = json.loads((tmp_path / "out" / "t.json").read_text())
    assert written["results"]["jax"]["code"]["dirty"] is False and written["code"]["dirty"] is False


#: Files under results/<suite>/ that are not results: the runner's record of what finished.
NOT_RESULTS = {"suite.json"}


def _suite_results():
    for folder in sorted(set(FOLDERS.values())):
        for path in sorted((RESULTS_DIR / folder).glob("*.json")):
            if path.name not in NOT_RESULTS:
                yield path


def test_every_result_records_its_commit():
    """Issue 59, point 2: each result under results/<suite>/ names the code that produced it, at
    every level that holds runs (the file, each backend, each run); the archive keeps older records
    as they were."""
    from benchmarks.run import code_records

    missing, malformed, commits = [], [], set()
    for path in _suite_results():
        records = code_records(json.loads(path.read_text(encoding="utf-8")))
        if None in records:
            missing.append(path.relative_to(RESULTS_DIR).as_posix())
        for record in filter(None, records):
            if not re.fullmatch(r"[0-9a-f]{40}", record["commit"]) or not isinstance(
                record.get("dirty"), bool
            ):
                malformed.append(f"{path.name}: {record}")
            commits.add(record["commit"])
    assert not missing, "results without a commit: " + ", ".join(missing)
    assert not malformed, "code records not of the form {commit: 40 hex digits, dirty: bool}:\n" + "\n".join(
        malformed
    )
    if (
        shutil.which("git") is None
        or subprocess.run(
            ["git", "-C", str(BENCH_DIR), "rev-parse", "--git-dir"], capture_output=True
        ).returncode
    ):
        pytest.skip("no git checkout here: the commits' ancestry is not checked")
    # Reachable from HEAD, not merely present: a clone of main alone must hold every recorded commit
    # (a commit on a side branch exists in a full local clone and vanishes from main's).
    unknown = [
        c
        for c in sorted(commits)
        if subprocess.run(
            ["git", "-C", str(BENCH_DIR), "merge-base", "--is-ancestor", c, "HEAD"], capture_output=True
        ).returncode
    ]
    assert not unknown, "commits not in HEAD's history: " + ", ".join(unknown)


def test_the_commit_check_finds_a_result_without_one(tmp_path):
    from benchmarks.run import code_records

    code = {"commit": "a" * 40, "dirty": False}
    assert None in code_records({"benchmark": "x", "results": {"jax": {"rows": []}}})
    assert None in code_records({"code": code, "runs": [{"seed": 0, "code": code}, {"seed": 1}]})
    assert code_records({"code": code, "records": [{"backend": "jax", "code": code}]}) == [code, code]
