"""The replication-suite runner (``python -m benchmarks.run``) and its report, on a fake benchmark.

The fake script plans runs ``(variant, seed)``, skips those already in its
``--out`` JSON, takes its ``--shard`` part and can stop after ``--stop-after``
runs (an interruption), so that splitting, merging, resuming and the report can
be checked in seconds without training anything.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from benchmarks import bench_utils, report, run
from benchmarks.bench_utils import ahead, verdict_of
from benchmarks.suite import CPU, SUITES, Benchmark

from conftest import RECORDED, REPO_ROOT, once_per_suite

pytestmark = once_per_suite("the runner and report are plain Python; no Keras backend is involved")

FAKE = textwrap.dedent("""
    import argparse, datetime, json, os, sys
    from pathlib import Path

    def render_markdown(data):
        lines = [f"- {r['variant']} {r['seed']}: {r['val_accuracy']}" for r in data["runs"]]
        return "# Fake\\n\\n" + "\\n".join(lines)

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--out", type=Path)
        parser.add_argument("--shard", default="0/1")
        parser.add_argument("--eval-data")
        parser.add_argument("--stop-after", type=int, default=None)
        parser.add_argument("--fail", action="store_true")
        parser.add_argument("--variants", nargs="+", default=["a", "b"])
        parser.add_argument("--figures", action="store_true")
        args = parser.parse_args()
        if args.fail:
            sys.exit("fake: failing on purpose")
        index, count = map(int, args.shard.split("/"))
        path = args.out / "fake.json"
        data = json.loads(path.read_text()) if path.exists() else {"config": {"n": 4}, "runs": []}
        done = {(r["variant"], r["seed"]) for r in data["runs"]}
        plan = [(v, s) for s in range(4) for v in args.variants][index::count]
        todo = [run for run in plan if run not in done]
        print(f"{len(todo)} run(s) to do; threads {os.environ.get('OMP_NUM_THREADS')}", flush=True)
        for k, (variant, seed) in enumerate(todo):
            if args.stop_after is not None and k == args.stop_after:
                sys.exit(3)
            data["runs"].append({"variant": variant, "seed": seed, "val_accuracy": 0.5 + seed / 10,
                                 "pid": os.getpid(), "eval_data": args.eval_data,
                                 "same": os.environ.get("STRUCTINIT_BENCH_SAME_CODE_AS"),
                                 "date": datetime.datetime.now().isoformat()})
            path.write_text(json.dumps(data))
        (args.out / "fake.md").write_text(render_markdown(data))
        if args.figures:  # like inspect_trained.py: the part that ran seed 0 draws its figures
            for variant in {v for v, s in plan if s == 0}:
                (args.out / "figures" / "fake_inspect").mkdir(parents=True, exist_ok=True)
                (args.out / "figures" / "fake_inspect" / f"{variant}.png").write_text(args.shard)

    if __name__ == "__main__":
        main()
""")


@pytest.fixture
def fake_suite(tmp_path, monkeypatch):
    script = tmp_path / "fake_bench.py"
    script.write_text(FAKE)

    def suite(*args, more_args=()):
        bench = Benchmark(
            name="fake",
            script=str(script),
            args=args,
            title="a fake",
            paper="none",
            minutes=0.1,
            run_key=("variant", "seed"),
            eval_data=True,
            more_args=more_args,
        )
        monkeypatch.setitem(SUITES, "cpu", (bench,))
        return bench

    monkeypatch.setattr(report, "SUITES", {"cpu": ()})  # the report covers only the fake suite below
    # The fake's results record no commit; whether they are stale is tested on its own below.
    monkeypatch.setattr(run, "stale_status", lambda bench, datas, root=None: None)
    return suite, tmp_path / "results"


def headline(name, data):
    """The report's headline of the suite entry ``name``, from the script that owns it."""
    bench = next(b for suite in SUITES.values() for b in suite if b.name == name)
    return report.script_module(bench.script).headline(name, data)


