"""Model-level functions of the data-aligned init (Maennel et al., NeurIPS 2020)::

    align_conv_layers(model, *, images, num_layers=1, layers=None, seed=None, ...) -> paths
    weight_covariance(layer) -> Sigma_w
    weight_norms(model) -> {path: norm};  rescale_to_initial_norms(model, norms) -> paths

Conv layers are found by :func:`keras_structinit.engine.walker.find_kernels`.
"""

from __future__ import annotations

import keras
import numpy as np

from keras_structinit.alignment.components import MODES
from keras_structinit.alignment.initializers import DataAligned
from keras_structinit.alignment.measures import filter_covariance
from keras_structinit.alignment.patches import DEFAULT_BATCH_SIZE, patch_covariance
from keras_structinit.engine.contract import check_model, model_function
from keras_structinit.engine.initializer_base import seed_generator
from keras_structinit.engine.walker import find_kernels
from keras_structinit.utils import validation

__all__ = [
    "COMPONENTS",
    "PAPER_COMPONENTS",
    "align_conv_layers",
    "chosen_components",
    "conv_targets",
    "layer_inputs",
    "rescale_to_initial_norms",
    "weight_covariance",
    "weight_norms",
]

#: Named choices of the eigenvectors :func:`align_conv_layers` uses (``"smallest"``: the paper's
#: control); it also takes offsets and slices.
COMPONENTS = ("largest", "smallest")


def _is_plain_conv2d(layer):
    return (
        isinstance(layer, keras.layers.Conv2D)
        and not isinstance(layer, keras.layers.Conv2DTranspose)
        and layer.groups == 1
        and tuple(layer.dilation_rate) == (1, 1)
        and layer.data_format == "channels_last"
    )


def conv_targets(model, num_layers, layers=None):
    """``[(layer, kernel), ...]`` of the first ``num_layers`` plain Conv2D layers (groups 1,
    dilation 1, channels_last) that :func:`align_conv_layers` would align; ``ValueError`` if
    the model has fewer."""
    found = find_kernels(model, which="all_spatial", layers=layers)
    plain = [(layer, kernel) for layer, kernel in found if _is_plain_conv2d(layer)]
    if layers is not None and len(plain) < len(found):
        other = next(layer.name for layer, _ in found if not _is_plain_conv2d(layer))
        raise ValueError(
            f"`layers` includes {other!r}, which is not a plain Conv2D (groups 1, dilation 1, "
            "channels_last); data alignment needs one."
        )
    if len(plain) < num_layers:
        raise ValueError(
            f"`num_layers` must be at most the number of spatial Conv2D layers (groups 1, dilation 1, "
            f"channels_last) of the model ({len(plain)}). Received: num_layers={num_layers}"
        )
    return plain[:num_layers]


class _Reached(BaseException):
    """Ends a forward pass once the target layer's input is recorded.

    A ``BaseException``: Keras' error handling rewraps ``Exception`` subclasses
    and lets this one through untouched.
    """


def _capture_input(model, layer, batch):
    """``layer``'s input when ``model`` runs on ``batch``: recorded at its first call, the pass stopped there.

    Works wherever the layer sits: a top-level layer of a functional model, a
    layer of a nested model (keras.applications' stems), or a sub-layer that
    another layer calls in its ``call`` (KerasHub's patch embedding).
    """
    seen = []

    def record(inputs, *args, **kwargs):
        seen.append(inputs)
        raise _Reached

    layer.__dict__["call"] = record  # shadows the class's call for this instance only
    try:
        model(batch, training=False)
    except _Reached:
        pass
    finally:
        del layer.__dict__["call"]
    if not seen:
        raise ValueError(
            f"Layer {layer.name!r} is not called when {model.name!r} runs on `images`, so its "
            "input cannot be measured (pass `layers` to choose convs on the model's path)."
        )
    return seen[0]


def _layer_inputs(model, layer, images, batch_size, first):
    """Yields ``layer``'s input on ``images`` in batches (NumPy float32), through the layers before it."""
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size]
        if first:
            yield batch
            continue
        # float32 also under mixed precision
        batch = keras.ops.convert_to_numpy(keras.ops.cast(_capture_input(model, layer, batch), "float32"))
        if not np.isfinite(batch).all():
            raise ValueError(
                f"The input of layer {layer.name!r}, computed from `images` "
                f"{start}..{start + len(batch) - 1} through the layers before it (after aligning the "
                "earlier convs), holds NaN or inf: check the model's weights and the scale of `images`."
            )
        yield batch


