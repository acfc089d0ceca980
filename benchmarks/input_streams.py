#!/usr/bin/env python
"""The native CIFAR input stream against tf.data at the same augmentation, images/s per core (issue 48).

Both streams draw the same batches (``recipes.augment``); the native one runs the pixel ops on the
Keras backend of this process (``recipes.native.ArrayStream``: ``jax.jit``, a ``tf.function``, or
eager torch), tf.data runs them as TensorFlow ops in its parallel map. Run it once per backend
under one core (``taskset -c 0``; tf.data gets a private pool of one thread and one intra-op
thread); each row is the mean ± std of ``--repeats`` timings of ``--batches`` batches of 512
after two warm-up batches. Stages are switched on one after another, as ``input_pipeline.py``
does. Appends to ``<out>/input_streams.json`` and rewrites ``input_streams.md``.

The ImageNet rows decode ``--imagenet-images`` JPEGs of 500 x 375 (made from the CIFAR images)
and random-resized-crop them to 224: the native :class:`~keras_structinit.recipes.native.ImageStream`
with one worker thread against ``recipes.imagenet_data.imagenet_dataset`` on one thread.

``--training`` instead trains ``fit_cifar`` once per seed with each stream and records the
held-out accuracy (``<out>/input_streams_training.json`` and ``.md``).

``--fit-share`` times ``fit`` steps of a model fed by the native stream and by one constant batch:
the input's share of a training step (``<out>/input_share.json``; the GPU tier's entry).

``--all-backends`` runs the timings once per installed backend, each in a subprocess pinned to one
core (the lowest of this process's affinity, with ``OMP_NUM_THREADS=1``): the CPU suite's entry.
Every record names the data by file name and content digest (``data_file``), not by its path.

Usage::

    python -m benchmarks.input_streams --all-backends --out benchmarks/results/cpu
    taskset -c 0 env KERAS_BACKEND=jax python -m benchmarks.input_streams --out benchmarks/results/cpu
    KERAS_BACKEND=jax python -m benchmarks.input_streams --training --out benchmarks/results/cpu
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    SHARED_CIFAR10,
    Benchmark,
    backend_parser,
    code_provenance,
    data_label,
    data_provenance,
    installed_backends,
    run_facts,
    script_command,
)

NAME = "input_streams"
TRAINING = "input_streams_training"
SHARE = "input_share"
STAGES = (
    ("gather + normalize", dict()),
    ("+ pad-and-crop, flip", dict(pad=4, flip=True)),
    ("+ RandAugment torchvision:n2-m12", dict(pad=4, flip=True, rand_augment="torchvision:n2-m12")),
    (
        "+ MixUp 0.8 / CutMix 1.0, erasing 0.25",
        dict(
            pad=4,
            flip=True,
            rand_augment="torchvision:n2-m12",
            mixup_alpha=0.8,
            cutmix_alpha=1.0,
            random_erasing=0.25,
        ),
    ),
    (
        "timm:m9-n2-mstd0.5-inc1 instead",
        dict(
            pad=4,
            flip=True,
            rand_augment="timm:m9-n2-mstd0.5-inc1",
            mixup_alpha=0.8,
            cutmix_alpha=1.0,
            random_erasing=0.25,
        ),
    ),
)

IMAGENET_STAGES = (
    ("decode + random-resized crop to 224, flip", dict(flip=True)),
    ("+ RandAugment timm:m7-n2-mstd0.5-inc1", dict(flip=True, rand_augment="timm:m7-n2-mstd0.5-inc1")),
    (
        "+ MixUp 0.2 / CutMix 1.0",
        dict(flip=True, rand_augment="timm:m7-n2-mstd0.5-inc1", mixup_alpha=0.2, cutmix_alpha=1.0),
    ),
)


def _load(path, count):
    if Path(path).is_file():
        from keras_structinit import datasets

        (x, y), _ = datasets.load_cifar10(path, validation_split=0.0, seed=0)
        pick = np.sort(np.random.default_rng(0).permutation(len(x))[:count])  # the files are in class order
        return x[pick], y[pick], f"CIFAR-10 training images ({len(pick)}, a seeded random subset)"
    rng = np.random.default_rng(0)
    return (
        rng.integers(0, 256, (count, 32, 32, 3), dtype=np.uint8),
        rng.integers(0, 10, count),
        f"{count} random uint8 images (no CIFAR-10 zip {Path(path).name!r} found)",
    )


def _rate(batches, take, repeats, batch):
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        take(batches)
        rates.append(batches * batch / (time.perf_counter() - start))
    return [float(np.mean(rates)), float(np.std(rates, ddof=1)) if len(rates) > 1 else 0.0]


def _row(name, stream, make_tf, batches, repeats, batch, warm):
    """One stage's rates: the native ``stream`` called here, and the ``tf.data`` dataset that
    ``make_tf(tf)`` builds (``None`` without TensorFlow), each after ``warm`` batches."""
    import keras

    position = iter(range(10**9))

    def native_batches(n):
        for _ in range(n):
            out = stream[next(position)]
        keras.ops.convert_to_numpy(out[0][:1])  # waits for the device

    native_batches(warm)
    row = {"stage": name, "native": _rate(batches, native_batches, repeats, batch), "tf": None}
    try:
        import tensorflow as tf
    except ImportError:
        return row
    iterator = iter(make_tf(tf).with_options(_one_thread(tf)))

    def tf_batches(n):
        for _ in range(n):
            next(iterator)

    tf_batches(warm)
    row["tf"] = _rate(batches, tf_batches, repeats, batch)
    return row


def measure(x, y, batches, repeats, batch=512):
    from keras_structinit.recipes import augment, native

    labels = np.eye(10, dtype=np.float32)[y]
    mean, std = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)
    rows = []
    for name, options in STAGES:
        stream = native.ArrayStream(x, labels, batch, mean, std, augment.Augmentation(**options), seed=0)

        def make_tf(tf, options=options):
            from keras_structinit.recipes.data import cifar_dataset

            settings = {"pad": 0, "flip": False, **options}
            return cifar_dataset(x, labels, batch, mean, std, True, seed=0, **settings)

        rows.append(_row(name, stream, make_tf, batches, repeats, batch, warm=2))
        print(rows[-1], flush=True)
    return rows


def _jpeg_folder(x, count, root):
    """``count`` JPEGs of 500 x 375 (quality 90) in ``root/class_<i % 4>/``: the images ``x`` upsampled
    with noise, so that decoding costs what a photo of that size does."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(count):
        image = np.asarray(Image.fromarray(x[i % len(x)]).resize((500, 375), Image.Resampling.BILINEAR))
        image = np.clip(image + rng.normal(0, 8, image.shape), 0, 255).astype(np.uint8)
        folder = Path(root) / f"class_{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(folder / f"{i}.jpg", quality=90)
    return str(root)


