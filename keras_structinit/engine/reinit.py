"""Re-drawing layers from their own initializers: a fresh head after pre-training, and the like.

Maennel et al. (App. A.4) pre-train on random labels, then replace the classifier head
(and, for some rows, the dense layer before it) with a freshly initialized one before
training on the real labels. :func:`reinitialize` does that on any built Keras model: each
variable of the named layers is drawn again from the initializer its layer was built with
(``kernel_initializer``, ``bias_initializer``, ``gamma_initializer``, ``moving_mean_initializer``,
...), with new random values.
"""

from __future__ import annotations

import keras

from keras_structinit.engine.contract import model_function
from keras_structinit.engine.initializer_base import seed_generator
from keras_structinit.engine.walker import iter_layers, own_variables, resolve_layers

__all__ = ["reinitialize"]


def _fresh(initializer, generator):
    """A copy of ``initializer`` drawing from ``generator`` (its own int seed would repeat its values)."""
    config = initializer.get_config()
    if "seed" in config:
        config["seed"] = generator
    return type(initializer).from_config(config)


@model_function
def reinitialize(model, *, layers=None, seed=None):
    """Draws every variable of ``layers`` (and their sub-layers) again from its layer's initializer.

    Args:
        model: a built ``keras.Model``.
        layers: a list of layer names or objects, e.g. ``["head"]`` (App. A.4's fresh head) or
            ``["dense", "head"]``; ``None``: every layer of the model (a fresh model).
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``; each variable
            gets its own samples.

    Returns:
        The paths of the variables drawn again, in model order.

    Raises:
        ValueError: a variable whose layer keeps no ``<name>_initializer`` for it (nor, when it is
            the layer's only variable, an ``initializer``; the message names it), or a named layer
            without variables.
    """
    chosen = [*iter_layers(model), model] if layers is None else resolve_layers(model, layers)
    found, seen = [], set()
    for top in chosen:
        subtree = [top] if layers is None else [top, *iter_layers(top)]
        variables = [(layer, v) for layer in subtree for v in own_variables(layer) if id(v) not in seen]
        if layers is not None and not variables and not any(id(v) in seen for v in top.weights):
            raise ValueError(f"`layers` includes {top.name!r}, which has no variables to re-initialize.")
        for layer, variable in variables:
            seen.add(id(variable))
            initializer = getattr(layer, f"{variable.name}_initializer", None)
            if initializer is None and len(own_variables(layer)) == 1:  # e.g. ClassToken's `initializer`
                initializer = getattr(layer, "initializer", None)
            if not isinstance(initializer, keras.Initializer):
                raise ValueError(
                    f"Variable {variable.path!r} of layer {layer.name!r} ({type(layer).__name__}) has no "
                    f"`{variable.name}_initializer` to draw it again from; leave that layer out of `layers`."
                )
            found.append((variable, initializer))
    order = {id(v): i for i, v in enumerate(model.weights)}
    found.sort(key=lambda pair: order.get(id(pair[0]), len(order)))
    generator = seed_generator(seed)
    for variable, initializer in found:
        variable.assign(_fresh(initializer, generator)(tuple(variable.shape), dtype=variable.dtype))
    return [variable.path for variable, _ in found]
