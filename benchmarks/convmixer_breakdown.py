#!/usr/bin/env python
"""Where a ConvMixer-128/6 training step spends its time, per layer kind and backend.

* ``model``: ``train_on_batch`` medians of depthwise_speed's ConvMixer-128/6
  (k=9, batch 128, AdamW) with every layer of some kinds (depthwise convs,
  BatchNorm, GELU, 1x1 convs) replaced by a pass-through, with the package's
  conv layers, and (fewer variants) with Keras' own (``depthwise_speed.build_convmixer``);
  compiled as ``compile`` does by default on a CPU (XLA on JAX, not on
  TensorFlow), and on TensorFlow also with XLA. On JAX and TensorFlow + XLA,
  where the package's depthwise convs run the shifted sum, once more with the
  kernel gradient forced to its FFT form (``kernel gradient: fft``; ``auto``
  takes row products at this size).
* ``pointwise``: one 1x1 conv of the model's size, ``(128, 16, 16, 128)`` to
  128 filters: forward, and forward with both gradients of ``sum(y * r)``, as
  ``keras.ops.conv`` and as ``keras_structinit.layers.patch_conv2d`` (a matrix
  product), in the backend's compiled form (TF ``tf.function`` without and with
  XLA, ``jax.jit``, torch eager).

    python -m benchmarks.convmixer_breakdown --all-backends
"""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import LOCAL_RESULTS, Benchmark, backend_parser, run_per_backend, time_calls

NAME = "convmixer_breakdown"
KINDS = ("depthwise", "bn", "act", "pointwise")
REMOVED = ((), ("depthwise",), ("depthwise", "bn"), ("depthwise", "act"), ("depthwise", "pointwise"), KINDS)
# Keras' own layers: enough to show what the 1x1 convs cost there.
STOCK_REMOVED = ((), ("depthwise",), ("depthwise", "pointwise"))
POINTWISE_SHAPE = (128, 16, 16, 128)


def parse_args(argv=None):
    parser = backend_parser(__doc__.splitlines()[1])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    return parser.parse_args(argv)


def _kind(layer):
    import keras

    if isinstance(layer, keras.layers.DepthwiseConv2D):
        return "depthwise"
    if isinstance(layer, keras.layers.BatchNormalization):
        return "bn"
    if isinstance(layer, keras.layers.Activation):
        return "act"
    if isinstance(layer, keras.layers.Conv2D) and tuple(layer.kernel_size) == (1, 1):
        return "pointwise"
    return None


def _variants(backend):
    """``(layers, removed kinds, frozen, kernel gradient, jit_compile)`` of each timed model."""
    default_jit = backend == "jax"  # what `compile` picks on a CPU (TensorFlow: no XLA)
    rows = [("package", (), True, "auto", default_jit)]
    rows += [("package", removed, False, "auto", default_jit) for removed in REMOVED]
    rows += [("stock", removed, False, "auto", default_jit) for removed in STOCK_REMOVED]
    if backend == "tensorflow":
        rows += [("package", (), frozen, "auto", True) for frozen in (False, True)]
    if backend != "torch":  # the shifted sum (XLA-compiled code only) with the FFT kernel gradient
        rows.append(("package", (), False, "fft", True))
    return rows


def model_rows(args):
    import keras

    from benchmarks import depthwise_speed
    from keras_structinit import freeze_spatial
    from keras_structinit.ops import depthwise

    class PassThrough(keras.layers.Layer):
        def call(self, x, mask=None, training=None):
            return x

        def compute_output_shape(self, shape):
            return shape

    batch = depthwise_speed.model_batch()
    rows_width = depthwise._MAX_ROWS_GRAD_WIDTH
    rows = []
    for layers, removed, frozen, kernel_grad, jit in _variants(keras.backend.backend()):
        keras.utils.set_random_seed(0)
        model = depthwise_speed.build_convmixer(layers)
        model = keras.models.clone_model(
            model,
            clone_function=lambda layer, removed=removed: (
                PassThrough(name=layer.name)
                if _kind(layer) in removed
                else layer.__class__.from_config(layer.get_config())
            ),
        )
        if frozen:
            freeze_spatial(model)
        # Traced at the first step: the setting holds for this model's compiled function.
        depthwise._MAX_ROWS_GRAD_WIDTH = 0 if kernel_grad == "fft" else rows_width
        try:
            stats = depthwise_speed.time_train_step(model, jit, batch, args.repeats)
        finally:
            depthwise._MAX_ROWS_GRAD_WIDTH = rows_width
        rows.append(
            {
                "layers": layers,
                "removed": list(removed),
                "frozen": frozen,
                "kernel_grad": kernel_grad,
                "jit_compile": jit,
                **stats,
            }
        )
        print(
            f"model {layers:<7} jit_compile={jit!s:<5} {'frozen' if frozen else 'thawed'} "
            f"kernel grad {kernel_grad:<4} without {','.join(removed) or '-':<32} "
            f"{stats['median_s']:.3f} s/step",
            flush=True,
        )
    return rows


