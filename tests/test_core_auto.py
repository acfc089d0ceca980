"""``--init auto`` (issue 80): the inits the shipped evidence supports, chosen per structure, with
one line each saying why; a concrete spec that a rerun applies bit for bit."""

import copy
import json
import re
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import cli
from keras_structinit.core import auto
from keras_structinit.models import build_model

from conftest import once_per_suite

REPO = Path(__file__).resolve().parents[1]


def _convmixer(k, frozen=False):
    model = build_model("convmixer-8/2", 10, (16, 16, 3), kernel_size=k, patch_size=2)
    if frozen:
        ks.freeze_spatial(model)
    return model


def _shipped_row(kernel_size, frozen):
    """The shipped row of ConvCovariance on a ConvMixer's depthwise filters of one size and state."""
    condition = {"kernel_size": kernel_size, "mlp_blocks": False, "frozen": frozen}
    return next(r for r in auto.load_evidence()["rows"] if r["condition"] == condition)


def _convnext():
    return build_model("convnext-iso-8/2", 10, (8, 8, 3), kernel_size=7)


def _seeded(build):
    """``build()`` after seeding: two students whose own heads (never selected) are drawn alike."""
    keras.utils.set_random_seed(0)
    return build()


def _weights(model):
    return [keras.ops.convert_to_numpy(v) for v in model.weights]


def test_convmixer_k9_picks_conv_cov_with_its_row():
    choice = auto.choose(_convmixer(9, frozen=True))
    assert choice.spec == "torch-default+conv-cov:cifar-p2"
    line = next(line for line in choice.lines if "depthwise 9x9" in line)
    assert re.search(
        r"^2 depthwise 9x9 \(frozen\): conv-cov, \+\d+\.\d\d ± \d+\.\d\d points \(\d seeds;", line
    )
    assert "ConvMixer-128/6" in line and "(covariance_convergence)" in line
    assert _shipped_row("9x9", True)["verdict"] == "yes"


def test_convmixer_k9_with_trained_filters_follows_its_own_row():
    """Frozen and trained filters are measured apart (covariance_convergence): a trained ConvMixer
    gets conv-cov only where the trained cells' row says *yes*, and the line says which row."""
    row = _shipped_row("9x9", False)
    choice = auto.choose(_convmixer(9))
    line = next(line for line in choice.lines if "depthwise 9x9" in line)
    assert line.startswith("2 depthwise 9x9 (trained): ") and "(covariance_convergence)" in line
    if row["verdict"] == "yes":
        assert choice.spec == "torch-default+conv-cov:cifar-p2"
    else:
        assert choice.spec == "torch-default" and line.endswith(f": {row['verdict']}")


def test_convmixer_k3_does_not_pick_conv_cov_and_says_why():
    for frozen in (True, False):
        choice = auto.choose(_convmixer(3, frozen))
        assert choice.spec == "torch-default"
        line = next(line for line in choice.lines if "depthwise 3x3" in line)
        row = _shipped_row("3x3", frozen)
        assert row["verdict"] != "yes" and row["entry"] == "covariance_kernel_size"
        said = f"torch-default; conv-cov measured {row['effect']:+.2f} ± {row['error']:.2f} points"
        assert said in line and line.endswith(f"(covariance_kernel_size): {row['verdict']}")
        assert any("nothing the evidence supports" in line for line in choice.lines)


def test_convnext_iso_picks_the_mean_shift():
    choice = auto.choose(_convnext())
    assert choice.spec == "torch-default+mean-shift:0.2"
    assert any(line.startswith("2 MLP blocks: mean-shift:0.2, +") for line in choice.lines)
    assert any("depthwise 7x7 (trained): torch-default; conv-cov measured" in line for line in choice.lines)


def test_a_model_with_none_of_the_structures_gets_the_baseline_and_says_so():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    choice = auto.choose(model)
    assert choice.spec == "torch-default"
    assert choice.lines == [
        "no depthwise convs, MLP blocks, self-attention layers, first convs or teacher found: "
        "torch-default (the papers' baseline, PyTorch's default uniform init) everywhere"
    ]