def measure_imagenet(folder, batches, repeats, batch=64):
    """The ImageNet recipe's stages: the native :class:`ImageStream` with one worker (called in this
    thread) against ``imagenet_dataset`` on one thread."""
    from keras_structinit.datasets import list_image_folder
    from keras_structinit.recipes import augment, native

    paths, labels, _ = list_image_folder(folder)
    one_hot = np.eye(4, dtype=np.float32)[labels]
    rows = []
    for name, options in IMAGENET_STAGES:
        stream = native.ImageStream(
            paths,
            one_hot,
            batch,
            224,
            augment.IMAGENET_MEAN,
            augment.IMAGENET_STD,
            augment.Augmentation(**options),
            seed=0,
            workers=1,
        )

        def make_tf(tf, options=options):
            from keras_structinit.recipes.imagenet_data import imagenet_dataset

            settings = {"rand_augment": None, "mixup_alpha": 0.0, "cutmix_alpha": 0.0, **options}
            settings.pop("flip")
            return imagenet_dataset(folder, batch, True, **settings)[0].repeat()

        rows.append(_row(name, stream, make_tf, batches, repeats, batch, warm=1))
        print(rows[-1], flush=True)
    return rows


def train_both(x, y, seeds, epochs, model_name, train_size):
    """Final held-out accuracy and wall time of ``fit_cifar`` with each stream, one run per seed."""
    import keras

    from keras_structinit import datasets
    from keras_structinit.models import build_model
    from keras_structinit.recipes import fit_cifar

    runs = []
    for seed in seeds:
        (xt, yt), (xv, yv) = datasets.load_cifar(
            (x, y), validation_split=0.1, seed=seed, train_size=train_size
        )
        for pipeline in ("native", "tf"):
            keras.utils.set_random_seed(seed)
            model = build_model(model_name)
            start = time.perf_counter()
            history = fit_cifar(
                model,
                (xt, yt),
                epochs,
                validation_data=(xv, yv),
                seed=seed,
                pipeline=pipeline,
                num_classes=10,
                verbose=0,
            )
            runs.append(
                {
                    "seed": seed,
                    "pipeline": pipeline,
                    "seconds": time.perf_counter() - start,
                    "val_accuracy": [float(v) for v in history.history["val_accuracy"]],
                    "train_size": len(xt),
                    "val_size": len(xv),
                }
            )
            print(
                {k: v for k, v in runs[-1].items() if k != "val_accuracy"},
                f"final val acc {runs[-1]['val_accuracy'][-1]:.4f}",
                flush=True,
            )
    return runs