def _compiled_forms(backend, fn):
    """``{name: (forward, forward + both gradients)}`` callables of ``fn(x, k)`` on fixed data."""
    rng = np.random.default_rng(0)
    x, r = (rng.standard_normal(POINTWISE_SHAPE, dtype=np.float32) for _ in range(2))
    k = (rng.standard_normal((1, 1, POINTWISE_SHAPE[-1], 128)) * 0.1).astype(np.float32)
    if backend == "jax":
        import jax

        grads = jax.jit(jax.grad(lambda x, k: (fn(x, k) * r).sum(), argnums=(0, 1)))
        forward = jax.jit(fn)
        return {
            "jit": (lambda: jax.block_until_ready(forward(x, k)), lambda: jax.block_until_ready(grads(x, k)))
        }
    if backend == "tensorflow":
        import tensorflow as tf

        xt, kt, rt = tf.constant(x), tf.constant(k), tf.constant(r)

        def with_grads(x, k):
            with tf.GradientTape() as tape:
                tape.watch([x, k])
                loss = tf.reduce_sum(fn(x, k) * rt)
            return tape.gradient(loss, [x, k])

        forms = {}
        for jit in (False, True):
            forward = tf.function(fn, jit_compile=jit)
            grads = tf.function(with_grads, jit_compile=jit)
            forms[f"jit_compile={jit}"] = (
                lambda f=forward: f(xt, kt).numpy(),
                lambda g=grads: [t.numpy() for t in g(xt, kt)],
            )
        return forms
    import torch

    xt, kt, rt = (torch.tensor(a, requires_grad=a is not r) for a in (x, k, r))

    def forward():
        with torch.no_grad():
            fn(xt, kt)

    def grads():
        xt.grad = kt.grad = None
        (fn(xt, kt) * rt).sum().backward()

    return {"eager": (forward, grads)}


def pointwise_rows(args, backend):
    from keras import ops

    from keras_structinit.layers import patch_conv2d

    rows = []
    for op_name, fn in (
        ("keras.ops.conv", lambda x, k: ops.conv(x, k, padding="valid")),
        ("patch_conv2d", patch_conv2d),
    ):
        for form, (forward, grads) in _compiled_forms(backend, fn).items():
            fwd, _ = time_calls(forward, 7)
            both, _ = time_calls(grads, 7)
            rows.append({"op": op_name, "form": form, "forward": fwd, "forward_and_grads": both})
            print(
                f"pointwise {op_name:<15} {form:<18} {fwd['median_s'] * 1e3:7.1f} / "
                f"{both['median_s'] * 1e3:7.1f} ms",
                flush=True,
            )
    return rows


def run_backend(args):
    import keras

    from keras_structinit.utils.reporting import machine_info, versions

    backend = keras.backend.backend()
    load = os.getloadavg()[0]
    start = time.perf_counter()
    entry = {
        "machine": machine_info(),
        "software": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "pointwise": pointwise_rows(args, backend),
        "model": model_rows(args),
    }
    entry["elapsed_s"] = round(time.perf_counter() - start, 1)
    entry["loadavg_1min"] = {"start": load, "end": os.getloadavg()[0]}
    return backend, entry


def _whole_model(entry, jit, frozen):
    for row in entry["model"]:
        if (row["layers"], row["removed"], row["kernel_grad"], row["jit_compile"], row["frozen"]) == (
            "package",
            [],
            "auto",
            jit,
            frozen,
        ):
            return row["median_s"]
    return None


