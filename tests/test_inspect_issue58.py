"""Issue 58, points 4-6 on ``structinit inspect``: frozen kernels of stock layers, the centre /
border ratio, the initializer column, the line without matplotlib and titles cut mid-word."""

import importlib.util
import json
import re
import zipfile

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import cli
from keras_structinit.cli.inspect import NO_FIGURES
from keras_structinit.lc.inspect import MAX_RATIO, centre_border
from keras_structinit.methods import inspection
from keras_structinit.methods.inspection import INIT_RECORD, initializers_in_file
from keras_structinit.utils import viz

from conftest import once_per_suite

#: A number as report.md prints it: ``74209838195797872.000``, ``1.2e+07``, ``3``.
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")


def rows_of(markdown, first_cell, second_cell):
    """The cells of report.md's table rows that start with these two cells."""
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith(f"| {first_cell} | {second_cell} |")
    ]


def test_inspect_reports_the_depthwise_kernels_init_froze_and_the_init_that_wrote_them(tmp_path, capsys):
    """Acceptance: every depthwise kernel of a keras.applications MobileNetV3Small written by
    ``init --freeze depthwise`` is frozen in report.md and report.json; the initializer column
    names the init form for what it wrote and nothing for the rest."""
    model = tmp_path / "mobilenet.keras"
    assert (
        cli.main(
            [
                "init",
                "keras.applications:MobileNetV3Small",
                "--input-shape",
                "32,32,3",
                "--classes",
                "10",
                "--init",
                "conv-cov",
                "--freeze",
                "depthwise",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    out = tmp_path / "report"
    assert cli.main(["inspect", str(model), "--out", str(out)]) == 0
    capsys.readouterr()
    data = json.loads((out / "report.json").read_text())
    markdown = (out / "report.md").read_text()
    depthwise = [
        r for r in data["layers"] if r["kind"] == "DepthwiseConv2D" and r["path"].endswith("/kernel")
    ]
    assert len(depthwise) == 11 and not any(r["trainable"] for r in depthwise)
    assert {r["path"] for r in data["layers"] if not r["trainable"] and r["path"].endswith("/kernel")} == {
        r["path"] for r in depthwise
    }  # nothing else frozen but the BN statistics
    for row in depthwise:
        (cells,) = rows_of(markdown, row["path"], "DepthwiseConv2D")
        assert cells[2] == "False" and cells[-1] == "conv-cov:cifar-p2", cells
    spatial = [r for r in data["spatial"] if r["kind"] == "depthwise"]
    assert len(spatial) == 11 and not any(r["trainable"] for r in spatial)
    assert all(rows_of(markdown, r["path"], "depthwise")[0][-1] == "frozen" for r in spatial)
    by_path = {r["path"]: r for r in data["layers"]}
    beta = by_path["conv_bn/beta"]  # zeros its config drew; no init wrote it
    assert beta["initializer"] is None and beta["configured_initializer"] == "Zeros"
    assert rows_of(markdown, "conv_bn/beta", "BatchNormalization")[0][-1] == "—"
    assert by_path["conv/kernel"]["initializer"] is None  # conv-cov wrote the depthwise kernels only


def test_a_user_model_frozen_before_saving_is_reported_frozen(tmp_path, capsys):
    """A stock DepthwiseConv2D frozen by freeze_spatial (as ``train --frozen`` does) and saved."""
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(8, 3, name="stem")(inputs)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x)))
    assert ks.freeze_spatial(model) == ["dw/kernel"]
    model.save(tmp_path / "user.keras")
    assert cli.main(["inspect", str(tmp_path / "user.keras"), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    layers = {r["path"]: r for r in json.loads((tmp_path / "r" / "report.json").read_text())["layers"]}
    assert layers["dw/kernel"]["trainable"] is False and layers["dw/bias"]["trainable"] is True
    assert layers["stem/kernel"]["trainable"] is True and layers["stem/kernel"]["initializer"] is None


def test_the_init_record_is_read_by_place_checked_and_dropped_by_a_new_save(tmp_path, capsys):
    model = ks.models.build_model("convmixer-8/2", 3, (8, 8, 3))
    path = tmp_path / "m.keras"
    model.save(path)
    kernel = next(v.path for v in model.variables if v.path.endswith("kernel"))
    inspection.record_initializers(path, model, {kernel: "conv-cov:cifar-p2", "not/a/variable": "x"})
    loaded = keras.saving.load_model(path)
    assert initializers_in_file(path, loaded) == {kernel: "conv-cov:cifar-p2"}
    rows = ks.inspect(loaded, initializers={kernel: "x"}).layers
    assert [r["initializer"] for r in rows if r["initializer"]] == ["x"]
    loaded.save(tmp_path / "again.keras")  # the values may change after loading: no record
    assert initializers_in_file(tmp_path / "again.keras", loaded) == {}
    with zipfile.ZipFile(tmp_path / "again.keras", "a") as archive:
        archive.writestr(f"assets/{INIT_RECORD}", "{not json")
    assert cli.main(["inspect", str(tmp_path / "again.keras"), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "init record" in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()
    with pytest.raises(TypeError, match="`initializers`"):
        ks.inspect(loaded, initializers=["conv-cov"])


@once_per_suite("pure NumPy, the same on every backend")
def test_the_centre_border_ratio_is_left_out_with_its_reason():
    flat = np.ones((3, 3))
    assert centre_border(flat) == (pytest.approx(1.0), None)
    assert centre_border(np.ones((2, 2))) == (None, "no border: a side below 3")
    ratio, note = centre_border(np.pad([[1.0]], 1, constant_values=1 / (10 * MAX_RATIO)))
    assert ratio is None and note.startswith("border ~ 0")
    ratio, note = centre_border(np.pad([[1.0]], 1, constant_values=10 / MAX_RATIO))
    assert ratio == pytest.approx(MAX_RATIO / 10) and note is None


def test_no_ratio_above_a_million_for_a_conv_cov_convnext_and_titles_keep_whole_words(tmp_path, monkeypatch):
    """Acceptance: the report.md of a conv-cov ConvNeXtTiny prints no number above 1e6 (it printed
    ``74209838195797872.000``); its figures' titles show every layer name whole, broken only
    between its words (they were cut to 24 characters, or mid-word at 22)."""
    model = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
    ks.initialize(model, "conv-cov", seed=0)
    report = ks.inspect(model)
    markdown = report.to_markdown()
    numbers = [float(n) for n in NUMBER.findall(markdown)]
    assert numbers and max(numbers) <= MAX_RATIO, max(numbers)
    rows = json.loads(report.to_json())["position_variance"]["layers"]
    hidden = [r for r in rows if r["centre_border"] is None and r["kernel_size"] == [7, 7]]
    assert hidden and all(r["centre_border_note"].startswith("border ~ 0") for r in hidden)
    assert all(rows_of(markdown, r["path"], "depthwise")[-1][-1] == r["centre_border_note"] for r in hidden)
    shown = [r for r in rows if r["centre_border"] is not None]
    assert shown and all(r["centre_border_note"] is None for r in shown)

    if importlib.util.find_spec("matplotlib") is None:
        return
    drawn = {}
    save = viz.save_figure

    def capture(fig, path, overwrite):
        drawn[str(path).rsplit("/", 1)[-1]] = [ax.get_title() for ax in fig.axes if ax.get_title()]
        return save(fig, path, overwrite)

    monkeypatch.setattr(viz, "save_figure", capture)
    report.figures(tmp_path)
    names = {r["layer"] for r in rows}
    long = [n for n in names if len(n) > 24]
    assert long  # the names that were cut
    for figure in ("position_variance.png", "covariance_blocks.png"):
        firsts = [re.sub(r"(?<=[_/])\n", "", title).split("\n")[0] for title in drawn[figure]]
        layers = [f for f in firsts if not f.startswith("all ")]  # the pooled maps' titles
        assert layers and set(layers) <= names, (figure, drawn[figure])
        assert any(f in long for f in layers)


@once_per_suite("pure Python, the same on every backend")
def test_wrap_label_breaks_only_between_words():
    assert viz.wrap_label("convnext_tiny_downsampling_conv_0", 22) == "convnext_tiny_\ndownsampling_conv_0"
    assert viz.wrap_label("a_much_too_long_word", 3) == "a_\nmuch_\ntoo_\nlong_\nword"
    assert viz.wrap_label("unbreakable" * 3, 10) == "unbreakable" * 3  # whole, over the width
    assert viz.wrap_label("sigma -0.5 at 1e-6", 6) == "sigma\n-0.5\nat\n1e-6"
    assert viz.wrap_label("one\ntwo three", 20) == "one\ntwo three"
    text = "stage_0/block_1_depthwise_conv: the filters' variance along the data's eigenvectors"
    for width in range(8, 60, 7):
        lines = viz.wrap_label(text, width).split("\n")
        assert all(len(line) <= width or " " not in line and not re.search(r"[_/].", line) for line in lines)
        joined = "".join(line + ("" if line.endswith(("_", "/")) else " ") for line in lines).strip()
        assert joined == text


def test_inspect_without_matplotlib_says_it_skipped_the_figures(tmp_path, capsys, monkeypatch):
    argv = ["inspect", "convmixer-16/2", "--input-shape", "8,8,3", "--out"]
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "matplotlib" else find_spec(name, *a, **k),
    )
    assert cli.main([*argv, str(tmp_path / "none")]) == 0
    printed = capsys.readouterr().out
    assert printed.count(NO_FIGURES) == 1 and printed.rstrip().endswith(NO_FIGURES)
    assert not list((tmp_path / "none").glob("*.png"))
    assert "![" not in (tmp_path / "none" / "report.md").read_text()
    monkeypatch.undo()
    if find_spec("matplotlib") is not None:
        assert cli.main([*argv, str(tmp_path / "with")]) == 0
        assert NO_FIGURES not in capsys.readouterr().out and list((tmp_path / "with").glob("*.png"))
