"""``structinit demo``: frozen-filter ConvMixer, default init vs ConvCovariance.

Trains the same small ConvMixer twice with its spatial filters frozen, once
with PyTorch's default uniform initialization (the paper's baseline) and once
with :class:`~keras_structinit.initializers.ConvCovariance`, then prints a
comparison table and writes plots and a results JSON to an output directory.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import keras
import numpy as np

import keras_structinit as ks
from keras_structinit import covariance, datasets, validation
from keras_structinit.cli.arguments import INPUT_ERRORS, OVERWRITE_HINT, check_exists, usage_error
from keras_structinit.initializers import ConvCovariance
from keras_structinit.io_utils import prepare_output_dir, write_json, write_text
from keras_structinit.recipes.progress import progress_callbacks
from keras_structinit.recipes.training import channel_normalizer, compile_classifier
from keras_structinit.reporting import format_table, machine_info, versions

#: The files a demo run writes to its ``out`` folder.
OUTPUT_FILES = ("results.json", "results.md", "covariance.png", "filters.png", "learning_curves.png")
DEFAULTS = {
    "epochs": 4,
    "train_size": 10000,
    "batch_size": 128,
    "dim": 64,
    "depth": 4,
    "kernel_size": 7,
    "patch_size": 2,
    "learning_rate": 0.01,
    "weight_decay": 0.01,
    "seed": 0,
    "preset": "cifar-p2",
}
TABLE = (
    ("init (frozen filters)", "init"),
    ("final val acc", "final_val_accuracy", ".4f"),
    ("best val acc", "best_val_accuracy", ".4f"),
    ("final train loss", "final_train_loss", ".4f"),
    ("train time (s)", "train_seconds", ".1f"),
)


def run(args):
    """Runs ``structinit demo`` with parsed ``args``; returns the exit status.

    A missing, empty or corrupt ``--data``, more ``--train-size`` than the
    data holds, or an ``--out`` that holds an earlier run's results without
    ``--overwrite``, prints one line and returns 2 before any training.
    """
    try:
        check_exists(args.data, "--data")
        prepare_output_dir(args.out, OUTPUT_FILES, "--out", overwrite=args.overwrite, inputs=[args.data],
                           hint=OVERWRITE_HINT, check_only=True)
        data = prepare_data(args.data, args.train_size, args.seed, name="--data")
    except INPUT_ERRORS as err:
        return usage_error("demo", err)
    run_demo(data=data, epochs=args.epochs, out=args.out, seed=args.seed, train_size=args.train_size,
             overwrite=args.overwrite)
    return 0


class DemoData(NamedTuple):
    """The demo's arrays and a description of where they came from."""

    x: np.ndarray
    y: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    description: str


def prepare_data(data=None, train_size=None, seed=None, name="data"):
    """:func:`keras_structinit.datasets.load_demo_data` with the demo's defaults; a :class:`DemoData`."""
    train_size = DEFAULTS["train_size"] if train_size is None else train_size
    seed = DEFAULTS["seed"] if seed is None else seed
    return DemoData(*datasets.load_demo_data(data, train_size, seed, name=name))


def train_one(name, depthwise_initializer, data, cfg, verbose, callbacks=()):
    """Trains one frozen-filter ConvMixer; ``(model, history dict, seconds, initial kernels)``."""
    x, y, x_val, y_val, num_classes = data
    keras.utils.set_random_seed(cfg["seed"])
    model = ks.models.convmixer(
        cfg["dim"],
        cfg["depth"],
        kernel_size=cfg["kernel_size"],
        patch_size=cfg["patch_size"],
        num_classes=num_classes,
        input_shape=x.shape[1:],
        depthwise_initializer=depthwise_initializer,
    )
    ks.freeze_spatial(model)
    initial_kernels = {
        i: keras.ops.convert_to_numpy(model.get_layer(f"block_{i}_depthwise_conv").kernel)
        for i in (1, cfg["depth"])
    }
    steps = cfg["epochs"] * int(np.ceil(len(x) / cfg["batch_size"]))
    compile_classifier(model, steps, cfg["learning_rate"], cfg["weight_decay"])
    print(f"\n--- {name} ---", flush=True)
    start = time.perf_counter()
    history = model.fit(
        x, y, batch_size=cfg["batch_size"], epochs=cfg["epochs"],
        validation_data=(x_val, y_val), verbose=verbose, callbacks=list(callbacks),
    )
    seconds = time.perf_counter() - start
    return model, history.history, seconds, initial_kernels