def _of(record):
    return f" of {data_label(record['data_file'])}" if record.get("data_file") else ""


def render_training(record):
    streams = ("native", "tf")
    finals = {p: [r["val_accuracy"][-1] for r in record["runs"] if r["pipeline"] == p] for p in streams}
    seconds = {p: [r["seconds"] for r in record["runs"] if r["pipeline"] == p] for p in streams}
    first = record["runs"][0]
    lines = [
        "# The two input streams in training: held-out accuracy (CIFAR recipe)",
        "",
        record["facts"],
        "",
        f"`fit_cifar` defaults (AdamW, triangular schedule, `torchvision:n2-m12`, pad-4 crop, flip), "
        f"{record['model']}, {record['epochs']} epochs, {first['train_size']} CIFAR-10 training "
        f"images{_of(record)}, {first['val_size']} held out (a stratified split per seed), Keras backend "
        f"{record['backend']}, "
        f"seeds {record['seeds']}. Both streams take the same draws (`recipes.augment`); they differ in "
        "where the pixel ops run and in float rounding.",
        "",
        "| Stream | Final val. accuracy, mean ± std | per seed | Wall time per run, s |",
        "|---|---:|---|---:|",
    ]
    for p in ("native", "tf"):
        values = finals[p]
        lines.append(
            f"| {p} | {np.mean(values):.4f} ± {np.std(values, ddof=1):.4f} | "
            f"{', '.join(f'{v:.4f}' for v in values)} | {np.mean(seconds[p]):.0f} |"
        )
    gaps = [a - b for a, b in zip(finals["native"], finals["tf"], strict=True)]
    spread = max(np.std(finals["native"], ddof=1), np.std(finals["tf"], ddof=1))
    lines += [
        "",
        f"Native minus tf.data per seed: {', '.join(f'{g:+.4f}' for g in gaps)}; mean "
        f"{np.mean(gaps):+.4f}, against a seed-to-seed std of {spread:.4f}.",
        "",
    ]
    return "\n".join(lines)


def _same_batch(batch):
    """A ``PyDataset`` that gives ``batch`` again and again: ``fit`` without an input stream."""
    import keras

    class SameBatch(keras.utils.PyDataset):
        num_batches = None

        def __getitem__(self, index):
            return batch

    return SameBatch()


