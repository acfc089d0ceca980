"""Learned absolute position embedding of ViT (Dosovitskiy et al., ICLR 2021)."""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.engine.initializer_base import check_initializer
from keras_structinit.utils import validation


@keras.saving.register_keras_serializable(package="keras_structinit")
class PositionEmbedding(keras.layers.Layer):
    """Adds a learned embedding per position: ``z_n = x_n + E_pos[n]``.

    ``E_pos`` (weight ``embedding``) has shape ``(1, N, d)``, fixed by the
    ``(B, N, d)`` input the layer is built on.

    Args:
        initializer: initializer of ``E_pos``: anything
            ``keras.initializers.get`` accepts; ``None`` gives ``N(0, 0.02^2)``,
            which is what timm's ``trunc_normal_(std=0.02)`` draws (it
            truncates at +-2 in absolute value, i.e. at +-100 std).
        **kwargs: base layer keyword arguments, such as ``name`` and ``dtype``.

    Example:

    ```python
    layer = PositionEmbedding()
    z = layer(np.ones((2, 65, 192), "float32"))  # layer.embedding: (1, 65, 192)
    ```
    """

    def __init__(self, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.initializer = check_initializer(
            initializer, "initializer", keras.initializers.RandomNormal(stddev=0.02)
        )

    def build(self, input_shape):
        validation.shape_rank(input_shape, 3, "input_shape", "(batch, tokens, channels)")
        if input_shape[1] is None:
            raise ValueError(
                f"PositionEmbedding needs a fixed number of tokens. Received: input_shape={input_shape!r}"
            )
        self.embedding = self.add_weight(
            name="embedding",
            shape=(1, input_shape[1], input_shape[2]),
            initializer=self.initializer,
        )

    def call(self, inputs):
        return inputs + ops.cast(self.embedding, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "initializer": keras.initializers.serialize(self.initializer)}
