"""Evaluating a trained classifier beyond clean accuracy: FGSM robust accuracy, on every backend.

:func:`fgsm_accuracy` measures what the LC-blocks paper reports in its
Fig. 4 (Gavrikov & Keuper: "Robust (FGSM, l_inf, eps = 1/255) validation
accuracy"): the accuracy on images moved one step of the fast gradient sign
method (Goodfellow et al., ICLR 2015) within an l_inf ball of radius ``eps``.

The radius is in *pixel units*: images in ``[0, 1]`` (``uint8`` images are
divided by 255), so the paper's ``eps = 1/255`` is one 8-bit grey level. The
step is taken and clipped in that space, before the normalization the model
was trained with (``history.normalization`` of the package's recipes:
``(pixels - mean) / std`` per channel), which is applied afterwards: a
model fed standardized inputs is attacked with the same ``eps`` as one that
normalizes inside.

Keras has no single gradient API, so the gradient of the loss with respect to
the input comes from the backend's own (:func:`input_gradient`):
``jax.grad`` of the model's ``stateless_call``, ``tf.GradientTape`` or
``torch.autograd.grad``. The model runs in inference mode (``training=False``:
BatchNorm's moving statistics, no dropout) and is only read.
"""

from __future__ import annotations

import keras
import numpy as np

from keras_structinit.engine.contract import check_model
from keras_structinit.utils import validation

__all__ = ["fgsm_accuracy", "fgsm_images", "input_gradient"]

#: The backends with gradients (the ``numpy`` and ``openvino`` backends have none).
GRADIENT_BACKENDS = ("jax", "tensorflow", "torch")


def _loss(labels, outputs, from_logits):
    """Summed cross-entropy (a sum, so that each image's gradient is its own loss's)."""
    losses = keras.losses.sparse_categorical_crossentropy(labels, outputs, from_logits=from_logits)
    return keras.ops.sum(losses)


def input_gradient(model, inputs, labels, *, from_logits=True):
    """The gradient of the summed cross-entropy of ``model(inputs)`` against integer ``labels``, with
    respect to ``inputs``, as a float32 NumPy array of their shape (inference mode).

    One function over the backends: ``jax.grad`` (of ``model.stateless_call``),
    ``tf.GradientTape`` or ``torch.autograd.grad`` (the model's variables
    keep no gradient).
    """
    backend = keras.backend.backend()
    if backend not in GRADIENT_BACKENDS:
        raise ValueError(
            f"Input gradients need one of the backends {GRADIENT_BACKENDS}; the Keras backend "
            f"is {backend!r} (set KERAS_BACKEND)."
        )
    inputs = np.asarray(inputs, np.float32)
    labels = np.asarray(labels, np.int32)
    if backend == "jax":
        return np.asarray(
            _jax_gradient(model, from_logits)(
                [v.value for v in model.trainable_variables],
                [v.value for v in model.non_trainable_variables],
                inputs,
                labels,
            ),
            np.float32,
        )
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.convert_to_tensor(inputs)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = _loss(tf.convert_to_tensor(labels), model(x, training=False), from_logits)
        return np.asarray(tape.gradient(loss, x), np.float32)
    import torch

    x = keras.ops.convert_to_tensor(inputs).detach().requires_grad_(True)
    loss = _loss(keras.ops.convert_to_tensor(labels), model(x, training=False), from_logits)
    (gradient,) = torch.autograd.grad(loss, [x])
    return gradient.detach().cpu().numpy().astype(np.float32)


def _jax_gradient(model, from_logits):
    """``jit(grad)`` of the loss over the model's ``stateless_call``, cached on the model per setting."""
    cache = model.__dict__.setdefault("_structinit_input_gradient", {})
    if from_logits not in cache:
        import jax

        def loss(x, trainable, non_trainable, labels):
            outputs, _ = model.stateless_call(trainable, non_trainable, x, training=False)
            return _loss(labels, outputs, from_logits)

        cache[from_logits] = jax.jit(
            lambda trainable, non_trainable, x, labels: jax.grad(loss)(x, trainable, non_trainable, labels)
        )
    return cache[from_logits]


