#!/usr/bin/env python
"""Speed of the package's depthwise convolution against the backends' own ops.

Two levels, one Keras backend per process:

* op level: ``B=128, 16x16, C=128``, 'same' padding, stride 1, for each kernel
  size k. Three measurements per variant: ``forward``; ``forward_backward``
  (the loss ``sum(y * r)``, fixed random ``r``, and its gradients w.r.t. input
  and kernel); ``frozen`` (loss and gradient w.r.t. the input only). The loss
  is returned because it is linear in ``y``: with the gradients alone, XLA
  would drop the forward pass. Variants are
  ``keras.ops.depthwise_conv`` ("stock") and ``depthwise_conv2d`` with
  ``implementation`` "auto", "shifted" and "native", each compiled the way the
  backend runs them in training: TensorFlow ``tf.function`` with
  ``jit_compile=False`` and ``True``, JAX ``jax.jit``, torch eager (forward
  under ``torch.no_grad()``). On torch, ``torch.nn.functional.conv2d(groups=C)``
  on an NCHW-contiguous and on a channels_last input are the reference rows.
  On TensorFlow and JAX, "native" is the stock op with the same arguments and
  is timed only with ``--time-duplicates``.
* model level: one ``train_on_batch`` step (AdamW) of ConvMixer-128/6 (k=9,
  patch 2, 32x32x3, 10 classes, batch 128), with the package's conv layers and
  with Keras' own (``keras.layers.DepthwiseConv2D``, ``Conv2D``), trainable and with the depthwise
  kernels frozen (``freeze_spatial``); TensorFlow with ``jit_compile=False``
  and ``True``, JAX jit, torch eager.

Every measurement is 2 untimed warm-up calls, then ``--repeats`` timed calls
(median, mean, std); a call that takes long gets fewer timed calls, so that
they fit in ``--budget`` seconds (never fewer than 3).

Memory beside time: each measurement's ``memory`` (``bench_utils.StepMemory``
around its warm-up and timed calls): on CPU the process' peak resident set
(``ru_maxrss``: the measurements run one after another in one process, op level
first, so it holds the earlier ones) and the growth of the resident set over
the measurement's own calls (the kernel's peak mark, reset before them); on a
GPU the device's peak.

Usage::

    python -m benchmarks.depthwise_speed --backend jax
    python -m benchmarks.depthwise_speed --all-backends          # one subprocess each
    python -m benchmarks.depthwise_speed --all-backends --quick --out /tmp/dw_smoke

Results are merged per backend into ``<out>/depthwise_speed.json`` and rendered
to ``<out>/depthwise_speed.md`` (``<out>`` defaults to ``benchmarks/results``).
"""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    MEMORY_HEADER,
    MEMORY_NOTE,
    WARMUP,
    Benchmark,
    StepMemory,
    backend_parser,
    memory_cell,
    memory_column,
    per_backend,
    run_per_backend,
    runs_table,
    time_calls,
    timing_cell,
    verdict_of,
)
from keras_structinit.utils.reporting import Column, describe_machine, format_table, machine_info, versions