def figure(name, data, plt):
    """The report figure ``name``, from the script whose suite entry lists it."""
    bench = next(b for suite in SUITES.values() for b in suite if name in b.figures)
    return report.script_module(bench.script).FIGURES[name](data, plt)


def _runs(path):
    return json.loads(path.read_text())["runs"]


def test_split_interrupted_run_resumes_and_merges_each_run_once(fake_suite, capsys):
    suite, results = fake_suite
    suite("--stop-after", "1")
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "2"]) == 1
    assert "exited with status 3" in capsys.readouterr().err
    parts = [_runs(results / "cpu" / "parts" / "fake" / str(i) / "fake.json") for i in (0, 1)]
    assert [len(p) for p in parts] == [1, 1]  # each part stopped after one run
    assert not (results / "cpu" / "fake.json").exists()  # nothing merged from an unfinished suite

    suite()  # the same benchmark without the interruption: resume with one process
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "1"]) == 0
    merged = _runs(results / "cpu" / "fake.json")
    keys = [(r["variant"], r["seed"]) for r in merged]
    assert sorted(keys) == sorted((v, s) for s in range(4) for v in ("a", "b"))  # each run once
    # The two runs done before the interruption were kept, not redone.
    assert {(r["variant"], r["seed"], r["pid"]) for p in parts for r in p} <= {
        (r["variant"], r["seed"], r["pid"]) for r in merged
    }
    assert (results / "cpu" / "fake.md").read_text().startswith("# Fake")
    state = json.loads((results / "cpu" / "suite.json").read_text())["benchmarks"]["fake"]
    assert state["args"] == [] and state["jobs"] == 1 and state["wall_s"] > 0
    assert json.loads((results / "cpu" / "fake.json").read_text())["suite_run"] == {"suite": "cpu", **state}
    out = capsys.readouterr().out
    assert "[fake] 6 run(s) to do" in out  # progress lines stream through

    # A finished benchmark is skipped; --rerun runs it again and keeps every run.
    assert run.main(["--suite", "cpu", "--results", str(results)]) == 0
    assert "fake: done" in capsys.readouterr().out
    assert run.main(["--suite", "cpu", "--results", str(results), "--rerun", "fake", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "[fake 1/2] 0 run(s) to do" in out and "[fake 2/2] 0 run(s) to do" in out
    assert len(_runs(results / "cpu" / "fake.json")) == 8


def test_a_resume_on_the_same_code_tells_its_processes_the_earlier_commit(fake_suite, monkeypatch):
    suite, results = fake_suite
    assert bench_utils.SAME_CODE_ENV == "STRUCTINIT_BENCH_SAME_CODE_AS"  # the name FAKE reads
    asked = []

    def resumed(bench, datas, root=None):
        asked.append([len(d["runs"]) for d in datas])
        return "abc1234"

    monkeypatch.setattr(run, "resumed_code", resumed)
    suite("--stop-after", "2")
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "1"]) == 1
    assert asked == []  # nothing to resume: no earlier runs to ask about
    suite()
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "2"]) == 0
    assert asked == [[2]]  # once, with every finished run
    runs = _runs(results / "cpu" / "fake.json")
    assert sorted(r["same"] is None for r in runs) == [False] * 6 + [True] * 2


def test_figures_written_by_the_parts_reach_the_suites_figures(fake_suite):
    suite, results = fake_suite
    suite("--figures")
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "2"]) == 0
    figures = results / "cpu" / "figures" / "fake_inspect"
    # Seed 0's variant a ran in part 0/2, variant b in part 1/2: each part's figure is merged.
    assert {p.name: p.read_text() for p in figures.iterdir()} == {"a.png": "0/2", "b.png": "1/2"}


