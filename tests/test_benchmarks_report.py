"""The report's paired verdicts and run-to-run spread (issue 59, points 5 and 6), on made-up results.

Where two variants share a seed the per-seed difference is the measurement: the paired mean and its
standard error decide, the unpaired figure stands beside. Runs recorded before the input stream
drew from (seed, pass, example) alone, or on different code, are not paired; a difference whose
sides ran on different code must also beat the measured run-to-run spread.
"""

import copy
import json

import numpy as np
import pytest

from benchmarks import report, report_stats
from benchmarks.bench_utils import (
    CODE_SPREAD,
    CODE_SPREAD_SOURCE,
    STATELESS_STREAM,
    Comparison,
    ahead,
    by_seed,
    code_keys,
    pairing_of,
    rerun_spread,
    verdict_of,
)
from benchmarks.suite import CPU, SUITES

from conftest import RECORDED, once_per_suite

pytestmark = once_per_suite("reading made-up and recorded JSON: no backend")
RESULTS = report.RESULTS_DIR / "cpu"
AFTER, BEFORE = "2026-11-27T10:00:00+00:00", "2026-11-25T10:00:00+00:00"
# Two variants whose seeds differ a lot while each seed's difference stays near +3 points: paired
# beyond noise, unpaired within it.
STEADY = {"uniform": (30.0, 36.0, 42.0), "random_init": (27.5, 33.0, 38.8)}
# Anti-correlated seeds: the unpaired figure beyond noise, the paired one within it.
ANTI = {"uniform": (60.0, 62.0, 64.0), "random_init": (59.5, 57.5, 55.5)}
# The same under the report's t-test (issue 79): Welch's t 5.2 with 4 degrees of freedom (p 0.007),
# the paired t 3.6 with 2 (p 0.07).
ANTI_T = {"uniform": (60.0, 61.0, 62.0), "random_init": (57.9, 57.0, 56.1)}


def _runs(values, date=AFTER, commits=None):
    runs = []
    for variant, accs in values.items():
        for seed, acc in enumerate(accs):
            run = {
                "variant": variant,
                "seed": seed,
                "val_accuracy": acc / 100,
                "probe_accuracy": acc / 100,
                "train_time_s": 60.0,
                "val_accuracy_per_epoch": [acc / 100],
                "date": date,
            }
            if variant == "uniform":
                run["teacher_id"] = "A"
            if commits:
                run["code"] = {"commit": commits[variant], "dirty": False}
            runs.append(run)
    return runs


def _pair(data):
    runs = {v: [r for r in data["runs"] if r["variant"] == v] for v in ("uniform", "random_init")}
    return Comparison("uniform − random_init", by_seed(runs["uniform"]), by_seed(runs["random_init"]), data)


def test_paired_and_unpaired_figures_and_which_decides():
    data = {"runs": _runs(STEADY)}
    pair = _pair(data)
    d = np.subtract(STEADY["uniform"], STEADY["random_init"])
    assert pair.paired_figure == pytest.approx((d.mean(), d.std(ddof=1) / np.sqrt(3), 3))
    hi, lo = np.array(STEADY["uniform"]), np.array(STEADY["random_init"])
    assert pair.unpaired[:2] == pytest.approx(
        (hi.mean() - lo.mean(), np.sqrt(hi.var(ddof=1) / 3 + lo.var(ddof=1) / 3))
    )
    assert pair.why_unpaired is None and pair.judged == "paired" and pair.ahead_2se is True
    # The same numbers judged unpaired are within noise: runs from before the stateless stream ...
    early = _pair({"runs": _runs(STEADY, date=BEFORE)})
    assert early.why_unpaired.startswith("recorded before the stateless input stream")
    assert early.ahead_2se is None and early.paired_figure == pytest.approx(pair.paired_figure)
    # ... a script whose variants do not share a seed's draws ...
    apart = Comparison("x", pair.higher, pair.lower, data, paired="two networks")
    assert apart.ahead_2se is None and apart.judged == "unpaired (two networks)"
    # ... or a seed's two runs on different code, where the spread widens the margin too.
    mixed = _pair({"runs": _runs(STEADY, commits={"uniform": "a" * 40, "random_init": "b" * 40})})
    assert mixed.why_unpaired == "a seed's runs ran on different code" and mixed.mixed_code
    assert mixed.figure[1] == pytest.approx(2 * mixed.unpaired[1] + CODE_SPREAD)
    assert f"+ {CODE_SPREAD:g} (sides on different code)" in mixed.judged
    # Anti-correlated seeds: unpaired beyond noise, paired within it; paired decides.
    anti = _pair({"runs": _runs(ANTI)})
    diff, se, _ = anti.unpaired
    assert diff > 2 * se and anti.ahead_2se is None
    assert _pair({"runs": _runs(ANTI, date=BEFORE)}).ahead_2se is True


