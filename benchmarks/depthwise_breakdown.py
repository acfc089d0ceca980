#!/usr/bin/env python
"""Where the time of the shifted-sum depthwise path goes (JAX or TF+XLA, CPU).

Times, for B=128, 16x16, C=128, 'same', stride 1 and each kernel size, the
pieces of ``keras_structinit.layers.depthwise``: the forward shifted sum (as
the computation's output, and consumed by ``sum(y * r)``), the
input gradient (the same kind of loop with the flipped kernel), the kernel
gradient alone in each of its two forms (FFT, and row-wise batched matrix
products), and the full forward+backward, each in its own compiled
function; and states the arithmetic floor ``2 B H W C k^2`` flops at the
measured matmul rate of the machine.

    python -m benchmarks.depthwise_breakdown --backend jax
    python -m benchmarks.depthwise_breakdown --backend jax --size 32 --kernel-sizes 9

``--size`` sets H = W (default 16); results other than 16 go to
``depthwise_breakdown_<backend>_<size>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import code_provenance
from keras_structinit.utils.reporting import machine_info, versions


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("jax", "tensorflow"), default="jax")
    parser.add_argument("--kernel-sizes", type=int, nargs="+", default=[3, 7, 9, 15])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=16, help="height = width of the input")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    os.environ["KERAS_BACKEND"] = args.backend
    from keras import ops

    from keras_structinit.ops import depthwise as dw
    from keras_structinit.utils.io_utils import write_text

    if args.backend == "jax":
        import jax

        compile_fn = jax.jit
        block = jax.block_until_ready

        def grad_fn(f, argnums):
            return jax.grad(f, argnums=argnums)
    else:
        import tensorflow as tf

        def compile_fn(f):
            return tf.function(f, jit_compile=True)

        def block(x):
            return [t.numpy() for t in tf.nest.flatten(x)]

        def grad_fn(f, argnums):
            def g(*a):
                vs = [tf.convert_to_tensor(v) for v in a]
                with tf.GradientTape() as tape:
                    for i in argnums:
                        tape.watch(vs[i])
                    loss = f(*vs)
                return tape.gradient(loss, [vs[i] for i in argnums])

            return g

    def timed(f, *a):
        block(f(*a)), block(f(*a))
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            block(f(*a))
            times.append(time.perf_counter() - t)
        return float(np.median(times) * 1e3)

    rng = np.random.default_rng(0)
    b, h, w, c = 128, args.size, args.size, 128
    x = ops.convert_to_tensor(rng.standard_normal((b, h, w, c)).astype("float32"))
    r = ops.convert_to_tensor(rng.standard_normal((b, h, w, c)).astype("float32"))
    a = ops.convert_to_tensor(rng.standard_normal((1024, 1024)).astype("float32"))
    mm = timed(compile_fn(lambda a: ops.matmul(a, a)), a)
    gflops = 2 * 1024**3 / (mm * 1e-3) / 1e9

    def conv(x, kk):
        return dw.depthwise_conv2d(x, kk, padding="same", implementation="shifted")

    def loss(x, kk):
        return ops.sum(conv(x, kk) * r)

    rows = []
    for k in args.kernel_sizes:
        kern = ops.convert_to_tensor(rng.standard_normal((k, k, c, 1)).astype("float32"))
        p = k // 2
        x_pad = ops.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
        row = {
            "k": k,
            "forward_ms": timed(compile_fn(conv), x, kern),
            # the same forward, consumed by a reduction inside the computation
            "forward_then_sum_ms": timed(compile_fn(loss), x, kern),
            "input_grad_ms": timed(compile_fn(grad_fn(loss, (0,))), x, kern),
            "kernel_grad_fft_only_ms": timed(
                compile_fn(lambda xp, g, k=k: dw._kernel_grad_fft(xp, g, k, k)), x_pad, r
            ),
            "kernel_grad_rows_only_ms": timed(
                compile_fn(lambda xp, g, k=k: dw._kernel_grad_rows(xp, g, k, k)), x_pad, r
            ),
            # the form the layer takes at this size
            "kernel_grad_form": dw._kernel_grad_form((h, w)),
            "full_fwd_bwd_ms": timed(compile_fn(grad_fn(loss, (0, 1))), x, kern),
            "floor_forward_ms": 2 * b * h * w * c * k * k / (gflops * 1e9) * 1e3,
        }
        rows.append(row)
        print(row, flush=True)
    result = {
        "backend": args.backend,
        "matmul_gflops": gflops,
        "machine": machine_info(),
        "software": versions(),
        "code": code_provenance(),
        "repeats": args.repeats,
        "shape": [b, h, w, c],
        "rows": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.size == 16 else f"_{args.size}"
    write_text(out / f"depthwise_breakdown_{args.backend}{suffix}.json", json.dumps(result, indent=2) + "\n")
    print(f"matmul rate {gflops:.0f} GFLOP/s; wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
