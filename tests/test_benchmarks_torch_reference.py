"""benchmarks/torch_reference.py: the plain-PyTorch ConvMixer is the package's model, weight for weight.

The Keras model runs on the backend under test, the reference always in PyTorch. Compared: the
parameter counts (Keras' trainable weights = PyTorch's parameters; Keras' non-trainable weights, the
BatchNorm moving statistics, = PyTorch's BatchNorm running mean and variance buffers; the step counter
``num_batches_tracked`` is not a parameter and is not counted) and the outputs with the same weights.
"""

import json
from argparse import Namespace

import keras
import numpy as np
import pytest

from benchmarks import torch_reference as ref
from keras_structinit import freeze_spatial
from keras_structinit.models import convmixer

from conftest import once_per_suite

torch = pytest.importorskip("torch", reason="the plain-PyTorch reference ConvMixer needs torch installed")

SMALL = {
    "dim": 16,
    "depth": 2,
    "kernel_size": 5,
    "patch_size": 2,
    "num_classes": 10,
    "input_shape": (16, 16, 3),
}


def _small_pair(seed=0):
    keras.utils.set_random_seed(seed)
    model = convmixer(
        SMALL["dim"],
        SMALL["depth"],
        kernel_size=SMALL["kernel_size"],
        patch_size=SMALL["patch_size"],
        num_classes=SMALL["num_classes"],
        input_shape=SMALL["input_shape"],
    )
    return model, ref.reference_like(model)


def _randomize_batchnorm(model, rng):
    """Non-trivial BatchNorm weights and statistics, so that their transfer is tested too."""
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            n = layer.gamma.shape[0]
            layer.gamma.assign(rng.uniform(0.5, 1.5, n).astype("float32"))
            layer.beta.assign(rng.normal(0, 0.2, n).astype("float32"))
            layer.moving_mean.assign(rng.normal(0, 0.2, n).astype("float32"))
            layer.moving_variance.assign(rng.uniform(0.5, 2.0, n).astype("float32"))


def test_the_reference_has_the_package_models_parameter_count():
    model, module = _small_pair()
    keras_counts, torch_counts = ref.keras_parameter_counts(model), ref.torch_parameter_counts(module)
    assert keras_counts["trainable"] == torch_counts["trainable"] > 0
    assert keras_counts["non_trainable"] == torch_counts["bn_running_stats"] == 2 * 16 * (1 + 2 * 2)
    assert keras_counts["total"] == torch_counts["total"] == model.count_params()
    # Frozen depthwise kernels: Keras' freeze_spatial, PyTorch's requires_grad_(False).
    freeze_spatial(model)
    for conv in module.modules():
        if isinstance(conv, torch.nn.Conv2d) and conv.groups > 1:
            conv.weight.requires_grad_(False)
    frozen_keras, frozen_torch = ref.keras_parameter_counts(model), ref.torch_parameter_counts(module)
    kernels = 2 * 16 * 5 * 5  # depth x channels x k x k
    assert frozen_keras["trainable"] == frozen_torch["trainable"] == keras_counts["trainable"] - kernels
    assert frozen_keras["non_trainable"] == frozen_torch["frozen"] + frozen_torch["bn_running_stats"]


def test_same_weights_give_the_same_outputs_within_1e_4():
    model, module = _small_pair()
    rng = np.random.default_rng(0)
    _randomize_batchnorm(model, rng)
    ref.transfer_weights(model, module)
    x = rng.standard_normal((4, *SMALL["input_shape"]), dtype=np.float32)
    x_torch = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
    module.eval()
    with torch.no_grad():
        expected = module(x_torch).numpy()
    got = keras.ops.convert_to_numpy(model(x, training=False))
    assert np.abs(expected).max() > 0.1  # not a trivially small output
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)
    # In training mode both normalize with the batch's statistics.
    module.train()
    with torch.no_grad():
        expected = module(x_torch).numpy()
    got = keras.ops.convert_to_numpy(model(x, training=True))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


@once_per_suite("a shape check in NumPy and PyTorch, the same on every backend")
def test_the_transfer_refuses_a_reference_of_another_size():
    model, _ = _small_pair()
    other = ref.reference_convmixer(16, 2, kernel_size=3, patch_size=2, num_classes=10)
    with pytest.raises(ValueError, match="block_1_depthwise_conv.kernel"):
        ref.transfer_weights(model, other)
    wrong_bn = ref.reference_convmixer(16, 2, kernel_size=5, patch_size=2, num_classes=10, bn_momentum=0.01)
    with pytest.raises(ValueError, match="stem_bn: BatchNorm"):
        ref.transfer_weights(model, wrong_bn)


def _quick_args(tmp_path, rows):
    args = ref.parse_args(
        ["--quick", "--steps", "1", "--warmup", "0", "--rows", *rows, "--out", str(tmp_path)]
    )
    assert args.model == ref.QUICK_MODEL
    return args