def test_a_comparison_is_ahead_by_the_reports_t_test():
    """``Comparison.ahead`` is the report's t rule (issue 79): the scripts' verdicts and headline words
    say what *Compared differences* says; ``ahead_2se`` keeps the rule before it."""
    # ANTI unpaired: beyond twice its standard error, Welch's t 2.76 with 4 degrees of freedom (p 0.051).
    early = _pair({"runs": _runs(ANTI, date=BEFORE)})
    assert early.ahead_2se is True and early.ahead is None
    assert report_stats.t_test(early).p == pytest.approx(0.051, abs=5e-4)
    for values, date, expected in ((STEADY, AFTER, True), (ANTI_T, BEFORE, True), (ANTI_T, AFTER, None)):
        c = _pair({"runs": _runs(values, date=date)})
        assert c.ahead is report_stats.ahead(c) is expected
    flipped = Comparison("x", early.lower, early.higher, early.data)
    assert verdict_of([early]) == "within noise" and verdict_of([flipped]) == "within noise"
    # The module-level check: Welch's t of the values, a one-sample t against 0 by default.
    assert ahead(STEADY["uniform"], STEADY["random_init"]) is None  # seeds' spread, unpaired
    assert ahead([2.5, 3.0, 3.2]) is True and ahead([-2.5, -3.0, -3.2]) is False and ahead([3.0]) is None


def test_verdicts_count_only_counted_comparisons():
    data = {"runs": _runs(STEADY)}
    yes, context = _pair(data), Comparison("c", _pair(data).lower, _pair(data).higher, data, counts=False)
    assert context.ahead_2se is False and verdict_of([yes, context]) == "yes"
    assert verdict_of([yes, None]) == "within noise" and verdict_of([context]) is None
    unpaired = Comparison("u", yes.higher, yes.lower, data, paired="two networks")
    assert pairing_of([yes]) == "paired" and pairing_of([unpaired]) == "unpaired"
    assert pairing_of([yes, unpaired]) == "partly (1 of 2)" and pairing_of([]) == "—"


def test_runs_without_commits_are_one_code_within_a_sitting():
    runs = [
        {"seed": 0, "date": "2026-11-26T10:00:00+00:00"},
        {"seed": 1, "date": "2026-11-26T12:30:00"},
        {"seed": 2, "date": "2026-11-27T09:00:00+00:00"},
        {"seed": 3},
        {"seed": 4, "date": "2026-11-27T09:10:00+00:00", "code": {"commit": "c" * 40}},
    ]
    keys = code_keys({"runs": runs})
    assert [keys[id(r)] for r in runs] == [
        ("sitting", 0),
        ("sitting", 0),
        ("sitting", 1),
        ("file",),
        ("commit", "c" * 40),
    ]


def _selection_results(values, **kwargs):
    data = json.loads((RESULTS / "selection_table7.json").read_text())
    data.update(RECORDED, runs=_runs(values, **kwargs), updated=AFTER)
    return data


