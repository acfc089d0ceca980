"""``DepthwiseConv2D`` and ``GroupedConv2D``: Keras' stock layers on the fast depthwise op.

Both compute what their stock base computes, through
:func:`keras_structinit.ops.depthwise.depthwise_conv2d` (the shifted-sum form on CPU
XLA, the backend's kernel elsewhere; see that module for the math and the paths), and
keep their kernel's ``trainable`` flag in their config.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.layers.padding import SymmetricPadding
from keras_structinit.ops.depthwise import (
    check_implementation,
    convolve_by_path,
    depthwise_conv2d,
    select_implementation,
)
from keras_structinit.utils import validation

__all__ = ["DepthwiseConv2D", "GroupedConv2D", "depthwise_conv2d", "select_implementation"]


def _add_bias_and_activate(layer, outputs, channels):
    if layer.use_bias:
        if layer.data_format == "channels_last":
            shape = (1,) * (layer.rank + 1) + (channels,)
        else:
            shape = (1, channels) + (1,) * layer.rank
        outputs = ops.add(outputs, ops.reshape(layer.bias, shape))
    if layer.activation is not None:
        return layer.activation(outputs)
    return outputs


class _FastConv:
    """What both layers add to their stock base: ``implementation`` and ``kernel_trainable``.

    Keras does not save a variable's ``trainable`` flag, so the kernel's is
    kept in the config: ``get_config`` reports the flag the kernel variable
    has now (e.g. after ``freeze_spatial``), and ``build`` restores it.
    """

    def __init__(self, *args, implementation="auto", kernel_trainable=True, **kwargs):
        validation.boolean(kernel_trainable, "kernel_trainable")
        super().__init__(*args, **kwargs)
        self.implementation = check_implementation(implementation)
        self.kernel_trainable = kernel_trainable
        #: The path of the last call (trace): "shifted", "native" or "torch"; None before one.
        self.last_path = None

    def _convolve(self, inputs, kernel):
        """The depthwise convolution of ``inputs`` by ``kernel`` (``(kh, kw, C, m)``), its path chosen
        once per call (each trace of a compiled step) and recorded in ``last_path``; trainable and
        frozen kernels take the same one (:data:`keras_structinit.ops.depthwise.AUTO_PATHS`)."""
        self.last_path = select_implementation(
            self.implementation,
            self.data_format,
            self.dilation_rate,
            tuple(kernel.shape[:2]),
            keras.backend.standardize_dtype(inputs.dtype),
        )
        return convolve_by_path(
            self.last_path, inputs, kernel, self.strides, self.padding, self.data_format, self.dilation_rate
        )

    @property
    def _kernel_variable(self):
        # Conv2D keeps its variable in `_kernel` (`kernel` may add a LoRA update).
        kernel = getattr(self, "_kernel", None)
        return self.kernel if kernel is None else kernel

    def build(self, input_shape):
        super().build(input_shape)
        if not self.kernel_trainable:  # never un-freeze what Keras froze (LoRA)
            self._kernel_variable.trainable = False

    def get_config(self):
        trainable = self._kernel_variable.trainable if self.built else self.kernel_trainable
        return {**super().get_config(), "implementation": self.implementation, "kernel_trainable": trainable}


@keras.saving.register_keras_serializable(package="keras_structinit")
class DepthwiseConv2D(SymmetricPadding, _FastConv, keras.layers.DepthwiseConv2D):
    """``keras.layers.DepthwiseConv2D`` computed by the fastest path per backend.

    Same arguments, weights (names, shapes, layout) and outputs as the stock
    layer, and ``padding="symmetric"`` (PyTorch's ``padding=k // 2``,
    :mod:`keras_structinit.ops.padding`); :func:`depthwise_conv2d` picks the computation. ``implementation``
    (``"auto"``, ``"native"``, ``"shifted"``) forces a path, for benchmarks
    and tests. ``kernel_trainable=False`` freezes the kernel, and is saved.
    """

    def call(self, inputs):
        inputs = self.pad_inputs(inputs)
        outputs = self._convolve(inputs, self.kernel)
        channels = self._get_input_channel(inputs.shape) * self.depth_multiplier
        return _add_bias_and_activate(self, outputs, channels)


@keras.saving.register_keras_serializable(package="keras_structinit")
class GroupedConv2D(SymmetricPadding, _FastConv, keras.layers.Conv2D):
    """``keras.layers.Conv2D`` taking the fast depthwise path when ``groups == C``, and
    ``padding="symmetric"`` (:mod:`keras_structinit.ops.padding`).

    With ``groups`` equal to the input channels (kernel ``(kh, kw, 1, F)``, the
    form of keras.applications ConvNeXt's depthwise convs), the kernel is the
    depthwise kernel ``(kh, kw, C, F / C)`` reshaped, and the convolution runs
    through :func:`depthwise_conv2d`; otherwise this is the stock layer.
    ``implementation`` and ``kernel_trainable`` as for :class:`DepthwiseConv2D`.
    """

    def convolution_op(self, inputs, kernel):
        kh, kw, in_per_group, filters = kernel.shape
        if in_per_group != 1 or self.groups == 1 or self.data_format != "channels_last":
            return super().convolution_op(inputs, kernel)
        depthwise = ops.reshape(kernel, (kh, kw, self.groups, filters // self.groups))
        return self._convolve(inputs, depthwise)