def test_more_args_add_runs_to_the_same_results_and_rerun_when_changed(fake_suite, capsys):
    suite, results = fake_suite
    suite()
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "2"]) == 0
    assert len(_runs(results / "cpu" / "fake.json")) == 8
    suite(more_args=(("--variants", "c"),))  # a further invocation: the benchmark is no longer done
    assert "to re-run" in (
        run.main(["--suite", "cpu", "--results", str(results), "--list"]) == 0 and capsys.readouterr().out
    )
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "[fake 1/2] 0 run(s) to do" in out and "[fake 1/2] 2 run(s) to do" in out
    merged = _runs(results / "cpu" / "fake.json")
    assert sorted((r["variant"], r["seed"]) for r in merged) == sorted(
        (v, s) for s in range(4) for v in "abc"
    )
    state = json.loads((results / "cpu" / "suite.json").read_text())["benchmarks"]["fake"]
    assert state["more_args"] == [["--variants", "c"]]
    assert run.main(["--suite", "cpu", "--results", str(results)]) == 0
    assert "fake: done" in capsys.readouterr().out


def test_a_stale_entry_is_set_aside_and_run_again_from_nothing(fake_suite, monkeypatch, capsys):
    suite, results = fake_suite
    suite()
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "1"]) == 0
    first = {(r["variant"], r["seed"], r["pid"]) for r in _runs(results / "cpu" / "fake.json")}
    seen = []

    def stale(bench, datas, root=None):
        seen.append(len(datas))
        return "stale (2 file(s) changed since abc1234)" if datas else None

    monkeypatch.setattr(run, "stale_status", stale)
    assert run.main(["--suite", "cpu", "--results", str(results), "--list"]) == 0
    assert "stale (2 file(s) changed since abc1234)" in capsys.readouterr().out
    assert run.main(["--suite", "cpu", "--results", str(results), "--list", "--no-stale"]) == 0
    assert "done " in capsys.readouterr().out
    assert run.main(["--suite", "cpu", "--results", str(results), "--no-stale"]) == 0
    assert "fake: done" in capsys.readouterr().out

    # Interrupted after setting aside: the entry is no longer finished, so the next run resumes it.
    suite("--stop-after", "2")
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    (aside,) = (results / "local" / "stale" / "cpu").iterdir()
    assert f"fake: stale (2 file(s) changed since abc1234); its results moved to {aside}" in out
    assert {(r["variant"], r["seed"], r["pid"]) for r in _runs(aside / "fake.json")} == first
    assert (aside / "fake.md").exists() and (aside / "fake").is_dir()  # the parts went with them
    assert "fake" not in json.loads((results / "cpu" / "suite.json").read_text())["benchmarks"]
    monkeypatch.setattr(run, "stale_status", lambda bench, datas, root=None: None)  # today's runs
    suite()
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "1"]) == 0
    again = _runs(results / "cpu" / "fake.json")
    assert len(again) == 8 and not {(r["variant"], r["seed"], r["pid"]) for r in again} & first
    assert "6 run(s) to do" in capsys.readouterr().out  # resumed after the 2 runs before the stop


def test_a_concurrent_runners_finished_entry_is_kept(fake_suite, monkeypatch):
    suite, results = fake_suite
    suite()
    state_path = results / "cpu" / "suite.json"
    real_run = run.run_benchmark

    def run_while_another_runner_finishes(bench, suite_dir, *args):
        real_run(bench, suite_dir, *args)
        other = json.loads(state_path.read_text()) if state_path.exists() else {"benchmarks": {}}
        other["benchmarks"]["other"] = {"args": [], "finished": "now"}
        state_path.write_text(json.dumps(other))

    monkeypatch.setattr(run, "run_benchmark", run_while_another_runner_finishes)
    assert run.main(["--suite", "cpu", "--results", str(results), "--jobs", "1"]) == 0
    assert set(json.loads(state_path.read_text())["benchmarks"]) == {"fake", "other"}