@pytest.mark.parametrize(
    "values, date, verdict, paired",
    [
        (STEADY, AFTER, "yes", "paired"),
        (STEADY, BEFORE, "within noise", "unpaired"),
        (ANTI_T, AFTER, "within noise", "paired"),
        (ANTI_T, BEFORE, "yes", "unpaired"),
    ],
)
def test_the_report_states_paired_verdicts(tmp_path, monkeypatch, values, date, verdict, paired):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "selection_table7.json").write_text(json.dumps(_selection_results(values, date=date)))
    monkeypatch.setattr(report, "SUITES", {"cpu": tuple(b for b in CPU if b.name == "selection_table7")})
    text = report.build_report(tmp_path, tmp_path / "REPORT.md", figures=False)
    assert "the per-seed differences d are the measurement" in text
    assert "`t = mean(d) / (std(d, ddof=1) / sqrt(n))` with n - 1 degrees of freedom" in text
    row = next(line for line in text.splitlines() if line.startswith("| cpu | [selection_table7]"))
    assert row.endswith(f"| {verdict} | {paired} | 6 |"), row
    pair = _pair({"runs": _runs(values, date=date)})
    compared = next(line for line in text.splitlines() if "| uniform − random_init |" in line)
    test = report_stats.t_test(pair)
    judged = "paired t" if paired == "paired" else f"Welch t ({pair.why_unpaired})"
    assert (
        f"| {pair.text(pair.paired_figure)} | {pair.text(pair.unpaired)} | {judged} | {test.t:+.2f} |"
        in compared
    )
    assert compared.endswith(f"| {verdict} |")
    # The row's sub-claims: those whose variants ran are measured, the others are listed as not.
    assert "| selection > random init | Table 7: 81.4 vs 72.3 |" in text
    assert "| selection > L1 pruning | Table 7: 81.4 vs 79.5 | — | — | not measured |" in text
    assert "- `selection_accuracy.py`: each run calls `keras.utils.set_random_seed(seed)`" in text


def test_the_seeds_sentence_reads_its_minutes_from_the_results(tmp_path, monkeypatch):
    (tmp_path / "cpu").mkdir()
    runs = [{"seed": seed, "train_time_s": 30.0 * (seed + 1)} for seed in range(5)]
    run = {"wall_s": 1200.0, "jobs": 2}
    results = {
        "covariance_convergence": {"runs": runs, "suite_run": run, "updated": "2026-11-29T05:06:23+00:00"},
        "selection_accuracy": {"runs": runs[:3], "suite_run": {"wall_s": 5400.0, "jobs": 1}},
        "selection_five_seeds": {"runs": runs, "suite_run": {"wall_s": 1140.0, "jobs": 1}},
        "mimetic_sweep": {
            "runs": runs,
            "suite_run": {"wall_s": 600.0, "jobs": 1},
            "machine": {"thread_env": {"OMP_NUM_THREADS": "1"}},  # pinned to one core
        },
    }
    for name, data in results.items():
        (tmp_path / "cpu" / f"{name}.json").write_text(json.dumps(data))
    text = report.seeds_paragraph(tmp_path)
    # seeds 3 and 4: (120 + 150) s = 4.5 minutes of training within 20 wall minutes.
    assert "`covariance_convergence`: 4.5 more minutes of training (2 runs of seeds 3-4" in text
    assert "the entry's 20.0 wall minutes on 2 process(es); 2026-11-29)" in text
    assert "(2 runs of seeds 3-4, one core each, within" in text
    assert "`selection_five_seeds`: 4.5 more minutes of training (2 runs of seeds 3-4, one process on" in text
    assert "`lc_accuracy_fig1`: seeds 3-4 not run yet" in text
    assert "`mimetic_sweep`: 4.5 more minutes of training (2 runs of seeds 3-4, one process of one " in text
    assert "keep 3 seeds" not in text  # every headline pair has its 5 seeds
    # A headline row kept at 3 seeds says what 5 would cost, from its recorded wall time.
    monkeypatch.setattr(report, "THREE_SEED_HEADLINES", ("selection_accuracy",))
    text = report.seeds_paragraph(tmp_path)
    assert "5 would take about 60 more wall minutes for `selection_accuracy` (90 for 3 seeds in 1 " in text


