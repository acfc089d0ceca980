#!/usr/bin/env python
"""Frozen vs thawed depthwise filters: a ConvMixer training step per depthwise path (issue 51).

Freezing the depthwise filters (``freeze_spatial``) should make a training step
faster: their gradient is no longer needed. This measures, per Keras backend
(one process each) and kernel size k, one ``train_on_batch`` step (forward,
backward, AdamW update) of a ConvMixer (default ConvMixer-64/2, patch 2,
32x32x3 inputs, 10 classes, batch 64), thawed and frozen, for every depthwise
path:

* ``auto``: the package's model as built (``implementation="auto"``); *Path*
  records what the layer resolved to, thawed and frozen (the rule of
  :func:`keras_structinit.ops.depthwise.select_implementation`);
* ``shifted`` / ``native`` (and ``torch`` on PyTorch): the package's layers forced
  onto that path;
* ``stock``: ``keras.layers.DepthwiseConv2D`` (the package's ``Conv2D`` elsewhere, so
  only the depthwise path differs). On TensorFlow and JAX it runs
  ``keras.ops.depthwise_conv``, the same op as ``native``: timed only with
  ``--time-duplicates``.

Compilation as the package trains: JAX ``jit``, torch eager, TensorFlow
``jit_compile=False`` (Keras' choice and the recipes' on a CPU); also TensorFlow with
``jit_compile=True`` (XLA) unless ``--no-tf-xla``, and torch with ``jit_compile=True``
(``torch.compile``, inductor; the ``torch`` path, what ``auto`` takes, at k >= 9, every k with
``--all-sizes``: each compile costs a minute on 2 cores) unless ``--no-torch-compile`` or ``--quick``.

The machine may be shared: all models of one (backend, k) are built, compiled
and warmed up (``--warmup`` steps each), then timed round-robin, one step of each
in turn, ``--repeats`` rounds, so that a change of load hits every variant alike.
A variant whose warm-up step is slow gets fewer timed steps (``--budget`` seconds,
at least 3), marked ``*``. Medians; the 1-minute load average at the start and
end of each group is recorded.

Memory: ``bench_utils.StepMemory`` over each variant's first and warm-up steps (thawed first, the
earlier variants still held); ``memory.round_robin``: over the group's timed steps.

Usage::

    python -m benchmarks.frozen_speed --all-backends               # every installed backend
    python -m benchmarks.frozen_speed --backend jax --kernel-sizes 9
    python -m benchmarks.frozen_speed --all-backends --quick --out /tmp/frozen_smoke

Results are merged per backend into ``<out>/frozen_speed.json`` and rendered to
``<out>/frozen_speed.md``.
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
    MEMORY_NOTE,
    Benchmark,
    StepMemory,
    backend_parser,
    memory_column,
    per_backend,
    run_per_backend,
    runs_table,
    summarize,
    verdict_of,
)
from keras_structinit.utils.reporting import describe_machine, format_table, machine_info, versions

NAME = "frozen_speed"
MODES = ("thawed", "frozen")
#: The depthwise paths per backend, besides "auto" (the model as built).
PATHS = {
    "jax": ("shifted", "native", "stock"),
    "tensorflow": ("native", "shifted", "stock"),
    "torch": ("torch", "shifted", "stock"),
}
#: Variants known to be many times slower (results/cpu/depthwise_speed.md: PyTorch's eager shifted sum
#: 15-30x its native kernel, XLA's CPU grouped convolution 10-80x the shifted sum), timed only up to
#: this kernel size unless --all-sizes: (backend, path, jit_compile) -> largest k.
SLOW = {("torch", "shifted", False): 3, ("tensorflow", "native", True): 3}
#: torch.compile'd variants: only the path "auto" takes (timed from this kernel size up, unless --all-sizes).
TORCH_COMPILED = {"path": "torch", "min_k": 9}
#: Paths that run the same op as another one on that backend: timed only with --time-duplicates.
DUPLICATES = {"jax": {"stock": "native"}, "tensorflow": {"stock": "native"}}
#: The path implementation="auto" took before issue 51's rule (the same thawed and frozen), per
#: (backend, jit_compile), on a CPU: the "before" column of the summary.
#: The variant (row) that runs each path select_implementation names.
PATH_ROW = {"torch": "torch", "shifted": "shifted", "native": "native"}
BEFORE = {
    ("jax", True): "shifted",
    ("tensorflow", False): "native",
    ("tensorflow", True): "shifted",
    ("torch", False): "torch",
    ("torch", True): "torch",
}


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kernel-sizes",
        type=int,
        nargs="+",
        default=None,
        help="depthwise kernel sizes (default 3 7 9 15; --quick: 9)",
    )
    parser.add_argument("--dim", type=int, default=64, help="ConvMixer width (default 64)")
    parser.add_argument("--depth", type=int, default=2, help="ConvMixer depth (default 2)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed steps per variant (default 12; --quick: 3)"
    )
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per variant (default 2)")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds of timed steps per variant before its repeats are cut (default 8; --quick: 2)",
    )
    parser.add_argument(
        "--paths", nargs="+", default=None, help="paths to time (default: every path of the backend)"
    )
    parser.add_argument(
        "--all-sizes",
        action="store_true",
        help="time the known-slow variants (SLOW) at every kernel size too",
    )
    parser.add_argument(
        "--no-tf-xla",
        dest="tf_xla",
        action="store_false",
        help="TensorFlow: only jit_compile=False (default: also jit_compile=True, XLA)",
    )
    parser.add_argument(
        "--no-torch-compile",
        dest="torch_compile",
        action="store_false",
        default=None,
        help="torch: only eager (default: also jit_compile=True, torch.compile; not with --quick)",
    )
    parser.add_argument(
        "--time-duplicates",
        action="store_true",
        help="also time paths that run the same op as another (stock on TF/JAX)",
    )
    parser.add_argument("--quick", action="store_true", help="smoke-test settings (tiny model)")
    parser.add_argument(
        "--out", type=Path, default=LOCAL_RESULTS, help=f"directory for {NAME}.json / {NAME}.md"
    )
    args = parser.parse_args(argv)
    if args.kernel_sizes is None:
        args.kernel_sizes = [9] if args.quick else [3, 7, 9, 15]
    if args.repeats is None:
        args.repeats = 3 if args.quick else 12
    if args.budget is None:
        args.budget = 2.0 if args.quick else 8.0
    if args.torch_compile is None:
        args.torch_compile = not args.quick
    if args.quick:
        args.dim, args.depth, args.batch = 16, 2, 8
    if min(args.repeats, args.dim, args.depth, args.batch, *args.kernel_sizes) < 1:
        parser.error("--repeats, --dim, --depth, --batch and --kernel-sizes must be >= 1")
    return args


# ----------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------
def build_convmixer(path, kernel_size, dim=64, depth=4, seed=0):
    """The package's ConvMixer-``dim``/``depth`` (patch 2, 32x32x3, 10 classes) with its depthwise
    layers as built (``"auto"``), forced onto ``path`` (``"shifted"``, ``"native"``, ``"torch"``),
    or Keras' own ``DepthwiseConv2D`` (``"stock"``); the same weights whatever ``path``."""
    import keras

    from keras_structinit.layers import DepthwiseConv2D
    from keras_structinit.models import convmixer

    keras.utils.set_random_seed(seed)
    model = convmixer(
        dim, depth, kernel_size=kernel_size, patch_size=2, num_classes=10, input_shape=(32, 32, 3)
    )
    if path == "auto":
        return model

    def swap(layer):
        config = layer.get_config()
        if isinstance(layer, DepthwiseConv2D):
            if path == "stock":
                for key in ("implementation", "kernel_trainable"):  # the package layer's own
                    config.pop(key)
                return keras.layers.DepthwiseConv2D.from_config(config)
            config["implementation"] = "native" if path == "torch" else path
        return layer.__class__.from_config(config)

    clone = keras.models.clone_model(model, clone_function=swap)
    clone.set_weights(model.get_weights())
    return clone


