"""Layer scale (Touvron et al., "Going deeper with Image Transformers", ICCV 2021)."""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.utils import validation


@keras.saving.register_keras_serializable(package="keras_structinit")
class LayerScale(keras.layers.Layer):
    """Learnable per-channel scale of a residual branch: ``y = gamma * x``.

    ``gamma`` (weight ``gamma``, shape ``(channels,)``, the last axis) starts
    at ``init_value``, a small number in CaiT and ConvNeXt (``1e-6``) so that
    every residual block starts close to the identity.

    Args:
        init_value: initial value of every ``gamma_c``.
        **kwargs: base layer keyword arguments, such as ``name`` and ``dtype``.

    Example:

    ```python
    layer = LayerScale(1e-6)
    y = layer(np.ones((2, 7, 7, 96), "float32"))  # 1e-6 everywhere
    ```
    """

    def __init__(self, init_value=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.init_value = validation.finite_float(init_value, "init_value")

    def build(self, input_shape):
        self.gamma = self.add_weight(
            name="gamma",
            shape=(input_shape[-1],),
            initializer=keras.initializers.Constant(self.init_value),
        )

    def call(self, inputs):
        return inputs * ops.cast(self.gamma, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "init_value": self.init_value}
