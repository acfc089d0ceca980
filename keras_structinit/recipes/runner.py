"""``structinit train``: one recipe run from a model name and an init spec.

Writes to ``out``: ``log.csv`` (``keras.callbacks.CSVLogger``, one row per
epoch), ``results.json`` (config, versions, per-epoch metrics, final
validation and ``eval_data`` accuracy), ``results.md`` (the printed table)
and ``learning_curves.png`` when matplotlib is installed.
"""

from __future__ import annotations

import os
import platform
import time

import keras
import numpy as np

from keras_structinit.io_utils import write_json, write_text

RECIPES = ("cifar10", "cifar100", "imagenet")
INIT_FORMS = ("default", "conv-cov[:PRESET]", "cov-transfer:PATH", "torch-uniform")


def parse_init(spec):
    """``(kind, argument)`` of an ``--init`` spec; ValueError naming ``init`` otherwise."""
    from keras_structinit.covariance import PRESETS

    if not isinstance(spec, str) or not spec:
        raise ValueError(f"`init` must be one of {INIT_FORMS}. Received: init={spec!r}")
    kind, _, arg = spec.partition(":")
    if kind in ("default", "torch-uniform") and not arg:
        return kind, None
    if kind == "conv-cov":
        preset = arg or "cifar-p2"
        if preset not in PRESETS:
            raise ValueError(
                f"Unknown ConvCovariance preset in init={spec!r}; presets: {sorted(PRESETS)}."
            )
        return kind, preset
    if kind == "cov-transfer":
        if not arg:
            raise ValueError(f"`init` cov-transfer needs a bank path: cov-transfer:PATH. Received: init={spec!r}")
        if not os.path.isfile(arg):
            raise ValueError(f"Covariance bank not found: init={spec!r} (expected an .npz saved by FilterCovariance.save).")
        return kind, arg
    raise ValueError(f"`init` must be one of {INIT_FORMS}. Received: init={spec!r}")


def apply_init(model, spec, seed):
    """Applies a parsed ``--init`` spec to the spatial depthwise convs of ``model``.

    "default": the builder's own initialization. "torch-uniform": PyTorch's
    default U[-1/sqrt(fan_in), 1/sqrt(fan_in)] on the depthwise kernels.
    "conv-cov[:PRESET]": :func:`apply_conv_covariance`. "cov-transfer:PATH":
    :func:`apply_covariance_transfer` from a saved bank.
    """
    import keras_structinit as ks
    from keras_structinit.initializers import TorchDefaultUniform
    from keras_structinit.layer_utils import spatial_depthwise_convs

    kind, arg = parse_init(spec) if isinstance(spec, str) else spec
    if kind == "conv-cov":
        return ks.apply_conv_covariance(model, preset=arg, seed=seed)
    if kind == "cov-transfer":
        return ks.apply_covariance_transfer(model, arg, seed=seed)
    if kind == "torch-uniform":
        names = []
        for i, (layer, kernel) in enumerate(spatial_depthwise_convs(model)):
            init = TorchDefaultUniform(depthwise=True, seed=None if seed is None else seed + i)
            kernel.assign(init(kernel.shape, dtype=kernel.dtype))
            names.append(layer.name)
        return names
    return []


def _versions():
    backend = keras.backend.backend()
    module = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}[backend]
    return dict(keras=keras.__version__, backend=backend,
                backend_version=__import__(module).__version__,
                numpy=np.__version__, python=platform.python_version())