def test_report_is_rebuilt_from_json_alone(fake_suite, monkeypatch):
    suite, results = fake_suite
    monkeypatch.setattr(report, "SUITES", {"cpu": (suite(),)})
    assert (
        run.main(
            [
                "--suite",
                "cpu",
                "--results",
                str(results),
                "--jobs",
                "2",
                "--eval-data",
                str(results.parent / "fake_bench.py"),
            ]
        )
        == 0
    )
    assert all(r["eval_data"].endswith("fake_bench.py") for r in _runs(results / "cpu" / "fake.json"))
    (results / "cpu" / "fake.md").unlink()  # the report does not read the scripts' Markdown
    first = (results / "REPORT.md").read_text()
    report.write_report(results)
    assert (results / "REPORT.md").read_text() == first  # regenerated identically
    assert "## cpu: fake" in first and "- b 3: 0.8" in first and "## What changed" not in first
    data = json.loads((results / "cpu" / "fake.json").read_text())
    data["changes"] = [{"date": "2026-11-25", "what": "re-run with the paper's baseline"}]
    (results / "cpu" / "fake.json").write_text(json.dumps(data))
    text = report.build_report(results, results / "REPORT.md", figures=False)
    assert "## What changed\n\n- `cpu/fake`, 2026-11-25: re-run with the paper's baseline\n" in text


def test_lc_and_mimetic_headlines_compute_gaps_and_directions(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    runs = [
        {
            "model": f"lcresnet-20-16x{e}",
            "frozen": f,
            "seed": s,
            "val_accuracy": acc,
            "val_loss": 1.0,
            "train_accuracy": 0.5,
            "train_loss": 1.0,
            "train_time_s": 60.0,
            "params": {"total": 1, "learnable": 1, "nonzero": 1},
            "date": f"2026-01-0{s + 1}",
        }
        for e, gap in ((1, -0.04), (8, 0.01))
        for s in (0, 1, 2)
        for f, acc in ((True, 0.5 + gap + s / 100), (False, 0.5 + s / 100))
    ]
    data = {
        "benchmark": "lc_accuracy_fig1",
        **RECORDED,
        "runs": runs,
        "config": {
            "experiment": "fig1",
            "epochs": 3,
            "train_size": 2000,
            "held_out_size": 2000,
            "recipe": {"batch_size": 64},
            "backend": "torch",
            "held_out": "h",
            "data": "d",
        },
    }
    text, verdict = headline("lc_accuracy_fig1", data)
    assert text == "gap frozen − learnable (points): E = 1: -4.00 ± 0.00; E = 8: 1.00 ± 0.00"
    assert verdict == "yes"
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "lc_accuracy_fig1.json").write_text(json.dumps(data))
    monkeypatch.setattr(report, "SUITES", {"cpu": tuple(b for b in CPU if b.name == "lc_accuracy_fig1")})
    path = report.write_report(tmp_path)
    text = path.read_text()
    assert "| cpu | [lc_accuracy_fig1]" in text and "| yes |" in text
    assert (tmp_path / "cpu" / "figures" / "lc_accuracy_fig1.png").stat().st_size > 1000
    assert "![lc_accuracy_fig1](cpu/figures/lc_accuracy_fig1.png)" in text

    mimetic = [
        {"model": "convnext", "variant": v, "epochs": 2, "seed": s, "val_accuracy": a + s / 100}
        for v, a in (
            ("mean-shift:0", 0.30),
            ("mean-shift:0.1", 0.34),
            ("torch-default+conv-cov", 0.33),
            ("conv-cov+mean-shift:0.1", 0.37),
        )
        for s in (0, 1, 2)
    ]
    text, verdict = headline("mimetic_sweep", {"runs": mimetic})
    assert "b = 0 31.00 ± 1.00 %, best mean-shift:0.1 35.00 ± 1.00 %" in text and verdict == "yes"
    # Differences within noise by the t-test over seeds are not a reproduction: +2 points of runs
    # that pair nothing (no stateless stream recorded) have Welch's t 2.45 with 4 degrees of freedom.
    shifted = [
        dict(r, val_accuracy=r["val_accuracy"] - 0.02) if r["variant"] == "mean-shift:0.1" else r
        for r in mimetic
    ]
    assert headline("mimetic_sweep", {"runs": shifted})[1] == "within noise"
    assert ahead([0.2, 0.22, 0.21], [0.2, 0.21, 0.215]) is None
    assert ahead([0.1, 0.11, 0.12], [0.2, 0.21, 0.22]) is False
    assert verdict_of([True, None]) == "within noise" and verdict_of([True, False]) == "no"