def layer_inputs(model, layer, images, batch_size=DEFAULT_BATCH_SIZE):
    """``layer``'s input on ``images`` (float32 batches, through the layers before it: a
    ``Rescaling``, ``Normalization`` or stem before the first conv included)."""
    images = _as_float32(np.asarray(keras.ops.convert_to_numpy(images)))
    return _layer_inputs(model, layer, images, batch_size, _takes_the_images(model, layer))


def _takes_the_images(model, layer):
    """Whether ``layer`` is applied to the model's input itself (no forward pass needed)."""
    try:
        target = layer.input  # refused for a layer called more than once, or one never called
    except (ValueError, AttributeError):
        return False
    return any(target is t for t in getattr(model, "inputs", None) or [])


def _as_float32(images):
    """``images`` as float32 (the forward passes' dtype); NaN, inf or values beyond float32 refused."""
    if not np.issubdtype(images.dtype, np.number) or np.issubdtype(images.dtype, np.complexfloating):
        raise TypeError(f"`images` must hold real numbers. Received dtype {images.dtype}")
    bad = np.size(images) - np.count_nonzero(np.isfinite(images))
    if bad:
        raise ValueError(f"`images` must be finite: {bad} value(s) are NaN or inf")
    peak = float(np.max(np.abs(images)))
    if peak > float(np.finfo(np.float32).max):
        raise ValueError(
            f"`images` must fit float32 (|x| <= 3.4e38): values reach {peak:.3g}; "
            "scale them as the model's input is scaled"
        )
    return images.astype("float32", copy=False)


def _check_image_shape(model, images):
    """The images' channels against the model's input shape, where that is known."""
    inputs = getattr(model, "inputs", None) or []
    if len(inputs) != 1:
        return  # a subclassed model (shape unknown) or several inputs
    expected = tuple(inputs[0].shape[1:])
    if len(expected) != 3:
        raise ValueError(
            f"align_conv_layers needs a model whose input is images (H, W, C); "
            f"{model.name!r} takes inputs of shape {tuple(inputs[0].shape)}"
        )
    if expected[-1] is not None and images.shape[-1] != expected[-1]:
        raise ValueError(
            f"`images` have {images.shape[-1]} channel(s), but {model.name!r} takes {expected[-1]} "
            f"(input shape {expected}, channels last). Received images of shape {images.shape}"
        )


def _components_per_layer(components, num_layers):
    """``components`` as one choice per aligned layer (checked: see :func:`chosen_components`)."""
    if isinstance(components, (list, tuple)):
        if len(components) != num_layers:
            raise ValueError(
                f"`components` as a list needs one entry per aligned layer ({num_layers}). "
                f"Received: components={components!r}"
            )
        choices = list(components)
    else:
        choices = [components] * num_layers
    for choice in choices:
        if isinstance(choice, str):
            validation.one_of(choice, "components", COMPONENTS)
        elif isinstance(choice, slice):
            if choice.step not in (None, 1) or (choice.start or 0) < 0 or choice.stop is None:
                raise ValueError(
                    f"`components` slices must be slice(start, stop) with 0 <= start < stop. "
                    f"Received: {choice!r}"
                )
        elif isinstance(choice, bool) or not isinstance(choice, int):
            raise TypeError(
                f"`components` must be {' or '.join(map(repr, COMPONENTS))}, an int offset, "
                "a slice, or a list of these per layer. "
                f"Received: {choice!r} of type {type(choice).__name__}"
            )
        elif choice < 0:
            raise ValueError(f"`components` offsets must be >= 0. Received: {choice}")
    return choices


def chosen_components(eigvals, eigvecs, choice, n_components):
    """``(eigvals, eigvecs, count)`` of the eigenvectors ``choice`` names (decreasing eigenvalues in,
    see ``components`` of :func:`align_conv_layers`); a ``ValueError`` when they run past the last one."""
    dim = len(eigvals)
    if choice == "largest":
        return eigvals, eigvecs, n_components
    if choice == "smallest":
        return eigvals[::-1], eigvecs[:, ::-1], n_components
    start, stop = (
        ((choice.start or 0), choice.stop) if isinstance(choice, slice) else (choice, choice + n_components)
    )
    if not start < stop <= dim:
        raise ValueError(
            f"`components` {choice!r} asks for eigenvectors {start}..{stop - 1} (from 0) of a "
            f"patch covariance with {dim}; they run from 0 to {dim - 1}"
        )
    return eigvals[start:stop], eigvecs[:, start:stop], stop - start


