"""The parameter-free ResNet shortcut (He et al., "Deep Residual Learning", 2016, option A)."""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.utils import validation


@keras.saving.register_keras_serializable(package="keras_structinit")
class ZeroPadShortcut(keras.layers.Layer):
    """Option-A shortcut: strided subsampling, then zero channels up to ``filters``.

    ``y = pad_c(x[:, ::s, ::s, :])`` with ``filters - C`` zero channels split
    evenly before and after the input's ``C`` channels (the extra one after),
    as in the common PyTorch CIFAR ResNets. No parameters.

    Args:
        filters: output channels, ``>= C``.
        strides: subsampling step ``s``.
        **kwargs: base layer keyword arguments, such as ``name``.

    Example:

    ```python
    y = ZeroPadShortcut(32, strides=2)(np.ones((2, 32, 32, 16), "float32"))  # (2, 16, 16, 32)
    ```
    """

    def __init__(self, filters, strides=2, **kwargs):
        super().__init__(**kwargs)
        self.filters = validation.positive_int(filters, "filters")
        self.strides = validation.positive_int(strides, "strides")

    def build(self, input_shape):
        validation.shape_rank(input_shape, 4, "input_shape", "(batch, height, width, channels)")
        if input_shape[-1] is None or input_shape[-1] > self.filters:
            raise ValueError(
                f"`filters` ({self.filters}) must be at least the known input channels; "
                f"received input shape {tuple(input_shape)}."
            )

    def call(self, inputs):
        s = self.strides
        x = inputs[:, ::s, ::s, :] if s > 1 else inputs
        extra = self.filters - inputs.shape[-1]
        return ops.pad(x, ((0, 0), (0, 0), (0, 0), (extra // 2, extra - extra // 2))) if extra else x

    def compute_output_shape(self, input_shape):
        sizes = [None if n is None else -(-n // self.strides) for n in input_shape[1:3]]
        return (input_shape[0], *sizes, self.filters)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "strides": self.strides}