def _normalization(normalization, channels):
    """``(mean, std)`` float32 arrays of ``channels`` values (zeros and ones for ``None``)."""
    if normalization is None:
        return np.zeros(channels, np.float32), np.ones(channels, np.float32)
    if isinstance(normalization, dict):
        if set(normalization) != {"mean", "std"}:
            raise ValueError(
                "`normalization` must be a dict with the keys 'mean' and 'std' (a recipe's "
                f"history.normalization). Received keys: {sorted(map(str, normalization))}"
            )
        normalization = (normalization["mean"], normalization["std"])
    if not isinstance(normalization, (tuple, list)) or len(normalization) != 2:
        raise TypeError(
            "`normalization` must be None, {'mean': ..., 'std': ...} or a (mean, std) pair, per "
            f"channel in [0, 1] units. Received: normalization={validation.shown(normalization)}"
        )
    try:
        mean, std = (
            np.broadcast_to(np.asarray(v, np.float64), (channels,)).astype(np.float32) for v in normalization
        )
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"`normalization`: mean and std must be numbers or {channels} per-channel values ({err})."
        ) from None
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)):
        raise ValueError(
            f"`normalization` must have finite means and stds > 0. Received: "
            f"mean={mean.tolist()}, std={std.tolist()}"
        )
    return mean, std


def _pixels(images):
    """Images as float32 in ``[0, 1]``: ``uint8`` divided by 255; floats checked to be in ``[0, 1]``."""
    images = np.asarray(images)
    if images.dtype == np.uint8:
        return images.astype(np.float32) / 255.0
    if not (np.issubdtype(images.dtype, np.floating) or np.issubdtype(images.dtype, np.integer)):
        raise TypeError(
            f"The images must be uint8 (0-255) or floats in [0, 1]. Received dtype {images.dtype}."
        )
    images = images.astype(np.float32)
    if images.size and not (np.all(np.isfinite(images)) and images.min() >= 0.0 and images.max() <= 1.0):
        raise ValueError(
            "Float images must lie in [0, 1] (epsilon is in pixel units): received values in "
            f"[{np.nanmin(images):.4g}, {np.nanmax(images):.4g}]"
            f"{' with NaN or inf' if not np.all(np.isfinite(images)) else ''}; pass uint8 images or x / 255."
        )
    return images


def _labels(labels, count):
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[0] == count and labels.shape[1] > 1:
        labels = labels.argmax(axis=-1)  # one-hot
    labels = labels.reshape(-1) if labels.ndim == 2 and labels.shape[1] == 1 else labels
    if (
        labels.shape != (count,)
        or not np.issubdtype(labels.dtype, np.integer)
        or (count and labels.min() < 0)
    ):
        raise ValueError(
            f"The labels must be {count} non-negative integer classes (or one-hot rows), one "
            f"per image. Received shape {labels.shape}, dtype {labels.dtype}."
        )
    return labels.astype(np.int32)


def _data(data):
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(
            f"`data` must be an (images, labels) pair of arrays. Received: data of type {type(data).__name__}"
        )
    images = _pixels(data[0])
    if images.ndim < 2 or len(images) == 0:
        raise ValueError(
            "`data` must hold at least one image (a batch axis first). Received images of "
            f"shape {images.shape}."
        )
    return images, _labels(data[1], len(images))


def fgsm_images(model, images, labels, epsilon=1 / 255, *, normalization=None, from_logits=True):
    """One FGSM step on a batch: ``clip(pixels + epsilon * sign(grad_pixels loss), 0, 1)``.

    ``images`` are ``uint8`` or floats in ``[0, 1]``; the result is float32 in
    ``[0, 1]`` (not rounded to 8 bits), before the normalization. The loss
    is the cross-entropy of ``model((pixels - mean) / std)`` against
    ``labels``. Arguments as in :func:`fgsm_accuracy`.
    """
    check_model(model, "model")
    epsilon = validation.non_negative_float(epsilon, "epsilon")
    validation.boolean(from_logits, "from_logits")
    pixels, labels = _data((images, labels))
    mean, std = _normalization(normalization, pixels.shape[-1])
    _check_outputs(model, (pixels[:1] - mean) / std, labels)
    # d loss / d pixels = (d loss / d inputs) / std: std > 0, so the sign is the inputs' gradient's.
    gradient = input_gradient(model, (pixels - mean) / std, labels, from_logits=from_logits)
    return np.clip(pixels + np.float32(epsilon) * np.sign(gradient), 0.0, 1.0)