def test_cli_errors_name_the_argument(tmp_path):
    def fails(*argv):
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.run", *argv], cwd=REPO_ROOT, capture_output=True, text=True
        )
        assert result.returncode == 2
        return result.stderr.strip().splitlines()[-1]

    assert "--only: unknown benchmark(s) nope" in fails("--only", "nope")
    assert "--jobs must be >= 1" in fails("--jobs", "0")
    assert "--eval-data" in fails("--eval-data", str(tmp_path / "missing.npz"))


def test_cpu_suite_lists_every_benchmark(capsys):
    assert run.main(["--suite", "cpu", "--list"]) == 0
    listed = capsys.readouterr().out
    for bench in CPU:
        assert bench.name in listed


def test_covariance_gains_and_kernel_size_verdict(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    gain = {3: 0.0, 9: 0.05}  # ConvCovariance's gain over the default grows with k
    runs = [
        {
            "init": init,
            "frozen": frozen,
            "kernel_size": k,
            "epochs": 2,
            "seed": s,
            "val_accuracy": 0.4 + s / 100 + (gain[k] if init == "conv-cov" else 0) + (0.01 if frozen else 0),
            "train_accuracy": 0.5,
            "train_time_s": 30.0,
            "date": "2026-01-01",
        }
        for k in gain
        for frozen in (True, False)
        for init in ("default", "conv-cov")
        for s in (0, 1, 2)
    ]
    data = {
        "benchmark": "covariance_kernel_size",
        **RECORDED,
        "backend": "torch",
        "runs": runs,
        "config": {
            "experiment": "kernel-size",
            "dim": 128,
            "depth": 6,
            "train_size": 4000,
            "held_out_size": 2000,
            "batch_size": 128,
            "rand_augment": False,
            "data": "d",
            "held_out": "h",
        },
    }
    from benchmarks.covariance_accuracy import gains

    cells = gains(runs, "conv-cov")
    assert list(cells) == [(3, 2, True), (3, 2, False), (9, 2, True), (9, 2, False)]
    assert cells[9, 2, True] == pytest.approx([5.0, 5.0, 5.0])
    text, verdict = headline("covariance_kernel_size", data)
    assert "conv-cov k=9 2 ep. frozen: 5.00 ± 0.00" in text and verdict == "yes"
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "covariance_kernel_size.json").write_text(json.dumps(data))
    entry = tuple(b for b in CPU if b.name == "covariance_kernel_size")
    monkeypatch.setattr(report, "SUITES", {"cpu": entry})
    text = report.write_report(tmp_path).read_text()
    assert "| 9 | 2 | frozen | 42.00 ± 1.00 | 47.00 ± 1.00 | 5.00 ± 0.00 | 0, 1, 2 | +5.59 |" in text
    assert (tmp_path / "cpu" / "figures" / "covariance_kernel_size.png").exists()


def test_speed_headlines_read_the_recorded_timing_files():
    def recorded(name):
        return json.loads((REPO_ROOT / "benchmarks" / "results" / "archive" / f"{name}.json").read_text())

    text, verdict = headline("depthwise_speed", recorded("depthwise_speed"))
    assert text.count("frozen") == 4 and "torch (default compile)" in text and verdict in ("yes", "no")
    text, verdict = headline("init_cost", recorded("init_cost"))
    assert text.startswith("apply_conv_covariance, ConvMixer-1536/24: tensorflow") and verdict is None
    text, _ = headline("selection_speed", recorded("selection_speed"))
    assert "the teacher's weights" in text and text.count(" s, peak") == 3
    timing = {"median_s": 2.5, "mean_s": 2.5, "std_s": 0.0, "times_s": [2.5]}
    entry = {
        "config": {"images": 50000, "align_images": 10000},
        "timings": {"patch_covariance": timing, "align_conv_layers": {**timing, "median_s": 40.0}},
    }
    text, _ = headline("alignment_cost", {"results": {"jax": entry}})
    assert text == "jax patch covariance 2.5 s (50,000 images), align 2 layers 40.0 s (10,000 images)"


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_suite_invocation_parses_with_its_script(suite, tmp_path):
    """Each entry's arguments (and further invocations) are accepted by its script's parser."""
    from benchmarks.bench_utils import SHARED_CIFAR10

    for bench in SUITES[suite]:
        module = report.script_module(bench.script)
        for args in bench.invocations:
            argv = [*args, "--out", str(tmp_path)]
            if bench.run_key is not None:
                argv += ["--shard", "0/2"]
            try:
                parsed = module.parse_args(argv)
            except SystemExit:
                if SHARED_CIFAR10.exists():
                    raise
                continue  # the training scripts' parsers exit when the shared data is absent
            assert parsed.out == tmp_path, bench.name


