"""benchmarks/convmixer_breakdown.py without timing: which layers each variant removes."""

from collections import Counter

import keras

from benchmarks import convmixer_breakdown, depthwise_speed

from conftest import once_per_suite

pytestmark = once_per_suite("layer classification and variant lists, the same on every backend")


def test_every_convmixer_layer_of_a_removable_kind_is_classified():
    # ConvMixer: stem conv, GELU, BN; per block depthwise, GELU, BN, (residual), 1x1, GELU, BN.
    depth = depthwise_speed.MODEL["depth"]
    for layers in ("package", "stock"):
        keras.utils.set_random_seed(0)
        model = depthwise_speed.build_convmixer(layers)
        kinds = Counter(convmixer_breakdown._kind(layer) for layer in model.layers)
        assert kinds["depthwise"] == kinds["pointwise"] == depth
        assert kinds["bn"] == kinds["act"] == 2 * depth + 1


def test_variants_time_the_fft_kernel_gradient_only_where_the_shifted_sum_runs():
    for backend in ("jax", "tensorflow", "torch"):
        variants = convmixer_breakdown._variants(backend)
        assert len(set(variants)) == len(variants)
        fft = [v for v in variants if v[3] == "fft"]
        assert fft == ([] if backend == "torch" else [("package", (), False, "fft", True)])
    # TensorFlow: every variant as `compile` runs it on a CPU (no XLA), the whole model also with XLA.
    jit = Counter(v[-1] for v in convmixer_breakdown._variants("tensorflow"))
    assert (
        jit[True] == 3
        and jit[False] == len(convmixer_breakdown.REMOVED) + len(convmixer_breakdown.STOCK_REMOVED) + 1
    )


def test_summary_rows_are_the_whole_package_model_against_torch():
    def entry(jit, thawed, frozen):
        whole = {"layers": "package", "removed": [], "kernel_grad": "auto", "jit_compile": jit}
        return {
            "model": [
                {**whole, "frozen": False, "median_s": thawed},
                {**whole, "frozen": True, "median_s": frozen},
                {**whole, "frozen": False, "kernel_grad": "fft", "median_s": 9.0},
                {**whole, "removed": ["depthwise"], "frozen": False, "median_s": 0.1},
            ]
        }

    lines = convmixer_breakdown.summary_lines({"jax": entry(True, 2.0, 1.5), "torch": entry(False, 1.0, 0.5)})
    assert lines[2:] == [
        "| jax | True | 2.000 | 1.500 | 1.33x | 2.00 / 3.00 |",
        "| torch | False | 1.000 | 0.500 | 2.00x | - |",
    ]


def test_the_headline_gives_the_depthwise_share_of_each_step():
    def row(removed, seconds, jit=True):
        return {
            "layers": "package",
            "removed": list(removed),
            "kernel_grad": "auto",
            "jit_compile": jit,
            "frozen": False,
            "median_s": seconds,
        }

    data = {"results": {"jax": {"model": [row((), 2.0), row(("depthwise",), 0.5), row(("bn",), 1.5)]}}}
    line, verdict = convmixer_breakdown.headline("convmixer_breakdown", data)
    assert line == (
        "ConvMixer-128/6 step, thawed: jax (jit_compile=True) 2.000 s, 0.500 s without the depthwise "
        "convs (75% of the step)"
    )
    assert verdict is None
    (entry,) = convmixer_breakdown.SUITE["cpu"]
    assert entry.name == convmixer_breakdown.NAME and entry.run_key is None
