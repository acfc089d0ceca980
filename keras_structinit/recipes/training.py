"""Pieces shared by the package's ``model.fit`` recipes and examples."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from keras_structinit.engine.heads import describe_head, loss_for_head, read_head
from keras_structinit.recipes import backup
from keras_structinit.recipes.config import RecipeConfig, exclude_from_weight_decay
from keras_structinit.recipes.data import input_normalization
from keras_structinit.recipes.devices import accelerator, device_setup, resolve_precision
from keras_structinit.recipes.optimizers import make_optimizer
from keras_structinit.recipes.progress import StopOnDivergence
from keras_structinit.recipes.schedules import warmup_cosine
from keras_structinit.utils import validation


def channel_normalizer(x, normalization="channel"):
    """``f(images) = (images / 255 - mean) / std`` with the :func:`input_normalization` of uint8 ``x``
    (NumPy; ``"channel"``: its per-channel statistics, ``"symmetric"``: [-1, 1])."""
    mean, std = (np.array(v) for v in input_normalization(x, normalization))

    def normalize(images):
        return ((images.astype("float32") / 255.0 - mean) / std).astype("float32")

    return normalize


def default_jit_compile():
    """``jit_compile`` for ``compile`` (``structinit train --compile auto``), as measured on a CPU
    (benchmarks/results/cpu/torch_reference.md, ConvMixer-128/6): XLA on JAX; off for TensorFlow on
    a CPU, whose graph mode beat its XLA CPU code; Keras' "auto" on torch, which is eager: Keras'
    compiled torch step was 1.6x slower than eager there, thawed. On accelerators Keras' "auto"."""
    if keras.backend.backend() == "tensorflow" and accelerator() == "cpu":
        return False
    return "auto"


def compile_classifier(model, total_steps, learning_rate=0.01, weight_decay=0.01):
    """Compiles ``model`` with AdamW and a warmup + cosine schedule.

    The learning rate rises linearly from 0 to ``learning_rate`` over the first
    20% of ``total_steps``, then follows a cosine decay to 0; sparse categorical
    cross-entropy on logits, or on probabilities for a softmax/sigmoid head
    (:func:`head_loss`), accuracy metric.
    """
    model.compile(
        optimizer=keras.optimizers.AdamW(
            warmup_cosine(learning_rate, total_steps, total_steps // 5), weight_decay=weight_decay
        ),
        loss=head_loss(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True))[0],
        metrics=["accuracy"],
        jit_compile=default_jit_compile(),
    )
    return model


def head_loss(model, loss):
    """``(loss, head)``: the recipe's logits ``loss`` fitted to ``model``'s head
    (:func:`keras_structinit.engine.heads.read_head`). A softmax or sigmoid head gives probabilities, which
    a loss on logits would read as logits (the cross-entropy of 3 classes could not fall below 0.551,
    issue 64): the loss takes them as probabilities instead (``from_logits=False``), and one line says
    so. The model itself is left as it is, so its saved file gives what it gave before."""
    head = read_head(model)
    fitted = loss_for_head(loss, head)
    if fitted is not loss:
        print(describe_head(head), flush=True)
    return fitted, head


def _model_in_setup(model):
    """``model`` itself, or built from a zero-argument builder (called inside the set-up)."""
    if isinstance(model, keras.Model):
        return model
    built = model()
    if not isinstance(built, keras.Model):
        raise TypeError(f"The `model` builder must return a keras.Model. Received: {type(built).__name__}")
    return built


def recipe_config(kind, config, epochs, options):
    """``(config, filled)``: the :class:`~keras_structinit.recipes.RecipeConfig` of a ``fit_*`` call
    (``kind``: ``"cifar"`` or ``"imagenet"``; ``epochs`` and ``options`` replace ``config``'s
    fields, :meth:`RecipeConfig.build`), checked there, and its :meth:`RecipeConfig.filled` form."""
    if epochs is not None:
        options["epochs"] = epochs
    config = RecipeConfig.build(kind, config, **options)
    return config, config.filled()


def check_model_for_run(model, precision, distribution):
    """Fails fast, before any input pipeline is built, on a ``model`` that cannot train under the
    (checked) ``precision`` and ``distribution``."""
    if not (isinstance(model, keras.Model) or callable(model)):
        raise TypeError(
            "`model` must be a keras.Model or a zero-argument function building one. "
            f"Received: {type(model).__name__}"
        )
    policy = resolve_precision(precision)
    if isinstance(model, keras.Model):
        if distribution is not None:
            raise ValueError(
                "With `distribution`, pass `model` as a builder (a function returning the "
                "model) so that its variables are created on the distributed devices."
            )
        if model.dtype_policy.name != policy:
            raise ValueError(
                f"`model` was built with dtype policy {model.dtype_policy.name!r} but "
                f"precision {policy!r} was asked for: build it inside "
                "`recipes.device_setup(precision=...)` or pass a builder (a function "
                "returning the model) as `model`."
            )