def fgsm_accuracy(model, data, epsilon=1 / 255, *, normalization=None, batch_size=256, from_logits=True):
    """Top-1 accuracy of ``model`` on ``data`` after one l_inf FGSM step of radius ``epsilon`` per image.

    The LC-blocks paper's robust accuracy (Fig. 4: FGSM, ``eps = 1/255``).
    Each image moves to ``clip(x + epsilon * sign(grad_x L), 0, 1)``, ``x`` its
    pixels in ``[0, 1]`` and ``L`` the cross-entropy of the model's output
    for its label; the model then sees ``(x_adv - mean) / std``.

    Args:
        model: a built classifier (any Keras model whose output is one row of
            class scores per image); only read, run with ``training=False``.
        data: ``(images, labels)``: ``uint8`` images (0-255) or float images in
            ``[0, 1]``, channels last; integer labels or one-hot rows.
        epsilon: the l_inf radius in pixel units (``1/255``: one 8-bit level);
            ``0`` gives the clean accuracy.
        normalization: what the model expects of its input: ``None`` (the
            ``[0, 1]`` pixels themselves), a recipe's ``history.normalization``
            (``{"mean": [...], "std": [...]}``) or a ``(mean, std)`` pair, per
            channel in ``[0, 1]`` units.
        batch_size: images per gradient computation.
        from_logits: whether the model outputs logits (the package's models
            do) or probabilities (a final softmax).

    Returns:
        The robust accuracy, a float in ``[0, 1]``.

    Example:

    >>> history = ks.recipes.fit_cifar(model, (x_train, y_train), 10)
    >>> robust = ks.fgsm_accuracy(model, (x_val, y_val), 1 / 255, normalization=history.normalization)
    """
    check_model(model, "model")
    epsilon = validation.non_negative_float(epsilon, "epsilon")
    batch_size = validation.positive_int(batch_size, "batch_size")
    validation.boolean(from_logits, "from_logits")
    pixels, labels = _data(data)
    mean, std = _normalization(normalization, pixels.shape[-1])
    _check_outputs(model, (pixels[:1] - mean) / std, labels)
    correct = 0
    for start in range(0, len(pixels), batch_size):
        x, y = pixels[start : start + batch_size], labels[start : start + batch_size]
        if epsilon > 0:
            x = np.clip(
                x
                + np.float32(epsilon)
                * np.sign(input_gradient(model, (x - mean) / std, y, from_logits=from_logits)),
                0.0,
                1.0,
            )
        outputs = keras.ops.convert_to_numpy(model((x - mean) / std, training=False))
        correct += int(np.sum(outputs.argmax(axis=-1) == y))
    return correct / len(pixels)


def _check_outputs(model, first, labels):
    """``ValueError`` unless ``model`` gives one row of class scores per image, with a class per label."""
    try:
        outputs = keras.ops.convert_to_numpy(model(first, training=False))
    except (ValueError, TypeError) as err:  # a wrong image shape, typically
        message = " ".join(str(err).split())[:300]
        raise ValueError(f"`model` cannot run on images of shape {first.shape[1:]}: {message}") from None
    if outputs.ndim != 2 or outputs.shape[0] != 1:
        raise ValueError(
            f"`model` must output one row of class scores per image; it gave shape "
            f"{outputs.shape} for 1 image."
        )
    if labels.max() >= outputs.shape[1]:
        raise ValueError(f"The labels go up to {labels.max()} but `model` scores {outputs.shape[1]} classes.")
