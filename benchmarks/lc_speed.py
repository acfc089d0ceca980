#!/usr/bin/env python
"""Table 3 of the LC-blocks paper: step time, memory and checkpoint size of LCResNet-20-16xE.

Rows, cumulative as in the paper (Gavrikov & Keuper, Table 3):
``baseline`` (every LC block learnable), ``frozen`` (frozen random spatial
filters), ``global`` (+ one shared bank the size of the largest spatial
kernel), ``recycled`` (+ a bank of 1/16 of it, repeated). For each backend,
expansion E and row, one fresh process (so that peak memory is the row's own):

* builds ``keras_structinit.models.lcresnet(20, 16, E, ...)`` (seed 0) and
  compiles it as ``recipes.fit_cifar(optimizer="sgd")`` does: ``TorchSGD``
  (Nesterov momentum 0.9, lr 0.01, PyTorch's L2 weight decay 0.01), label
  smoothing 0.1, Keras' default ``jit_compile="auto"`` (XLA under JAX; no XLA
  for TensorFlow on CPU; torch eager); the resolved value is recorded;
* forward: ``model.predict_on_batch(x)`` (the compiled predict step);
  forward+backward: ``model.train_on_batch(x, y)`` (the compiled train step:
  forward, loss, gradients of the learnable variables and the SGD update).
  Inputs are a fixed random batch of 32x32x3 images and labels. ``--warmup``
  untimed calls, then ``--repeats`` timed calls; the median is reported;
* memory: on CPU the process' peak resident set (``ru_maxrss``) and its growth
  over the resident set of the built model before the first step; on a GPU the
  backend's peak device allocation;
* checkpoint: the size of ``model.save("....keras")`` of a fresh, uncompiled
  model (weights and config, no optimizer state; timing-free), and the
  parameter counts of ``keras_structinit.lc.parameter_counts``.

Each row's result is saved as soon as it is measured (``<out>/lc_speed.json``
and ``.md``); a re-run skips rows already measured with the same settings,
so an interrupted run resumes.

Usage::

    python -m benchmarks.lc_speed        # x8 (batch 64) and x128 (batch 8), 3 backends
    python -m benchmarks.lc_speed --backends torch --expansions 128 --batch-sizes 64
    python -m benchmarks.lc_speed --expansions 8 --repeats 2 --warmup 1 --out /tmp/lc_smoke
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    Benchmark,
    code_provenance,
    device_memory,
    installed_backends,
    peak_rss_bytes,
    rss_bytes,
    runs_table,
    script_command,
    time_calls,
    verdict_of,
)

NAME = "lc_speed"
DEPTH, WIDTH = 20, 16
# row -> lcresnet arguments (the rows are cumulative).
VARIANTS = {
    "baseline": {"frozen": False},
    "frozen": {"frozen": True},
    "global": {"frozen": True, "sharing": "global"},
    "recycled": {"frozen": True, "sharing": "recycled"},
}
LABELS = {
    "baseline": "baseline (learnable)",
    "frozen": "+ freezing",
    "global": "+ global sharing",
    "recycled": "+ recycled sharing (1/16)",
}
# The paper's Table 3 (LCResNet-20-16x128, one A100, batch 64): what the issue quotes.
PAPER = {
    (128, "baseline"): {"fwd_bwd_ms": 124.0, "checkpoint_mib": 146.66},
    (128, "frozen"): {"fwd_bwd_ms": 82.3},
    (128, "global"): {"checkpoint_mib": 33.84},
    (128, "recycled"): {"checkpoint_mib": 17.74},
}
# The recipe's training step (App. C), as recipes.fit_cifar(optimizer="sgd") compiles it.
STEP = {"optimizer": "sgd", "learning_rate": 0.01, "weight_decay": 0.01, "label_smoothing": 0.1}
MIB = 2**20


def default_batch_size(expansion):
    """The paper's batch 64, except for wide blocks (E >= 64) on this CPU: batch 8."""
    return 64 if expansion < 64 else 8