#: Eigenvectors per aligned layer in the paper's experiments (Maennel et al., Sec. 2.3, Table 2).
PAPER_COMPONENTS = 16


@model_function
def align_conv_layers(
    model,
    *,
    images,
    num_layers=1,
    layers=None,
    seed=None,
    n_components=None,
    f=None,
    mode="eigvecs",
    scale=1.0,
    components="largest",
    max_patches=None,
    batch_size=DEFAULT_BATCH_SIZE,
):
    """Re-initializes the first ``num_layers`` Conv2D layers with :class:`DataAligned` filters.

    Layer by layer, in model order: the patch covariance of the layer's
    input on ``images`` (the images themselves for the first conv, else the
    activations of the layers before it, computed after those were aligned;
    Maennel et al., Table 2), its ``n_components`` largest (or smallest)
    eigenvectors, then ``kernel = DataAligned(...)`` and ``bias = 0``.

    Args:
        model: a built ``keras.Model`` (functional, Sequential or subclassed; convs may sit in
            nested models or inside other layers: each conv's input is recorded in a forward pass).
        images: ``(N, H, W, C)`` array, scaled as the model's input is.
        num_layers: how many conv layers, from the first.
        layers: optional list of layer names/objects to choose from (each a
            spatial ``Conv2D``, groups 1, dilation 1).
        seed: ``None``, an int or a ``keras.random.SeedGenerator``.
        n_components: eigenvectors per layer, as in :class:`DataAligned`; ``None``: the smaller of
            16 (the paper's) and the layer's patch dimension ``kh * kw * C`` (a 2x2 RGB stem: 12).
        f, mode, scale: as in :class:`DataAligned`.
        components: which eigenvectors, in order of decreasing eigenvalue:
            ``"largest"`` (the method: the first ``n_components``),
            ``"smallest"`` (the paper's control, Table 5), an int offset ``k``
            (``e_k ... e_{k + n_components - 1}``, counted from 0), a ``slice``
            (those eigenvectors; it sets how many), or a list of these, one
            per aligned layer. Table 6 (``e_4 ... e_19`` of 27 in the first
            layer, ``e_10 ... e_25`` of 144 in the next two, counted from 1) is
            ``components=[3, 9, 9]`` with ``n_components=16``.
        max_patches, batch_size: as in :func:`patch_covariance` (``batch_size``
            is also the batch of the forward passes).

    Returns:
        The kernel (and bias) variable paths written, in model order.

    Example:
        >>> align_conv_layers(model, images=x_train[:10000] / 127.5 - 1.0, num_layers=2, seed=0)
        ['conv_1/kernel', 'conv_1/bias', 'conv_2/kernel', 'conv_2/bias']
    """
    num_layers = validation.positive_int(num_layers, "num_layers")
    validation.one_of(mode, "mode", MODES)
    per_layer = _components_per_layer(components, num_layers)
    batch_size = validation.positive_int(batch_size, "batch_size")
    images = _checked_images(model, images)
    targets = conv_targets(model, num_layers, layers)
    generator = seed_generator(seed)
    paths = []
    patch_seed = seed if isinstance(seed, int) else 0  # of the max_patches subsets
    for index, (layer, kernel) in enumerate(targets):
        eigvals, eigvecs = patch_covariance(
            _layer_inputs(model, layer, images, batch_size, _takes_the_images(model, layer)),
            layer.kernel_size,
            max_patches=max_patches,
            seed=patch_seed + index,
        )
        wanted = min(PAPER_COMPONENTS, len(eigvals)) if n_components is None else n_components
        eigvals, eigvecs, count = chosen_components(eigvals, eigvecs, per_layer[index], wanted)
        init = DataAligned(eigvals, eigvecs, n_components=count, f=f, mode=mode, scale=scale, seed=generator)
        kernel.assign(init(tuple(kernel.shape), dtype=kernel.dtype))
        paths.append(kernel.path)
        if layer.use_bias:
            layer.bias.assign(keras.ops.zeros(layer.bias.shape, dtype=layer.bias.dtype))
            paths.append(layer.bias.path)
    return paths