def resolved_paths(model):
    """The paths the package's depthwise layers of ``model`` took at their last call (traced)."""
    from keras_structinit.layers import DepthwiseConv2D

    return sorted(
        {layer.last_path for layer in model.layers if isinstance(layer, DepthwiseConv2D) and layer.last_path}
    )


def model_batch(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 32, 32, 3), dtype=np.float32)
    return x, rng.integers(0, 10, batch)


def _variants(args, backend, k):
    """``[(path, jit_compile)]`` timed at kernel size ``k``: the fast ones first, then the slow ones."""
    paths = args.paths or PATHS[backend]
    if not args.time_duplicates:
        paths = [p for p in paths if p not in DUPLICATES.get(backend, {})]
    jits = {
        "jax": (True,),
        "torch": (False, True) if args.torch_compile else (False,),
        "tensorflow": (False, True) if args.tf_xla else (False,),
    }
    out = [(path, jit) for jit in jits[backend] for path in paths if path in PATHS[backend]]
    if backend == "torch":  # compiled: the path "auto" takes, from TORCH_COMPILED["min_k"] up
        compiled = args.all_sizes or k >= TORCH_COMPILED["min_k"]
        out = [(p, jit) for p, jit in out if not jit or (compiled and p == TORCH_COMPILED["path"])]
    slow = [v for v in out if (backend, *v) in SLOW]
    keep_slow = [v for v in slow if args.all_sizes or k <= SLOW[(backend, *v)]]
    return [v for v in out if v not in slow], keep_slow