def _backends(text):
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in BACKENDS]
    if not names or unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of distinct backends out of {', '.join(BACKENDS)}; got {text!r}"
        )
    return names


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backends",
        type=_backends,
        default=None,
        help="comma-separated, each run in its own processes (default: every installed one of the three)",
    )
    parser.add_argument(
        "--expansions", type=int, nargs="+", default=[8, 128], help="E of LCResNet-20-16xE (default 8 128)"
    )
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=None,
        help="one per --expansions entry (default: 64, the paper's, for E < 64; "
        "8 for E >= 64, which is what a 2-core CPU runs in seconds per step)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        help="rows to measure (default: all four)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per measurement (default 5)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls first (default 2)")
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS, help=f"directory of {NAME}.json / .md")
    # Internal: one row in this process ("backend:E:batch:variant"), its result written to --row-json.
    parser.add_argument("--row", help=argparse.SUPPRESS)
    parser.add_argument("--row-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.batch_sizes is None:
        args.batch_sizes = [default_batch_size(e) for e in args.expansions]
    if len(args.batch_sizes) != len(args.expansions):
        parser.error(
            f"--batch-sizes needs one value per --expansions entry "
            f"({len(args.expansions)}); got {len(args.batch_sizes)}"
        )
    if len(set(args.expansions)) != len(args.expansions):
        parser.error(f"--expansions must be distinct; got {args.expansions}")
    for option, values in (
        ("--expansions", args.expansions),
        ("--batch-sizes", args.batch_sizes),
        ("--repeats", [args.repeats]),
    ):
        if min(values) < 1:
            parser.error(f"{option} must be >= 1; got {values if len(values) > 1 else values[0]}")
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0; got {args.warmup}")
    return args


def row_config(args, expansion, batch_size, variant):
    """What a stored row must match to be reused."""
    return {
        "depth": DEPTH,
        "width": WIDTH,
        "expansion": expansion,
        "batch_size": batch_size,
        "variant": variant,
        **VARIANTS[variant],
        "repeats": args.repeats,
        "warmup": args.warmup,
        "step": STEP,
    }


# ----------------------------------------------------------------------------
# One row, in its own process (KERAS_BACKEND set by the parent)
# ----------------------------------------------------------------------------
def _build(expansion, variant):
    import keras

    from keras_structinit.models import lcresnet

    keras.utils.set_random_seed(0)
    return lcresnet(DEPTH, WIDTH, expansion, **VARIANTS[variant])


def measure_row(backend, expansion, batch_size, variant, args):
    import keras

    from keras_structinit.lc import parameter_counts
    from keras_structinit.recipes.optimizers import make_optimizer
    from keras_structinit.utils.reporting import machine_info, versions

    tag = f"[{backend}] LCResNet-{DEPTH}-{WIDTH}x{expansion} {variant} (batch {batch_size})"
    load_start, start = os.getloadavg()[0], time.perf_counter()
    model = _build(expansion, variant)
    model.compile(
        optimizer=make_optimizer(STEP["optimizer"], STEP["learning_rate"], STEP["weight_decay"]),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=STEP["label_smoothing"]),
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch_size, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch_size)]
    device = device_memory(backend)
    rss_built = rss_bytes()
    result = {"memory": {"kind": "gpu" if device else "cpu_rss", "rss_built_mib": rss_built / MIB}}
    for mode, call in (
        ("forward", lambda: model.predict_on_batch(x)),
        ("forward_backward", lambda: model.train_on_batch(x, y)),
    ):
        if device:
            device[0]()
        # Both return NumPy values: every call waits for the device.
        stats, _ = time_calls(call, args.repeats, warmup=args.warmup)
        result[mode] = stats
        memory = result["memory"]
        if device:
            memory[f"{mode}_peak_mib"] = device[1]() / MIB
        else:
            memory[f"{mode}_peak_rss_mib"] = peak_rss_bytes() / MIB
            memory[f"{mode}_growth_mib"] = (peak_rss_bytes() - rss_built) / MIB
        print(
            f"{tag}: {mode.replace('_', '+')} {stats['median_s'] * 1e3:.1f} ms median of "
            f"{stats['repeats']} (warm-up {', '.join(f'{t:.2f}' for t in stats['warmup_s'])} s)",
            flush=True,
        )
    result["jit_compile"] = model.jit_compile
    result["counts"] = parameter_counts(model)
    result["trainable_variables"] = len(model.trainable_variables)
    # The checkpoint of a fresh, uncompiled model: weights and config, no optimizer state.
    fresh = _build(expansion, variant)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.keras"
        fresh.save(path)
        result["checkpoint_bytes"] = path.stat().st_size
    print(
        f"{tag}: checkpoint {result['checkpoint_bytes'] / MIB:.2f} MiB, "
        f"{result['counts']['total']:,} parameters ({result['counts']['learnable']:,} learnable)",
        flush=True,
    )
    software = versions()
    if backend == "torch":
        import torch

        software["torch_threads"] = torch.get_num_threads()
    result.update(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        elapsed_s=round(time.perf_counter() - start, 1),
        loadavg_1min={"start": load_start, "end": os.getloadavg()[0]},
        machine=machine_info(),
        software=software,
        code=code_provenance(),
    )
    return result