def _checked_images(model, images):
    """``images`` as a float32 NumPy array, after checking it is a non-empty ``(N, H, W, C)`` array
    that ``model`` takes."""
    if not hasattr(images, "shape"):
        raise TypeError(
            f"`images` must be an array (N, H, W, C). Received: images of type {type(images).__name__}"
        )
    images = np.asarray(keras.ops.convert_to_numpy(images))
    if images.ndim != 4 or len(images) == 0:
        raise ValueError(f"`images` must be a non-empty (N, H, W, C) array. Received shape {images.shape}")
    images = _as_float32(images)
    _check_image_shape(model, images)
    return images


def weight_covariance(layer, centered=False):
    """``Sigma_w`` of a layer's filters (:func:`~keras_structinit.alignment.filter_covariance`).

    ``layer`` is a built layer with a ``kernel`` (``Conv2D``: filters
    flattened in the patch order ``(kh, kw, C)``; ``Dense``: columns), or a
    kernel variable or array.
    """
    if isinstance(layer, keras.layers.Layer):
        kernel = getattr(layer, "kernel", None)
        if kernel is None:
            raise ValueError(
                f"`layer` ({layer.name}) has no `kernel` (is it built, and a Conv or Dense layer?)"
            )
    else:
        kernel = layer
    return filter_covariance(keras.ops.convert_to_numpy(kernel), centered=centered)


def _layer_groups(model):
    """``{layer path: [trainable variables]}`` of every layer that holds a trainable kernel (a
    variable of rank >= 2): its kernel and its bias (App. A.4's per-layer parameters)."""
    groups = {}
    for variable in model.trainable_variables:
        groups.setdefault(variable.path.rsplit("/", 1)[0], []).append(variable)
    return {layer: vs for layer, vs in groups.items() if any(len(v.shape) >= 2 for v in vs)}


def _norm(variables):
    squares = (np.sum(keras.ops.convert_to_numpy(v).astype(np.float64) ** 2) for v in variables)
    return float(np.sqrt(sum(squares)))


def weight_norms(model):
    """``{layer path: ||theta||_2}`` over each layer's trainable parameters (kernel and bias
    together), for every layer with a trainable kernel (Maennel et al., App. A.4)."""
    check_model(model)
    return {layer: _norm(variables) for layer, variables in _layer_groups(model).items()}


def rescale_to_initial_norms(model, norms):
    """Multiplies all parameters of each layer named in ``norms`` by one positive constant, so that
    their joint L2 norm is the recorded one (Maennel et al., App. A.4).

    ``theta_l <- theta_l * norms[l] / ||theta_l||`` for each layer ``l`` (its kernel and bias
    together), e.g. with the norms recorded at initialization
    (:class:`~keras_structinit.callbacks.RecordInitialNorms` or :func:`weight_norms`) to
    fine-tune a pre-trained network at its initial scale. With ReLU and no biases (nor
    normalization layers) a network is positively homogeneous in each layer's weights, so the
    logits are only multiplied by a positive number and the predicted class is kept; with
    biases, as in the paper's Simple CNN and VGG16, in general not exactly.

    Returns:
        The rescaled variables' paths, layer by layer in ``norms`` order.

    Raises:
        ValueError: a key is not a layer of ``model`` with a trainable kernel, or a layer's
            parameters are all zeros while its recorded norm is not.
    """
    check_model(model)
    if not isinstance(norms, dict):
        raise TypeError(f"`norms` must be a dict {{layer path: norm}}. Received: {type(norms).__name__}")
    groups = _layer_groups(model)
    for layer, target in norms.items():
        if layer not in groups:
            raise ValueError(
                f"`norms` names {layer!r}, which is not a layer with a trainable kernel of the "
                f"model ({model.name}); the layers are {sorted(groups)}."
            )
        if validation.finite_float(target, f"norms[{layer!r}]") < 0:
            raise ValueError(f"`norms[{layer!r}]` must be a norm >= 0. Received: {target!r}")
    paths = []
    for layer, target in norms.items():
        current = _norm(groups[layer])
        if current == 0.0 and target > 0.0:
            raise ValueError(
                f"Cannot rescale {layer!r}: its parameters are all zeros but its recorded norm is {target}."
            )
        factor = 0.0 if current == 0.0 else target / current
        for variable in groups[layer]:
            value = keras.ops.convert_to_numpy(variable).astype(np.float64)
            variable.assign(keras.ops.cast(value * factor, variable.dtype))
            paths.append(variable.path)
    return paths
