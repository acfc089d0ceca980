"""The evidence table ``--init auto`` reads (issue 80): built from the results alone, shipped equal
to what the results on file build, and a changed verdict in the results changes ``auto``'s choice."""

import json
import shutil

from benchmarks import RESULTS_DIR, report_evidence
from keras_structinit.core import auto
from keras_structinit.models import build_model


def test_the_shipped_table_is_what_the_results_build():
    """Fails when a result changed and ``python -m benchmarks.report`` was not rerun."""
    assert auto.load_evidence() == report_evidence.build_table(RESULTS_DIR)
    assert auto.EVIDENCE == report_evidence.TABLE


def test_each_row_names_its_report_entry_and_counts_its_subclaims():
    table = report_evidence.build_table(RESULTS_DIR)
    for row, declared in zip(table["rows"], report_evidence.EVIDENCE, strict=True):
        assert row["counted"] == list(declared.claims) and row["claim"] in row["counted"]
        assert row["anchor"] == f"benchmarks/REPORT.md#cpu-{declared.entry.replace('_', '-')}"
        assert row["verdict"] == "yes" or not row["verdict"].startswith("yes")


def _copy_results(tmp_path):
    shutil.copytree(RESULTS_DIR / "cpu", tmp_path / "cpu", ignore=shutil.ignore_patterns("figures", "*.md"))
    return tmp_path


def test_a_changed_verdict_in_the_results_changes_the_choice(tmp_path):
    import keras_structinit as ks

    results = _copy_results(tmp_path)
    path = results / "cpu" / "covariance_convergence.json"
    data = json.loads(path.read_text())
    for run in data["runs"]:
        if run["init"] == "conv-cov" and run["epochs"] in (4, 8):
            key = "test_accuracy" if "test_accuracy" in run else "val_accuracy"
            run[key] -= 0.2  # ConvCovariance now loses 20 points at 4 and 8 epochs
    path.write_text(json.dumps(data))
    model = build_model("convmixer-8/2", 10, (16, 16, 3), kernel_size=9, patch_size=2)
    ks.freeze_spatial(model)
    shipped = report_evidence.build_table(RESULTS_DIR)
    changed = report_evidence.build_table(results)
    frozen_9 = {"kernel_size": "9x9", "mlp_blocks": False, "frozen": True}
    row = next(r for r in changed["rows"] if r["condition"] == frozen_9)
    assert row["verdict"] == "no"
    assert auto.choose(model, evidence=shipped).spec == "torch-default+conv-cov:cifar-p2"
    choice = auto.choose(model, evidence=changed)
    assert choice.spec == "torch-default"
    assert any("depthwise 9x9 (frozen): torch-default; conv-cov measured -" in line for line in choice.lines)


def test_a_row_without_results_is_not_measured_and_chooses_nothing(tmp_path):
    (tmp_path / "cpu").mkdir()
    table = report_evidence.build_table(tmp_path)
    assert {r["verdict"] for r in table["rows"]} == {"not measured"}
    model = build_model("convmixer-8/2", 10, (16, 16, 3), kernel_size=9, patch_size=2)
    assert auto.choose(model, evidence=table).spec == "torch-default"


def test_write_table_writes_the_json_the_package_reads(tmp_path):
    path = report_evidence.write_table(RESULTS_DIR, tmp_path / "evidence.json")
    assert auto.load_evidence(path) == report_evidence.build_table(RESULTS_DIR)