def test_the_report_measures_the_spread_of_a_repeated_configuration(tmp_path, monkeypatch):
    earlier = json.loads((report.RESULTS_DIR / "archive" / "lc_accuracy_fig1_20261124.json").read_text())
    later = copy.deepcopy(earlier)
    later["machine"]["thread_env"] = {}
    later["machine"]["cpu"] = "Intel(R) Xeon(R) Processor"  # the machine of another session
    for k, run in enumerate(later["runs"]):
        run["val_accuracy"] += 0.01 if k % 2 else -0.02
        run["date"] = "2026-11-28T10:00:00+00:00"
    (tmp_path / "cpu").mkdir()
    for name, data in (("lc_accuracy_fig1", earlier), ("lc_fgsm", later)):
        (tmp_path / "cpu" / f"{name}.json").write_text(json.dumps(data))
    monkeypatch.setattr(
        report, "SUITES", {"cpu": tuple(b for b in CPU if b.name in ("lc_accuracy_fig1", "lc_fgsm"))}
    )
    text = report.build_report(tmp_path, tmp_path / "REPORT.md", figures=False)
    found = rerun_spread(earlier, later, ("model", "frozen", "seed"))
    assert found["runs"] == len(earlier["runs"]) and found["largest"] == pytest.approx(2.0)
    assert (
        "`cpu/lc_fgsm` repeats `lc_accuracy_fig1`'s configuration and seeds. Of the "
        f"{found['runs']} runs both hold (recorded 2026-11-24 to 2026-11-26 and 2026-11-28, on "
        "different code; thread settings"
    ) in text
    assert "single runs moved by up to 2.00 points" in text and "bit-identical" in text
    assert f"; CPUs {earlier['machine']['cpu']} and Intel(R) Xeon(R) Processor)" in text
    assert "On one code and one CPU model a rerun is identical" in text
    later["config"]["epochs"] += 1  # another configuration measures nothing
    assert rerun_spread(earlier, later, ("model", "frozen", "seed")) is None


def test_code_spread_is_the_recorded_rerun_of_lc_fig1():
    # Both sides were archived when their entries re-ran on 2026-11-29 code.
    archive = report.RESULTS_DIR / "archive"
    earlier = json.loads((archive / "lc_accuracy_fig1_20261124.json").read_text())
    later = json.loads((archive / "lc_fgsm_20261127.json").read_text())
    for name in ("lc_accuracy_fig1_20261124", "lc_fgsm_20261127"):
        assert f"`results/archive/{name}.json`" in CODE_SPREAD_SOURCE
    found = rerun_spread(earlier, later, ("model", "frozen", "seed"))
    assert found["dates"] == ("2026-11-24", "2026-11-27")
    assert round(found["largest_mean"], 2) == CODE_SPREAD
    assert round(found["largest"], 2) == 4.5 and found["runs"] == 12
    text = (report.BENCH_DIR / "REPORT.md").read_text()
    assert f"different code, {CODE_SPREAD:g} points, is the largest shift" in text


def test_every_script_with_comparisons_says_how_its_seeds_pair():
    for bench in {b.script: b for suite in SUITES.values() for b in suite}.values():
        script = report.script_module(bench.script)
        if hasattr(script, "comparisons"):
            assert isinstance(getattr(script, "PAIRING", None), str), bench.script


def test_stream_date_is_the_stateless_streams_commit():
    import subprocess

    from conftest import REPO_ROOT

    found = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "log", "-1", "--format=%cI", "fd6702d"], capture_output=True, text=True
    )
    if found.returncode:
        pytest.skip("no git history here")
    assert found.stdout.strip() == STATELESS_STREAM


