"""The learned class token of ViT (Dosovitskiy et al., ICLR 2021)."""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.engine.initializer_base import check_initializer
from keras_structinit.utils import validation


@keras.saving.register_keras_serializable(package="keras_structinit")
class ClassToken(keras.layers.Layer):
    """Prepends a learned token to a sequence: ``(B, N, d) -> (B, N + 1, d)``.

    ``z = [c; x_1; ...; x_N]``, with the token ``c`` (weight ``token``, shape
    ``(1, 1, d)``) shared by all samples.

    Args:
        initializer: initializer of ``c``: anything ``keras.initializers.get``
            accepts; ``None`` gives timm's ``N(0, 1e-6^2)``.
        **kwargs: base layer keyword arguments, such as ``name`` and ``dtype``.

    Example:

    ```python
    tokens = ClassToken()(np.ones((2, 64, 192), "float32"))  # (2, 65, 192)
    ```
    """

    def __init__(self, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.initializer = check_initializer(
            initializer, "initializer", keras.initializers.RandomNormal(stddev=1e-6)
        )

    def build(self, input_shape):
        validation.shape_rank(input_shape, 3, "input_shape", "(batch, tokens, channels)")
        self.token = self.add_weight(
            name="token", shape=(1, 1, input_shape[-1]), initializer=self.initializer
        )

    def call(self, inputs):
        token = ops.cast(self.token, inputs.dtype)
        # Broadcast to the (possibly dynamic) batch size.
        token = ops.zeros_like(inputs[:, :1, :]) + token
        return ops.concatenate([token, inputs], axis=1)

    def compute_output_shape(self, input_shape):
        tokens = None if input_shape[1] is None else input_shape[1] + 1
        return (input_shape[0], tokens, input_shape[2])

    def get_config(self):
        return {**super().get_config(), "initializer": keras.initializers.serialize(self.initializer)}
