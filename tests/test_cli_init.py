"""structinit init: any init spec applied to your own model file, written as a new .keras (issue 36)."""

import hashlib
import importlib.util

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import cli

from conftest import once_per_suite, run_in_fresh_process, to_numpy


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
@once_per_suite("a keras.applications ConvNeXtTiny file; the init itself is tested on every backend below")
def test_init_a_keras_applications_convnext_file(tmp_path, capsys):
    """Issue 36's acceptance: conv-cov+mean-shift on a saved ConvNeXtTiny, the input untouched."""
    source = tmp_path / "convnext.keras"
    keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10).save(source)
    digest = _digest(source)
    out, report = tmp_path / "init.keras", tmp_path / "init.md"
    assert (
        cli.main(
            [
                "init",
                str(source),
                "--init",
                "conv-cov+mean-shift",
                "--out",
                str(out),
                "--report",
                str(report),
                "--seed",
                "3",
            ]
        )
        == 0
    )
    assert _digest(source) == digest
    printed = capsys.readouterr().out
    # The same spec through the API on the same file gives the same weights, bit for bit.
    expected = keras.saving.load_model(source)
    paths = ks.initialize(expected, "conv-cov+mean-shift", seed=3)
    written = keras.saving.load_model(out).weights  # in the same order (layer scales' names vary)
    for variable, saved in zip(expected.weights, written, strict=True):
        np.testing.assert_array_equal(to_numpy(saved), to_numpy(variable))
    got = {v.path: to_numpy(v) for v in expected.weights}
    depthwise = [p for p in paths if p.endswith("depthwise_conv/kernel")]
    first_mlp = [p for p in paths if p.endswith("pointwise_conv_1/kernel")]
    assert len(depthwise) == len(first_mlp) == 18
    for path in first_mlp:
        assert got[path].mean() == pytest.approx(0.2, abs=0.01)  # the shift of the mean-shift default
    text = report.read_text()
    assert text in printed
    for path in depthwise:
        assert f"| {path} | Conv2D | conv-cov:cifar-p2 |" in text
    for path in first_mlp:
        assert f"| {path} | Dense | mean-shift:0.2 |" in text
    assert "| Dense | 37 | 74 |" in text  # 2 per block and the head: kernel and bias each


