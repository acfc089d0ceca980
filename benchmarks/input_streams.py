#!/usr/bin/env python
"""The native CIFAR input stream against tf.data at the same augmentation, images/s per core (issue 48).

Both streams draw the same batches (``recipes.augment``); the native one runs the pixel ops on the
Keras backend of this process (``recipes.native.ArrayStream``: ``jax.jit``, a ``tf.function``, or
eager torch), tf.data runs them as TensorFlow ops in its parallel map. Run it once per backend
under one core (``taskset -c 0``; tf.data gets a private pool of one thread and one intra-op
thread); each row is the mean ± std of ``--repeats`` timings of ``--batches`` batches of 512
after two warm-up batches. Stages are switched on one after another, as ``input_pipeline.py``
does. Appends to ``<out>/input_streams.json`` and rewrites ``input_streams.md``.

Usage::

    taskset -c 0 env KERAS_BACKEND=jax python -m benchmarks.input_streams --out benchmarks/results/cpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import SHARED_CIFAR10, run_facts

NAME = "input_streams"
STAGES = (
    ("gather + normalize", dict()),
    ("+ pad-and-crop, flip", dict(pad=4, flip=True)),
    ("+ RandAugment torchvision:n2-m12", dict(pad=4, flip=True, rand_augment="torchvision:n2-m12")),
    ("+ MixUp 0.8 / CutMix 1.0, erasing 0.25", dict(pad=4, flip=True, rand_augment="torchvision:n2-m12",
                                                   mixup_alpha=0.8, cutmix_alpha=1.0, random_erasing=0.25)),
    ("timm:m9-n2-mstd0.5-inc1 instead", dict(pad=4, flip=True, rand_augment="timm:m9-n2-mstd0.5-inc1",
                                             mixup_alpha=0.8, cutmix_alpha=1.0, random_erasing=0.25)),
)


def _load(path, count):
    if Path(path).is_file():
        from keras_structinit import datasets

        (x, y), _ = datasets.load_cifar10(path, validation_split=0.0, seed=0)
        return x[:count], y[:count], f"CIFAR-10 training images ({count})"
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, (count, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, count),
            f"{count} random uint8 images (no CIFAR-10 zip at {path})")


def _rate(batches, take, repeats, batch):
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        take(batches)
        rates.append(batches * batch / (time.perf_counter() - start))
    return [float(np.mean(rates)), float(np.std(rates, ddof=1)) if len(rates) > 1 else 0.0]


def measure(x, y, batches, repeats, batch=512):
    import keras

    from keras_structinit.recipes import augment, native

    labels = np.eye(10, dtype=np.float32)[y]
    mean, std = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)
    rows = []
    for name, options in STAGES:
        stream = native.ArrayStream(x, labels, batch, mean, std, augment.Augmentation(**options), seed=0)
        position = iter(range(10**9))

        def native_batches(n, stream=stream, position=position):
            for _ in range(n):
                out = stream[next(position)]
            keras.ops.convert_to_numpy(out[0][:1])  # waits for the device

        native_batches(2)
        row = {"stage": name, "native": _rate(batches, native_batches, repeats, batch)}
        try:
            import tensorflow as tf

            from keras_structinit.recipes.data import cifar_dataset
        except ImportError:
            row["tf"] = None
        else:
            settings = {"pad": 0, "flip": False, **options}
            ds = cifar_dataset(x, labels, batch, mean, std, True, seed=0, **settings)
            ds = ds.with_options(_one_thread(tf))
            iterator = iter(ds)

            def tf_batches(n, iterator=iterator):
                for _ in range(n):
                    next(iterator)

            tf_batches(2)
            row["tf"] = _rate(batches, tf_batches, repeats, batch)
        rows.append(row)
        print(row, flush=True)
    return rows


def _one_thread(tf):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    return options


def render(records):
    lines = ["# Native input stream vs tf.data, CIFAR recipe: images/s per CPU core", ""]
    for record in records:
        lines += [f"## Keras backend {record['backend']}", "", record["facts"], "",
                  f"Data: {record['data']}. Batch 512; mean ± std of {record['repeats']} timings of "
                  f"{record['batches']} batches; one core (`taskset -c 0`, tf.data: a private pool of 1 "
                  "thread).", "",
                  "| Stages on | native, images/s | tf.data, images/s | native / tf.data |",
                  "|---|---:|---:|---:|"]
        for row in record["rows"]:
            n, t = row["native"], row["tf"]
            ratio = f"{n[0] / t[0]:.2f}" if t else "n/a"
            tf_text = f"{t[0]:.0f} ± {t[1]:.0f}" if t else "no TensorFlow"
            lines.append(f"| {row['stage']} | {n[0]:.0f} ± {n[1]:.0f} | {tf_text} | {ratio} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(SHARED_CIFAR10))
    parser.add_argument("--images", type=int, default=10_240)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import keras

    x, y, described = _load(args.data, args.images)
    rows = measure(x, y, args.batches, args.repeats)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{NAME}.json"
    records = json.loads(path.read_text())["records"] if path.exists() else []
    records = [r for r in records if r["backend"] != keras.backend.backend()]
    from keras_structinit.reporting import machine_info, versions

    records.append({"backend": keras.backend.backend(), "facts": run_facts(machine_info(), versions()),
                    "data": described,
                    "batches": args.batches, "repeats": args.repeats, "rows": rows,
                    "cpu_affinity": sorted(os.sched_getaffinity(0)),
                    "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    path.write_text(json.dumps({"records": records}, indent=1) + "\n")
    (args.out / f"{NAME}.md").write_text(render(records) + "\n")
    print(f"Wrote {path} and {args.out / (NAME + '.md')}")


if __name__ == "__main__":
    main()