def test_selection_headline_compares_selection_consistency_and_distillation(tmp_path):
    runs = [
        {"variant": v, "seed": s, "val_accuracy": a + s / 100, "probe_accuracy": p + s / 100}
        for v, a, p in (
            ("random_init", 0.30, 0.30),
            ("uniform", 0.36, 0.36),
            ("random_inconsistent", 0.31, 0.31),
            ("uniform+distill", 0.39, 0.36),
        )
        for s in (0, 1, 2)
    ]
    text, verdict = headline("selection_accuracy", {"runs": runs})
    assert "uniform 37.00 ± 1.00 % (probe 37.00 ± 1.00)" in text and verdict == "yes"
    worse = [
        dict(r, val_accuracy=0.2 + r["seed"] / 100) if r["variant"] == "uniform+distill" else r for r in runs
    ]
    assert headline("selection_accuracy", {"runs": worse})[1] == "no"
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    groups = [
        {"group": g, "frozen": f, "seed": s, "epochs": 2, "val_accuracy": 0.3 + i / 100}
        for i, g in enumerate(("default", "transfer-same", "conv-cov"))
        for f in (True, False)
        for s in (0, 1, 2)
    ]
    for name, data in (("selection_methods", {"runs": runs}), ("transfer_groups", {"runs": groups})):
        fig = figure(name, data, plt)
        fig.savefig(tmp_path / f"{name}.png")
        plt.close(fig)
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


def test_the_readme_lists_every_script():
    text = (REPO_ROOT / "benchmarks" / "README.md").read_text()
    scripts = [
        p.stem
        for p in (REPO_ROOT / "benchmarks").glob("*.py")
        # The runner's and the report's own modules (report_*.py: its test, sub-claims and rows).
        if p.stem not in ("__init__", "bench_utils", "report", "run", "suite")
        and not p.stem.startswith("report_")
    ]
    assert [name for name in scripts if f"| `{name}` |" not in text] == []


def test_the_gpu_quick_tier_fits_a_gpu_loan_and_writes_where_the_gpu_suite_does():
    from benchmarks.covariance_accuracy import COV_PAPER
    from benchmarks.suite import (
        FOLDERS,
        GPU,
        GPU_QUICK,
        GPU_QUICK_FIRST,
        GPU_QUICK_MINUTES,
        folder_benchmarks,
    )

    names = {bench.name for bench in GPU_QUICK}
    assert "covariance_convergence" in names and set(GPU_QUICK_FIRST) <= names
    # Nine minutes of one H100 (a 15-minute loan, its start and a retry's included), 3 of them kept
    # for the reference-ConvMixer and frozen-vs-thawed entries (suite.py's docstring).
    assert GPU_QUICK_MINUTES == 9
    assert sum(bench.minutes for bench in GPU_QUICK) <= GPU_QUICK_MINUTES
    assert FOLDERS["gpu-quick"] == FOLDERS["gpu"] == "gpu"
    # The quick training entry is a part of the GPU entry: the same configuration, fewer runs.
    quick = next(b for b in GPU_QUICK if b.name == "covariance_convergence")
    full = next(b for b in GPU if b.name == "covariance_convergence")
    assert quick.args[: 1 + len(COV_PAPER)] == full.args[: 1 + len(COV_PAPER)] == ("convergence", *COV_PAPER)
    assert {"--backend", "jax", "--pipeline", "native"} <= set(COV_PAPER)  # no TensorFlow on the image
    assert {b.name for b in folder_benchmarks(SUITES)["gpu"]} == {b.name for b in GPU} | names
    # --smoke runs every entry; a training entry's smoke arguments are its own, made small.
    assert all(b.smoke_args is not None for b in GPU_QUICK)
    assert quick.smoke_args[: 1 + len(COV_PAPER)] == quick.args[: 1 + len(COV_PAPER)]


