"""``structinit demo``: frozen-filter ConvMixer, default init vs ConvCovariance.

Trains the same small ConvMixer twice with its spatial filters frozen, once
with PyTorch's default uniform initialization (the paper's baseline) and once
with :class:`~keras_structinit.initializers.ConvCovariance`, then prints a
comparison table and writes plots and a results JSON to an output directory.
"""

from __future__ import annotations

import os
import platform
import sys
import time

import keras
import numpy as np

from keras_structinit import covariance as cov_math
from keras_structinit import datasets
from keras_structinit.freezing import freeze_spatial
from keras_structinit.initializers import ConvCovariance
from keras_structinit.io_utils import write_json, write_text
from keras_structinit.models import convmixer
from keras_structinit.recipes.training import channel_normalizer, compile_classifier

DEFAULTS = dict(
    epochs=4,
    train_size=10000,
    batch_size=128,
    dim=64,
    depth=4,
    kernel_size=7,
    patch_size=2,
    learning_rate=0.01,
    weight_decay=0.01,
    seed=0,
    preset="cifar-p2",
)


def load_demo_data(data, train_size, seed):
    """``(x_train, y_train, x_val, y_val, description)`` for the demo.

    The training arrays are a random subset of ``train_size`` images (all
    when there are fewer) in random order.

    ``data`` is a path accepted by :func:`keras_structinit.datasets.load_cifar10`
    or ``None``: then the Keras cache is used if CIFAR-10 is there, else the
    package's procedural image set (no download).
    """
    if data is not None or datasets.cifar10_cache_available():
        (x, y), (x_val, y_val) = datasets.load_cifar10(data, validation_split=0.1, seed=seed)
        description = f"CIFAR-10 training split from {data or 'the Keras cache'} (10% held out)"
    else:
        x, y = datasets.procedural_images(train_size + train_size // 5, seed=seed)
        x, x_val, y, y_val = x[:train_size], x[train_size:], y[:train_size], y[train_size:]
        description = (
            "the embedded procedural image set (CIFAR-10 not found offline; "
            "pass --data PATH to use it)"
        )
    # Always a random order (the loaders keep class order), so any prefix is a random subset.
    keep = np.random.default_rng(seed).permutation(len(x))[:train_size]
    return x[keep], y[keep], x_val, y_val, description


def train_one(name, depthwise_initializer, data, cfg, verbose):
    x, y, x_val, y_val, num_classes = data
    keras.utils.set_random_seed(cfg["seed"])
    model = convmixer(
        cfg["dim"],
        cfg["depth"],
        kernel_size=cfg["kernel_size"],
        patch_size=cfg["patch_size"],
        num_classes=num_classes,
        input_shape=x.shape[1:],
        depthwise_initializer=depthwise_initializer,
    )
    freeze_spatial(model)
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
        validation_data=(x_val, y_val), verbose=verbose,
    )
    seconds = time.perf_counter() - start
    return model, history.history, seconds, initial_kernels


def run_demo(data=None, epochs=None, out="structinit_demo", seed=None, train_size=None, verbose=None):
    """Runs the demo; returns the results dictionary (also written to ``out``).

    ``verbose`` is passed to ``fit``; by default Keras' progress bar on a
    terminal and one line per epoch otherwise.
    """
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    cfg = dict(DEFAULTS)
    cfg.update({k: v for k, v in dict(epochs=epochs, seed=seed, train_size=train_size).items() if v is not None})
    for key in ("epochs", "train_size"):
        if not isinstance(cfg[key], int) or cfg[key] < 1:
            raise ValueError(f"`{key}` must be a positive int. Received: {cfg[key]!r}")
    x, y, x_val, y_val, description = load_demo_data(data, cfg["train_size"], cfg["seed"])
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
        _, history, seconds, kernel = train_one(name, init, prepared, cfg, verbose)
        histories[name] = history
        first_kernels[name] = kernel
        results.append(
            dict(
                init=name,
                final_val_accuracy=float(history["val_accuracy"][-1]),
                best_val_accuracy=float(max(history["val_accuracy"])),
                final_train_loss=float(history["loss"][-1]),
                train_seconds=round(seconds, 1),
            )
        )
    table = format_table(results)
    print("\n" + table)
    os.makedirs(out, exist_ok=True)
    summary = dict(
        config=cfg,
        data=description,
        backend=keras.backend.backend(),
        versions=dict(keras=keras.__version__, numpy=np.__version__, python=platform.python_version()),
        results=results,
        histories=histories,
    )
    write_json(os.path.join(out, "results.json"), summary)
    write_text(os.path.join(out, "results.md"), table + "\n")
    summary["plots"] = _write_plots(out, cfg, histories, first_kernels)
    print(f"\nWrote results and plots to {out}/")
    return summary


def format_table(results):
    lines = [
        "| init (frozen filters) | final val acc | best val acc | final train loss | train time (s) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['init']} | {r['final_val_accuracy']:.4f} | {r['best_val_accuracy']:.4f} "
            f"| {r['final_train_loss']:.4f} | {r['train_seconds']:.1f} |"
        )
    return "\n".join(lines)


def _write_plots(out, cfg, histories, first_kernels):
    try:
        from keras_structinit import viz
    except ImportError as e:  # pragma: no cover
        print(f"Skipping plots: {e}")
        return []
    try:
        k = cfg["kernel_size"]
        schedule = cov_math.PRESETS[cfg["preset"]]
        depths = (0.0, 0.5, 1.0)
        sigmas = [cov_math.variance_schedule(d, *schedule) for d in depths]
        return [
            viz.plot_covariances(
                [cov_math.conv_covariance(k, s) for s in sigmas], k,
                [f"d={d:g}, sigma={s:.3f}" for d, s in zip(depths, sigmas)],
                os.path.join(out, "covariance.png"),
            ),
            viz.plot_filters(
                [kernel for kernels in first_kernels.values() for kernel in kernels.values()],
                [f"{name}: block {i} initial filters" for name, kernels in first_kernels.items() for i in kernels],
                os.path.join(out, "filters.png"),
            ),
            viz.plot_learning_curves(histories, os.path.join(out, "learning_curves.png")),
        ]
    except ImportError as e:
        print(f"Skipping plots: {e}")
        return []