def test_data_makes_the_forms_that_measure_it_eligible():
    cnn = build_model("simple-cnn-e3")
    assert auto.choose(cnn).spec == "torch-default"
    assert any("needs data" in line for line in auto.choose(cnn).lines)
    images = np.random.default_rng(0).uniform(-1, 1, (32, 32, 32, 3)).astype("float32")
    assert auto.choose(cnn, data=images).spec == "torch-default+data-aligned:2"


def test_auto_and_its_resolved_spec_write_the_same_weights():
    """What a run records is what a rerun applies: bit-identical weights."""
    first, second = _convmixer(9, frozen=True), _convmixer(9, frozen=True)
    ks.initialize(first, "auto", seed=3)
    resolved = auto.choose(second).spec
    ks.initialize(second, resolved, seed=3)
    for a, b in zip(_weights(first), _weights(second), strict=True):
        np.testing.assert_array_equal(a, b)


def _table(rows):
    return {"format_version": 1, "baseline": {"form": "torch-default", "why": "the baseline"}, "rows": rows}


def _row(form, structure, condition, verdict="yes", effect=1.0, together=()):
    return {
        "form": form,
        "structure": structure,
        "condition": condition,
        "together": list(together),
        "verdict": verdict,
        "claim": "a claim",
        "unit": "points",
        "effect": effect,
        "error": 0.1,
        "seeds": 3,
        "scale": "a scale",
        "counted": [],
        "left_out": "",
        "entry": "an_entry",
        "anchor": "benchmarks/REPORT.md#cpu-an-entry",
    }


def test_a_changed_verdict_changes_the_choice():
    table = auto.load_evidence()
    changed = copy.deepcopy(table)
    for row in changed["rows"]:
        if row["form"].startswith("mean-shift") and row["condition"] == {"attention": False}:
            row["verdict"] = "within noise"
    model = _convnext()
    assert "mean-shift" in auto.choose(model, evidence=table).spec
    assert auto.choose(model, evidence=changed).spec == "torch-default"


@pytest.mark.parametrize(
    "verdict, spec, said",
    [
        ("yes", "torch-default+conv-cov:cifar-p2+mean-shift:0.2", "together,"),
        (
            "partly (1 of 2 hold; failed: x)",
            "torch-default+mean-shift:0.2",
            "only mean-shift:0.2 (the larger",
        ),
        (
            None,
            "torch-default+conv-cov:cifar-p2+mean-shift:0.2",
            "never measured together; they act on different",
        ),
    ],
)
def test_a_combination_row_decides_and_without_one_different_variables_do(verdict, spec, said):
    rows = [
        _row("conv-cov", "depthwise", {"kernel_size": "7x7"}, effect=1.0),
        _row("mean-shift:0.2", "mlp", {}, effect=2.0),
    ]
    if verdict is not None:
        rows.append(_row("conv-cov+mean-shift", "together", {}, verdict, together=("conv-cov", "mean-shift")))
    choice = auto.choose(_convnext(), evidence=_table(rows))
    assert choice.spec == spec
    assert any(said in line for line in choice.lines), choice.lines


def test_forms_on_the_same_variables_never_measured_together_keep_the_larger_effect():
    rows = [
        _row("torch-default-depthwise", "depthwise", {"kernel_size": "7x7"}, effect=1.0),
        _row("conv-cov", "depthwise", {"kernel_size": "7x7"}, effect=3.0),
    ]
    rows[1]["structure"] = "mlp"  # a second group on the same depthwise kernels
    rows[1]["condition"] = {}
    choice = auto.choose(_convnext(), evidence=_table(rows))
    assert choice.spec == "torch-default+conv-cov:cifar-p2"
    assert any("both act on the same variables; only conv-cov" in line for line in choice.lines)


def test_a_form_acting_on_every_group_of_a_kind_needs_support_in_each():
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.DepthwiseConv2D(3, padding="same")(inputs)
    x = keras.layers.DepthwiseConv2D(15, padding="same")(x)  # supported trained (covariance_kernel_size)
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x)))
    table = auto.load_evidence()
    choice = auto.choose(model, evidence=table)
    assert choice.spec == "torch-default"
    assert any("conv-cov: not applied; it acts on every depthwise group" in line for line in choice.lines)


