"""What a classifier's last layer gives: logits, or probabilities (a softmax or sigmoid head).

The recipes' losses and the distillation's KL take logits, which the package's own models give.
keras.applications' default head (``classifier_activation="softmax"``) and most tutorials' heads
end in a softmax instead; its probabilities, read as logits, bound the cross-entropy of ``C``
classes below by ``-log(e / (e + C - 1))`` (0.551 for 3) and slow learning, with no warning
(issue 64). :func:`read_head` reads the head from the model's graph, :func:`loss_for_head` gives
the loss on probabilities (``from_logits=False``) for such a head, and :func:`to_logits` turns
its outputs back into logits (``log p`` for a softmax: ``softmax(log p) = p``).
"""

from __future__ import annotations

from dataclasses import dataclass

import keras

__all__ = ["PROBABILITY_ACTIVATIONS", "Head", "describe_head", "loss_for_head", "read_head", "to_logits"]

#: The final activations whose outputs are probabilities.
PROBABILITY_ACTIVATIONS = ("softmax", "sigmoid")
#: Layers that pass a head's outputs on unchanged in kind (probabilities stay probabilities).
_PASSING = (keras.layers.Flatten, keras.layers.Reshape, keras.layers.Dropout, keras.layers.Identity)


@dataclass(frozen=True)
class Head:
    """A model's head: its final ``activation`` (``"softmax"``, ``"sigmoid"``, ``"linear"``, another
    activation's name, or ``"unknown"`` for a model without a graph to read) and the ``layer``
    that applies it (its name; ``None`` if unknown)."""

    activation: str
    layer: str | None = None

    @property
    def probabilities(self):
        """Whether the outputs are probabilities (a softmax or sigmoid head)."""
        return self.activation in PROBABILITY_ACTIVATIONS

    @property
    def outputs(self):
        """``"probabilities"`` or ``"logits"`` (anything else is taken as scores, as logits are)."""
        return "probabilities" if self.probabilities else "logits"

    def record(self):
        """What a run's ``results.json`` keeps (JSON-ready)."""
        return {"outputs": self.outputs, "activation": self.activation, "layer": self.layer}


def _activation_name(activation):
    name = getattr(activation, "__name__", None) or type(activation).__name__
    return name.lower()


def _producer(tensor):
    """``(operation, its first input tensor or None)`` of a symbolic ``tensor``, else ``(None, None)``."""
    history = getattr(tensor, "_keras_history", None)
    if history is None:
        return None, None
    operation = history.operation
    nodes = getattr(operation, "_inbound_nodes", [])
    inputs = nodes[history.node_index].input_tensors if len(nodes) > history.node_index else []
    return operation, (inputs[0] if len(inputs) == 1 else None)


def read_head(model):
    """The :class:`Head` of ``model``, read from its graph: the last layer's ``activation``
    (a Dense or Conv with ``activation="softmax"``), or a final ``Softmax``/``Activation`` layer
    or ``keras.ops.softmax``/``sigmoid`` op, looking through ``Flatten``, ``Reshape``, ``Dropout``,
    ``Identity``, a linear ``Activation`` and nested models. A model without a graph (subclassed)
    is ``Head("unknown")``, trained as logits (it may be unbuilt: a recipe reads the head before
    training builds it)."""
    if not isinstance(model, keras.Model):
        raise TypeError(f"`model` must be a keras.Model. Received: model of type {type(model).__name__}")
    outputs = getattr(model, "outputs", None)
    if not outputs or len(outputs) != 1:
        return Head("unknown")
    tensor = outputs[0]
    while True:  # back through the graph, which has no cycle
        operation, source = _producer(tensor)
        if operation is None:
            return Head("unknown")
        if isinstance(operation, keras.Model):
            return read_head(operation)
        if isinstance(operation, keras.layers.Softmax):
            return Head("softmax", operation.name)
        if isinstance(operation, keras.layers.Activation):
            name = _activation_name(operation.activation)
            if name != "linear":
                return Head(name, operation.name)
        elif not isinstance(operation, _PASSING):
            if isinstance(operation, keras.layers.Layer):
                activation = getattr(operation, "activation", None)
                return Head("unknown" if activation is None else _activation_name(activation), operation.name)
            name = type(operation).__name__.lower()  # keras.ops.softmax(x) in a functional graph
            return Head(name if name in PROBABILITY_ACTIVATIONS else "unknown", operation.name)
        if source is None:
            return Head("unknown", operation.name)
        tensor = source


def describe_head(head):
    """One line for a probability head: what it is and how the loss takes it."""
    where = f"'{head.layer}'" if head.layer else "the model"
    return (
        f"Head: {where} ends in {head.activation}: its outputs are probabilities, so the loss "
        "takes them as probabilities (from_logits=False), not as logits"
    )


def loss_for_head(loss, head):
    """``loss`` for outputs of ``head``: for a probability head, a Keras loss with ``from_logits``
    rebuilt with ``from_logits=False``; otherwise ``loss`` itself."""
    if not head.probabilities:
        return loss
    config = loss.get_config() if isinstance(loss, keras.losses.Loss) else {}
    if not config.get("from_logits"):
        return loss
    return type(loss).from_config({**config, "from_logits": False})


def to_logits(outputs, head):
    """``outputs`` of ``head`` as logits (float32): ``log p`` for a softmax (``softmax(log p) = p``),
    ``log p - log(1 - p)`` for a sigmoid, unchanged otherwise; ``p`` clipped to Keras' epsilon."""
    if not head.probabilities:
        return outputs
    eps = keras.config.epsilon()
    p = keras.ops.clip(keras.ops.cast(outputs, "float32"), eps, 1.0 - eps)
    if head.activation == "softmax":
        return keras.ops.log(p)
    return keras.ops.log(p) - keras.ops.log(1.0 - p)
