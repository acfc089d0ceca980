#!/usr/bin/env python
"""Throughput of the recipes' input pipelines alone, per CPU core, stage by stage (issue 37).

Times ``recipes.data.cifar_dataset`` and ``recipes.imagenet_data.imagenet_dataset`` with their stages
switched on one after another, on one core (tf.data's private thread pool of 1 thread, one
inter-op and one intra-op thread), and reports images/s and each stage's share of the time per
image (the difference between consecutive rows):

* CIFAR (the shared CIFAR-10 training split, decoded once into memory as ``load_cifar`` does):
  gather + normalize, + pad-and-crop and flip, + RandAugment ``keras:n2-f0.4``, + MixUp/CutMix
  (0.8, 1.0);
* ImageNet (an ImageFolder of ``--imagenet-images`` JPEGs of 500 x 375, made from the CIFAR
  images upsampled, so decoding costs what a photo of that size does): JPEG read + decode +
  central square resized to 256, + random-resized crop to 224 and flip, + RandAugment
  ``keras:n2-f0.7`` (the recipe's form when issue 37 measured it), + MixUp/CutMix (0.2, 1.0)
  (the recipe's).

A last row per recipe times the RandAugment stage with Keras' own layer called image by image
(each image its own ops; ``transform_images`` computes every op for every draw and keeps one),
which the pipelines used before ``recipes.data.rand_augment_batch``. Each row is timed
``--repeats`` times over ``--batches``
batches after a warm-up batch; mean ± std. Results: ``<out>/input_pipeline.json`` and ``.md``.

Usage::

    python -m benchmarks.input_pipeline --out benchmarks/results/cpu
    python -m benchmarks.input_pipeline --batches 2 --repeats 1 --imagenet-images 64 --out /tmp/ip
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    LOCAL_RESULTS,
    SHARED_CIFAR10,
    Benchmark,
    code_provenance,
    data_label,
    data_provenance,
    mean_std,
    run_facts,
)

NAME = "input_pipeline"
#: Keras' RandAugment forms (``num_ops``, ``factor``) the tf.data pipelines ran when issue 37 measured
#: them; the recipes' defaults are now the papers' named forms (``input_streams.py`` times those).
CIFAR_FORM, IMAGENET_FORM = "keras:n2-f0.4", "keras:n2-f0.7"
CIFAR_STAGES = (
    ("gather + normalize", dict(pad=0, flip=False)),
    ("+ pad-and-crop, flip", dict()),
    (f"+ RandAugment {CIFAR_FORM}", dict(rand_augment=CIFAR_FORM)),
    ("+ MixUp 0.8 / CutMix 1.0", dict(rand_augment=CIFAR_FORM, mixup_alpha=0.8, cutmix_alpha=1.0)),
)
IMAGENET_STAGES = (
    ("JPEG read + decode + central square to 256", None),
    ("+ random-resized crop to 224, flip", dict(rand_augment=None, mixup_alpha=0.0, cutmix_alpha=0.0)),
    (f"+ RandAugment {IMAGENET_FORM}", dict(rand_augment=IMAGENET_FORM, mixup_alpha=0.0, cutmix_alpha=0.0)),
    ("+ MixUp 0.2 / CutMix 1.0", dict(rand_augment=IMAGENET_FORM, mixup_alpha=0.2, cutmix_alpha=1.0)),
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED_CIFAR10, help="CIFAR-10 training images")
    parser.add_argument("--cifar-batch", type=int, default=512, help="the CIFAR recipe's batch (512)")
    parser.add_argument("--imagenet-batch", type=int, default=64)
    parser.add_argument("--imagenet-images", type=int, default=512)
    parser.add_argument("--batches", type=int, default=6, help="timed batches per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS)
    return parser.parse_args(argv)


def _one_core(tf, ds):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    return ds.with_options(options)


def _rate(tf, ds, batch, batches, repeats):
    """Images/s of ``ds`` (``repeats`` timings of ``batches`` batches after one warm-up batch)."""
    rates = []
    iterator = iter(_one_core(tf, ds))
    next(iterator)
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batches):
            images = next(iterator)[0]
        np.asarray(images)
        rates.append(batches * batch / (time.perf_counter() - start))
    return rates


def _keras_per_image(layer, images):
    """Keras' own RandAugment, one call per image (so that each image draws its own ops)."""
    import tensorflow as tf

    return tf.map_fn(lambda image: layer(image, training=True), images)