def run_demo(data=None, epochs=None, out="structinit_demo", seed=None, train_size=None, verbose=None,
             overwrite=False):
    """Runs the demo; returns the results dictionary (also written to ``out``).

    ``data``: a path or ``None``, read with
    :func:`keras_structinit.datasets.load_demo_data`, or a :class:`DemoData`
    from :func:`prepare_data`. ``verbose`` is passed to ``fit``; by default
    Keras' progress bar on a terminal, and otherwise a plain line per epoch
    with time per step and ETA (:class:`~keras_structinit.recipes.progress.ProgressLog`).
    ``out`` may not hold an earlier run's files (:data:`OUTPUT_FILES`) unless
    ``overwrite``, which removes them before the new ones are written.
    """
    inputs = [] if isinstance(data, DemoData) else [data]
    prepare_output_dir(out, OUTPUT_FILES, "out", overwrite=overwrite, inputs=inputs, check_only=True)
    if verbose is None:
        verbose, callbacks = progress_callbacks()
    else:
        callbacks = []
    cfg = dict(DEFAULTS)
    given = {"epochs": epochs, "seed": seed, "train_size": train_size}
    cfg.update({k: v for k, v in given.items() if v is not None})
    validation.positive_int(cfg["epochs"], "epochs")
    if not isinstance(data, DemoData):
        data = prepare_data(data, cfg["train_size"], cfg["seed"])
    x, y, x_val, y_val, description = data
    print(f"Data: {description}: {len(x)} training / {len(x_val)} validation images.")
    print(
        f"Model: ConvMixer-{cfg['dim']}/{cfg['depth']}, k={cfg['kernel_size']}, "
        f"patch {cfg['patch_size']}, frozen spatial filters; backend {keras.backend.backend()}."
    )
    normalize = channel_normalizer(x)
    num_classes = int(max(y.max(), y_val.max() if len(y_val) else 0)) + 1
    prepared = (normalize(x), y.astype("int32"), normalize(x_val), y_val.astype("int32"), num_classes)
    runs = {
        "default (PyTorch uniform)": None,
        f"ConvCovariance ({cfg['preset']})": ConvCovariance(preset=cfg["preset"], seed=cfg["seed"]),
    }
    results, histories, first_kernels = [], {}, {}
    for name, init in runs.items():
        _, history, seconds, kernel = train_one(name, init, prepared, cfg, verbose, callbacks)
        histories[name] = history
        first_kernels[name] = kernel
        results.append(
            {
                "init": name,
                "final_val_accuracy": float(history["val_accuracy"][-1]),
                "best_val_accuracy": float(max(history["val_accuracy"])),
                "final_train_loss": float(history["loss"][-1]),
                "train_seconds": round(seconds, 1),
            }
        )
    table = format_table(results, TABLE)
    data_line = f"Data: {description}; {len(x)} training / {len(x_val)} validation images."
    print("\n" + table)
    prepare_output_dir(out, OUTPUT_FILES, "out", overwrite=overwrite, inputs=inputs)
    summary = {
        "config": cfg,
        "data": description,
        "backend": keras.backend.backend(),
        "versions": versions(),
        "machine": machine_info(),
        "results": results,
        "histories": histories,
    }
    write_json(os.path.join(out, "results.json"), summary)
    write_text(os.path.join(out, "results.md"), f"{table}\n\n{data_line}\n")
    summary["plots"] = _write_plots(out, cfg, histories, first_kernels, data_line)
    written = ["results.json", "results.md", *(os.path.basename(p) for p in summary["plots"])]
    print(f"\nWrote {', '.join(os.path.join(out, name) for name in written)}")
    return summary


def _write_plots(out, cfg, histories, first_kernels, data_line):
    try:
        from keras_structinit import viz

        k = cfg["kernel_size"]
        schedule = covariance.PRESETS[cfg["preset"]]
        depths = (0.0, 0.5, 1.0)
        sigmas = [covariance.variance_schedule(d, *schedule) for d in depths]
        return [
            viz.plot_covariances(
                [covariance.conv_covariance(k, s) for s in sigmas], k,
                [f"d={d:g}, sigma={s:.3f}" for d, s in zip(depths, sigmas, strict=True)],
                os.path.join(out, "covariance.png"),
            ),
            viz.plot_filters(
                [kernel for kernels in first_kernels.values() for kernel in kernels.values()],
                [f"{name}: block {i} initial filters"
                 for name, kernels in first_kernels.items() for i in kernels],
                os.path.join(out, "filters.png"),
            ),
            viz.plot_learning_curves(histories, os.path.join(out, "learning_curves.png"), title=data_line),
        ]
    except ImportError as e:
        print(f"Skipping plots: {e}")
        return []
