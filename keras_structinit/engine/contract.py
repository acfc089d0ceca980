"""The contract of every public function that changes a model::

    apply_X(model, *, layers=None, seed=None, ...) -> list[str]   # variable paths

Such a function is wrapped by :func:`model_function`, which checks ``model`` first, gets its
targets from :func:`keras_structinit.engine.walker.find` and is listed in its method record's
``model_functions`` (a contract test checks each one).
"""

from __future__ import annotations

import functools

import keras

__all__ = ["check_model", "model_function"]


def check_model(model, name="model"):
    """``TypeError`` unless ``model`` is a Keras layer/model, ``ValueError`` unless built."""
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(
            f"`{name}` must be a keras.Model or keras.layers.Layer. "
            f"Received: {name} of type {type(model).__name__}"
        )
    if not model.built:
        raise ValueError(
            f"`{name}` ({model.name}) must be built before its variables can be changed: "
            "call it on data or build it with an input shape."
        )
    return model


def model_function(fn):
    """Decorator for ``apply_X(model, *, layers=None, seed=None, ...)``: checks ``model``
    (a built Keras layer or model) before ``fn`` runs."""

    @functools.wraps(fn)
    def wrapper(model, *args, **kwargs):
        check_model(model)
        return fn(model, *args, **kwargs)

    return wrapper
