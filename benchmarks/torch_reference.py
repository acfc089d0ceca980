#!/usr/bin/env python
"""A plain-PyTorch ConvMixer, as the papers' code writes it, timed beside the package's Keras model.

The reference (:func:`reference_convmixer`) is ConvMixer written directly in
PyTorch the way the ConvMixer paper's and the covariance paper's code write it:
an ``nn.Sequential`` of ``nn.Conv2d(3, dim, p, stride=p)``, ``nn.GELU``,
``nn.BatchNorm2d``; per block a residual ``nn.Conv2d(dim, dim, k, groups=dim,
padding="same")``, GELU, BatchNorm, then a 1x1 ``nn.Conv2d``, GELU,
BatchNorm; ``nn.AdaptiveAvgPool2d``, ``nn.Flatten``, ``nn.Linear``. Its math
is that of ``keras_structinit.models.convmixer`` (exact GELU, BatchNorm
epsilon 1e-5 and momentum 0.1 = Keras' 0.9, 'same' padding, biases
everywhere); it computes in NCHW where the Keras model is channels-last.
:func:`transfer_weights` copies a Keras ConvMixer's weights into it (tested
in ``tests/test_benchmarks_torch_reference.py``: the same parameter count,
outputs within 1e-4). One difference that timings do not see: in training,
PyTorch's BatchNorm updates its running variance with the unbiased batch
variance, Keras' with the biased one.

Timed: one training step of ConvMixer-128/6 (k 9, patch 2, 32x32x3 inputs,
10 classes, batch 128; AdamW with Keras' defaults, lr 1e-3, weight decay 0.004,
epsilon 1e-7; cross-entropy on logits), thawed and frozen (the depthwise
kernels not trainable; the package's ``freeze_spatial``, in PyTorch
``requires_grad_(False)`` and left out of the optimizer). Rows:

* ``torch-eager``: the reference, model and inputs in ``channels_last``
  memory format, ``torch.backends.cudnn.benchmark = True`` on CUDA; a step is
  ``zero_grad``, forward, loss, ``backward``, ``optimizer.step()`` and
  ``loss.item()`` (which waits for the device);
* ``torch-compile``: the same with the model wrapped in ``torch.compile``
  (inductor, PyTorch's default cache; the first warm-up step holds the
  compilation);
* ``keras-torch`` and ``keras-torch-jit``: the package's
  ``models.convmixer`` on Keras' torch backend, ``train_on_batch`` with
  ``jit_compile=False`` and ``True`` (Keras wraps its train step in
  ``torch.compile``);
* ``keras-jax`` and ``keras-tensorflow``: the same on JAX and TensorFlow with
  ``compile``'s default ``jit_compile="auto"`` (the resolved value is recorded).

Every row group runs in its own process (``torch``: the two plain rows;
``keras-torch``; ``keras-jax``; ``keras-tensorflow``), one after another, on
the GPU where there is one. A group whose package is missing (TensorFlow on
the GPU image) is skipped with a note; one that fails or runs past
``--group-timeout`` keeps what it measured and records the error. Each
measurement: ``--warmup`` untimed steps, then ``--steps`` timed ones (the
median is reported); ``x eager`` is a row's median over ``torch-eager``'s.
Memory beside time: each measurement's ``memory`` (``bench_utils.StepMemory``
around its warm-up and timed steps): on CPU the process' peak resident set
(``ru_maxrss``, so it holds what ran earlier in the process: a group runs its rows
in order, thawed before frozen, as its ``order`` records) and the growth of the
resident set over that measurement's own steps (the kernel's peak mark, reset
before them, minus the resident set before them); on a GPU the device's peak.

Usage::

    python -m benchmarks.torch_reference                       # every row
    python -m benchmarks.torch_reference --rows torch-eager keras-torch --steps 12
    python -m benchmarks.torch_reference --quick --out /tmp/ref_smoke   # tiny model, a few steps
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    LOCAL_RESULTS,
    MEMORY_NOTE,
    WARMUP,
    Benchmark,
    StepMemory,
    code_provenance,
    memory_column,
    script_command,
    time_calls,
)

NAME = "torch_reference"
MODEL = {
    "dim": 128,
    "depth": 6,
    "kernel_size": 9,
    "patch_size": 2,
    "num_classes": 10,
    "input_shape": (32, 32, 3),
    "batch": 128,
}
QUICK_MODEL = {**MODEL, "dim": 16, "depth": 2, "kernel_size": 5, "input_shape": (16, 16, 3), "batch": 8}
# Keras' AdamW defaults, given to torch.optim.AdamW too (its own defaults differ: decay 0.01, eps 1e-8).
OPTIMIZER = {
    "name": "AdamW",
    "learning_rate": 1e-3,
    "beta_1": 0.9,
    "beta_2": 0.999,
    "epsilon": 1e-7,
    "weight_decay": 0.004,
}
# row -> (process group, label, Keras backend or None for plain PyTorch, compile setting)
ROWS = {
    "torch-eager": ("torch", "plain PyTorch, eager", None, False),
    "torch-compile": ("torch", "plain PyTorch, torch.compile", None, True),
    "keras-torch": ("keras-torch", "package, Keras torch", "torch", False),
    "keras-torch-jit": ("keras-torch", "package, Keras torch", "torch", True),
    "keras-jax": ("keras-jax", "package, Keras JAX", "jax", "auto"),
    "keras-tensorflow": ("keras-tensorflow", "package, Keras TensorFlow", "tensorflow", "auto"),
}
REFERENCE_ROW = "torch-eager"
# Keras BatchNormalization's weights and their PyTorch BatchNorm2d names.
BN_NAMES = (
    ("gamma", "weight"),
    ("beta", "bias"),
    ("moving_mean", "running_mean"),
    ("moving_variance", "running_var"),
)
MODES = ("thawed", "frozen")
#: Issue 62's goals: each Keras row's step within ``x eager`` of plain PyTorch eager, thawed and
#: frozen; the frozen step at least ``frozen_speedup`` times faster than the thawed one.
GOALS = {"x eager": 1.3, "frozen_speedup": 1.2}
#: Why a row misses a goal, where the measurements say (shown beside the goals table).
MISSES = {
    "keras-jax": (
        "XLA's CPU backend has no depthwise kernel of its own: the package's shifted sum (k^2 "
        "multiply-adds over the whole tensor, memory-bound) is its fastest path (XLA's grouped "
        "convolution is slower still, results/cpu/depthwise_speed.md), and it takes most of the "
        "step: results/archive/convmixer_breakdown.md, 1.756 s with the depthwise convs, 0.580 s "
        "without (TensorFlow 0.783 / 0.499 s, torch 0.832 s whole). Reaching 1.3x would take a "
        "native kernel; on a GPU the `torch_reference` and `frozen_speed` entries of the GPU "
        "suites decide it (not run: no GPU lent so far)"
    ),
    "keras-torch-jit": (
        "Keras' torch trainer under torch.compile splits the step into many graphs (the counts in "
        "*Compile*: Keras' layer-call machinery, its functional model's keyword arguments, which "
        "hit Dynamo's recompile limit, and the step's own `loss.backward()` break it), so on this "
        "CPU it is slower than eager: `structinit train --compile auto` keeps torch eager"
    ),
}


def _groups(rows):
    """``{group: [rows]}`` in the order of :data:`ROWS`."""
    out = {}
    for row in ROWS:
        if row in rows:
            out.setdefault(ROWS[row][0], []).append(row)
    return out


def _group_backend(group):
    """The Keras backend a group's process runs with (plain PyTorch: torch)."""
    return "torch" if group == "torch" else group.removeprefix("keras-")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", nargs="+", choices=list(ROWS), default=list(ROWS), help="what to time (default: every row)"
    )
    parser.add_argument("--steps", type=int, default=12, help="timed steps per measurement (default 12)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=WARMUP,
        help=f"untimed steps first (default {WARMUP}; the first compiles)",
    )
    parser.add_argument(
        "--group-timeout",
        type=float,
        default=900.0,
        help="seconds a row group's process may run before it is stopped (default 900)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: ConvMixer-16/2 (k 5) on 16x16 inputs, batch 8"
    )
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS, help=f"directory of {NAME}.json / .md")
    # Internal: one row group in this process, its results written to --group-json as they come.
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--group-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0:
        parser.error(f"--steps must be >= 1 and --warmup >= 0; got {args.steps} and {args.warmup}")
    if args.group_timeout <= 0:
        parser.error(f"--group-timeout must be > 0; got {args.group_timeout}")
    args.model = QUICK_MODEL if args.quick else MODEL
    return args