NAME = "depthwise_speed"
MODES = {"forward": "forward", "forward_backward": "fwd+bwd", "frozen": "fwd+bwd frozen"}
IMPLEMENTATIONS = ("stock", "auto", "shifted", "native")
REFERENCE = "torch native NCHW"
OP_SHAPE = {"batch": 128, "height": 16, "width": 16, "channels": 128}
MODEL = {
    "dim": 128,
    "depth": 6,
    "kernel_size": 9,
    "patch_size": 2,
    "batch": 128,
    "input_shape": (32, 32, 3),
    "num_classes": 10,
}


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kernel-sizes",
        type=int,
        nargs="+",
        default=None,
        help="op-level kernel sizes (default 3 7 9 15; --quick: 9)",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed calls per op measurement (default 7; --quick: 3)"
    )
    parser.add_argument(
        "--model-repeats",
        type=int,
        default=None,
        help="timed training steps per model measurement (default --repeats; --quick: 2)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds of timed calls per measurement before repeats are cut (default 10; --quick: 5)",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=("op", "model"),
        default=["op", "model"],
        help="what to measure (an earlier result of the other part is kept)",
    )
    parser.add_argument(
        "--model-layers",
        nargs="+",
        choices=MODEL_LAYERS,
        default=["package", "stock"],
        help="ConvMixer variants of the model part: the package's layers as built, "
        'their depthwise convs forced to implementation="shifted", Keras\' '
        "stock layers (default: package stock)",
    )
    parser.add_argument(
        "--time-duplicates",
        action="store_true",
        help='also time implementation="native" on TensorFlow/JAX, where it is the keras stock op',
    )
    parser.add_argument("--quick", action="store_true", help="smoke-test settings")
    parser.add_argument(
        "--out", type=Path, default=LOCAL_RESULTS, help=f"directory for {NAME}.json / {NAME}.md"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    if args.kernel_sizes is None:
        args.kernel_sizes = [9] if quick else [3, 7, 9, 15]
    if args.repeats is None:
        args.repeats = 3 if quick else 7
    if args.model_repeats is None:
        args.model_repeats = 2 if quick else args.repeats
    if args.budget is None:
        args.budget = 5.0 if quick else 10.0
    if min(args.repeats, args.model_repeats) < 1 or min(args.kernel_sizes) < 1:
        parser.error("--repeats, --model-repeats and --kernel-sizes must be >= 1")
    return args


def _leaves(out):
    import keras

    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [np.asarray(keras.ops.convert_to_numpy(out))]


def _rel_diff(leaves, reference):
    return max(
        float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
        for a, b in zip(leaves, reference, strict=True)
    )


# ----------------------------------------------------------------------------
# Op level: one "case" = a label and {mode: zero-argument callable}
# ----------------------------------------------------------------------------
def _conv(impl):
    """``conv(x, k)`` under test; records the path it resolves to (at trace time)."""
    import keras

    from keras_structinit.ops.depthwise import depthwise_conv2d, select_implementation

    seen = {}

    def conv(x, kernel):
        if impl == "stock":
            seen.setdefault("path", "keras.ops.depthwise_conv")
            return keras.ops.depthwise_conv(x, kernel, strides=1, padding="same")
        seen.setdefault(
            "path",
            select_implementation(
                impl, kernel_size=tuple(kernel.shape[:2]), dtype=keras.backend.standardize_dtype(x.dtype)
            ),
        )
        return depthwise_conv2d(x, kernel, padding="same", implementation=impl)

    return conv, seen


def tensorflow_cases(x, kernel, r):
    import tensorflow as tf

    x, kernel, r = (tf.constant(a) for a in (x, kernel, r))

    def fwd(conv):
        return lambda x, k, r: conv(x, k)

    def grads(conv, wrt_kernel):
        def fn(x, k, r):
            with tf.GradientTape() as tape:
                tape.watch([x, k] if wrt_kernel else x)
                loss = tf.reduce_sum(conv(x, k) * r)
            return loss, tape.gradient(loss, [x, k] if wrt_kernel else x)

        return fn

    for jit in (False, True):
        for impl in IMPLEMENTATIONS:
            conv, seen = _conv(impl)
            fns = {"forward": fwd(conv), "forward_backward": grads(conv, True), "frozen": grads(conv, False)}
            fns = {m: tf.function(f, jit_compile=jit) for m, f in fns.items()}
            yield {
                "impl": impl,
                "variant": f"{'keras stock' if impl == 'stock' else impl} "
                f"({'XLA' if jit else 'tf.function'})",
                "compile": f"tf.function(jit_compile={jit})",
                "calls": {m: (lambda f=f: f(x, kernel, r)) for m, f in fns.items()},
                "seen": seen,
            }


def jax_cases(x, kernel, r):
    import jax
    import jax.numpy as jnp

    x, kernel, r = (jnp.asarray(a) for a in (x, kernel, r))
    for impl in IMPLEMENTATIONS:
        conv, seen = _conv(impl)

        def loss(x, k, r, conv=conv):
            return jnp.sum(conv(x, k) * r)

        fns = {
            "forward": jax.jit(lambda x, k, r, conv=conv: conv(x, k)),
            "forward_backward": jax.jit(jax.value_and_grad(loss, argnums=(0, 1))),
            "frozen": jax.jit(jax.value_and_grad(loss, argnums=0)),
        }
        yield {
            "impl": impl,
            "variant": f"{'keras stock' if impl == 'stock' else impl} (jit)",
            "compile": "jax.jit",
            "calls": {m: (lambda f=f: f(x, kernel, r)) for m, f in fns.items()},
            "seen": seen,
        }


def _torch_calls(conv, x, kernel, r):
    import torch

    x_grad, k_grad = x.clone().requires_grad_(), kernel.clone().requires_grad_()

    def forward():
        with torch.no_grad():
            return conv(x, kernel)

    def value_and_grad(k, wrt):
        loss = (conv(x_grad, k) * r).sum()
        return loss.detach(), torch.autograd.grad(loss, wrt)

    return {
        "forward": forward,
        "forward_backward": lambda: value_and_grad(k_grad, (x_grad, k_grad)),
        "frozen": lambda: value_and_grad(kernel, x_grad),
    }


def torch_cases(x, kernel, r):
    import keras
    import torch
    import torch.nn.functional as F

    # On the device Keras computes on (a GPU where there is one), as the layer's inputs would be.
    x, kernel, r = (keras.ops.convert_to_tensor(a) for a in (x, kernel, r))
    for impl in IMPLEMENTATIONS:
        conv, seen = _conv(impl)
        yield {
            "impl": impl,
            "variant": f"{'keras stock' if impl == 'stock' else impl} (eager)",
            "compile": "eager",
            "calls": _torch_calls(conv, x, kernel, r),
            "seen": seen,
        }
    k, channels = kernel.shape[0], kernel.shape[2]
    weight = kernel.permute(2, 3, 0, 1).contiguous()  # (C, 1, k, k)

    def raw(x, w):
        return F.conv2d(x, w, padding=k // 2, groups=channels)

    def to_nhwc(out):
        # Outputs back to the Keras layout, to compare with the stock op.
        if isinstance(out, (tuple, list)):
            return [to_nhwc(t) for t in out]
        if out.ndim != 4:
            return out  # the loss
        return out.permute(2, 3, 0, 1) if out.shape[1] == 1 else out.permute(0, 2, 3, 1)

    for label, fmt in (
        (REFERENCE, torch.contiguous_format),
        ("torch native channels_last", torch.channels_last),
    ):
        x_nchw = x.permute(0, 3, 1, 2).contiguous(memory_format=fmt)
        r_nchw = r.permute(0, 3, 1, 2).contiguous(memory_format=fmt)
        yield {
            "variant": label,
            "compile": "eager",
            "calls": _torch_calls(raw, x_nchw, weight, r_nchw),
            "seen": {"path": f"F.conv2d(groups=C), {label.split()[-1]} input"},
            "canon": to_nhwc,
        }


def op_bench(args, backend):
    import keras

    from keras_structinit.ops.depthwise import select_implementation

    cases = {"tensorflow": tensorflow_cases, "jax": jax_cases, "torch": torch_cases}[backend]
    s = OP_SHAPE

    def sync(out):  # torch on CPU is synchronous
        return out

    if backend == "torch":
        import torch

        if torch.cuda.is_available():

            def sync(out):  # CUDA kernels run asynchronously: wait for them
                torch.cuda.synchronize()
                return out
    elif backend == "tensorflow":
        import tensorflow as tf

        def sync(out):
            return tf.nest.map_structure(lambda t: t.numpy(), out)
    elif backend == "jax":
        import jax

        sync = jax.block_until_ready

    # On TensorFlow and JAX, "native" calls keras.ops.depthwise_conv with the
    # stock row's arguments: the same computation, timed only on request.
    skip_native = select_implementation("native") == "native" and not args.time_duplicates
    rows = []
    for k in args.kernel_sizes:
        keras.utils.set_random_seed(0)
        rng = np.random.default_rng(k)
        shape = (s["batch"], s["height"], s["width"], s["channels"])
        x = rng.standard_normal(shape, dtype=np.float32)
        r = rng.standard_normal(shape, dtype=np.float32)
        kernel = rng.standard_normal((k, k, s["channels"], 1), dtype=np.float32) / k
        reference = {}  # stock outputs (first case), to check the others against
        stock = {}  # compile -> stock variant
        for case in cases(x, kernel, r):
            row = {"kernel_size": k, "variant": case["variant"], "compile": case["compile"]}
            if case.get("impl") == "stock":
                stock[case["compile"]] = case["variant"]
            if case.get("impl") == "native" and skip_native:
                rows.append({**row, "path": "native", "same_as": stock[case["compile"]]})
                continue
            for mode, call in case["calls"].items():
                with StepMemory(backend) as memory:
                    stats, out = time_calls(call, args.repeats, args.budget, sync)
                leaves = _leaves(case.get("canon", lambda o: o)(out))
                reference.setdefault(mode, leaves)
                row[mode] = {
                    **stats,
                    "max_rel_diff_vs_stock": _rel_diff(leaves, reference[mode]),
                    "memory": memory.record,
                }
                print(
                    f"[{backend}] k={k} {case['variant']:<28} {MODES[mode]:<15} "
                    f"{stats['median_s'] * 1e3:9.2f} ms (n={stats['repeats']})",
                    flush=True,
                )
            row["path"] = case["seen"].get("path")
            rows.append(row)
    return rows


# ----------------------------------------------------------------------------
# Model level
# ----------------------------------------------------------------------------
MODEL_LAYERS = ("package", "shifted", "stock")


def build_convmixer(layers="package"):
    """ConvMixer-128/6 with the package's conv layers (``"package"``; ``"shifted"``: its
    depthwise layers forced to ``implementation="shifted"``) or the stock ones (``"stock"``)."""
    import keras

    from keras_structinit.layers import Conv2D, DepthwiseConv2D
    from keras_structinit.models import convmixer

    m = MODEL
    model = convmixer(
        m["dim"],
        m["depth"],
        kernel_size=m["kernel_size"],
        patch_size=m["patch_size"],
        num_classes=m["num_classes"],
        input_shape=m["input_shape"],
    )
    if layers == "package":
        return model

    def swap(layer):
        config = layer.get_config()
        if layers == "shifted":
            if isinstance(layer, DepthwiseConv2D):
                config["implementation"] = "shifted"
            return layer.__class__.from_config(config)
        twins = ((DepthwiseConv2D, keras.layers.DepthwiseConv2D), (Conv2D, keras.layers.Conv2D))
        for fast, stock_cls in twins:
            if isinstance(layer, fast):
                for key in ("implementation", "kernel_trainable"):  # the package layers' own
                    config.pop(key, None)
                return stock_cls.from_config(config)
        return layer.__class__.from_config(config)

    clone = keras.models.clone_model(model, clone_function=swap)
    clone.set_weights(model.get_weights())
    return clone


def model_batch():
    """One fixed batch ``(x, y)`` of :data:`MODEL`'s size."""
    m = MODEL
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m["batch"], *m["input_shape"]), dtype=np.float32)
    return x, rng.integers(0, m["num_classes"], m["batch"])


