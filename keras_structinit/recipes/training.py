"""Pieces shared by the package's ``model.fit`` recipes and examples."""

from __future__ import annotations

import keras


def channel_normalizer(x):
    """``f(images) = (images / 255 - mean) / std`` with per-channel stats of uint8 ``x``."""
    pixels = x.reshape(-1, x.shape[-1])
    mean = pixels.mean(axis=0) / 255.0
    std = pixels.std(axis=0) / 255.0

    def normalize(images):
        return ((images.astype("float32") / 255.0 - mean) / std).astype("float32")

    return normalize


def default_jit_compile():
    """``jit_compile`` for CPU training: XLA on JAX (its only path), not on TensorFlow,
    whose XLA CPU code for the rest of a ConvMixer is slower than its graph mode
    (benchmarks/results/depthwise_speed.md)."""
    return "auto" if keras.backend.backend() == "jax" else False


def compile_classifier(model, total_steps, learning_rate=0.01, weight_decay=0.01):
    """Compiles ``model`` (logits) with AdamW and a warmup + cosine schedule.

    The learning rate rises linearly from 0 to ``learning_rate`` over the first
    20% of ``total_steps``, then follows a cosine decay to 0; sparse categorical
    cross-entropy, accuracy metric.
    """
    warmup = total_steps // 5
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0,
        decay_steps=max(total_steps - warmup, 1),
        warmup_target=learning_rate,
        warmup_steps=warmup,
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(schedule, weight_decay=weight_decay),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        jit_compile=default_jit_compile(),
    )
    return model