# ----------------------------------------------------------------------------
# The reference model and the weight transfer
# ----------------------------------------------------------------------------
def reference_convmixer(
    dim, depth, kernel_size=9, patch_size=2, num_classes=10, in_channels=3, bn_momentum=0.1, bn_eps=1e-5
):
    """ConvMixer-``dim``/``depth`` in plain PyTorch (NCHW), as the papers' code writes it.

    ``module[0:3]``: stem conv, GELU, BatchNorm; ``module[3 + i]``: block ``i``,
    ``Sequential(residual, 1x1 conv, GELU, BatchNorm)`` where ``residual.body`` is
    ``Sequential(depthwise conv, GELU, BatchNorm)``; then pooling, flatten and the
    ``nn.Linear`` head. ``bn_momentum`` is PyTorch's (Keras' ``1 - momentum``).
    """
    from torch import nn

    class Residual(nn.Module):
        """``body(x) + x``."""

        def __init__(self, body):
            super().__init__()
            self.body = body

        def forward(self, x):
            return self.body(x) + x

    def gelu_bn():
        return [nn.GELU(), nn.BatchNorm2d(dim, eps=bn_eps, momentum=bn_momentum)]

    blocks = [
        nn.Sequential(
            Residual(nn.Sequential(nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"), *gelu_bn())),
            nn.Conv2d(dim, dim, 1),
            *gelu_bn(),
        )
        for _ in range(depth)
    ]
    return nn.Sequential(
        nn.Conv2d(in_channels, dim, patch_size, stride=patch_size),
        *gelu_bn(),
        *blocks,
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(dim, num_classes),
    )


def reference_like(model):
    """A :func:`reference_convmixer` of the size of ``model`` (a ``keras_structinit.models.convmixer``),
    BatchNorm momentum and epsilon included."""
    stem, head, bn = model.get_layer("stem_conv"), model.get_layer("head"), model.get_layer("stem_bn")
    depth = sum(layer.name.endswith("_depthwise_conv") for layer in model.layers)
    return reference_convmixer(
        stem.filters,
        depth,
        kernel_size=model.get_layer("block_1_depthwise_conv").kernel_size[0],
        patch_size=stem.kernel_size[0],
        num_classes=head.units,
        in_channels=model.input_shape[-1],
        bn_momentum=1.0 - bn.momentum,
        bn_eps=bn.epsilon,
    )


def layer_pairs(module):
    """``[(Keras layer name, torch module)]``: every layer of the package's ConvMixer that holds
    weights, with its counterpart in :func:`reference_convmixer`'s ``module``."""
    from torch import nn

    depth = sum(isinstance(m, nn.Conv2d) and m.groups > 1 for m in module.modules())
    pairs = [("stem_conv", module[0]), ("stem_bn", module[2])]
    for i in range(1, depth + 1):
        block = module[2 + i]
        depthwise = block[0].body
        pairs += [
            (f"block_{i}_depthwise_conv", depthwise[0]),
            (f"block_{i}_depthwise_bn", depthwise[2]),
            (f"block_{i}_pointwise_conv", block[1]),
            (f"block_{i}_pointwise_bn", block[3]),
        ]
    return [*pairs, ("head", module[-1])]


def transfer_weights(model, module):
    """Copies the weights of ``model`` (the package's Keras ConvMixer, any backend) into ``module``
    (:func:`reference_convmixer` of the same size).

    Conv kernels go from Keras' ``(kh, kw, in, out)`` to PyTorch's ``(out, in, kh, kw)``, depthwise
    kernels from ``(kh, kw, C, 1)`` to ``(C, 1, kh, kw)``, the ``Dense`` kernel ``(in, out)`` is
    transposed; BatchNorm's gamma, beta, moving mean and variance become ``weight``, ``bias``,
    ``running_mean``, ``running_var``. Raises ``ValueError`` on a shape or setting that differs.
    Returns ``module``.
    """
    import keras
    import torch
    from torch import nn

    def array(variable):
        return np.asarray(keras.ops.convert_to_numpy(variable), dtype=np.float32)

    def put(target, value, what):
        value = np.ascontiguousarray(value)
        if tuple(target.shape) != value.shape:
            raise ValueError(f"{what}: torch shape {tuple(target.shape)}, Keras gives {value.shape}")
        with torch.no_grad():
            target.copy_(torch.from_numpy(value).to(target.device, target.dtype))

    for name, target in layer_pairs(module):
        layer = model.get_layer(name)
        if isinstance(target, nn.BatchNorm2d):
            if abs(target.eps - layer.epsilon) > 1e-12 or abs(target.momentum - (1 - layer.momentum)) > 1e-9:
                raise ValueError(
                    f"{name}: BatchNorm eps/momentum {layer.epsilon}/{layer.momentum} (Keras) "
                    f"vs {target.eps}/{target.momentum} (torch)"
                )
            for keras_name, torch_name in BN_NAMES:
                put(getattr(target, torch_name), array(getattr(layer, keras_name)), f"{name}.{keras_name}")
            continue
        kernel = array(layer.kernel)
        if isinstance(target, nn.Linear):
            kernel = kernel.T
        elif target.groups > 1:  # depthwise (kh, kw, C, 1) -> (C, 1, kh, kw)
            kernel = kernel.transpose(2, 3, 0, 1)
        else:  # (kh, kw, in, out) -> (out, in, kh, kw)
            kernel = kernel.transpose(3, 2, 0, 1)
        put(target.weight, kernel, f"{name}.kernel")
        put(target.bias, array(layer.bias), f"{name}.bias")
    return module


def torch_parameter_counts(module):
    """``{"trainable", "frozen", "bn_running_stats", "total"}`` element counts of ``module``: its
    parameters with and without ``requires_grad``, and BatchNorm's running mean and variance
    (``num_batches_tracked``, a step counter, is not counted); ``total`` is their sum."""
    from torch import nn

    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in module.parameters() if not p.requires_grad)
    stats = sum(
        m.running_mean.numel() + m.running_var.numel()
        for m in module.modules()
        if isinstance(m, nn.BatchNorm2d)
    )
    return {
        "trainable": trainable,
        "frozen": frozen,
        "bn_running_stats": stats,
        "total": trainable + frozen + stats,
    }


def keras_parameter_counts(model):
    """``{"trainable", "non_trainable", "total"}`` element counts of a Keras model's weights
    (non-trainable: BatchNorm's moving statistics and frozen kernels)."""

    def count(variables):
        return int(sum(np.prod(v.shape) for v in variables))

    trainable, non_trainable = count(model.trainable_weights), count(model.non_trainable_weights)
    return {"trainable": trainable, "non_trainable": non_trainable, "total": trainable + non_trainable}


# ----------------------------------------------------------------------------
# One row group, in its own process
# ----------------------------------------------------------------------------
def _batch(m):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m["batch"], *m["input_shape"]), dtype=np.float32)
    return x, rng.integers(0, m["num_classes"], m["batch"])