def test_init_a_zoo_model_frozen_reloads_and_trains_in_a_fresh_process(tmp_path, capsys):
    out = tmp_path / "convmixer.keras"
    assert (
        cli.main(
            [
                "init",
                "convmixer-8/2",
                "--input-shape",
                "16,16,3",
                "--classes",
                "5",
                "--init",
                "torch-default+conv-cov",
                "--freeze",
                "depthwise",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "2 kernels frozen" in printed and "| DepthwiseConv2D | 2 | 4 |" in printed
    assert "| block_1_depthwise_conv/kernel | DepthwiseConv2D | conv-cov:cifar-p2 |" in printed
    run_in_fresh_process(
        f"""
        import numpy as np, keras
        model = keras.saving.load_model({str(out)!r})
        assert model.input_shape == (None, 16, 16, 3) and model.output_shape == (None, 5)
        kernels = [model.get_layer(f"block_{{i}}_depthwise_conv").kernel for i in (1, 2)]
        assert not any(k.trainable for k in kernels)
        before = [keras.ops.convert_to_numpy(k) for k in kernels]
        model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        x = np.random.default_rng(0).normal(size=(8, 16, 16, 3)).astype("float32")
        model.fit(x, np.arange(8) % 5, epochs=1, verbose=0)
        for k, b in zip(kernels, before):
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(k), b)
    """,
        tmp_path,
    )


def _labelled_images(path):
    """An .npz of 40 random 12x12 RGB images in 3 classes."""
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.integers(0, 256, (40, 12, 12, 3), dtype=np.uint8), y=np.arange(40) % 3)
    return path


def test_data_aligned_needs_data_and_measures_it(tmp_path, capsys):
    data = _labelled_images(tmp_path / "images.npz")
    out = tmp_path / "aligned.keras"
    argv = [
        "init",
        "simple-cnn",
        "--input-shape",
        "12,12,3",
        "--classes",
        "3",
        "--init",
        "data-aligned",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 2
    assert "--init data-aligned measures images: pass --data" in capsys.readouterr().err
    assert not out.exists()
    assert cli.main([*argv, "--data", str(data), "--data-scaling", "symmetric"]) == 0
    assert "| conv_1/kernel | Conv2D | data-aligned:1 |" in capsys.readouterr().out
    assert out.exists()


def test_data_aligned_on_a_2x2_patch_convmixer_from_the_command_line(tmp_path, capsys):
    """Issue 52's acceptance: the zoo's 2x2 RGB stem (patch dimension 12) takes 12 eigenvectors."""
    data = _labelled_images(tmp_path / "images.npz")
    out = tmp_path / "aligned.keras"
    argv = [
        "init",
        "convmixer-8/1",
        "--input-shape",
        "12,12,3",
        "--classes",
        "3",
        "--init",
        "data-aligned",
        "--data",
        str(data),
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    assert "| stem_conv/kernel | Conv2D | data-aligned:1 |" in capsys.readouterr().out
    kernel = to_numpy(keras.saving.load_model(out).get_layer("stem_conv").kernel)
    assert kernel.shape == (2, 2, 3, 8) and np.linalg.matrix_rank(kernel.reshape(12, 8)) == 8


@pytest.mark.parametrize(
    "make, extra, message",
    [
        (None, ["missing.keras", "--init", "conv-cov"], "MODEL 'missing.keras' does not exist"),
        ("corrupt", ["{corrupt}", "--init", "conv-cov"], "is not a .keras archive"),
        (None, ["convmixer-8/2", "--init", "conv-cov:nope"], "--init part 'conv-cov:nope'"),
        (None, ["vit-tiny", "--init", "conv-cov"], "has no spatial depthwise convolutions"),
        (None, ["simple-cnn", "--init", "default"], "--init default changes nothing"),
        ("model", ["{model}", "--init", "conv-cov", "--out", "{model}"], "`--out`"),
        (
            "model",
            ["{model}", "--init", "conv-cov", "--classes", "3"],
            "--input-shape and --classes apply to",
        ),
        (None, ["keras.applications:Nope", "--init", "conv-cov"], "keras.applications has no model 'Nope'"),
        (None, ["convmixer-8/2", "--init", "conv-cov", "--out", "model.h5"], "--out must be a .keras path"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, make, extra, message):
    paths = {"corrupt": tmp_path / "corrupt.keras", "model": tmp_path / "model.keras"}
    paths["corrupt"].write_bytes(b"not a zip")
    if make == "model":
        ks.models.build_model("convmixer-8/2", 3, (8, 8, 3)).save(paths["model"])
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) for a in extra]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "out.keras")]
    assert cli.main(["init", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out.keras").exists()


def test_inspect_writes_its_reports_and_refuses_a_model_with_nothing_to_inspect(tmp_path, capsys):
    import json

    model = tmp_path / "convmixer.keras"
    assert (
        cli.main(
            ["init", "convmixer-64/3", "--input-shape", "16,16,3", "--init", "conv-cov", "--out", str(model)]
        )
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "report"
    assert cli.main(["inspect", str(model), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "## Spatial convolutions" in printed and "Sigma grows with depth: yes" in printed
    data = json.loads((out / "report.json").read_text())
    assert [r["kind"] for r in data["spatial"]] == ["conv", "depthwise", "depthwise", "depthwise"]
    assert (out / "report.md").read_text().startswith("# Inspection of")
    if importlib.util.find_spec("matplotlib"):
        assert sorted(p.name for p in out.glob("*.png")) == [
            "covariance_blocks.png",
            "position_variance.png",
            "spatial_depth.png",
        ]
        assert "![spatial_depth](spatial_depth.png)" in (out / "report.md").read_text()
    assert cli.main(["inspect", str(model), "--out", str(out)]) == 2  # the report exists
    assert "--overwrite" in capsys.readouterr().err
    dense = tmp_path / "dense.keras"
    keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)]).save(dense)
    assert cli.main(["inspect", str(dense), "--out", str(tmp_path / "r2")]) == 2
    assert "no spatial convolution and no MLP block" in capsys.readouterr().err


def test_inspect_with_labelled_data_writes_every_sections_figure(tmp_path, capsys):
    """Issue 52: --data's labels reach the specialization section; the four analyses' figures
    (Fig. 13's position variance, Fig. 1's MLP covariance, the transfer function, Figs. 7/10-11's
    specialization) are written beside the others."""
    import json

    x, y = ks.datasets.procedural_images(40, image_size=8)
    data = tmp_path / "labelled.npz"
    np.savez(data, x=x, y=y)
    out = tmp_path / "report"
    argv = [
        "inspect",
        "vit-tiny-8/2",
        "--input-shape",
        "8,8,3",
        "--classes",
        "10",
        "--data",
        str(data),
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    assert "## Specialization of the last hidden neurons" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["specialization"]["examples"] == 40
    assert report["specialization"]["classes"] == len(np.unique(y))  # the classes present
    assert report["mlp"][0]["joint"] is not None and report["position_variance"]["layers"]
    assert len(report["first_layer"]["transfer"]) == len(report["first_layer"]["spectrum"])
    if importlib.util.find_spec("matplotlib"):
        from keras_structinit import methods

        assert sorted(p.name for p in out.glob("*.png")) == sorted(methods.figure_names())