def run_row(args):
    backend, expansion, batch_size, variant = args.row.split(":")
    if os.environ.get("KERAS_BACKEND") != backend:
        sys.exit(f"{NAME}: error: --row {args.row} needs KERAS_BACKEND={backend}")
    result = measure_row(backend, int(expansion), int(batch_size), variant, args)
    args.row_json.write_text(json.dumps(result))


# ----------------------------------------------------------------------------
# The parent: one subprocess per row, results merged and saved after each
# ----------------------------------------------------------------------------
def _key(expansion, variant):
    return f"x{expansion}/{variant}"


def _save(out, data):
    from keras_structinit.utils.io_utils import write_text

    data["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    data["code"] = code_provenance()
    write_text(out / f"{NAME}.json", json.dumps(data, indent=2) + "\n")
    write_text(out / f"{NAME}.md", render_markdown(data))


def run_all(args):
    out = args.out
    json_path = out / f"{NAME}.json"
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    data["benchmark"] = NAME
    results = data.setdefault("results", {})
    options = [a for pair in (("--repeats", str(args.repeats)), ("--warmup", str(args.warmup))) for a in pair]
    failed, started = [], time.perf_counter()
    backends = args.backends or installed_backends()
    launch, root = script_command(__file__)
    # Expansions outermost: the small model is measured on every backend before the large one.
    for expansion, batch_size in zip(args.expansions, args.batch_sizes, strict=True):
        for backend in backends:
            rows = results.setdefault(backend, {}).setdefault("rows", {})
            for variant in args.variants:
                key, config = _key(expansion, variant), row_config(args, expansion, batch_size, variant)
                if rows.get(key, {}).get("config") == config:
                    print(f"[{backend}] {key} (batch {batch_size}): measured already, skipped", flush=True)
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    row_json = Path(tmp) / "row.json"
                    command = [
                        *launch,
                        "--row",
                        f"{backend}:{expansion}:{batch_size}:{variant}",
                        "--row-json",
                        str(row_json),
                        *options,
                    ]
                    wall = time.perf_counter()
                    done = subprocess.run(command, cwd=root, env={**os.environ, "KERAS_BACKEND": backend})
                    if done.returncode != 0 or not row_json.exists():
                        print(f"[{backend}] {key}: failed (exit status {done.returncode})", flush=True)
                        failed.append(f"{backend} {key}")
                        continue
                    row = json.loads(row_json.read_text())
                row["process_wall_s"] = round(time.perf_counter() - wall, 1)
                results[backend]["machine"] = row.pop("machine")
                results[backend]["software"] = row.pop("software")
                rows[key] = {"config": config, **row}
                _save(out, data)
                print(
                    f"[{backend}] {key}: saved ({row['process_wall_s']:.0f} s with start-up; "
                    f"{(time.perf_counter() - started) / 60:.1f} min so far)",
                    flush=True,
                )
    _save(out, data)  # also re-renders the Markdown when every row was measured already
    print(f"wrote {json_path} and {NAME}.md in {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    if failed:
        sys.exit(f"{NAME}: {len(failed)} row(s) failed: {', '.join(failed)}")


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _busy(row, cores):
    """Whether another load shared the machine: a 1-minute load average above the core count."""
    return max(row["loadavg_1min"].values()) > cores


def _ms(stats, busy=False):
    return f"{stats['median_s'] * 1e3:.1f}" + ("†" if busy else "")


def _memory_cell(memory):
    if memory["kind"] == "gpu":
        return f"{memory['forward_backward_peak_mib']:.0f} (GPU peak)"
    return f"{memory['forward_backward_peak_rss_mib']:.0f} (+{memory['forward_backward_growth_mib']:.0f})"


def _table(results):
    from keras_structinit.utils.reporting import format_table

    rows = []
    for backend in BACKENDS:
        stored = results.get(backend, {}).get("rows", {})
        expansions = sorted({row["config"]["expansion"] for row in stored.values()})
        for expansion in expansions:
            base = stored.get(_key(expansion, "baseline"))
            for variant in VARIANTS:
                row = stored.get(_key(expansion, variant))
                if row is None:
                    continue
                paper = PAPER.get((expansion, variant), {})
                busy = _busy(row, results[backend]["machine"]["cores"])
                fwd_bwd = row["forward_backward"]["median_s"]
                rows.append(
                    {
                        "backend": backend,
                        "model": f"{DEPTH}-{WIDTH}x{expansion}",
                        "batch": row["config"]["batch_size"],
                        "row": LABELS[variant],
                        "compile": {"torch": "eager"}.get(backend, f"jit_compile={row['jit_compile']}"),
                        "fwd": _ms(row["forward"], busy),
                        "fwd_bwd": _ms(row["forward_backward"], busy),
                        "speedup": f"{base['forward_backward']['median_s'] / fwd_bwd:.2f}×" if base else None,
                        "memory": _memory_cell(row["memory"]),
                        "ckpt": f"{row['checkpoint_bytes'] / MIB:.2f}",
                        "params": f"{row['counts']['total']:,} / {row['counts']['learnable']:,}",
                        "paper_ms": paper.get("fwd_bwd_ms"),
                        "paper_mib": paper.get("checkpoint_mib"),
                    }
                )
    return format_table(
        rows,
        [
            ("Backend", "backend"),
            ("LCResNet", "model"),
            ("Batch", "batch", "", "right"),
            ("Row", "row"),
            ("Compile", "compile"),
            ("Fwd ms", "fwd", "", "right"),
            ("Fwd+bwd ms", "fwd_bwd", "", "right"),
            ("Fwd+bwd speed-up vs baseline", "speedup", "", "right"),
            ("Peak RSS MiB (+ over built model)", "memory", "", "right"),
            ("Checkpoint MiB", "ckpt", "", "right"),
            ("Params total / learnable", "params", "", "right"),
            ("Paper fwd+bwd ms (A100, batch 64)", "paper_ms", "g", "right"),
            ("Paper checkpoint MiB", "paper_mib", ".2f", "right"),
        ],
    )


def _runs_table(results):
    rows = [
        (backend, key, results[backend]["software"], row)
        for backend in BACKENDS
        for key, row in results.get(backend, {}).get("rows", {}).items()
    ]
    return runs_table(
        rows,
        "Row",
        [
            ("Timed / warm-up calls", lambda r: f"{r[3]['config']['repeats']} / {r[3]['config']['warmup']}"),
            (
                "First train step s",
                lambda r: (
                    r[3]["forward_backward"]["warmup_s"][0] if r[3]["forward_backward"]["warmup_s"] else None
                ),
                ".1f",
                "right",
            ),
            ("Row wall time s", lambda r: r[3]["process_wall_s"], ".0f", "right"),
        ],
    )


def render_markdown(data):
    from keras_structinit.utils.reporting import describe_machine

    results = data.get("results", {})
    measured = [b for b in BACKENDS if results.get(b, {}).get("rows")]
    if not measured:
        return f"# LCResNet speed, memory and checkpoint size\n\nNo rows measured yet ({NAME}.json).\n"
    machine = results[measured[0]]["machine"]
    total = sum(row["process_wall_s"] for b in measured for row in results[b]["rows"].values())
    lines = [
        "# LCResNet speed, memory and checkpoint size (Table 3 of the LC-blocks paper)",
        "",
        (
            f"{describe_machine(machine)} Seed 0 (weights "
            "and the random input batch). Generated by `benchmarks/lc_speed.py`; "
            f"{total / 60:.1f} min of row processes in all."
        ),
        "",
        (
            "LCResNet-20-16xE, rows cumulative: *baseline* every LC block learnable; *+ freezing* "
            "frozen random spatial filters; *+ global sharing* one frozen bank the size of the largest "
            "spatial kernel, sliced by every LC block; *+ recycled sharing* a bank of 1/16 of it, "
            "repeated. Each row runs in a fresh process. *Fwd*: `model.predict_on_batch` (the compiled "
            "predict step); *fwd+bwd*: `model.train_on_batch` (the compiled train step: forward, label-"
            "smoothed cross-entropy, gradients of the learnable variables and the update of "
            '`TorchSGD`, Nesterov momentum 0.9, L2 0.01: `recipes.fit_cifar(optimizer="sgd")`\'s '
            "step). Medians of the timed calls after the warm-up calls (see below); inputs 32x32x3. "
            'Compile: Keras\' default `jit_compile="auto"` as resolved (XLA under JAX; none for '
            "TensorFlow on CPU; torch eager). *Peak RSS*: the row process' peak resident set "
            "(`ru_maxrss`, framework included) after the fwd+bwd calls, and in brackets its growth "
            "over the resident set of the built, compiled model before the first call (activations, "
            "gradients, optimizer state, compiled code); on a GPU, the allocator's peak instead "
            "(torch: `max_memory_allocated`, reset before each mode; JAX: `peak_bytes_in_use`, "
            "which XLA cannot reset, so it also holds what earlier work in the process used). "
            '*Checkpoint*: `model.save(".keras")` of the '
            "fresh, uncompiled model (no optimizer state). *Params*: "
            "`keras_structinit.lc.parameter_counts` (a shared bank once; BN statistics not counted)."
        ),
        "",
        _table(results),
        "",
        (
            "† The row ran while other processes loaded the machine (1-minute load average above its "
            f"{machine['cores']} cores, which this benchmark's own threads fill, at the start or end; "
            "see Runs): its times are inflated and noisy, "
            "torch's most (its OpenMP threads wait on each other when a core is taken), and rows that "
            "differ only in frozen or shared weights can then show different forward times. Compare "
            "such rows only with care; the checkpoint sizes, parameter counts and memory are not "
            "affected."
        ),
        "",
        (
            "The paper's numbers (LCResNet-20-16x128 on one A100 at batch 64): fwd+bwd 124 ms "
            "learnable, 82.3 ms frozen; checkpoints 146.66 MiB (learnable; freezing stores the same "
            "weights), 33.84 MiB with global sharing, 17.74 MiB recycled. "
            + (
                "Times on a GPU at batch 64 compare with them, across chips; "
                if machine.get("gpus")
                else "Times on a CPU at another batch size are not comparable with them in absolute terms; "
            )
            + "the frozen speed-up and the checkpoint sizes compare in any case."
        ),
        "",
        "## Runs",
        "",
        _runs_table(results),
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.row:
        run_row(args)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        run_all(args)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
def _lc_speed(data):
    parts, verdicts = [], []
    for backend, entry in data.get("results", {}).items():
        rows = entry.get("rows", {})
        for expansion in dict.fromkeys(key.split("/")[0] for key in rows):
            base, frozen = rows.get(f"{expansion}/baseline"), rows.get(f"{expansion}/frozen")
            if not (base and frozen):
                continue
            speedup = base["forward_backward"]["median_s"] / frozen["forward_backward"]["median_s"]
            verdicts.append(speedup > 1)
            parts.append(f"{backend} {expansion}: frozen fwd+bwd {speedup:.2f}x faster")
    return "; ".join(parts), verdict_of(verdicts)


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _lc_speed(data)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        Benchmark(
            name="lc_speed",
            script="lc_speed.py",
            args=(),
            title="LC blocks: step time, memory and checkpoint size of LCResNet-20-16x{8,128}, "
            "every backend (Table 3)",
            paper="A100, E = 128, batch 64: fwd+bwd 124 -> 82.3 ms when frozen (1.51x); checkpoints "
            "146.66 / 33.84 / 17.74 MiB (baseline / global / recycled sharing)",
            minutes=7,  # 6.3 min on 2026-11-29
        ),
    ),
    "gpu": (
        Benchmark(
            name="lc_speed",
            script="lc_speed.py",
            args=("--expansions", "8", "128", "--batch-sizes", "64", "64"),
            title="LC blocks: step time, memory and checkpoint size of LCResNet-20-16x{8,128} (Table 3)",
            paper="A100, E = 128, batch 64: fwd+bwd 124 -> 82.3 ms when frozen",
            minutes=15,
        ),
    ),
    # The gpu-quick tier ran Table 3's row alone (E = 128, batch 64; --expansions 128 --batch-sizes 64)
    # on one H100 on 2026-11-26 (results/gpu/: 2.7 min for JAX and torch); since then the tier's
    # minutes go to the covariance pair (benchmarks/suite.py).
}


if __name__ == "__main__":
    main()