def test_list_prints_each_estimate_and_the_total(capsys, tmp_path):
    from benchmarks.suite import GPU_QUICK

    assert run.main(["--suite", "gpu-quick", "--list", "--results", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(GPU_QUICK) + 1
    for line, bench in zip(lines, GPU_QUICK, strict=False):
        assert line.startswith(bench.name) and f"~{bench.minutes:>5.1f} min" in line
        assert ("(est.)" in line) == bench.estimated
    assert lines[-1].startswith("total") and f"~{sum(b.minutes for b in GPU_QUICK):>5.1f} min" in lines[-1]


def test_smoke_never_writes_into_the_recorded_results(capsys):
    with pytest.raises(SystemExit):
        run.parse_args(["--suite", "gpu-quick", "--smoke", "--results", str(run.RESULTS_DIR)])
    assert "--smoke does not write into benchmarks/results" in capsys.readouterr().err
    assert run.parse_args(["--suite", "gpu-quick", "--smoke"]).results == run.SMOKE_RESULTS
    assert run.parse_args(["--suite", "gpu-quick"]).results == run.RESULTS_DIR


def test_a_deadline_stops_training_at_an_epoch_end(monkeypatch):
    import time

    from benchmarks import bench_utils

    monkeypatch.delenv(bench_utils.DEADLINE_VARIABLE, raising=False)
    assert bench_utils.deadline_callbacks() == [] and not bench_utils.past_deadline()
    monkeypatch.setenv(bench_utils.DEADLINE_VARIABLE, str(time.time() + 3600))
    (callback,) = bench_utils.deadline_callbacks()
    model = type("Model", (), {"stop_training": False})()
    callback.set_model(model)
    callback.on_epoch_begin(0)
    callback.on_epoch_end(0)
    assert not model.stop_training and not bench_utils.past_deadline(margin_s=60)
    assert bench_utils.past_deadline(margin_s=7200)
    callback._longest = 7200.0  # an epoch as long as two hours would end past the deadline
    callback.on_epoch_begin(1)
    callback.on_epoch_end(1)
    assert model.stop_training


def _seeds_of(name, cell, tmp_path):
    """The seeds the CPU entry ``name``'s invocations run for the cell ``cell(parsed args)``."""
    bench = next(b for b in CPU if b.name == name)
    module = report.script_module(bench.script)
    seeds = set()
    for args in bench.invocations:
        parsed = module.parse_args([*args, "--out", str(tmp_path), "--data", str(REPO_ROOT)])
        if cell(parsed):
            seeds |= set(parsed.seeds)
    return sorted(seeds)


def test_the_headline_cells_run_five_seeds(tmp_path):
    """Issue 59, point 5: the covariance convergence pair (k 9, frozen), LC Fig. 1 at E = 8 and
    16 and weight selection against random init run seeds 0-4 (mimetic_sweep's cell: its test)."""
    five = list(range(5))
    assert _seeds_of("covariance_convergence", lambda a: a.frozen in ("both", "frozen"), tmp_path) == five
    for e in (8, 16):
        assert _seeds_of("lc_accuracy_fig1", lambda a, e=e: e in a.expansions, tmp_path) == five
    assert _seeds_of("lc_accuracy_fig1", lambda a: 1 in a.expansions, tmp_path) == [0, 1, 2]
    pair = {"random_init", "uniform"}
    assert _seeds_of("selection_five_seeds", lambda a: pair <= set(a.variants), tmp_path) == five
    assert {name for name, _ in report.FIVE_SEED_CELLS} >= {
        "covariance_convergence",
        "lc_accuracy_fig1",
        "mimetic_sweep",
        "selection_five_seeds",
    }
