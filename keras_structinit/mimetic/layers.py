"""``ScalarBiasDense``: the learnable scalar-bias baseline of the mimetic MLP paper (Sec. 3, Fig. 4)."""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.utils import validation

__all__ = ["ScalarBiasDense"]


@keras.saving.register_keras_serializable(package="keras_structinit")
class ScalarBiasDense(keras.layers.Dense):
    """A ``Dense`` layer plus one learnable scalar ``b`` times the all-ones matrix:
    ``y = activation(W1 x + b 1_p 1_n^T x + bias) = activation(W1 x + b sum(x) 1_p + bias)``.

    The baseline of "Is it really the init?" (Trockman & Kolter, Mimetic Initialization of MLPs,
    Sec. 3, Fig. 4): "add a learnable scalar bias per W_1, as b 1_p 1_n^T x = b sum(x) 1_p". It
    gives the first layer of an MLP block the capacity to learn the mean that the mimetic init
    puts into ``W1``, without putting it there: the paper finds it "does not absorb the effect of
    our init". Use it for the first layer of each MLP block (the zoo's builders:
    ``mlp_scalar_bias=True``), with or without the mean shift of ``W1``.

    Args:
        units, activation, ...: as ``keras.layers.Dense`` (kernel ``(n, p)`` in Keras' layout).
        scalar: the initial value of ``b`` (a finite float; default 0: the baseline starts as a
            plain ``Dense``). The weight is named ``scalar`` and is trainable.

    Example:
        >>> layer = ScalarBiasDense(64, activation="gelu", scalar=0.0)
    """

    def __init__(self, units, scalar=0.0, **kwargs):
        super().__init__(units, **kwargs)
        self.scalar_value = validation.finite_float(scalar, "scalar")

    def build(self, input_shape):
        super().build(input_shape)
        self.scalar = self.add_weight(
            name="scalar", shape=(), initializer=keras.initializers.Constant(self.scalar_value)
        )

    def call(self, inputs, training=None):
        x = ops.matmul(inputs, self.kernel)
        x = x + ops.cast(self.scalar, x.dtype) * ops.sum(inputs, axis=-1, keepdims=True)
        if self.bias is not None:
            x = x + self.bias
        return self.activation(x) if self.activation is not None else x

    # Dense saves its kernel and bias by position ("0", "1"); the scalar goes last.
    def save_own_variables(self, store):
        super().save_own_variables(store)
        if self.built:
            store[str(len(list(store.keys())))] = self.scalar

    def load_own_variables(self, store):
        super().load_own_variables(store)
        if self.built:
            self.scalar.assign(store[str(len(list(store.keys())) - 1)])

    def get_config(self):
        return {**super().get_config(), "scalar": self.scalar_value}