def _imagenet_folder(x, count, root):
    """``count`` JPEGs of 500 x 375 in ``root/<class>/``: CIFAR images upsampled, with noise."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    for i in range(count):
        image = tf.image.resize(x[i % len(x)][None].astype("float32"), (375, 500))[0].numpy()
        image = np.clip(image + rng.normal(0, 8, image.shape), 0, 255).astype("uint8")
        folder = Path(root) / f"class_{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}.jpg").write_bytes(tf.io.encode_jpeg(image, quality=90).numpy())
    return root


def _rows(stages, rates):
    rows, previous = [], None
    for (label, _), values in zip(stages, rates, strict=True):
        per_image = 1e3 / np.mean(values)  # ms per image
        rows.append(
            {
                "stage": label,
                "images_per_s": values,
                "ms_per_image": per_image,
                "stage_ms": per_image - (previous or 0.0),
            }
        )
        previous = per_image
    total = rows[-1]["ms_per_image"]
    for row in rows:
        row["share"] = row["stage_ms"] / total
    return rows


def _stock(values, rates):
    """The RandAugment stage with Keras' own transform: its rate and its ms per image (over the
    stage before it), beside the package's."""
    before = 1e3 / np.mean(rates[1])
    return {
        "images_per_s": values,
        "stage_ms": 1e3 / np.mean(values) - before,
        "package_stage_ms": 1e3 / np.mean(rates[2]) - before,
    }


def render_markdown(data):
    lines = [
        "# Input pipelines alone: images/s per CPU core, stage by stage",
        "",
        f"{run_facts(data['machine'], data['versions'])} Measured {data['date']}. One core: "
        "tf.data's private thread pool of 1 thread, 1 inter-op and 1 intra-op thread. Each rate is "
        f"mean ± std over {data['config']['repeats']} timings of {data['config']['batches']} batches. "
        f"Data: {data_label(data['config']['data'])}.",
        "",
    ]
    for name, title in (
        ("cifar", "CIFAR recipe (batch {b}, 32 x 32)"),
        ("imagenet", "ImageNet recipe (batch {b}, 500 x 375 JPEGs to 224 x 224)"),
    ):
        section = data[name]
        lines += [
            f"## {title.format(b=section['batch'])}",
            "",
            "| Stages on | Images/s per core | ms per image | This stage, ms | Share |",
            "|---|---:|---:|---:|---:|",
        ]
        for row in section["rows"]:
            lines.append(
                f"| {row['stage']} | {mean_std(row['images_per_s'], '.0f')} | "
                f"{row['ms_per_image']:.3f} | {row['stage_ms']:.3f} | {100 * row['share']:.0f} % |"
            )
        stock = section["stock_rand_augment"]
        lines.append(
            f"| RandAugment stage with Keras' own layer per image (all 11 ops, one kept) | "
            f"{mean_std(stock['images_per_s'], '.0f')} | | {stock['stage_ms']:.3f} | |"
        )
        top = max(section["rows"], key=lambda r: r["share"])
        lines += [
            "",
            f"Costliest stage: {top['stage']} ({100 * top['share']:.0f} % of the time per image). "
            f"RandAugment as Keras applies it: {stock['stage_ms']:.3f} ms per image, "
            f"{stock['stage_ms'] / stock['package_stage_ms']:.1f}x the package's stage "
            "(`recipes.data.rand_augment_batch`).",
            "",
        ]
    lines += [data["cores_note"], ""]
    return "\n".join(lines)