def format_table(rows):
    lines = [
        "| model | init | filters | epochs | final val acc | best val acc | eval acc | train time (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        def fmt(v):
            return "—" if v is None else f"{v:.4f}"
        lines.append(
            f"| {r['model']} | {r['init']} | {'frozen' if r['frozen'] else 'trained'} | {r['epochs']} "
            f"| {fmt(r['final_val_accuracy'])} | {fmt(r['best_val_accuracy'])} "
            f"| {fmt(r['eval_accuracy'])} | {r['train_seconds']:.1f} |"
        )
    return "\n".join(lines)


def run_train(recipe, model, data, epochs, out, init="default", frozen=False, eval_data=None,
              seed=0, batch_size=None, learning_rate=None, weight_decay=None, train_size=None,
              validation_split=0.1, image_size=None, precision=None, distribution=None,
              rand_augment="recipe", label_smoothing=None, model_kwargs=None, verbose="auto"):
    """Trains ``model`` (a registry name) with a recipe; returns the results dict (also in ``out``)."""
    from keras_structinit.freezing import freeze_spatial
    from keras_structinit.models.registry import build_model, parse_model_name
    from keras_structinit.recipes import cifar, imagenet

    if recipe not in RECIPES:
        raise ValueError(f"`recipe` must be one of {RECIPES}. Received: recipe={recipe!r}")
    parse_model_name(model)
    init_spec = parse_init(init)
    model_kwargs = dict(model_kwargs or {})
    keras.utils.set_random_seed(seed)
    options = {k: v for k, v in dict(batch_size=batch_size, learning_rate=learning_rate,
                                     weight_decay=weight_decay, label_smoothing=label_smoothing).items()
               if v is not None}
    if rand_augment != "recipe":
        options["rand_augment"] = rand_augment

    if recipe in ("cifar10", "cifar100"):
        (x, y), (x_val, y_val) = cifar.load_cifar_data(data, recipe, validation_split, seed)
        if train_size is not None and train_size < len(x):
            keep = np.sort(np.random.default_rng(seed).permutation(len(x))[:train_size])
            x, y = x[keep], y[keep]
        num_classes = 100 if recipe == "cifar100" else 10
        input_shape = x.shape[1:]
        description = f"{len(x)} training / {len(x_val)} held-out validation images from {data or 'keras.datasets'}"
    else:
        input_shape = (image_size or 224,) * 2 + (3,)
        from keras_structinit.recipes.data import imagenet_source

        num_classes = imagenet_source(data, "train", 8, False, seed)[1]
        description = f"ImageFolder/TFDS {data}"

    def builder():
        m = build_model(model, num_classes, input_shape, **model_kwargs)
        apply_init(m, init_spec, seed)
        if frozen:
            freeze_spatial(m)
        return m

    os.makedirs(out, exist_ok=True)
    log_path = os.path.join(out, "log.csv")
    callbacks = [keras.callbacks.CSVLogger(log_path)]
    start = time.perf_counter()
    if recipe == "imagenet":
        history = imagenet.fit_imagenet(
            builder, data, epochs, image_size=input_shape[0], validation_data=None,
            eval_data=eval_data, precision=precision, distribution=distribution, seed=seed,
            callbacks=callbacks, verbose=verbose, **options)
    else:
        history = cifar.fit_cifar(
            builder, (x, y), epochs, validation_data=(x_val, y_val) if len(x_val) else None,
            eval_data=eval_data, precision=precision, distribution=distribution, seed=seed,
            callbacks=callbacks, verbose=verbose, num_classes=num_classes, **options)
    total = time.perf_counter() - start
    metrics = {k: [float(v) for v in vs] for k, vs in history.history.items()}
    val = metrics.get("val_accuracy")
    row = dict(
        model=model, init=init, frozen=bool(frozen), epochs=epochs,
        final_val_accuracy=val[-1] if val else None, best_val_accuracy=max(val) if val else None,
        eval_accuracy=history.eval_results["accuracy"] if history.eval_results else None,
        train_seconds=round(history.train_seconds, 1),
    )
    table = format_table([row])
    print("\n" + table, flush=True)
    results = dict(
        config=dict(recipe=recipe, model=model, init=init, frozen=bool(frozen), epochs=epochs,
                    data=None if data is None else str(data), eval_data=None if eval_data is None else str(eval_data),
                    seed=seed, train_size=train_size, validation_split=validation_split,
                    precision=precision, distribution=None if distribution is None else str(distribution),
                    model_kwargs=model_kwargs, **{k: v for k, v in options.items()}),
        data=description,
        versions=_versions(),
        model_params=int(history.model.count_params()),
        metrics=metrics,
        eval=history.eval_results,
        normalization=getattr(history, "normalization", None),
        summary=row,
        wall_seconds=round(total, 1),
    )
    write_json(os.path.join(out, "results.json"), results)
    write_text(os.path.join(out, "results.md"), table + "\n")
    try:
        from keras_structinit import viz

        viz.plot_learning_curves({f"{model} {init}": metrics}, os.path.join(out, "learning_curves.png"),
                                 metrics=("val_accuracy", "loss") if val else ("accuracy", "loss"))
    except ImportError as err:
        print(f"Skipping plots: {err}")
    print(f"Wrote {out}/results.json, results.md, log.csv", flush=True)
    return results
