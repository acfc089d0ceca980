"""The classifier of a model: the layer that owns the classes axis, which keeps the student's init.

The paper re-initializes the student's classifier (the authors' script skips every head key), so
weight selection leaves it alone unless ``copy_head=True`` (``--copy-head``). :func:`find_classifier`
finds it in any built Keras model, whatever its name: keras.applications' ``predictions``, KerasHub
task models' ``predictions``, the package's ``head``, a user's automatically named ``dense_1``.
In a functional model (keras.applications, KerasHub, a user's functional or ``Sequential`` model)
it is the layer that produces the model's one output of rank 2, read back through the layers
without variables after it (an ``Activation``, a ``Dropout``, a ``Reshape``, a pooling...) and into
nested models; it must be a ``Dense``, an ``EinsumDense`` or a convolution with a 1-pixel kernel.
A model whose output is made otherwise (a backbone's features, after a normalization) has none.
A model with no graph (subclassed) has the last such layer among its tracked layers, if it is the
last layer with variables. Nothing here imports Keras: the models are read through their attributes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Classifier", "classifier_reason", "find_classifier", "other_classes"]

_DENSE = ("Dense", "EinsumDense")
_CONVS = ("Conv1D", "Conv2D", "Conv3D")


@dataclass(frozen=True)
class Classifier:
    """A model's classifier: its layer's name, its variables' paths and its number of classes."""

    name: str
    paths: tuple
    classes: int | None


def other_classes(teacher, student):
    """Why a derived plan's classifier of other classes keeps its initialization."""
    return (
        f"head with other classes ({teacher} in the teacher, {student} here; choose them with "
        "head_classes=..., --head-classes on the command line)"
    )


def classifier_reason(teacher, student, derived):
    """Why ``student``'s classifier keeps its initialization (``teacher``'s classifier or ``None``)."""
    if derived and teacher is not None and None not in (teacher.classes, student.classes):
        if teacher.classes != student.classes:
            return other_classes(teacher.classes, student.classes)
    return "classifier: keeps the student's init (copy_head=True, --copy-head on the command line, copies it)"


def _flat(tensors):
    if isinstance(tensors, dict):
        tensors = list(tensors.values())
    if isinstance(tensors, (list, tuple)):
        return [t for part in tensors for t in _flat(part)]
    return [tensors]


def _weights(layer):
    return list(getattr(layer, "weights", ()) or ())


def _is_classifier(layer):
    kind = type(layer).__name__
    if kind in _DENSE:
        return True
    kernel = getattr(layer, "kernel", None) if kind in _CONVS else None
    return kernel is not None and all(n == 1 for n in kernel.shape[:-2]) and getattr(layer, "groups", 1) == 1


def _outputs(model):
    try:
        return getattr(model, "outputs", None)
    except (AttributeError, ValueError):  # a subclassed model has no symbolic outputs
        return None


def _producer(tensor):
    """The layer whose variables make ``tensor``, read back through layers without variables."""
    for _ in range(10_000):  # a graph is finite; this bounds a malformed one
        history = getattr(tensor, "_keras_history", None)
        if history is None:
            return None
        op, node_index, tensor_index = history
        nested = _outputs(op) if hasattr(op, "layers") else None
        if nested:  # a model inside the model: its own output
            tensor = _flat(nested)[tensor_index]
            continue
        if _weights(op):
            return op if _is_classifier(op) else None
        inputs = [t for t in _flat(op._inbound_nodes[node_index].input_tensors) if hasattr(t, "shape")]
        if len(inputs) != 1:
            return None
        tensor = inputs[0]
    return None


def _last_layer(model):
    """A model with no graph: its last tracked layer with variables of its own, if a classifier."""
    flatten = getattr(model, "_flatten_layers", None)
    leaves = [
        layer
        for layer in (flatten(include_self=False, recursive=True) if flatten else ())
        if _weights(layer) and not list(layer._flatten_layers(include_self=False, recursive=False))
    ]
    return leaves[-1] if leaves and _is_classifier(leaves[-1]) else None


def find_classifier(model):
    """The :class:`Classifier` of ``model`` (a built ``keras.Model``), or ``None`` when it has none."""
    outputs = _outputs(model)
    if outputs:
        flat = _flat(outputs)
        if len(flat) != 1 or len(flat[0].shape) != 2:
            return None
        layer = _producer(flat[0])
        classes = int(flat[0].shape[-1]) if flat[0].shape[-1] is not None else None
    else:
        layer = _last_layer(model)
        kernel = getattr(layer, "kernel", None)
        classes = int(kernel.shape[-1]) if kernel is not None else None
    if layer is None:
        return None
    return Classifier(layer.name, tuple(v.path for v in _weights(layer)), classes)