def headline(name, data):
    """The suite report's line: the full pipelines' rates and Keras' per-image RandAugment against
    ``rand_augment_batch``; no verdict (no paper claim)."""
    parts = []
    for recipe in ("cifar", "imagenet"):
        found = data[recipe]
        stock = found["stock_rand_augment"]
        parts.append(
            f"{recipe} {np.mean(found['rows'][-1]['images_per_s']):.0f} images/s, Keras' RandAugment "
            f"per image {stock['stage_ms'] / stock['package_stage_ms']:.1f}x the batched stage's time"
        )
    return "tf.data on one core, full recipe: " + "; ".join(parts), None


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    from keras_structinit.datasets import load_cifar
    from keras_structinit.recipes import data as data_module
    from keras_structinit.recipes import imagenet_data as imagenet_module
    from keras_structinit.recipes.data import cifar_dataset, input_normalization
    from keras_structinit.recipes.imagenet_data import imagenet_dataset, imagenet_source
    from keras_structinit.utils.io_utils import write_text
    from keras_structinit.utils.reporting import machine_info, versions

    (x, y), _ = load_cifar(str(args.data), validation_split=0.1, seed=0, name="--data")
    labels = np.eye(10, dtype="float32")[y]
    mean, std = input_normalization(x)

    def cifar(options):
        options = {"rand_augment": None, **options}
        return cifar_dataset(x, labels, args.cifar_batch, mean, std, True, **options)

    def imagenet(options):
        if options is None:
            return imagenet_source(folder, "train", 256, True, 0)[0].repeat().batch(args.imagenet_batch)
        return imagenet_dataset(folder, args.imagenet_batch, True, **options)[0].repeat()

    rates = {"cifar": [], "imagenet": [], "stock": {}}
    with tempfile.TemporaryDirectory() as root:
        folder = _imagenet_folder(x, args.imagenet_images, root)
        for name, stages, make, batch in (
            ("cifar", CIFAR_STAGES, cifar, args.cifar_batch),
            ("imagenet", IMAGENET_STAGES, imagenet, args.imagenet_batch),
        ):
            for label, options in stages:
                rates[name].append(_rate(tf, make(options), batch, args.batches, args.repeats))
                print(f"{name} {label}: {np.mean(rates[name][-1]):.0f} images/s per core", flush=True)
            batched = data_module.rand_augment_batch
            data_module.rand_augment_batch = imagenet_module.rand_augment_batch = _keras_per_image
            try:
                rates["stock"][name] = _rate(tf, make(stages[2][1]), batch, args.batches, args.repeats)
            finally:
                data_module.rand_augment_batch = imagenet_module.rand_augment_batch = batched
            print(
                f"{name} with Keras' RandAugment: {np.mean(rates['stock'][name]):.0f} images/s per core",
                flush=True,
            )
    cifar_rates, imagenet_rates = rates["cifar"], rates["imagenet"]
    cifar_full, imagenet_full = np.mean(cifar_rates[-1]), np.mean(imagenet_rates[-1])
    note = (
        f"Cores to feed one accelerator: its training rate divided by these rates. At the full CIFAR "
        f"recipe's {cifar_full:.0f} images/s per core, an accelerator training a ConvMixer-256/8 at "
        f"R images/s needs R / {cifar_full:.0f} cores (e.g. {10000 / cifar_full:.0f} cores at 10,000 "
        f"images/s); the full ImageNet recipe at {imagenet_full:.0f} images/s per core needs "
        f"R / {imagenet_full:.0f} (e.g. {3000 / imagenet_full:.0f} cores at 3,000 images/s, a ResNet-50 "
        "class rate). The accelerator rates R are illustrations, not measurements: no GPU was lent."
    )
    config = {k: v for k, v in vars(args).items() if k != "out"} | {"data": data_provenance(args.data)}
    data = {
        "benchmark": NAME,
        "config": config,
        "machine": machine_info(),
        "versions": versions(),
        "code": code_provenance(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cifar": {
            "batch": args.cifar_batch,
            "rows": _rows(CIFAR_STAGES, cifar_rates),
            "stock_rand_augment": _stock(rates["stock"]["cifar"], cifar_rates),
        },
        "imagenet": {
            "batch": args.imagenet_batch,
            "rows": _rows(IMAGENET_STAGES, imagenet_rates),
            "stock_rand_augment": _stock(rates["stock"]["imagenet"], imagenet_rates),
        },
        "cores_note": note,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / f"{NAME}.json", json.dumps(data, indent=2, default=str) + "\n")
    write_text(args.out / f"{NAME}.md", render_markdown(data))
    print(render_markdown(data))


SUITE = {
    "cpu": (
        # A timing entry: run alone (no run_key); TensorFlow only (the pipelines are tf.data).
        Benchmark(
            name=NAME,
            script="input_pipeline.py",
            args=(),
            title="Images/s on one CPU core of the tf.data CIFAR and ImageNet pipelines, stage by stage, "
            "and Keras' RandAugment per image against recipes.data.rand_augment_batch",
            paper="no claim: the papers fed their models from PyTorch DataLoader workers",
            minutes=1.3,  # 1.3 min on 2026-11-29
        ),
    ),
}


if __name__ == "__main__":
    main()