def test_a_tiny_run_times_plain_torch_and_this_backends_keras_model(tmp_path):
    backend = keras.backend.backend()
    row = f"keras-{backend}"
    args = _quick_args(tmp_path, ["torch-eager", row])
    plain = ref.measure_group("torch", ["torch-eager"], args)
    written = []
    package = ref.measure_group(row, [row], args, write=lambda result: written.append(json.dumps(result)))
    assert len(written) == 2  # after each of thawed and frozen
    for result in (plain, package):
        assert set(result["rows"]) <= {"torch-eager", row}
        assert result["loadavg"]["start"] and result["loadavg"]["end"] and result["software"]["keras"]
        assert result["order"] == [f"{r} {mode}" for r in result["rows"] for mode in ref.MODES]
        for mode in ref.MODES:
            measured = result["rows"][next(iter(result["rows"]))][mode]
            assert measured["median_s"] > 0
            memory = measured["memory"]  # on CPU: the process' peak RSS and this mode's own growth
            assert memory["kind"] == "cpu_rss" and memory["device_peak_bytes"] is None
            assert memory["rss_peak_bytes"] > 0 and memory["rss_growth_bytes"] >= 0
    eager, keras_row = plain["rows"]["torch-eager"], package["rows"][row]
    # The same model: the same trainable parameters, frozen or not.
    for mode in ref.MODES:
        assert eager[mode]["parameters"]["trainable"] == keras_row[mode]["parameters"]["trainable"]
    assert eager["frozen"]["parameters"]["trainable"] < eager["thawed"]["parameters"]["trainable"]
    data = {
        "config": ref._config(args),
        "rows": {**plain["rows"], **package["rows"]},
        "groups": {"torch": plain, row: package},
        "machine": plain["machine"],
    }
    text = ref.render_markdown(data)
    assert "| `torch-eager` | plain PyTorch, eager | eager |" in text and f"| `{row}` |" in text
    ratio = keras_row["thawed"]["median_s"] / eager["thawed"]["median_s"]
    assert f"| {ratio:.2f} |" in text
    assert "Peak RSS GB (+ step growth): thawed / frozen" in text and "`ru_maxrss`" in text
    gb = eager["frozen"]["memory"]["rss_peak_bytes"] / 1e9
    assert f"{eager['thawed']['memory']['rss_peak_bytes'] / 1e9:.2f} (+" in text and f"/ {gb:.2f} (+" in text
    older = json.loads(json.dumps(data))  # rows recorded before issue 62 still render
    for mode in ref.MODES:
        older["rows"]["torch-eager"][mode].pop("memory")
    assert "| `torch-eager` | plain PyTorch, eager | eager |" in ref.render_markdown(older)
    line, verdict = ref.headline(ref.NAME, data)
    assert "torch-eager" in line and row in line and verdict is None


@once_per_suite("which row groups run is decided without a backend")
def test_a_missing_package_skips_its_rows_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(
        ref,
        "_missing",
        lambda group: "the tensorflow package is not installed" if group == "keras-tensorflow" else None,
    )
    monkeypatch.setattr(ref.subprocess, "run", lambda *a, **k: pytest.fail("nothing should be started"))
    ref.run_all(_quick_args(tmp_path, ["keras-tensorflow"]))
    data = json.loads((tmp_path / f"{ref.NAME}.json").read_text())
    assert data["notes"] == {"keras-tensorflow": "skipped: the tensorflow package is not installed"}
    assert "skipped: the tensorflow package is not installed" in (tmp_path / f"{ref.NAME}.md").read_text()


@once_per_suite("error messages are plain strings")
def test_an_error_is_shortened_to_what_failed():
    wrapped = RuntimeError(
        "Exception encountered when calling Functional.call().\n\n\x1b[1mTypeError: "
        "cannot determine truth value\n\nSet TORCHDYNAMO_VERBOSE=1 for more\x1b[0m\n\n"
        "Arguments received by Functional.call():\n  \u2022 inputs=array([[1, 2]])"
    )
    short, detail = ref._error(wrapped)
    assert short == "RuntimeError: TypeError: cannot determine truth value"
    assert "\x1b" not in detail and "Arguments received" in detail
    assert ref._error(ValueError("bad size"))[0] == "ValueError: bad size"


@once_per_suite("argument parsing, no backend")
def test_parse_args_checks_its_numbers():
    with pytest.raises(SystemExit):
        ref.parse_args(["--steps", "0"])
    args = ref.parse_args([])
    assert args.rows == list(ref.ROWS) and args.steps == 12 and args.model == ref.MODEL
    assert isinstance(args, Namespace)


@once_per_suite("renders recorded numbers: no backend")
def test_the_goals_table_says_which_row_misses_and_why():
    def row(thawed, frozen):
        return {mode: {"median_s": s} for mode, s in (("thawed", thawed), ("frozen", frozen))}

    data = {
        "rows": {
            "torch-eager": row(1.0, 1.0),
            "keras-torch": row(1.2, 0.9),  # within 1.3x, frozen 1.33x faster: met
            "keras-jax": row(2.0, 1.5),  # 2.0x eager: missed, with the recorded reason
            "keras-tensorflow": row(1.0, 0.9),  # frozen only 1.11x faster: missed, not analysed
        }
    }
    lines = {line.split(" | ")[0].strip("| `"): line for line in ref.goals_table(data).splitlines()[2:]}
    assert set(lines) == {"keras-torch", "keras-jax", "keras-tensorflow"}
    assert "| 1.20 / 0.90 | yes | 1.33x | yes | |" in lines["keras-torch"]
    assert "| 2.00 / 1.50 | no | 1.33x | yes |" in lines["keras-jax"]
    assert ref.MISSES["keras-jax"] in lines["keras-jax"]
    assert "| 1.00 / 0.90 | yes | 1.11x | no | not analysed |" in lines["keras-tensorflow"]
