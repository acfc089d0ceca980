"""``padding="symmetric"`` (PyTorch's ``padding=k // 2``) for Keras' conv and pooling layers.

A mixin put before a Keras base layer: it takes ``padding="symmetric"``, gives the
base ``"valid"``, pads the input itself (:func:`keras_structinit.ops.padding.symmetric_pad`)
and keeps ``"symmetric"`` in the config. Every other padding goes to the base as given.
"""

from __future__ import annotations

from keras_structinit.ops.padding import SYMMETRIC, symmetric_pad, symmetric_padding

__all__ = ["SymmetricPadding"]


class SymmetricPadding:
    """Adds ``padding="symmetric"`` to a Keras conv or pooling base (see :mod:`keras_structinit.ops.padding`).

    Subclasses that override ``call`` start it with ``inputs = self.pad_inputs(inputs)``.
    """

    #: What a padded pixel holds (``-inf`` for a max-pool).
    pad_value = 0.0

    def __init__(self, *args, padding="valid", **kwargs):
        self.symmetric = isinstance(padding, str) and padding.lower() == SYMMETRIC
        super().__init__(*args, padding="valid" if self.symmetric else padding, **kwargs)

    def _window(self):
        size = getattr(self, "kernel_size", None) or self.pool_size
        return tuple(size), tuple(getattr(self, "dilation_rate", (1,) * len(size)))

    def pad_inputs(self, inputs):
        """``inputs`` padded on both sides when ``padding="symmetric"``, else unchanged."""
        if not self.symmetric:
            return inputs
        size, dilation = self._window()
        return symmetric_pad(inputs, size, dilation, self.data_format, self.pad_value)

    def call(self, inputs):
        return super().call(self.pad_inputs(inputs))

    def compute_output_shape(self, input_shape):
        if self.symmetric:
            size, dilation = self._window()
            first = 1 if self.data_format == "channels_last" else 2
            input_shape = list(input_shape)
            for axis, pad in enumerate(symmetric_padding(size, dilation), start=first):
                if input_shape[axis] is not None:
                    input_shape[axis] += 2 * pad
        return super().compute_output_shape(tuple(input_shape))

    def get_config(self):
        config = super().get_config()
        if self.symmetric:
            config["padding"] = SYMMETRIC
        return config