def auto_paths(backend, jit, k):
    """``{mode: path}``: what ``implementation="auto"`` resolves to for a ConvMixer's depthwise layer
    (float32, 'same') thawed and frozen, in the context the train step runs in (TensorFlow: traced in
    a ``tf.function`` with ``jit_compile=jit``)."""
    from keras_structinit.ops.depthwise import select_implementation

    def resolve():
        path = select_implementation("auto", kernel_size=(k, k), dtype="float32")
        return {mode: path for mode in MODES}  # one path for both (ops.depthwise.AUTO_PATHS)

    if backend != "tensorflow":
        return resolve()
    import tensorflow as tf

    seen = {}

    def traced():
        seen.update(resolve())
        return tf.constant(0.0)

    tf.function(traced, jit_compile=jit).get_concrete_function()
    return seen


def _prepare(args, backend, k, batch, path, jit, mode):
    import keras

    from keras_structinit import freeze_spatial

    model = build_convmixer(path, k, args.dim, args.depth)
    frozen = freeze_spatial(model) if mode == "frozen" else []
    model.compile(
        optimizer=keras.optimizers.AdamW(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
    )
    with StepMemory(backend) as memory:
        start = time.perf_counter()
        model.train_on_batch(*batch)  # traces and compiles
        first = time.perf_counter() - start
        warm = []
        for _ in range(max(args.warmup - 1, 0)):
            start = time.perf_counter()
            model.train_on_batch(*batch)
            warm.append(time.perf_counter() - start)
    last = warm[-1] if warm else first
    n = max(min(3, args.repeats), min(args.repeats, int(args.budget // max(last, 1e-9))))
    return {
        "path": path,
        "jit_compile": jit,
        "mode": mode,
        "model": model,
        "n": n,
        "first_step_s": round(first, 3),
        "warmup_s": [round(t, 4) for t in warm],
        "frozen_variables": len(frozen),
        "resolved": resolved_paths(model),
        "memory": memory.record,
        "times": [],
    }


def _round_robin(models, batch, rounds):
    for _ in range(rounds):  # one step of each variant in turn
        for m in models:
            if len(m["times"]) < m["n"]:
                start = time.perf_counter()
                m["model"].train_on_batch(*batch)
                m["times"].append(time.perf_counter() - start)


def time_group(args, backend, k, batch):
    """Every variant of kernel size ``k``, thawed and frozen, timed round-robin; then the slow
    variants (``SLOW``), round-robin among themselves, so that they do not disturb the others."""
    fast, slow = _variants(args, backend, k)
    measured = []
    for variants in (fast, slow):
        models = [
            _prepare(args, backend, k, batch, path, jit, mode) for path, jit in variants for mode in MODES
        ]
        with StepMemory(backend) as memory:
            _round_robin(models, batch, args.repeats)
        measured += models
        for m in models:
            m.pop("model")  # free it before the next pass
            m["memory"]["round_robin"] = memory.record
    rows = {}
    for m in measured:
        row = rows.setdefault(
            (m["path"], m["jit_compile"]),
            {"kernel_size": k, "path": m["path"], "jit_compile": m["jit_compile"]},
        )
        row[m["mode"]] = {
            **summarize(m["times"]),
            "repeats": len(m["times"]),
            "first_step_s": m["first_step_s"],
            "warmup_s": m["warmup_s"],
            "frozen_variables": m["frozen_variables"],
            "resolved_path": m["resolved"],
            "memory": m["memory"],
        }
        print(
            f"[{backend}] k={k:<2} {m['path']:<7} jit_compile={m['jit_compile']!s:<5} {m['mode']:<6} "
            f"{np.median(m['times']):.3f} s/step (n={len(m['times'])}; {'/'.join(m['resolved'])})",
            flush=True,
        )
    for row in rows.values():
        row["frozen_speedup"] = row["thawed"]["median_s"] / row["frozen"]["median_s"]
    auto = {str(jit): auto_paths(backend, jit, k) for jit in sorted({jit for _, jit in fast + slow})}
    return list(rows.values()), auto


def run_backend(args):
    import keras

    backend = keras.backend.backend()
    software = versions()
    if backend == "torch":
        import torch

        software["torch_threads"] = torch.get_num_threads()
    batch = model_batch(args.batch)
    load_start, start = os.getloadavg(), time.perf_counter()
    groups = []
    for k in args.kernel_sizes:
        group_load = os.getloadavg()[0]
        rows, auto = time_group(args, backend, k, batch)
        groups.append(
            {
                "kernel_size": k,
                "loadavg_1min": {"start": group_load, "end": os.getloadavg()[0]},
                "auto": auto,
                "results": rows,
            }
        )
        keras.backend.clear_session()
    entry = {
        "machine": machine_info(),
        "software": software,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "elapsed_s": round(time.perf_counter() - start, 1),
        "loadavg_1min": {"start": load_start[0], "end": os.getloadavg()[0]},
        "loadavg_start": list(load_start),
        "config": {
            "dim": args.dim,
            "depth": args.depth,
            "patch_size": 2,
            "batch": args.batch,
            "input_shape": [32, 32, 3],
            "num_classes": 10,
            "optimizer": "AdamW",
            "kernel_sizes": args.kernel_sizes,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "budget_s": args.budget,
            "quick": args.quick,
            "tf_xla": args.tf_xla,
            "torch_compile": args.torch_compile,
            "slow_max_kernel": None
            if args.all_sizes
            else {"/".join(map(str, key)): k for key, k in SLOW.items()},
        },
        "groups": groups,
    }
    return backend, entry


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _compile_label(backend, jit):
    if backend == "torch":
        return "torch.compile" if jit else "eager"
    return {"jax": "jit"}.get(backend, "XLA" if jit else "tf.function")


def _cell(stats, cap):
    return f"{stats['median_s']:.3f}{'*' if stats['repeats'] < cap else ''}"


def _rows(results):
    for backend, entry in results.items():
        for group in entry["groups"]:
            for row in group["results"]:
                yield backend, entry, group, row


def auto_summary(results):
    """Per (backend, compile, k): the automatic choice thawed and frozen (the rows of the paths it
    resolves to) and the rule before issue 51 (``BEFORE``: the same path both ways)."""
    out = []
    for backend, entry in results.items():
        for group in entry["groups"]:
            by_path = {(r["path"], r["jit_compile"]): r for r in group["results"]}
            for jit_key, chosen in group["auto"].items():
                jit = jit_key == "True"
                after = {mode: by_path.get((PATH_ROW.get(chosen[mode], chosen[mode]), jit)) for mode in MODES}
                before = by_path.get((BEFORE.get((backend, jit)), jit))
                if None in after.values():
                    continue
                thawed, frozen = after["thawed"]["thawed"]["median_s"], after["frozen"]["frozen"]["median_s"]
                out.append(
                    {
                        "backend": backend,
                        "compile": _compile_label(backend, jit),
                        "k": group["kernel_size"],
                        "thawed_path": chosen["thawed"],
                        "frozen_path": chosen["frozen"],
                        "thawed_s": thawed,
                        "frozen_s": frozen,
                        "speedup": thawed / frozen,
                        "before_path": BEFORE.get((backend, jit)),
                        "before_speedup": before["frozen_speedup"] if before else None,
                        "load": group["loadavg_1min"],
                    }
                )
    return out


def render_markdown(data):
    results = {b: data["results"][b] for b in BACKENDS if b in data["results"]}
    first = next(iter(results.values()))
    c = first["config"]
    lines = [
        "# Frozen vs thawed depthwise filters: train step per path",
        "",
        (
            f"{describe_machine(first['machine'])} ConvMixer-{c['dim']}/{c['depth']} (patch 2, 32x32x3 "
            f"inputs, 10 classes), one `train_on_batch` step (forward, backward, AdamW) on a batch of "
            f"{c['batch']}; *frozen*: `freeze_spatial` (the depthwise kernels) before `compile`. Per kernel "
            f"size, every variant is built, compiled and warmed up ({c['warmup']} steps), then timed "
            f"round-robin, one step of each in turn ({c['repeats']} rounds; a slow variant gets fewer steps, "
            "at least 3, marked `*`), so that the load of a shared machine hits all alike. Medians in "
            "seconds. Timings are only meaningful on an otherwise idle machine: check the load averages."
        ),
        "",
        runs_table(
            [(b, "all", e["software"], e) for b, e in results.items()],
            "Part",
            [
                ("Repeats", lambda r: r[3]["config"]["repeats"], "", "right"),
                ("Run time s", lambda r: r[3]["elapsed_s"], ".0f", "right"),
            ],
        ),
        "",
        '## The automatic choice (`implementation="auto"`)',
        "",
        (
            "*Before*: the rule before issue 51 took the same path thawed and frozen (the path named; its "
            "frozen speed-up from that path's rows below). *After*: the paths `select_implementation` picks "
            "now for a thawed / a frozen kernel in that context (traced as the train step is), and the "
            "medians of those paths' rows below; a test checks that the model as built resolves to them. "
            "Speed-up = thawed / frozen step time (> 1: freezing is faster)."
        ),
        "",
        format_table(
            auto_summary(results),
            [
                ("Backend", lambda r: r["backend"]),
                ("Compile", lambda r: r["compile"]),
                ("k", lambda r: r["k"], "", "right"),
                ("Before: path", lambda r: r["before_path"] or ""),
                (
                    "Before: frozen speed-up",
                    lambda r: r["before_speedup"],
                    lambda v: f"{v:.2f}×" if v else "",
                    "right",
                ),
                ("After: path thawed / frozen", lambda r: f"{r['thawed_path']} / {r['frozen_path']}"),
                ("Thawed s", lambda r: r["thawed_s"], ".3f", "right"),
                ("Frozen s", lambda r: r["frozen_s"], ".3f", "right"),
                ("After: frozen speed-up", lambda r: r["speedup"], lambda v: f"{v:.2f}×", "right"),
                ("Load (start / end)", lambda r: f"{r['load']['start']:.2f} / {r['load']['end']:.2f}"),
            ],
        ),
        "",
        "## Every path",
        "",
        (
            "Each row forces the package's layer onto that path, or uses `keras.layers.DepthwiseConv2D` "
            "(*stock*); *Path* is what the package's layers resolved to (thawed / frozen). On TensorFlow and "
            "JAX *stock* runs `keras.ops.depthwise_conv`, the *native* op, and is timed only with "
            "`--time-duplicates`. Variants known to be many times slower (PyTorch's eager shifted sum, XLA's "
            "CPU grouped convolution) are timed at small k only (`SLOW` in the script), after the others. "
            f"{MEMORY_NOTE} Here: a variant's first and warm-up steps (thawed first, earlier variants held)."
        ),
        "",
        format_table(
            list(_rows(results)),
            [
                ("Backend", lambda r: r[0]),
                ("Compile", lambda r: _compile_label(r[0], r[3]["jit_compile"])),
                ("k", lambda r: r[3]["kernel_size"], "", "right"),
                ("Variant", lambda r: r[3]["path"]),
                ("Path", lambda r: " / ".join("/".join(r[3][m]["resolved_path"]) or "stock" for m in MODES)),
                ("Thawed s", lambda r: _cell(r[3]["thawed"], r[1]["config"]["repeats"]), "", "right"),
                ("Frozen s", lambda r: _cell(r[3]["frozen"], r[1]["config"]["repeats"]), "", "right"),
                ("Frozen speed-up", lambda r: r[3]["frozen_speedup"], lambda v: f"{v:.2f}×", "right"),
                (
                    "First step s (thawed / frozen)",
                    lambda r: f"{r[3]['thawed']['first_step_s']:.1f} / {r[3]['frozen']['first_step_s']:.1f}",
                    "",
                    "right",
                ),
                memory_column(lambda r, mode: r[3][mode], MODES),
            ],
        ),
    ]
    skipped = [b for b in BACKENDS if b not in results]
    if skipped:
        lines += ["", f"Not measured (backend not installed or not run): {', '.join(skipped)}."]
    return "\n".join(lines) + "\n"


def headline(name, data):
    """The suite report's line: the automatic choice's frozen speed-up per backend; "yes" when the
    frozen step is faster on every backend and kernel size."""
    parts, checks = [], []
    for backend, entry in per_backend(data):
        rows = auto_summary({backend: entry})
        for compile_ in dict.fromkeys(r["compile"] for r in rows):
            sub = [r for r in rows if r["compile"] == compile_]
            speedups = ", ".join(f"k {r['k']} {r['speedup']:.2f}x" for r in sub)
            parts.append(f"{backend} ({compile_}): {speedups}")
            checks += [r["speedup"] >= 1 for r in sub]
    return "frozen step speed-up (auto path): " + "; ".join(parts), verdict_of(checks)


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        Benchmark(
            name="frozen_speed",
            script="frozen_speed.py",
            args=("--all-backends",),
            title="ConvMixer-64/2 train step, frozen vs thawed depthwise filters, k = 3, 7, 9, 15, every "
            "depthwise path, every backend",
            paper="no timing in the covariance paper; frozen depthwise filters skip their gradient, so a "
            "frozen step should not be slower",
            minutes=5,  # measured 2026-11-27: 4.5 min (TF 152 s, JAX 96 s, torch 24 s) plus imports
        ),
    ),
}
# On a GPU: the same rows at ConvMixer-128/6, batch 128 (the depthwise_speed model). Estimate: per
# backend and k, 2 modes x 3 variants (auto, shifted, native/torch; stock = native on JAX) = 6
# compiled models; the H100 run of depthwise_speed compiled a ConvMixer-128/6 train step in ~2-4 s
# on JAX (70 s for its model part of 6 compiled models x 9 steps, dominated by compiling) and
# stepped it in 0.013-0.04 s, torch eager < 1 s to start. 4 k x 6 models x ~3 s = ~72 s for JAX,
# ~15 s for torch, plus ~20 s of imports: ~2 minutes; k = 9 and 15 only (the ones the GPU rule
# keys on), 6 repeats: ~1 minute. TensorFlow is not on the GPU image: --all-backends skips it
# with a line, and the Markdown says it was not measured.
SUITE["gpu"] = SUITE["gpu-quick"] = (
    Benchmark(
        name="frozen_speed",
        script="frozen_speed.py",
        args=(
            "--all-backends",
            "--dim",
            "128",
            "--depth",
            "6",
            "--batch",
            "128",
            "--kernel-sizes",
            "9",
            "15",
            "--repeats",
            "6",
        ),
        title="ConvMixer-128/6 train step, frozen vs thawed depthwise filters, k = 9 and 15, every "
        "depthwise path, every installed backend, on the GPU",
        paper="no timing in the covariance paper; frozen depthwise filters skip their gradient",
        minutes=1,
        estimated=True,
        smoke_args=("--all-backends", "--quick"),
    ),
)


if __name__ == "__main__":
    main()