def summary_lines(results):
    """The whole model with the package's layers per backend and compile setting, against torch."""
    torch = results.get("torch")
    ref = {frozen: _whole_model(torch, False, frozen) for frozen in (False, True)} if torch else {}
    lines = [
        "| backend | jit_compile | thawed s/step | frozen s/step | frozen speed-up "
        "| x torch (thawed / frozen) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for backend, entry in results.items():
        for jit in sorted({row["jit_compile"] for row in entry["model"]}):
            thawed, frozen = _whole_model(entry, jit, False), _whole_model(entry, jit, True)
            if thawed is None or frozen is None:
                continue
            versus = (
                f"{thawed / ref[False]:.2f} / {frozen / ref[True]:.2f}" if ref and backend != "torch" else "-"
            )
            lines.append(
                f"| {backend} | {jit} | {thawed:.3f} | {frozen:.3f} | {thawed / frozen:.2f}x | {versus} |"
            )
    return lines


def render_markdown(data):
    lines = [
        "# ConvMixer-128/6 step: where the time goes",
        "",
        "`benchmarks/convmixer_breakdown.py` (see its docstring): `train_on_batch` medians in s/step, "
        "1x1 conv medians in ms. All backends in one run, one after another.",
        "",
        *summary_lines(data["results"]),
        "",
    ]
    for backend, entry in data["results"].items():
        software, machine, load = entry["software"], entry["machine"], entry["loadavg_1min"]
        lines += [
            f"## {backend}",
            "",
            f"{entry['date']}; Keras {software['keras']}, {backend} {software['backend_version']}, "
            f"Python {software['python']}; {machine['cpu']} x {machine['cores']} cores; "
            f"1-min load {load['start']:.2f} at the start, {load['end']:.2f} at the end.",
            "",
            "| conv layers | jit_compile | kernels | kernel gradient | removed | s/step |",
            "|---|---|---|---|---|---:|",
        ]
        lines += [
            f"| {r['layers']} | {r['jit_compile']} | {'frozen' if r['frozen'] else 'trainable'} | "
            f"{r['kernel_grad']} | {', '.join(r['removed']) or '-'} | {r['median_s']:.3f} |"
            for r in entry["model"]
        ]
        lines += ["", "| 1x1 conv | form | forward ms | forward + gradients ms |", "|---|---|---:|---:|"]
        lines += [
            f"| {r['op']} | {r['form']} | {r['forward']['median_s'] * 1e3:.1f} | "
            f"{r['forward_and_grads']['median_s'] * 1e3:.1f} |"
            for r in entry["pointwise"]
        ]
        lines.append("")
    return "\n".join(lines)


def _without(entry, jit, removed):
    for row in entry["model"]:
        if (row["layers"], row["removed"], row["jit_compile"], row["frozen"], row["kernel_grad"]) == (
            "package",
            list(removed),
            jit,
            False,
            "auto",
        ):
            return row["median_s"]
    return None


def headline(name, data):
    """The suite report's line: per backend and compile setting, the thawed step with and without
    the depthwise convs, and the depthwise convs' share of it."""
    parts = []
    for backend, entry in data["results"].items():
        for jit in sorted({row["jit_compile"] for row in entry["model"]}):
            whole, rest = _without(entry, jit, ()), _without(entry, jit, ("depthwise",))
            if whole and rest:
                parts.append(
                    f"{backend} (jit_compile={jit}) {whole:.3f} s, {rest:.3f} s without the depthwise "
                    f"convs ({1 - rest / whole:.0%} of the step)"
                )
    return "ConvMixer-128/6 step, thawed: " + "; ".join(parts), None


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


# Issue 62: where JAX spends its step today, beside torch_reference's ratios.
SUITE = {
    "cpu": (
        Benchmark(
            name=NAME,
            script="convmixer_breakdown.py",
            args=("--all-backends",),
            title="Where a ConvMixer-128/6 training step spends its time: each layer kind removed in "
            "turn, per backend, and the 1x1 conv's forms",
            paper="no timing in the papers; the question is why Keras JAX is slower than plain PyTorch "
            "on a CPU (issue 62)",
            minutes=10.0,
            estimated=True,
        ),
    )
}


if __name__ == "__main__":
    main()