def test_the_spread_sentence_says_which_code_and_a_bit_identical_rerun():
    """Issue 59, point 6: a rerun at one commit that matches bit for bit says so; a rerun at two
    commits gives its spread without the different-code margin."""
    earlier = {"config": {"a": 1}, "code": {"commit": "a" * 40, "dirty": False}, "runs": []}
    for seed in (0, 1, 2):
        earlier["runs"].append({"seed": seed, "val_accuracy": 0.3 + seed / 100, "date": "2026-11-28T10:00"})
    later = copy.deepcopy(earlier)
    found = rerun_spread(earlier, later, ("seed",))
    text = report._spread_line("cpu/b", "a", found, (earlier, later), "")
    assert "(recorded 2026-11-28 and 2026-11-28, at one commit, aaaaaaa)" in text
    assert text.endswith("every one has the same held-out accuracy, bit for bit.")
    later["code"]["commit"] = "b" * 40
    later["runs"][1]["val_accuracy"] += 0.005
    found = rerun_spread(earlier, later, ("seed",))
    text = report._spread_line("cpu/b", "a", found, (earlier, later), "")
    assert "at commits aaaaaaa and bbbbbbb" in text and "single runs moved by up to 0.50 points" in text
    assert "different code" not in text
    for one in (earlier, later):  # runs of issue 79 on: scored on the test part, and said so
        for run in one["runs"]:
            run["test_accuracy"] = run.pop("val_accuracy")
    found = rerun_spread(earlier, later, ("seed",))
    text = report._spread_line("cpu/b", "a", found, (earlier, later), "")
    assert "0.50 points of test accuracy" in text and "held-out" not in text


def test_a_repeat_without_a_run_key_pairs_runs_by_variant_and_seed(tmp_path):
    """selection_table7 repeated selection_accuracy's teacher and its random-init and uniform students
    (no run key: one process): matched by variant and seed, the 6 shared runs are bit-identical. Read
    from the archived pair (both of 2026-11-28/29, the teacher that saw its students' images): the
    re-run of issue 79 gives each entry its own teachers, so the live files no longer pair."""
    archive = RESULTS.parent / "archive"
    (tmp_path / "cpu").mkdir()
    for name in ("selection_accuracy", "selection_table7"):
        text = (archive / f"{name}_teacher_saw_students.json").read_text()
        (tmp_path / "cpu" / f"{name}.json").write_text(text)
    entries = tuple(b for b in CPU if b.name in ("selection_accuracy", "selection_table7"))
    (line,) = [line for line in report.spread_lines(tmp_path, {"cpu": entries}) if "repeats" in line]
    assert "Of the 6 runs both hold" in line and line.endswith("bit for bit.")


def test_a_gpu_row_whose_code_changed_says_stale_without_counting_files(monkeypatch):
    """Issue 79, point 7: the summary marks GPU rows run on code that changed since, in words that do
    not change with every edit of the tree."""
    from benchmarks import report as report_module

    monkeypatch.setattr(
        report_module, "stale_status", lambda bench, datas: "stale (49 file(s) changed since 0ef6b51)"
    )
    assert report_module.gpu_stale(None, {}) == "stale (code changed since 0ef6b51)"
    note = report_module.code_note({"runs": []}, report_module.gpu_stale(None, {}))
    assert note.startswith("*stale (code changed since 0ef6b51)")
    monkeypatch.setattr(report_module, "stale_status", lambda bench, datas: None)
    assert report_module.gpu_stale(None, {}) is None and report_module.code_note({"runs": []}) == ""
    text = report_module.REPORT.read_text()
    assert "*test part* of 5,000 images" in text and bench_split_digest() in text


def bench_split_digest():
    from benchmarks.bench_utils import CIFAR10_TEST_SHA256

    return CIFAR10_TEST_SHA256[:16]