def fit_share(x, y, model_name, batch, steps):
    """Seconds per ``fit`` step of ``model_name`` fed by the native CIFAR stream (pad-and-crop, flip,
    ``torchvision:n2-m12``) and by one constant batch; the input's share is the difference."""
    import keras

    from keras_structinit.models import build_model
    from keras_structinit.recipes import augment, native

    labels = np.eye(10, dtype=np.float32)[y]
    augmentation = augment.Augmentation(pad=4, flip=True, rand_augment="torchvision:n2-m12")
    stream = native.ArrayStream(
        x, labels, batch, (0.49, 0.48, 0.45), (0.25, 0.24, 0.26), augmentation, seed=0
    )
    keras.utils.set_random_seed(0)
    model = build_model(model_name)
    model.compile(
        keras.optimizers.AdamW(1e-3, weight_decay=0.01),
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )
    seconds = {}
    for name, data in (
        ("constant batch", _same_batch(stream[0])),
        ("native stream", stream),
        ("constant batch again", _same_batch(stream[1])),
    ):
        model.fit(data, epochs=1, steps_per_epoch=3, verbose=0)  # compiles, fills the queue
        start = time.perf_counter()
        model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
        seconds[name] = (time.perf_counter() - start) / steps
        print(f"{name}: {seconds[name]:.4f} s per step", flush=True)
    return seconds


def render_share(record):
    s, share = record["seconds_per_step"], _share(record)
    return "\n".join(
        [
            f"# The input's share of a {record['model']} training step (batch {record['batch']})",
            "",
            record["facts"],
            "",
            f"Keras backend {record['backend']}; `fit` for {record['steps']} steps after 3 warm-up steps, "
            "fed by the native CIFAR stream (pad-and-crop, flip, `torchvision:n2-m12`) or by one constant "
            "batch (before and after; the faster is used).",
            "",
            "| Feed | s per step |",
            "|---|---:|",
            *[f"| {name} | {value:.4f} |" for name, value in s.items()],
            "",
            f"Input's share of a step: {100 * share:.1f} %.",
            "",
        ]
    )


def _share(record):
    s = record["seconds_per_step"]
    return 1 - min(s["constant batch"], s["constant batch again"]) / s["native stream"]


def _is_training(data):
    return any("runs" in record for record in data.get("records", []))


def render_markdown(data):
    """The suite report's section of a results file of this script (``input_share.json``,
    ``input_streams.json`` or ``input_streams_training.json``)."""
    if "seconds_per_step" in data:
        return render_share(data)
    if _is_training(data):
        return "\n\n".join(render_training(r) for r in data["records"])
    return render(data["records"])


def _finals(record, stream):
    return [r["val_accuracy"][-1] for r in record["runs"] if r["pipeline"] == stream]


def headline(name, data):
    """The suite report's line: the input's share of a step (``input_share``), the full CIFAR
    recipe's native / tf.data ratio per backend (``input_streams``), or the native stream's
    held-out accuracy minus tf.data's per seed (``input_streams_training``); no verdict (no paper
    claim)."""
    if "seconds_per_step" in data:
        s = data["seconds_per_step"]
        return (
            f"{data['model']} at batch {data['batch']} ({data['backend']}): {s['native stream']:.4f} s a "
            f"step fed by the native stream, the input's share {100 * _share(data):.1f} %"
        ), None
    if _is_training(data):
        parts = []
        for record in data["records"]:
            gaps = [a - b for a, b in zip(_finals(record, "native"), _finals(record, "tf"), strict=True)]
            parts.append(
                f"{record['backend']}: native minus tf.data final held-out accuracy per seed "
                + ", ".join(f"{g:+.4f}" for g in gaps)
            )
        return "; ".join(parts), None
    parts = []
    for record in data["records"]:
        full = next((r for r in record.get("rows", []) if r["stage"] == STAGES[3][0]), None)
        if full and full["tf"]:
            parts.append(f"{record['backend']} {full['native'][0] / full['tf'][0]:.2f}x")
    return ("full CIFAR recipe, native / tf.data images/s on one core: " + ", ".join(parts)), None


def _one_thread(tf):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    return options