def time_train_step(model, jit_compile, batch, repeats, budget=None):
    """Compiles ``model`` (AdamW, sparse cross-entropy) and times ``train_on_batch(*batch)``."""
    import keras

    model.compile(
        optimizer=keras.optimizers.AdamW(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    stats, _ = time_calls(lambda: model.train_on_batch(*batch), repeats, budget)
    return stats


def model_bench(args, backend):
    import keras

    from keras_structinit import freeze_spatial

    batch = model_batch()
    jit_options = {"tensorflow": (False, True), "jax": (True,), "torch": (False,)}[backend]
    rows = []
    for layer in args.model_layers:
        for jit in jit_options:
            row = {"layer": layer, "jit_compile": jit}
            for mode in ("thawed", "frozen"):
                keras.utils.set_random_seed(0)
                model = build_convmixer(layer)
                frozen = freeze_spatial(model) if mode == "frozen" else []
                with StepMemory(backend) as memory:
                    stats = time_train_step(model, jit, batch, args.model_repeats, args.budget)
                row[mode] = {
                    **stats,
                    "memory": memory.record,
                    "frozen_variables": len(frozen),
                    "trainable_variables": len(model.trainable_variables),
                }
                print(
                    f"[{backend}] model {layer:<7} jit_compile={jit!s:<5} {mode:<6} "
                    f"{stats['median_s']:.3f} s/step (n={stats['repeats']})",
                    flush=True,
                )
            row["frozen_speedup"] = row["thawed"]["median_s"] / row["frozen"]["median_s"]
            rows.append(row)
    return rows


# ----------------------------------------------------------------------------
# One backend
# ----------------------------------------------------------------------------
def run_backend(args):
    import keras

    backend = keras.backend.backend()
    software = versions()
    if backend == "torch":
        import torch

        software["torch_threads"] = torch.get_num_threads()
    entry = {"machine": machine_info(), "software": software}
    for part, bench, config in (
        (
            "op",
            op_bench,
            {
                **OP_SHAPE,
                "padding": "same",
                "strides": 1,
                "kernel_sizes": args.kernel_sizes,
                "repeats": args.repeats,
            },
        ),
        ("model", model_bench, {**MODEL, "optimizer": "AdamW", "repeats": args.model_repeats}),
    ):
        if part not in args.parts:
            continue
        load_start, start = os.getloadavg()[0], time.perf_counter()
        rows = bench(args, backend)
        entry[part] = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "elapsed_s": round(time.perf_counter() - start, 1),
            # 1-minute load average: other processes on the machine skew timings.
            "loadavg_1min": {"start": load_start, "end": os.getloadavg()[0]},
            "config": {**config, "warmup": WARMUP, "budget_s": args.budget, "quick": args.quick},
            "results": rows,
        }
    return backend, entry


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _op_table(k, results, ref):
    """The op-level table at kernel size ``k``; ``ref[(k, mode)]`` is the reference median."""
    columns = [Column("Backend", "backend"), Column("Variant", "variant"), Column("Path", "path")]
    for mode, label in MODES.items():
        columns += [
            Column(f"{label} ms", f"{mode}_ms", align="right"),
            Column("×", f"{mode}_ratio", align="right"),
        ]
    columns.append(Column("Max rel. diff vs stock", "diff", align="right"))
    columns.append(Column(f"{MEMORY_HEADER}: {' / '.join(MODES.values())}", "memory", align="right"))
    rows = []
    for backend, entry in results.items():
        if "op" not in entry:
            continue
        cap = entry["op"]["config"]["repeats"]
        for row in entry["op"]["results"]:
            if row["kernel_size"] != k:
                continue
            cells = dict.fromkeys((column.value for column in columns), "")
            cells.update(backend=backend, variant=row["variant"], path=f"`{row['path']}`")
            if "same_as" in row:
                cells[f"{next(iter(MODES))}_ms"] = f"same op as {row['same_as']}, not timed"
            else:
                for mode in MODES:
                    base = ref.get((k, mode))
                    cells[f"{mode}_ms"] = timing_cell(row[mode], cap, ".2f", scale=1e3)
                    cells[f"{mode}_ratio"] = f"{row[mode]['median_s'] / base:.2f}" if base else None
                cells["diff"] = f"{max(row[mode]['max_rel_diff_vs_stock'] for mode in MODES):.1e}"
                cells["memory"] = " / ".join(
                    filter(None, (memory_cell(row[mode].get("memory")) for mode in MODES))
                )
            rows.append(cells)
    return format_table(rows, columns)


def _op_tables(results):
    ref = {}  # (k, mode) -> torch native NCHW median
    for row in results.get("torch", {}).get("op", {}).get("results", []):
        if row["variant"] == REFERENCE:
            for mode in MODES:
                ref[row["kernel_size"], mode] = row[mode]["median_s"]
    sizes = sorted(
        {row["kernel_size"] for e in results.values() for row in e.get("op", {}).get("results", [])}
    )
    lines = []
    for k in sizes:
        lines += ["", f"### k = {k}", "", _op_table(k, results, ref)]
    return lines


def _model_table(results):
    rows = [
        (backend, entry["model"]["config"]["repeats"], row)
        for backend, entry in results.items()
        if "model" in entry
        for row in entry["model"]["results"]
    ]
    compile_mode = {"jax": "jit", "torch": "eager"}
    return format_table(
        rows,
        [
            ("Backend", lambda r: r[0]),
            ("Conv layers", lambda r: r[2]["layer"]),
            ("Compile", lambda r: compile_mode.get(r[0], f"jit_compile={r[2]['jit_compile']}")),
            ("Thawed s/step", lambda r: timing_cell(r[2]["thawed"], r[1], ".3f"), "", "right"),
            ("Frozen s/step", lambda r: timing_cell(r[2]["frozen"], r[1], ".3f"), "", "right"),
            ("Frozen speed-up", lambda r: r[2]["frozen_speedup"], lambda v: f"{v:.2f}×", "right"),
            memory_column(lambda r, mode: r[2][mode], ("thawed", "frozen")),
        ],
    )


def _runs_table(results):
    rows = [
        (backend, part, entry["software"], entry[part])
        for backend, entry in results.items()
        for part in ("op", "model")
        if part in entry
    ]
    return runs_table(
        rows,
        "Part",
        [
            ("Repeats", lambda r: r[3]["config"]["repeats"], "", "right"),
            ("Budget s", lambda r: r[3]["config"]["budget_s"], "g", "right"),
            ("Run time s", lambda r: r[3]["elapsed_s"], ".0f", "right"),
        ],
    )


def render_markdown(data):
    results = {b: data["results"][b] for b in BACKENDS if b in data["results"]}
    machine = next(iter(results.values()))["machine"]
    s, m = OP_SHAPE, MODEL
    lines = [
        "# Depthwise convolution speed",
        "",
        (
            f"{describe_machine(machine)} "
            "Wall-clock medians; every measurement has 2 untimed warm-up calls. A call "
            "that takes long gets fewer timed calls, so that they fit in the time budget "
            "below (at least 3); such medians are marked `*` (see `repeats` in the JSON). "
            "Timings are only meaningful on an otherwise idle machine: check the load "
            f"averages. {MEMORY_NOTE} The steps of a measurement are its warm-up and timed calls "
            "(model level: with `compile`), measured one after another in one process per backend, "
            "in table order (op level first)."
        ),
        "",
        _runs_table(results),
    ]
    lines += [
        "",
        "## Op level",
        "",
        (
            f"Input `({s['batch']}, {s['height']}, {s['width']}, {s['channels']})` float32, "
            "kernel `(k, k, C, 1)`, 'same' padding, stride 1. *forward*: `y = conv(x, K)`; "
            "*fwd+bwd*: the loss `sum(y * r)` (fixed random `r`) and its gradients w.r.t. "
            "`x` and `K`; *fwd+bwd frozen*: the loss and its gradient w.r.t. `x` only (the "
            "loss is returned so that compilers keep the forward pass). "
            '"keras stock" is `keras.ops.depthwise_conv`; '
            '"auto", "shifted", "native" are `keras_structinit.layers.depthwise_conv2d` '
            "with that `implementation`, and *Path* is what it resolved to. TensorFlow "
            "rows run in `tf.function` (XLA = `jit_compile=True`), JAX rows in `jax.jit`, "
            "torch rows eagerly (forward under `torch.no_grad()`). × = median / "
            f'"{REFERENCE}" median (`F.conv2d(groups=C)` on an NCHW-contiguous input) '
            "at the same k and measurement. *Max rel. diff* = max |out - stock| / max |stock| "
            "over outputs and measurements (a correctness check, not a timing). On "
            'TensorFlow and JAX, `implementation="native"` is `keras.ops.depthwise_conv` '
            "with the stock row's arguments, so it is timed only with `--time-duplicates`."
        ),
    ]
    lines += _op_tables(results)
    lines += [
        "",
        "## Model level",
        "",
        (
            f"ConvMixer-{m['dim']}/{m['depth']} (k={m['kernel_size']}, patch {m['patch_size']}, "
            f"{'x'.join(map(str, m['input_shape']))} inputs, {m['num_classes']} classes): one "
            f"`train_on_batch` step on a batch of {m['batch']} with AdamW and sparse "
            "categorical cross-entropy. *package*: `keras_structinit.models.convmixer` "
            'as built: its `DepthwiseConv2D` (`implementation="auto"`) and, in runs from '
            "2026-11-25 on, its `Conv2D` (stem and 1x1 convs as matrix products); *stock*: the "
            "same model with Keras' own `DepthwiseConv2D` and `Conv2D`. *Frozen*: `freeze_spatial` before "
            "`compile`. Frozen speed-up = thawed / frozen."
        ),
        "",
    ]
    lines.append(_model_table(results))
    return "\n".join(lines) + "\n"


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
def _depthwise_speed(data):
    parts, verdicts = [], []
    for backend, entry in per_backend(data):
        for row in entry.get("model", {}).get("results", []):
            if row["layer"] == "package":
                compile_ = "XLA" if row["jit_compile"] else "default compile"
                parts.append(
                    f"{backend} ({compile_}): {row['thawed']['median_s']:.2f} s/step thawed, "
                    f"frozen {row['frozen_speedup']:.2f}x faster"
                )
                verdicts.append(row["frozen_speedup"] > 1)
    return "ConvMixer-128/6 step, package layer: " + "; ".join(parts), verdict_of(verdicts)


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _depthwise_speed(data)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        # Speed: timing entries run alone (no run_key), every backend in one entry.
        Benchmark(
            name="depthwise_speed",
            script="depthwise_speed.py",
            args=("--all-backends",),
            title="Depthwise convolution and ConvMixer-128/6 (k = 9) train step, thawed and frozen, "
            "every backend",
            paper="no timing in the covariance paper; frozen depthwise filters skip their gradient, so a "
            "frozen step should be faster",
            minutes=11,  # 10.1 min on 2026-11-29
        ),
    ),
}
# On a GPU: every kernel size, and the model also with the depthwise convs forced onto the shifted
# path (what "auto" picks on CPU XLA), to test the rule that picks the native op on accelerators.
# Measured on one H100 (2026-11-26, results/gpu/): 0.8 min for JAX and torch at k = 9 alone (the
# image held no TensorFlow); ~3 min estimated for this entry with all three.
_GPU = Benchmark(
    name="depthwise_speed",
    script="depthwise_speed.py",
    args=("--all-backends", "--model-layers", *MODEL_LAYERS),
    title="Depthwise convolution (k = 3, 7, 9, 15) and ConvMixer-128/6 (k = 9) train step, package "
    "(as built and forced shifted) vs stock layer, thawed and frozen, every backend, on the GPU",
    paper="no timing in the covariance paper; frozen depthwise filters skip their gradient",
    minutes=3,
)
# Not in the gpu-quick tier since its run of 2026-11-26 (results/gpu/): the tier's minutes go to
# the covariance pair (benchmarks/suite.py).
SUITE["gpu"] = (_GPU,)


if __name__ == "__main__":
    main()