def check_whole_batches(batch_size, distribution, **sets):
    """A multi-process run drops every set's last partial global batch, so each set (``name=``
    its image count, ``None`` for no set) must hold one ``batch_size`` at least; checked before
    training (Keras' ``distribute_tf_dataset`` failed after the first epoch otherwise)."""
    if distribution != "multi_worker":
        return
    for name, count in sets.items():
        if count is not None and count < batch_size:
            raise ValueError(
                f"`{name}` holds {count} images, less than one global batch ({batch_size}) of a "
                "multi_worker run, which drops partial batches: use a larger set or a smaller "
                "batch_size"
            )


def check_callbacks(callbacks):
    """``TypeError`` unless ``callbacks`` is a list or tuple of ``keras.callbacks.Callback``."""
    if not isinstance(callbacks, (list, tuple)) or not all(
        isinstance(c, keras.callbacks.Callback) for c in callbacks
    ):
        raise TypeError(
            "`callbacks` must be a list or tuple of keras.callbacks.Callback. "
            f"Received: callbacks={callbacks!r}"
        )


@dataclass(frozen=True)
class RecipeData:
    """What a recipe's data step gives the fit: the training stream, its batches per epoch, and the
    validation and evaluation streams (``None``: not given)."""

    train: Any
    steps: int
    validation: Any = None
    evaluation: Any = None


def fit_classifier(
    model, data, config, make_schedule, loss, callbacks=(), verbose="auto", wrap=None, backup_dir=None
):
    """Compiles ``model`` with the optimizer of ``config`` at ``make_schedule(total_steps)`` and fits
    it on ``data`` (a :class:`RecipeData`); the steps :func:`fit_cifar` and :func:`fit_imagenet`
    share after their data step.

    ``config`` is a filled :class:`~keras_structinit.recipes.RecipeConfig` (checked: nothing is
    checked again here); its ``optimizer`` (:func:`~keras_structinit.recipes.optimizers.make_optimizer`;
    the ImageNet recipe's is "adamw"), ``weight_decay``, ``no_weight_decay``, ``ema``, ``precision``,
    ``distribution`` and ``jit_compile`` apply. ``model`` is a built ``keras.Model`` or a builder;
    with ``distribution`` (or a ``precision`` the model was not built with) it must be a builder,
    called inside :func:`device_setup` (:func:`check_model_for_run`). Under ``mixed_float16``, Keras'
    ``compile`` wraps the optimizer in ``keras.optimizers.LossScaleOptimizer``.

    ``loss`` is on logits; for a model whose head gives probabilities (a softmax or sigmoid) it is
    rebuilt with ``from_logits=False`` (:func:`head_loss`), and ``history.head`` records which
    (:meth:`keras_structinit.engine.heads.Head.record`).

    ``wrap``: ``None`` or a function ``(model, loss) -> (trained, loss)`` returning what to compile
    and fit instead of ``model`` (e.g. a ``keras.distillation.Distiller`` that trains it; see
    :func:`~keras_structinit.recipes.fit_distill`).

    ``backup_dir``: a folder where :class:`~keras_structinit.recipes.backup.RunBackup` keeps the
    weights, the optimizer's state and the epoch after every epoch with a finite loss; with it a
    caller has checked :func:`resume_epoch`, and a backup there is resumed from. The folder stays
    when ``fit`` returns (remove it once the results are safe).

    A non-finite training loss stops ``fit`` at that batch (:class:`StopOnDivergence`);
    ``history.diverged`` is then ``{"epoch", "step", "loss"}`` (else ``None``).

    Returns the ``History``; with an evaluation stream, its accuracy and loss after training are
    in ``history.eval_results`` (``None`` otherwise) and ``history.train_seconds`` holds the wall
    time of ``fit`` (with a resumed run's earlier parts).
    """
    with device_setup(config.precision, config.distribution):
        model, loss, head = _model_step(model, loss, wrap)
        _compile_step(model, data, config, make_schedule, loss, backup_dir)
        history = _fit_step(model, data, config, callbacks, verbose, backup_dir)
        _record_step(history, model, data, config, head)
    return history