def _table(rows):
    lines = [
        "| Stages on | native, images/s | tf.data, images/s | native / tf.data |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        n, t = row["native"], row["tf"]
        ratio = f"{n[0] / t[0]:.2f}" if t else "n/a"
        tf_text = f"{t[0]:.0f} ± {t[1]:.0f}" if t else "no TensorFlow"
        lines.append(f"| {row['stage']} | {n[0]:.0f} ± {n[1]:.0f} | {tf_text} | {ratio} |")
    return lines


def render(records):
    lines = ["# Native input stream vs tf.data: images/s per CPU core", ""]
    for record in records:
        lines += [
            f"## Keras backend {record['backend']}",
            "",
            record["facts"],
            "",
            f"Mean ± std of {record['repeats']} timings of {record['batches']} batches after warm-up; "
            f"one core (`taskset -c {','.join(map(str, record.get('cpu_affinity', [0])))}`; tf.data: a "
            "private pool of 1 thread; the native ImageNet stream: 1 worker).",
            "",
        ]
        if record.get("rows"):
            lines += [
                f"### CIFAR recipe, batch 512 ({record['data']}{_of(record)})",
                "",
                *_table(record["rows"]),
                "",
            ]
        if record.get("imagenet_rows"):
            lines += [
                f"### ImageNet recipe, batch 64 ({record['imagenet_data']})",
                "",
                *_table(record["imagenet_rows"]),
                "",
            ]
    return "\n".join(lines)


def _merge(path, key, record):
    """``path``'s records with ``record`` in place of the one whose ``key`` matches (fields kept
    that ``record`` does not set)."""
    records = json.loads(path.read_text())["records"] if path.exists() else []
    old = next((r for r in records if r[key] == record[key]), {})
    return [r for r in records if r[key] != record[key]] + [old | record]


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(SHARED_CIFAR10))
    parser.add_argument("--images", type=int, default=10_240)
    parser.add_argument("--recipes", nargs="+", choices=("cifar", "imagenet"), default=("cifar", "imagenet"))
    parser.add_argument("--imagenet-images", type=int, default=192, help="JPEGs of 500 x 375 to decode")
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--training",
        action="store_true",
        help="instead: train with each stream (--seeds, --epochs, --model, --train-size)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=(0, 1, 2))
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--model", default="convmixer-64/4")
    parser.add_argument("--train-size", type=int, default=5000)
    parser.add_argument(
        "--fit-share",
        action="store_true",
        help="instead: seconds per fit step with the native stream vs one constant batch "
        "(--model, --batch, --steps)",
    )
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.all_backends and (args.training or args.fit_share):
        parser.error(
            "--all-backends times the streams once per backend; it does not combine with "
            "--training or --fit-share (pass --backend)"
        )
    return args