def test_bad_evidence_and_teacher_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"^`evidence` .* is not an evidence table") as info:
        auto.load_evidence(bad)
    assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match="^`evidence` must be"):
        auto.load_evidence(3)
    with pytest.raises(TypeError, match="^`teacher` must be a path"):
        auto.choose(_convmixer(9), teacher=3)


def test_docs_show_the_decision_table_of_the_shipped_table():
    text = (REPO / "docs" / "initialize.md").read_text()
    found = re.search(r"<!-- decision table:[^\n]*-->\n(.*?)\n<!-- end of the decision table -->", text, re.S)
    assert found is not None and found.group(1) == auto.decision_table()
    assert "--init auto" in (REPO / "README.md").read_text()


def test_the_evidence_ships_with_the_package():
    table = json.loads(auto.EVIDENCE.read_text())
    assert table["format_version"] == 1 and table["rows"]
    assert "evidence.json" in (REPO / "pyproject.toml").read_text()


def test_init_command_prints_a_line_per_group_and_records_the_resolved_forms(tmp_path, capsys):
    out = tmp_path / "auto.keras"
    argv = ["init", "convmixer-8/2", "--init", "auto", "--out", str(out), "--input-shape", "16,16,3"]
    assert cli.main([*argv, "--classes", "10", "--freeze", "depthwise"]) == 0
    printed = capsys.readouterr().out
    assert "Init `auto` chose, per structure group:" in printed
    assert re.search(r"- \d+ depthwise 9x9 \(frozen\): conv-cov, \+", printed)  # frozen before auto
    assert "Init `auto` -> `torch-default+conv-cov:cifar-p2` (seed 0)" in printed
    written = ks.methods.inspection.initializers_in_file(out, keras.saving.load_model(out))
    assert set(written.values()) == {"torch-default", "conv-cov:cifar-p2"}
    # The file records the whole spec, as given and resolved; inspect says it; a rerun of the
    # resolved spec writes the same weights.
    resolved = "torch-default+conv-cov:cifar-p2"
    assert ks.methods.inspection.recorded_spec(out) == {"spec": "auto", "resolved": resolved, "seed": 0}
    again = tmp_path / "again.keras"
    argv_again = [
        *argv[:3],
        resolved,
        "--out",
        str(again),
        *argv[6:],
        "--classes",
        "10",
        "--freeze",
        "depthwise",
    ]
    assert cli.main(argv_again) == 0
    assert ks.methods.inspection.recorded_spec(again) == {"spec": resolved, "resolved": resolved, "seed": 0}
    for a, b in zip(*(_weights(keras.saving.load_model(f)) for f in (out, again)), strict=True):
        np.testing.assert_array_equal(a, b)
    capsys.readouterr()
    assert cli.main(["inspect", str(out), "--out", str(tmp_path / "inspected")]) == 0
    said = f"Initialized by `structinit init --init auto`, resolved on this model to `{resolved}` (seed 0)"
    assert said in capsys.readouterr().out
    report = json.loads((tmp_path / "inspected" / "report.json").read_text())
    assert report["init_spec"]["resolved"] == resolved and report["auto"]["spec"] == resolved


def test_inspect_shows_what_auto_would_choose_and_why():
    for k, spec, line in (
        (15, "torch-default+conv-cov:cifar-p2", r"^\d+ depthwise 15x15 \(trained\): conv-cov, \+"),
        (3, "torch-default", r"^\d+ depthwise 3x3 \(trained\): torch-default; conv-cov measured [-+]\d"),
    ):
        model = _convmixer(k)
        report = ks.inspect(model)
        assert report.auto == {"spec": spec, "lines": auto.choose(model).lines}
        assert any(re.search(line, said) for said in report.auto["lines"])
        text = report.to_markdown()
        assert f"## What `--init auto` would choose\n\n`{spec}`, from the evidence table" in text
        assert all(f"- {said}" in text for said in report.auto["lines"])