def _model_step(model, loss, wrap):
    """``(model, loss, head)``: the model (built by its builder, inside the set-up), the loss fitted
    to its head, both wrapped by ``wrap``."""
    model = _model_in_setup(model)
    loss, head = head_loss(model, loss)
    if wrap is not None:
        model, loss = wrap(model, loss)
    return model, loss, head


def _compile_step(model, data, config, make_schedule, loss, backup_dir):
    """The optimizer-and-schedule step: compiles ``model`` (built first when a backup will load)."""
    name = config.optimizer if config.is_cifar else "adamw"
    schedule = make_schedule(config.epochs * data.steps)
    optimizer = make_optimizer(name, schedule, config.weight_decay, config.ema)
    exclude_from_weight_decay(optimizer, model.trainable_variables, config.no_weight_decay)
    jit_compile = config.jit_compile
    model.compile(
        optimizer=optimizer,
        loss=loss,
        # One-hot or soft (mixed) labels: top-1 against their argmax.
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
        jit_compile=default_jit_compile() if jit_compile is None else jit_compile,
    )
    if backup_dir is not None and not model.built:  # a backup loads into a built model
        native = isinstance(data.train, keras.utils.PyDataset)
        first = data.train[0] if native else next(iter(data.train.take(1)))
        model(first[0])  # e.g. a Distiller, built by its first call


def _fit_step(model, data, config, callbacks, verbose, backup_dir):
    """The callbacks and fit steps: ``model.fit``'s ``History``, with ``train_seconds`` and
    ``diverged``."""
    start = time.perf_counter()
    divergence = StopOnDivergence()  # before the backup: a diverged epoch is not backed up
    backups = [] if backup_dir is None else [backup.RunBackup(backup_dir, data.steps, divergence)]
    history = model.fit(
        data.train,
        epochs=config.epochs,
        steps_per_epoch=data.steps,
        validation_data=data.validation,
        verbose=verbose,
        callbacks=[divergence, *callbacks, *backups],
        shuffle=False,  # the datasets shuffle themselves
    )
    # Every epoch's: a resumed run adds the seconds its backup recorded.
    history.train_seconds = time.perf_counter() - start + (backups[0].seconds_before if backups else 0.0)
    history.diverged = divergence.diverged
    return history


def _record_step(history, model, data, config, head):
    """The record step: the head, the EMA weights swapped in, and the evaluation's results."""
    history.head = head.record()
    if config.ema:
        model.optimizer.finalize_variable_values(model.trainable_variables)
    history.eval_results = None
    if data.evaluation is not None and history.diverged is None:
        values = model.evaluate(data.evaluation, verbose=0, return_dict=True)
        history.eval_results = {k: float(v) for k, v in values.items()}
        print(
            f"eval_data: accuracy {history.eval_results['accuracy']:.4f}, "
            f"loss {history.eval_results['loss']:.4f}",
            flush=True,
        )


def resume_epoch(backup_dir, resume, steps_per_epoch):
    """The epoch a run starts after: 0 for a new run, the newest whole backup's with ``resume``.

    A new run (``resume=False``) refuses a ``backup_dir`` that holds a backup (another run's, or
    this one's to go on with); ``resume=True`` needs a whole backup made at ``steps_per_epoch``
    (:func:`~keras_structinit.recipes.backup.latest`). Errors are one-line ``ValueError`` errors.
    """
    validation.boolean(resume, "resume")
    if backup_dir is None:
        if resume:
            raise ValueError("`resume=True` needs the `backup_dir` of the run to go on with")
        return 0
    if not resume:
        if backup.holds_backup(backup_dir):
            raise ValueError(
                f"`backup_dir` {os.fspath(backup_dir)!r} holds a run's backup: pass resume=True "
                "to go on with that run, or remove the folder for a new one"
            )
        return 0
    found = backup.latest(backup_dir)
    if found is None:
        raise ValueError(
            f"resume=True: `backup_dir` {os.fspath(backup_dir)!r} holds no backup (the run "
            "finished no epoch, or the folder was removed)"
        )
    backup.check_steps(found, steps_per_epoch)
    return found.epoch


def steps_of(dataset, name="data"):
    """Number of batches of a ``tf.data`` dataset; a clear error when unknown."""
    n = int(dataset.cardinality())
    if n < 1:
        raise ValueError(
            f"Cannot tell how many batches `{name}` has (cardinality {n}); pass `steps_per_epoch`."
        )
    return n
