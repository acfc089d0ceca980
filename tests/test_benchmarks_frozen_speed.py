"""benchmarks/frozen_speed.py without timing: its models, its variants, its summary without TensorFlow."""

import keras
import numpy as np

from benchmarks import frozen_speed
from keras_structinit.layers import DepthwiseConv2D

BACKEND = keras.backend.backend()


def test_forced_and_stock_models_compute_what_the_model_as_built_computes():
    x = np.random.default_rng(0).standard_normal((2, 32, 32, 3)).astype("float32")
    auto = frozen_speed.build_convmixer("auto", 3, dim=8, depth=1)
    want = keras.ops.convert_to_numpy(auto(x))
    for path in frozen_speed.PATHS[BACKEND]:
        model = frozen_speed.build_convmixer(path, 3, dim=8, depth=1)
        depthwise = [layer for layer in model.layers if isinstance(layer, keras.layers.DepthwiseConv2D)]
        assert len(depthwise) == 1
        assert isinstance(depthwise[0], DepthwiseConv2D) == (path != "stock")
        np.testing.assert_allclose(keras.ops.convert_to_numpy(model(x)), want, rtol=1e-4, atol=1e-4)
        if path != "stock":
            assert frozen_speed.resolved_paths(model) == [path]


def test_slow_variants_only_at_small_kernels_and_duplicates_left_out():
    args = frozen_speed.parse_args([])
    assert args.kernel_sizes == [3, 7, 9, 15] and args.repeats >= 10
    fast, slow = frozen_speed._variants(args, "torch", 9)
    assert ("shifted", False) not in fast + slow and ("torch", False) in fast
    assert frozen_speed._variants(args, "torch", 3)[1] == [("shifted", False)]
    fast, slow = frozen_speed._variants(args, "jax", 9)
    assert fast == [("shifted", True), ("native", True)] and not slow  # stock = native there
    args = frozen_speed.parse_args(["--all-sizes", "--time-duplicates"])
    assert ("stock", True) in frozen_speed._variants(args, "jax", 15)[0]
    assert frozen_speed._variants(args, "torch", 15)[1] == [("shifted", False)]


def test_torch_compiled_rows_only_on_the_automatic_path_at_k_9():
    args = frozen_speed.parse_args([])
    assert args.torch_compile is True
    fast, slow = frozen_speed._variants(args, "torch", 9)
    assert [v for v in fast + slow if v[1]] == [("torch", True)]
    assert not [v for k in (3, 7) for v in sum(frozen_speed._variants(args, "torch", k), []) if v[1]]
    for flags in (["--no-torch-compile"], ["--quick"]):
        assert not [
            v for v in sum(frozen_speed._variants(frozen_speed.parse_args(flags), "torch", 9), []) if v[1]
        ]
    all_sizes = frozen_speed.parse_args(["--all-sizes"])
    assert ("torch", True) in frozen_speed._variants(all_sizes, "torch", 3)[0]
    assert frozen_speed._compile_label("torch", True) == "torch.compile"
    assert frozen_speed._compile_label("torch", False) == "eager"


def _row(path, jit, thawed, frozen):
    def stats(s):
        return {"median_s": s, "repeats": 12, "first_step_s": 1.0, "resolved_path": [path]}

    return {
        "kernel_size": 9,
        "path": path,
        "jit_compile": jit,
        "thawed": stats(thawed),
        "frozen": stats(frozen),
        "frozen_speedup": thawed / frozen,
    }


def test_summary_and_markdown_without_tensorflow():
    entry = {
        "machine": {"cpu": "c", "cores": 2, "ram_gib": 1, "os": "o"},
        "software": {"keras": "3", "backend_version": "x"},
        "date": "d",
        "elapsed_s": 1.0,
        "loadavg_1min": {"start": 1.0, "end": 1.0},
        "config": {"dim": 8, "depth": 1, "batch": 4, "warmup": 2, "repeats": 12},
        "groups": [
            {
                "kernel_size": 9,
                "loadavg_1min": {"start": 1.0, "end": 1.0},
                "auto": {"True": {"thawed": "shifted", "frozen": "shifted"}},
                "results": [_row("shifted", True, 0.4, 0.3), _row("native", True, 1.4, 0.9)],
            }
        ],
    }
    data = {"benchmark": "frozen_speed", "results": {"jax": entry}}
    (row,) = frozen_speed.auto_summary(data["results"])
    assert (row["thawed_s"], row["frozen_s"], row["before_path"]) == (0.4, 0.3, "shifted")
    text = frozen_speed.render_markdown(data)
    assert "Not measured (backend not installed or not run): tensorflow, torch." in text
    line, verdict = frozen_speed.headline("frozen_speed", data)
    assert "jax (jit): k 9 1.33x" in line and verdict == "yes"


def test_a_tiny_run_records_the_memory_of_every_variant(tmp_path):
    path = frozen_speed.PATHS[BACKEND][0]
    args = frozen_speed.parse_args(
        ["--quick", "--kernel-sizes", "5", "--repeats", "1", "--warmup", "1", "--paths", path]
    )
    backend, entry = frozen_speed.run_backend(args)
    (row,) = entry["groups"][0]["results"]
    for mode in frozen_speed.MODES:
        memory = row[mode]["memory"]  # on CPU: the process' peak RSS and the growth over its steps
        assert memory["kind"] == "cpu_rss" and memory["device_peak_bytes"] is None
        assert memory["rss_peak_bytes"] > 0 and memory["rss_growth_bytes"] >= 0
        assert memory["round_robin"]["rss_peak_bytes"] >= memory["rss_peak_bytes"]
    text = frozen_speed.render_markdown({"benchmark": "frozen_speed", "results": {backend: entry}})
    assert "Peak RSS GB (+ step growth): thawed / frozen" in text and "`ru_maxrss`" in text
    assert f"{row['thawed']['memory']['rss_peak_bytes'] / 1e9:.2f} (+" in text
