"""Every conv and Dense layer's activations on images: the neurons of Maennel et al.'s App. F.

A neuron is one value of a layer's activation (for a conv, one channel at one position), and it
is activated by an image when that value is above 0 (Fig. 24: "the output of a hidden activation
function being non-zero"; Figs. 10-11 plot every intermediate layer of VGG16 so). Which values
are a layer's activation (:func:`activation_targets`):

* the layer's own output when it has a non-linear ``activation`` (``Conv2D(..., activation="relu")``);
* else the output of the activation layer (``Activation``, ``ReLU``, ``LeakyReLU``, ``ELU``,
  ``PReLU``) that its output alone reaches, through normalization and dropout layers only (a
  ConvMixer's ``Conv2D -> Activation("gelu")``, a ResNet's ``Conv2D -> BatchNormalization -> ReLU``);
* else the layer's own output (a logits head, a conv that feeds a residual sum): its values
  above 0, which the row says.

:func:`layer_activations` runs the model on the images once per batch and counts, per layer,
how many images activate each neuron and what fraction of the layer's neurons each image
activates; :mod:`.specialization` turns those into the papers' fractions. Used by ``inspect``'s
``specialization`` section and :class:`~keras_structinit.alignment.callbacks.RecordSpecialization`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import keras
import numpy as np

from keras_structinit.alignment.apply import _as_float32
from keras_structinit.engine import walker

__all__ = [
    "ACTIVATION_LAYERS",
    "LayerActivations",
    "Target",
    "activation_targets",
    "is_conv_or_dense",
    "layer_activations",
]

#: Layers whose output is a hidden activation function's.
ACTIVATION_LAYERS = (
    keras.layers.Activation,
    keras.layers.ReLU,
    keras.layers.LeakyReLU,
    keras.layers.ELU,
    keras.layers.PReLU,
)
#: Layers an activation is looked for through (elementwise or per-channel, the shape kept).
_PASS_THROUGH = (
    keras.layers.BatchNormalization,
    keras.layers.LayerNormalization,
    keras.layers.GroupNormalization,
    keras.layers.Dropout,
    keras.layers.SpatialDropout1D,
    keras.layers.SpatialDropout2D,
    keras.layers.SpatialDropout3D,
    keras.layers.GaussianDropout,
    keras.layers.GaussianNoise,
    keras.layers.Identity,
)
_CONV_LAYERS = (
    keras.layers.Conv1D,
    keras.layers.Conv2D,
    keras.layers.Conv3D,
    keras.layers.Conv1DTranspose,
    keras.layers.Conv2DTranspose,
    keras.layers.Conv3DTranspose,
    keras.layers.DepthwiseConv1D,
    keras.layers.DepthwiseConv2D,
    keras.layers.SeparableConv1D,
    keras.layers.SeparableConv2D,
)
#: Forward passes' batch: a VGG16's first conv on 32x32 images is 65,536 neurons per image.
BATCH_SIZE = 64


def is_conv_or_dense(layer):
    """Whether ``layer`` is a ``Dense`` layer or a convolution: Keras' conv layers (depthwise,
    separable and transposed included) and layers with their own ``spatial_kernel`` (an LC block)."""
    return isinstance(layer, (keras.layers.Dense, *_CONV_LAYERS)) or isinstance(
        getattr(layer, walker.SPATIAL_KERNEL, None), keras.Variable
    )


def _activation_name(layer):
    activation = getattr(layer, "activation", None)
    if activation is None:
        return None
    name = getattr(activation, "__name__", None) or type(activation).__name__
    return None if name == "linear" else name


def _consumers(layer):
    try:
        return [node.operation for node in layer._outbound_nodes]
    except AttributeError:  # not a graph layer
        return []


def _following_activation(layer):
    """The activation layer ``layer``'s output alone reaches through :data:`_PASS_THROUGH` layers, or
    ``None``."""
    current = layer
    for _ in range(8):  # a chain of a few normalization / dropout layers at most
        consumers = _consumers(current)
        if len(consumers) != 1:
            return None
        current = consumers[0]
        if isinstance(current, ACTIVATION_LAYERS):
            return current
        if not isinstance(current, _PASS_THROUGH):
            return None
    return None


@dataclass
class Target:
    """A conv or Dense ``layer``, the layer whose output is its activation (``measured``) and
    ``what`` was counted, in words."""

    layer: keras.layers.Layer
    measured: keras.layers.Layer
    what: str


def _target(layer):
    own = _activation_name(layer)
    if own is not None:
        return Target(layer, layer, f"its {own} output")
    after = _following_activation(layer)
    if after is not None:
        return Target(layer, after, f"{after.name} ({_activation_name(after) or type(after).__name__})")
    return Target(layer, layer, "its output (no activation follows it alone)")


def activation_targets(model, layers=None):
    """A :class:`Target` for every conv and Dense layer of ``model`` (or of ``layers``: names or
    layer objects, each a conv or Dense layer), in model order."""
    if layers is None:
        chosen = [layer for layer in walker.iter_layers(model) if is_conv_or_dense(layer)]
    else:
        chosen = walker.resolve_layers(model, layers)
        other = next((layer.name for layer in chosen if not is_conv_or_dense(layer)), None)
        if other is not None:
            raise ValueError(f"`layers` includes {other!r}, which is neither a conv nor a Dense layer.")
    return [_target(layer) for layer in chosen]


@dataclass
class LayerActivations:
    """One layer's counts over the images: ``counts`` int64 ``(neurons,)``, how many images activate
    each neuron; ``example_fractions`` float64 ``(images,)``, the fraction of its neurons each image
    activates; ``None`` both when the layer is not called on the model's path."""

    target: Target
    counts: np.ndarray | None = None
    example_fractions: np.ndarray | None = field(default=None, repr=False)
    examples: int = 0

    @property
    def neuron_fractions(self):
        """``(neurons,)``: the fraction of the images that activate each neuron."""
        return None if self.counts is None else self.counts / max(self.examples, 1)