def _error(exc):
    """``(short, detail)`` of an exception: its type and the lines that say what failed (without
    terminal colours, Keras' wrapper lines and the arguments it prints), and more of its text."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(exc).__name__}: {exc}").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    skip = (
        "Exception encountered when calling",
        "Arguments received",
        "Set TORCHDYNAMO_VERBOSE",
        "\u2022",
        "[",
        "...",
    )
    said = [line for line in lines[1:] if not line.startswith(skip)]
    short = f"{type(exc).__name__}: {said[0]}" if said and "Exception encountered" in lines[0] else lines[0]
    return short[:300], text[:2000]


def _dynamo_counters():
    """torch.compile's bookkeeping: graphs compiled, graph breaks, inductor cache hits and misses."""
    from torch._dynamo.utils import counters

    return {
        "unique_graphs": int(counters["stats"].get("unique_graphs", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "fxgraph_cache_hit": int(counters["inductor"].get("fxgraph_cache_hit", 0)),
        "fxgraph_cache_miss": int(counters["inductor"].get("fxgraph_cache_miss", 0)),
    }


def _reset_dynamo():
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()


def plain_torch_step(m, frozen, compiled, device):
    """A zero-argument training step of :func:`reference_convmixer` (size ``m``) on ``device``;
    returns ``(step, counts)``."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    module = reference_convmixer(
        m["dim"], m["depth"], m["kernel_size"], m["patch_size"], m["num_classes"], m["input_shape"][-1]
    )
    module = module.to(device, memory_format=torch.channels_last).train()
    if frozen:
        for conv in module.modules():
            if isinstance(conv, nn.Conv2d) and conv.groups > 1:
                conv.weight.requires_grad_(False)
    o = OPTIMIZER
    optimizer = torch.optim.AdamW(
        [p for p in module.parameters() if p.requires_grad],
        lr=o["learning_rate"],
        betas=(o["beta_1"], o["beta_2"]),
        eps=o["epsilon"],
        weight_decay=o["weight_decay"],
    )
    forward = torch.compile(module) if compiled else module
    x, y = _batch(m)
    x = torch.from_numpy(x).permute(0, 3, 1, 2).to(device).contiguous(memory_format=torch.channels_last)
    y = torch.from_numpy(y).to(device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()  # waits for the device

    return step, torch_parameter_counts(module)


def keras_convmixer(m, frozen):
    """The package's ConvMixer of size ``m`` (seed 0), its depthwise kernels frozen if ``frozen``:
    the model of this script's Keras rows and of ``user_path``'s."""
    import keras

    from keras_structinit import freeze_spatial
    from keras_structinit.models import convmixer

    keras.utils.set_random_seed(0)
    model = convmixer(
        m["dim"],
        m["depth"],
        kernel_size=m["kernel_size"],
        patch_size=m["patch_size"],
        num_classes=m["num_classes"],
        input_shape=m["input_shape"],
    )
    if frozen:
        freeze_spatial(model)
    return model


def keras_step(m, frozen, jit_compile):
    """A zero-argument ``train_on_batch`` of the package's ConvMixer (size ``m``) on this process's
    Keras backend; returns ``(step, counts, model)``."""
    import keras

    model = keras_convmixer(m, frozen)
    o = OPTIMIZER
    model.compile(
        optimizer=keras.optimizers.AdamW(
            learning_rate=o["learning_rate"],
            beta_1=o["beta_1"],
            beta_2=o["beta_2"],
            epsilon=o["epsilon"],
            weight_decay=o["weight_decay"],
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    x, y = _batch(m)
    return (lambda: model.train_on_batch(x, y)), keras_parameter_counts(model), model


def _device_name(backend):
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return device.platform if device.platform == "cpu" else f"{device.platform}: {device.device_kind}"
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name if gpus else "cpu"


def measure_group(group, rows, args, write=lambda result: None):
    """Times ``rows`` of ``group`` in this process (``KERAS_BACKEND`` already the group's backend);
    calls ``write(result)`` after every measurement and returns the result."""
    import keras

    from keras_structinit.utils.reporting import machine_info, versions

    m, backend = args.model, keras.backend.backend()
    software = versions()
    if backend == "torch":
        import torch

        software["torch_threads"] = torch.get_num_threads()
        cuda = torch.cuda.is_available()
        if cuda and group == "torch":
            torch.backends.cudnn.benchmark = True
        software["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
    load = os.getloadavg()
    result = {
        "group": group,
        "machine": machine_info(),
        "software": software,
        "code": code_provenance(),
        "device": _device_name(backend),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "loadavg": {"start": list(load)},
        "loadavg_1min": {"start": load[0]},
        # The order the measurements ran in, one process: the process' peak RSS holds the earlier ones.
        "order": [f"{row} {mode}" for row in rows for mode in MODES],
        "rows": {},
    }
    start = time.perf_counter()
    for row in rows:
        _, label, keras_backend, setting = ROWS[row]
        entry = result["rows"].setdefault(row, {"label": label})
        for mode in MODES:
            frozen = mode == "frozen"
            tag = f"[{row}] {mode}"
            try:
                if keras_backend is None:
                    import torch

                    device = "cuda" if torch.cuda.is_available() else "cpu"
                    if setting:
                        _reset_dynamo()
                    step, counts = plain_torch_step(m, frozen, setting, device)
                    details = {"compile": "torch.compile" if setting else "eager", "device": device}
                else:
                    if backend == "torch":
                        _reset_dynamo()
                    step, counts, model = keras_step(m, frozen, setting)
                    details = {"compile": f"jit_compile={setting}"}
                with StepMemory(backend) as memory:
                    stats, _ = time_calls(step, args.steps, warmup=args.warmup)
                details["memory"] = memory.record
                if keras_backend is not None:
                    details["jit_compile_resolved"] = bool(model.jit_compile)
                if backend == "torch" and setting is True:
                    details["dynamo"] = _dynamo_counters()
                entry[mode] = {**stats, **details, "parameters": counts}
                print(
                    f"{tag}: {stats['median_s']:.3f} s/step median of {stats['repeats']} (warm-up "
                    f"{', '.join(f'{t:.2f}' for t in stats['warmup_s'])} s)",
                    flush=True,
                )
            except Exception as exc:  # a compiler that fails: recorded, the other rows still run
                short, detail = _error(exc)
                entry[mode] = {"error": short, "error_detail": detail}
                print(f"{tag}: failed: {entry[mode]['error']}", flush=True)
            load = os.getloadavg()
            result.update(elapsed_s=round(time.perf_counter() - start, 1))
            result["loadavg"]["end"], result["loadavg_1min"]["end"] = list(load), load[0]
            write(result)
    return result


def run_group(args):
    backend = _group_backend(args.group)
    if os.environ.get("KERAS_BACKEND") != backend:
        sys.exit(f"{NAME}: error: --group {args.group} needs KERAS_BACKEND={backend}")
    rows = _groups(args.rows)[args.group]
    measure_group(args.group, rows, args, write=lambda r: args.group_json.write_text(json.dumps(r)))


# ----------------------------------------------------------------------------
# The parent: one subprocess per row group, results saved after each
# ----------------------------------------------------------------------------
def _config(args):
    return {
        **args.model,
        "input_shape": list(args.model["input_shape"]),
        "optimizer": OPTIMIZER,
        "steps": args.steps,
        "warmup": args.warmup,
        "quick": args.quick,
    }


def _save(out, data):
    from keras_structinit.utils.io_utils import write_text

    data["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    data["code"] = code_provenance()
    write_text(out / f"{NAME}.json", json.dumps(data, indent=2) + "\n")
    write_text(out / f"{NAME}.md", render_markdown(data))


def _missing(group):
    """Why ``group`` cannot run here (a package it needs is not installed), or ``None``."""
    needs = ["torch", "keras"] if group in ("torch", "keras-torch") else ["keras", _group_backend(group)]
    missing = [name for name in needs if importlib.util.find_spec(name) is None]
    return f"the {', '.join(missing)} package is not installed" if missing else None


def run_all(args):
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{NAME}.json"
    config = _config(args)
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    if data.get("config") != config:  # rows of another configuration are not comparable: start afresh
        data = {}
    data.update(benchmark=NAME, config=config)
    groups, notes = data.setdefault("groups", {}), data.setdefault("notes", {})
    load, started = os.getloadavg(), time.perf_counter()
    launch, root = script_command(__file__)
    options = [
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--rows",
        *args.rows,
        *(["--quick"] if args.quick else []),
    ]
    for group, rows in _groups(args.rows).items():
        why = _missing(group)
        if why:
            for row in rows:
                notes[row] = f"skipped: {why}"
            print(f"[{group}] skipped: {why}", flush=True)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            group_json = Path(tmp) / "group.json"
            command = [*launch, "--group", group, "--group-json", str(group_json), *options]
            wall, error = time.perf_counter(), None
            try:
                done = subprocess.run(
                    command,
                    cwd=root,
                    timeout=args.group_timeout,
                    env={**os.environ, "KERAS_BACKEND": _group_backend(group)},
                )
                if done.returncode != 0:
                    error = f"the process exited with status {done.returncode}"
            except subprocess.TimeoutExpired:
                error = f"stopped after --group-timeout {args.group_timeout:g} s"
            result = json.loads(group_json.read_text()) if group_json.exists() else None
        for row in rows:
            notes.pop(row, None)
            if error:
                notes[row] = error
        if result is None:
            print(f"[{group}] failed before measuring anything: {error}", flush=True)
            continue
        result["process_wall_s"] = round(time.perf_counter() - wall, 1)
        data.setdefault("rows", {}).update(result.pop("rows"))
        data["machine"] = result.pop("machine")
        groups[group] = result
        _save(out, data)
        print(
            f"[{group}] saved ({result['process_wall_s']:.0f} s with start-up; "
            f"{(time.perf_counter() - started) / 60:.1f} min so far)",
            flush=True,
        )
    data["loadavg_1min"] = {"start": load[0], "end": os.getloadavg()[0]}
    data["wall_s"] = round(time.perf_counter() - started, 1)
    _save(out, data)
    print(f"wrote {json_path} and {NAME}.md in {data['wall_s'] / 60:.1f} min", flush=True)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.group:
        run_group(args)
    else:
        run_all(args)


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _median(data, row, mode):
    return data.get("rows", {}).get(row, {}).get(mode, {}).get("median_s")


def _row_compile(row, entry):
    measured = entry.get("thawed") or entry.get("frozen") or {}
    text = measured.get("compile", "")
    if "jit_compile_resolved" in measured and "auto" in text:
        text += f" (resolved: {measured['jit_compile_resolved']})"
    dynamo = measured.get("dynamo")
    if dynamo:
        text += f"; {dynamo['unique_graphs']} graph(s), {dynamo['graph_breaks']} break(s)"
    return text


def rows_table(data):
    from keras_structinit.utils.reporting import format_table

    cells = []
    for row in ROWS:
        entry = data.get("rows", {}).get(row)
        note = data.get("notes", {}).get(row)
        if entry is None:
            if note:
                cells.append({"row": f"`{row}`", "what": ROWS[row][1], "note": note})
            continue
        cell = {
            "row": f"`{row}`",
            "what": entry["label"],
            "compile": _row_compile(row, entry),
            "note": note or "",
        }
        for mode in MODES:
            measured, base = entry.get(mode, {}), _median(data, REFERENCE_ROW, mode)
            if "error" in measured:
                error = measured["error"].replace("|", "\\|")
                cell["note"] = "; ".join(filter(None, [cell["note"], f"{mode}: {error}"]))
                continue
            if "median_s" not in measured:
                continue
            cell[f"{mode}_s"] = f"{measured['median_s']:.3f}"
            cell[f"{mode}_min"] = f"{min(measured['times_s']):.3f}"
            cell[f"{mode}_x"] = f"{measured['median_s'] / base:.2f}" if base else ""
            cell[f"{mode}_first"] = f"{measured['warmup_s'][0]:.1f}" if measured.get("warmup_s") else ""
            cell[f"{mode}_measured"] = measured
        thawed, frozen = _median(data, row, "thawed"), _median(data, row, "frozen")
        cell["speedup"] = f"{thawed / frozen:.2f}x" if thawed and frozen else ""
        cells.append(cell)

    def get(key):
        return lambda c: c.get(key, "")

    return format_table(
        cells,
        [
            ("Row", get("row")),
            ("What", get("what")),
            ("Compile", get("compile")),
            ("Thawed s/step", get("thawed_s"), "", "right"),
            ("min", get("thawed_min"), "", "right"),
            ("x eager", get("thawed_x"), "", "right"),
            ("Frozen s/step", get("frozen_s"), "", "right"),
            ("min", get("frozen_min"), "", "right"),
            ("x eager", get("frozen_x"), "", "right"),
            ("Frozen speed-up", get("speedup"), "", "right"),
            (
                "First step s (thawed / frozen)",
                lambda c: " / ".join(filter(None, (c.get("thawed_first"), c.get("frozen_first")))),
                "",
                "right",
            ),
            memory_column(lambda c, mode: c.get(f"{mode}_measured", {}), MODES),
            ("Note", get("note")),
        ],
    )


def goals_table(data):
    """Issue 62's goals (:data:`GOALS`) per Keras row: met or missed, and why (:data:`MISSES`)."""
    from keras_structinit.utils.reporting import format_table

    cells = []
    for row in ROWS:
        if not row.startswith("keras-"):
            continue
        times = {mode: _median(data, row, mode) for mode in MODES}
        base = {mode: _median(data, REFERENCE_ROW, mode) for mode in MODES}
        if None in times.values() or None in base.values():
            continue
        ratios = [times[mode] / base[mode] for mode in MODES]
        speedup = times["thawed"] / times["frozen"]
        met = max(ratios) <= GOALS["x eager"] and speedup >= GOALS["frozen_speedup"]
        cells.append(
            {
                "row": f"`{row}`",
                "ratios": " / ".join(f"{r:.2f}" for r in ratios),
                "ratio_met": "yes" if max(ratios) <= GOALS["x eager"] else "no",
                "speedup": f"{speedup:.2f}x",
                "speedup_met": "yes" if speedup >= GOALS["frozen_speedup"] else "no",
                "why": "" if met else MISSES.get(row, "not analysed"),
            }
        )
    return format_table(
        cells,
        [
            ("Row", lambda c: c["row"]),
            ("x eager (thawed / frozen)", lambda c: c["ratios"], "", "right"),
            (f"<= {GOALS['x eager']}x", lambda c: c["ratio_met"]),
            ("Frozen speed-up", lambda c: c["speedup"], "", "right"),
            (f">= {GOALS['frozen_speedup']}x", lambda c: c["speedup_met"]),
            ("Why a goal is missed", lambda c: c["why"]),
        ],
    )


def groups_table(data):
    from keras_structinit.utils.reporting import format_table

    def software(g):
        s = g["software"]
        extra = f", {s['torch_threads']} threads" if "torch_threads" in s else ""
        return f"Keras {s['keras']}, {s['backend']} {s['backend_version']}{extra}"

    def load(g):
        return f"{g['loadavg_1min']['start']:.2f} / {g['loadavg_1min'].get('end', float('nan')):.2f}"

    rows = [(name, g) for name, g in data.get("groups", {}).items()]
    return format_table(
        rows,
        [
            ("Process", lambda r: r[0]),
            ("Date (UTC)", lambda r: r[1]["date"]),
            ("Device", lambda r: r[1]["device"]),
            ("Software", lambda r: software(r[1])),
            (
                "Wall s (with start-up)",
                lambda r: r[1].get("process_wall_s", r[1]["elapsed_s"]),
                ".0f",
                "right",
            ),
            ("1-min load avg (start / end)", lambda r: load(r[1])),
        ],
    )


def render_markdown(data):
    from keras_structinit.utils.reporting import describe_machine

    c = data["config"]
    lines = [
        "# A plain-PyTorch ConvMixer beside the package's Keras model",
        "",
        f"`benchmarks/torch_reference.py` (see its docstring). ConvMixer-{c['dim']}/{c['depth']} "
        f"(k {c['kernel_size']}, patch {c['patch_size']}, {'x'.join(map(str, c['input_shape']))} inputs, "
        f"{c['num_classes']} classes), batch {c['batch']}, AdamW (lr {c['optimizer']['learning_rate']:g}, "
        f"weight decay {c['optimizer']['weight_decay']:g}): one training step, median of {c['steps']} timed "
        f"steps after {c['warmup']} warm-up steps (the first holds any compilation: *First step s*). "
        "*Frozen*: the depthwise kernels not trainable. *x eager* = the row's median / plain PyTorch "
        "eager's, same mode; *min*: the fastest timed step (less sensitive to other work on the machine "
        "than the median: check the load averages). Every process ran alone, one after another.",
        "",
        f"{MEMORY_NOTE} Each process (a row group: the two plain-PyTorch rows; the two Keras torch "
        "rows; Keras JAX; Keras TensorFlow) runs its rows in table order, each thawed first, then "
        "frozen: the peak RSS of a later measurement is the process' peak so far, earlier ones "
        "included; the growth in brackets is each measurement's own (its warm-up and timed steps).",
        "",
    ]
    if "machine" in data:
        lines += [describe_machine(data["machine"]), ""]
    if "loadavg_1min" in data:
        load = data["loadavg_1min"]
        lines += [
            f"Whole run: {data.get('wall_s', 0) / 60:.1f} min; 1-min load average "
            f"{load['start']:.2f} at the start, {load['end']:.2f} at the end.",
            "",
        ]
    lines += [rows_table(data), "", groups_table(data), ""]
    goals = goals_table(data)
    if goals:
        lines += [
            "## Issue 62's goals",
            "",
            f"Each Keras row within {GOALS['x eager']}x of plain PyTorch eager (the median step, thawed and "
            f"frozen), and its frozen step at least {GOALS['frozen_speedup']}x faster than its thawed one.",
            "",
            goals,
            "",
        ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py)
# ----------------------------------------------------------------------------
def headline(name, data):
    """The suite report's line: each row's thawed / frozen step and its ratio to plain PyTorch eager."""
    parts = []
    for row in ROWS:
        thawed, frozen = _median(data, row, "thawed"), _median(data, row, "frozen")
        if thawed is None or frozen is None:
            continue
        base = (_median(data, REFERENCE_ROW, "thawed"), _median(data, REFERENCE_ROW, "frozen"))
        ratio = f" ({thawed / base[0]:.2f}x / {frozen / base[1]:.2f}x eager)" if row != REFERENCE_ROW else ""
        parts.append(f"{row} {thawed:.3f} / {frozen:.3f} s{ratio}")
    return "ConvMixer-128/6 step thawed / frozen: " + "; ".join(parts), None


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
_TITLE = (
    "ConvMixer-128/6 (k 9, patch 2, batch 128) training step, thawed and frozen: a plain-PyTorch "
    "ConvMixer (eager, torch.compile) beside the package's model on Keras' torch (jit_compile False / "
    "True), JAX and TensorFlow backends"
)
_PAPER = (
    "no timing in the papers; their code is plain PyTorch (nn.Conv2d(groups=dim), channels_last, "
    "cudnn.benchmark)"
)
SUITE = {
    "cpu": (
        # One warm-up step (the compiling one) instead of two: 12 timed steps of every row, thawed and
        # frozen, then fit in ~6 minutes on 2 cores.
        Benchmark(
            name=NAME,
            script="torch_reference.py",
            args=("--steps", "12", "--warmup", "1"),
            title=_TITLE,
            paper=_PAPER,
            minutes=6,
        ),
    ),
}
# On a GPU: the same rows (TensorFlow's skipped with a note where the image has none). The estimate:
# the steps take ~0.01-0.05 s (depthwise_speed on one H100: 0.013 s JAX, 0.044 s Keras torch), so the
# 2 x 14 steps per row are a few seconds; what counts is start-up (~15 s per process, 4 processes) and
# compilation: JAX ~10 s per mode, torch.compile ~20 s per mode and row (4 of them) with a warm
# inductor cache, ~2 min with a cold one. ~2 min warm; --group-timeout bounds a cold one.
_GPU = Benchmark(
    name=NAME,
    script="torch_reference.py",
    args=("--steps", "20", "--group-timeout", "240"),
    title=_TITLE + ", on the GPU",
    paper=_PAPER,
    minutes=2,
    estimated=True,
    smoke_args=("--quick", "--steps", "2", "--warmup", "1", "--group-timeout", "120"),
)
SUITE["gpu"] = SUITE["gpu-quick"] = (_GPU,)


if __name__ == "__main__":
    main()