@once_per_suite("the grammar reads text")
def test_auto_takes_an_optional_teacher_and_stands_alone(tmp_path):
    assert [(p.name, p.value) for p in ks.parse_init_spec("auto")] == [("auto", None)]
    with pytest.raises(ValueError, match=r"^`init` part 'auto:x': auto needs a teacher \.keras file"):
        ks.parse_init_spec("auto:x")
    with pytest.raises(ValueError, match="auto a teacher .keras file not found"):
        ks.parse_init_spec(f"auto:{tmp_path / 'none.keras'}")
    with pytest.raises(ValueError, match="'auto' cannot be combined"):
        ks.parse_init_spec("auto+torch-default")


def _train(tmp_path, name, init, data):
    out = tmp_path / name
    argv = ["train", "--model", "convmixer-8/2", "--kernel-size", "15", "--init", init, "--epochs", "1"]
    argv += ["--data", data, "--out", str(out), "--batch-size", "16", "--rand-augment", "none"]
    assert cli.main([*argv, "--seed", "3"]) == 0
    return json.loads((out / "results.json").read_text()), out


def test_train_records_the_resolved_spec_and_a_rerun_with_it_is_bit_identical(tmp_path, capsys):
    rng = np.random.default_rng(0)
    data = str(tmp_path / "train.npz")
    np.savez(data, x=rng.integers(0, 256, (48, 32, 32, 3), dtype=np.uint8), y=np.arange(48) % 10)
    results, out = _train(tmp_path, "auto", "auto", data)
    printed = capsys.readouterr().out
    assert "Init auto -> torch-default+conv-cov:cifar-p2:" in printed
    assert re.search(r"\n  \d+ depthwise 15x15 \(trained\): conv-cov, \+", printed)
    assert results["init_resolved"] == "torch-default+conv-cov:cifar-p2"
    assert results["config"]["init"] == "auto"
    again, out_again = _train(tmp_path, "rerun", results["init_resolved"], data)
    assert "init_resolved" not in again
    assert again["metrics"] == results["metrics"]
    trained = (keras.saving.load_model(p / "model.keras") for p in (out, out_again))
    for a, b in zip(*(_weights(m) for m in trained), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_teacher_of_the_family_makes_selection_eligible(tmp_path):
    student = build_model("vit-tiny", 10, (8, 8, 3), patch_size=4)
    teacher = tmp_path / "teacher.keras"
    build_model("vit-small", 10, (8, 8, 3), patch_size=4).save(teacher)
    choice = auto.choose(student, teacher=str(teacher))
    assert choice.spec == f"select:{teacher}"
    assert any(line.startswith("teacher ") and ": select, +" in line for line in choice.lines)
    assert choice.lines[-1] == "select writes the whole model's weights, in place of torch-default"
    assert ks.initialize(student, "auto", teacher=str(teacher), seed=0)


def test_the_spec_carries_the_teacher_and_names_only_one(tmp_path):
    """``auto:TEACHER.keras`` is ``auto`` with ``teacher=``: the same choice and weights, and a spec
    that records its teacher (what ``train --init auto:T`` takes)."""
    teacher, other = tmp_path / "teacher.keras", tmp_path / "other.keras"
    build_model("vit-small", 10, (8, 8, 3), patch_size=4).save(teacher)
    build_model("vit-small", 10, (8, 8, 3), patch_size=4).save(other)

    def student():
        return build_model("vit-tiny", 10, (8, 8, 3), patch_size=4)

    by_spec, by_keyword = _seeded(student), _seeded(student)
    ks.initialize(by_spec, f"auto:{teacher}", seed=0)
    ks.initialize(by_keyword, "auto", teacher=str(teacher), seed=0)
    for a, b in zip(_weights(by_spec), _weights(by_keyword), strict=True):
        np.testing.assert_array_equal(a, b)
    assert ks.initialize(by_spec, f"auto:{teacher}", teacher=str(teacher), seed=0)  # the same one: fine
    with pytest.raises(ValueError, match="name two teachers: give one"):
        ks.initialize(by_spec, f"auto:{teacher}", teacher=str(other), seed=0)


def test_a_run_resolves_the_teacher_of_its_spec(tmp_path):
    from keras_structinit.recipes import RecipeConfig, Run

    teacher = tmp_path / "teacher.keras"
    build_model("vit-small", 10, (32, 32, 3), patch_size=8).save(teacher)
    rng = np.random.default_rng(0)
    data = tmp_path / "train.npz"
    np.savez(data, x=rng.integers(0, 256, (32, 32, 32, 3), dtype=np.uint8), y=np.arange(32) % 10)
    config = RecipeConfig("cifar10", epochs=1, batch_size=8, rand_augment=None)
    kwargs = {"model_kwargs": {"patch_size": 8}, "data": str(data), "config": config}
    checked = Run("vit-tiny", init=f"auto:{teacher}", **kwargs).check()
    assert checked.resolved == f"select:{teacher}"
    assert any(line.startswith("teacher ") and ": select, +" in line for line in checked.choices)
    assert str(teacher) in Run("vit-tiny", init=f"auto:{teacher}", **kwargs).inputs()


def test_init_takes_a_teacher_for_auto_and_refuses_it_elsewhere(tmp_path, capsys):
    teacher, student = tmp_path / "teacher.keras", tmp_path / "student.keras"
    build_model("vit-small", 10, (8, 8, 3), patch_size=4).save(teacher)
    build_model("vit-tiny", 10, (8, 8, 3), patch_size=4).save(student)
    out = tmp_path / "selected.keras"
    argv = ["init", str(student), "--init", "auto", "--teacher", str(teacher), "--out", str(out)]
    assert cli.main(argv) == 0
    assert re.search(r"\n- teacher \S+ \(family vit; the model's vit\): select, \+", capsys.readouterr().out)
    recorded = ks.methods.inspection.recorded_spec(out)
    assert (recorded["spec"], recorded["resolved"]) == (f"auto:{teacher}", f"select:{teacher}")
    build_model("vit-small", 10, (8, 8, 3), patch_size=4).save(tmp_path / "other.keras")
    for init, given, message in (
        ("torch-default", str(teacher), "--teacher is read by --init auto"),
        ("auto", str(tmp_path / "teacher.h5"), "--teacher must be a .keras file"),
        ("auto", str(tmp_path / "none.keras"), "--teacher"),
        (f"auto:{tmp_path / 'other.keras'}", str(teacher), "name two teachers: give one"),
    ):
        refused = tmp_path / "refused.keras"
        argv = ["init", str(student), "--init", init, "--teacher", given, "--out", str(refused)]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
        assert not refused.exists()


def test_a_frozen_run_reads_frozen_filters(tmp_path):
    """``Run(frozen=True)`` with ``auto`` chooses by the frozen filters' rows: the run freezes before
    ``auto`` reads the model (ConvMixer k = 9: conv-cov frozen, the baseline trained)."""
    from keras_structinit.recipes import RecipeConfig, Run

    rng = np.random.default_rng(0)
    data = tmp_path / "train.npz"
    np.savez(data, x=rng.integers(0, 256, (32, 32, 32, 3), dtype=np.uint8), y=np.arange(32) % 10)
    config = RecipeConfig("cifar10", epochs=1, batch_size=8, rand_augment=None)
    kwargs = {"model_kwargs": {"kernel_size": 9, "patch_size": 2}, "data": str(data), "config": config}
    frozen = Run("convmixer-8/2", init="auto", frozen=True, **kwargs).check()
    thawed = Run("convmixer-8/2", init="auto", **kwargs).check()
    for checked, state in ((frozen, "frozen"), (thawed, "trained")):
        chosen = auto.choose(_convmixer(9, frozen=state == "frozen"))
        assert checked.resolved == chosen.spec and list(checked.choices) == list(chosen.lines)
    assert frozen.resolved == "torch-default+conv-cov:cifar-p2"
    assert any(re.match(r"\d+ depthwise 9x9 \(frozen\): conv-cov, \+", line) for line in frozen.choices)
    assert any(re.match(r"\d+ depthwise 9x9 \(trained\): torch-default; ", line) for line in thawed.choices)