def _each_backend_on_one_core(argv):
    """Runs this script's timings once per installed backend, each in a subprocess pinned to the
    lowest core of this process's affinity with one thread per library."""
    rest = [a for a in argv if a != "--all-backends"]
    launch, root = script_command(__file__)
    core = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    threads = dict(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for backend in installed_backends():
        print(f"[{backend}] timing the streams on core {core}", flush=True)
        subprocess.run(
            [*launch, "--backend", backend, *rest],
            cwd=root,
            check=True,
            env=dict(os.environ, **threads),
            preexec_fn=None if core is None else (lambda: os.sched_setaffinity(0, {core})),
        )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.all_backends:
        _each_backend_on_one_core(argv)
        return
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    import tempfile

    import keras

    from keras_structinit.utils.io_utils import write_text
    from keras_structinit.utils.reporting import machine_info, versions

    x, y, described = _load(args.data, args.images)
    facts = run_facts(machine_info(), versions())
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.fit_share:
        record = {
            "backend": keras.backend.backend(),
            "code": code_provenance(),
            "facts": facts,
            "data": described,
            "data_file": data_provenance(args.data),
            "model": args.model,
            "batch": args.batch,
            "steps": args.steps,
            "measured": when,
            "seconds_per_step": fit_share(x, y, args.model, args.batch, args.steps),
        }
        write_text(args.out / f"{SHARE}.json", json.dumps(record, indent=1) + "\n")
        write_text(args.out / f"{SHARE}.md", render_share(record))
        print(render_share(record))
        return
    if args.training:
        path = args.out / f"{TRAINING}.json"
        record = {
            "backend": keras.backend.backend(),
            "code": code_provenance(),
            "facts": facts,
            "data": described,
            "data_file": data_provenance(args.data),
            "model": args.model,
            "epochs": args.epochs,
            "seeds": list(args.seeds),
            "measured": when,
            "runs": train_both(x, y, args.seeds, args.epochs, args.model, args.train_size),
        }
        write_text(path, json.dumps({"records": _merge(path, "backend", record)}, indent=1) + "\n")
        write_text(
            args.out / f"{TRAINING}.md",
            "\n\n".join(render_training(r) for r in json.loads(path.read_text())["records"]) + "\n",
        )
        print(f"Wrote {path}")
        return
    record = {
        "backend": keras.backend.backend(),
        "code": code_provenance(),
        "facts": facts,
        "batches": args.batches,
        "repeats": args.repeats,
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "measured": when,
    }
    if "cifar" in args.recipes:
        record |= {
            "data": described,
            "data_file": data_provenance(args.data),
            "rows": measure(x, y, args.batches, args.repeats),
        }
    if "imagenet" in args.recipes:
        with tempfile.TemporaryDirectory() as root:
            folder = _jpeg_folder(x, args.imagenet_images, root)
            record |= {
                "imagenet_data": f"{args.imagenet_images} JPEGs of 500 x 375 made from {described}",
                "imagenet_rows": measure_imagenet(folder, max(args.batches // 2, 1), args.repeats),
            }
    path = args.out / f"{NAME}.json"
    records = _merge(path, "backend", record)
    write_text(path, json.dumps({"records": records}, indent=1) + "\n")
    write_text(args.out / f"{NAME}.md", render(records) + "\n")
    print(f"Wrote {path} and {args.out / (NAME + '.md')}")


if __name__ == "__main__":
    main()


SUITE = {
    "cpu": (
        # A timing entry: run alone (no run_key); each backend in its own process on one core.
        Benchmark(
            name=NAME,
            script="input_streams.py",
            args=("--all-backends",),
            title="Images/s on one CPU core of the native input streams against tf.data at the same "
            "augmentation, CIFAR and ImageNet recipes, stage by stage, every backend",
            paper="no claim: the papers fed their models from PyTorch DataLoader workers",
            minutes=10,  # 9.6 min on 2026-11-29
        ),
        Benchmark(
            name=TRAINING,
            script="input_streams.py",
            args=("--training", "--backend", "jax", "--epochs", "8"),
            title="fit_cifar with the native stream and with tf.data: final held-out accuracy, "
            "ConvMixer-64/4, 8 epochs on 5000 CIFAR-10 images, 3 seeds (JAX)",
            paper="no claim: both streams take the same augmentation draws, so the runs should agree "
            "up to float rounding",
            minutes=22,  # 21.4 min on 2026-11-29, with another entry training beside it
        ),
    ),
    "gpu-quick": (
        Benchmark(
            name=SHARE,
            script="input_streams.py",
            args=("--fit-share", "--model", "convmixer-256/8", "--batch", "512", "--steps", "30"),
            title="The native input stream's share of a ConvMixer-256/8 training step (batch 512) on the GPU",
            paper="no claim: the covariance paper's runs fed ConvMixer from PyTorch DataLoader workers",
            # Estimate: 3 x 33 steps at ~0.2 s (benchmarks/covariance_accuracy.py's estimate), one
            # compilation, and reading 10,240 images of the zip.
            minutes=1,
            estimated=True,
            smoke_args=(
                "--fit-share",
                "--model",
                "convmixer-16/2",
                "--batch",
                "16",
                "--steps",
                "2",
                "--images",
                "256",
            ),
        ),
    ),
}