def _record_outputs(measured, batch, model, input_of=None):
    """The first output of each layer of ``measured`` when ``model`` runs on ``batch``, by id, and
    the first input of ``input_of`` (under the key ``"input"``)."""
    seen = {}
    originals = {}

    def recorder(layer, original, keep_output, keep_input):
        def record(*args, **kwargs):
            if keep_input and args:
                seen.setdefault("input", args[0])
            out = original(*args, **kwargs)
            if keep_output:
                seen.setdefault(id(layer), out)
            return out

        return record

    watched = {id(layer): layer for layer in measured}
    if input_of is not None:
        watched.setdefault(id(input_of), input_of)
    for key, layer in watched.items():
        layer.__dict__["call"] = recorder(
            layer, layer.call, any(m is layer for m in measured), layer is input_of
        )  # this instance only
        originals[key] = layer
    try:
        model(batch, training=False)
    finally:
        for layer in originals.values():
            del layer.__dict__["call"]
    return seen


def layer_activations(model, images, *, layers=None, batch_size=BATCH_SIZE, input_of=None, on_input=None):
    """``[LayerActivations, ...]`` of every conv and Dense layer (or of ``layers``) of ``model``
    on ``images`` (``(N, ...)``, scaled as the model's input is), in model order.

    ``input_of``, ``on_input``: a layer whose input the same passes hand, batch by batch, to
    ``on_input(inputs)`` (float32 NumPy; the ``specialization`` section's last Dense layer)."""
    images = _as_float32(np.asarray(keras.ops.convert_to_numpy(images)))
    if len(images) == 0:
        raise ValueError("`images` holds no image.")
    rows = [LayerActivations(target) for target in activation_targets(model, layers)]
    measured = [row.target.measured for row in rows]
    fractions = {id(row): [] for row in rows}
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size]
        outputs = _record_outputs(measured, batch, model, input_of)
        if input_of is not None:
            if "input" not in outputs:
                raise ValueError(
                    f"Layer {input_of.name!r} is not called when {model.name!r} runs on "
                    "`images`, so its input cannot be measured."
                )
            on_input(keras.ops.convert_to_numpy(keras.ops.cast(outputs["input"], "float32")))
        for row in rows:
            out = outputs.get(id(row.target.measured))
            if out is None:
                continue
            active = keras.ops.convert_to_numpy(keras.ops.greater(keras.ops.cast(out, "float32"), 0.0))
            active = active.reshape(len(batch), -1)
            count = active.sum(axis=0, dtype=np.int64)
            row.counts = count if row.counts is None else row.counts + count
            row.examples += len(batch)
            fractions[id(row)].append(active.mean(axis=1, dtype=np.float64))
    for row in rows:
        if fractions[id(row)]:
            row.example_fractions = np.concatenate(fractions[id(row)])
    return rows
