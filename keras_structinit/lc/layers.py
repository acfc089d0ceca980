"""The LC block layer and the shared spatial-kernel bank.

``LCConv2D`` computes a ``k x k`` convolution ``c_in -> M = filters * E``
followed by a ``1 x 1`` convolution ``M -> filters``, nothing in between::

    y = conv_{1x1}(conv_{k x k}(x, S), P) (+ b) = conv_{k x k}(x, K),   K = S P      (1)

(Gavrikov & Keuper, Fig. 5 and Definition 3.1). ``S`` is frozen random by
default (``frozen=True``, saved in the layer config so it survives a
``.keras`` round trip); ``fold()`` returns ``K``. With a
:class:`SharedKernelBank`, ``S`` is not a variable of its own but a scaled
slice of the model's single bank (see :mod:`keras_structinit.lc.sharing`).
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.lc.folding import fold_kernels
from keras_structinit.lc.sharing import bank_kernel, bank_size, check_bank_fits, kernel_scale
from keras_structinit.ops.padding import SYMMETRIC, symmetric_output_size, symmetric_pad
from keras_structinit.utils import validation

__all__ = ["PADDINGS", "LCConv2D", "SharedKernelBank"]

#: Paddings of :class:`LCConv2D` (Keras' meanings).
PADDINGS = ("same", "valid", SYMMETRIC)


def _pair(value, name):
    """An int ``v`` as ``(v, v)``, or a pair of positive ints, as a tuple."""
    value = validation.kernel_size(value, name)
    if len(value) != 2:
        raise ValueError(
            f"`{name}` must be a positive int or a pair of positive ints. Received: {name}={value}"
        )
    return value


def _serialize_shared(obj):
    """``obj``'s config, marked as shared when Keras saves a model.

    ``model.save`` and ``load_model`` run in Keras' object-sharing scope: an
    object serialized twice gets a ``shared_object_id`` and is restored once.
    Keras copies each layer's config before a later layer can mark the first
    copy, so the first layer's entry would lack the mark and load a bank of
    its own; serializing twice marks every layer's entry.
    """
    keras.saving.serialize_keras_object(obj)
    return keras.saving.serialize_keras_object(obj)


@keras.saving.register_keras_serializable(package="keras_structinit")
class SharedKernelBank(keras.layers.Layer):
    """One frozen tensor ``W_s ~ U[-1, 1]`` of ``size`` values, sliced by LC layers.

    Pass the same instance as ``bank=`` to every :class:`LCConv2D` of a model:
    the model then holds one bank variable (``values``, path ``{name}/bank``), saved once in a
    ``.keras`` file, and the layers' kernels are
    ``s * W_s[0 : n]`` reshaped (PyTorch's ``(c_out, c_in, kh, kw)`` order,
    ``s = 1 / sqrt(c_in kh kw)``; :func:`keras_structinit.lc.sharing.bank_kernel`).
    Sharing survives ``.keras`` round trips (Keras restores an object shared
    by several layers once); a bare ``get_config``/``from_config`` copy does
    not share it.

    Args:
        size: ``len(W_s)``: the largest kernel's entry count for global sharing,
            less with ``recycle=True`` (:func:`~keras_structinit.lc.sharing.bank_size`).
        recycle: repeat ``W_s`` for kernels larger than it (recycled sharing);
            without it such a kernel is an error.
        seed: ``None`` or an int in ``[0, 2**32 - 1]``, the seed of ``W_s``.

    Example:

    ```python
    bank = SharedKernelBank.for_shapes([(3, 3, 16, 128), (3, 3, 32, 256)], fraction=1 / 16)
    conv = LCConv2D(32, 3, expansion=8, bank=bank)
    ```
    """

    def __init__(self, size, recycle=False, seed=None, **kwargs):
        kwargs.setdefault("name", "shared_kernel_bank")
        super().__init__(**kwargs)
        self.size = validation.positive_int(size, "size")
        self.recycle = validation.boolean(recycle, "recycle")
        self.seed = validation.optional(validation.random_seed, seed, "seed")
        self.values = self.add_weight(
            name="bank",
            shape=(self.size,),
            initializer=keras.initializers.RandomUniform(-1.0, 1.0, seed=self.seed),
            trainable=False,
        )
        self.built = True

    @classmethod
    def for_shapes(cls, shapes, fraction=None, seed=None, **kwargs):
        """The bank for kernels of ``shapes``: global (``fraction=None``) or recycled."""
        return cls(bank_size(shapes, fraction), recycle=fraction is not None, seed=seed, **kwargs)

    def check_fits(self, shape):
        """``ValueError`` unless a kernel of ``shape`` can be sliced from this bank."""
        check_bank_fits(self.size, shape, self.recycle)

    def kernel(self, shape):
        """The unscaled Keras kernel ``reshape(W_s[0 : n], (c_out, c_in, kh, kw))^T`` (a tensor)."""
        kh, kw, c_in, c_out = shape
        n = math.prod(shape)
        values = self.values
        if n > self.size:
            values = ops.tile(values, (-(-n // self.size),))
        values = ops.reshape(values[:n], (c_out, c_in, kh, kw))
        return ops.transpose(values, (2, 3, 1, 0))

    def get_config(self):
        return {**super().get_config(), "size": self.size, "recycle": self.recycle, "seed": self.seed}


@keras.saving.register_keras_serializable(package="keras_structinit")
class LCConv2D(keras.layers.Layer):
    """LC block: ``k x k`` conv ``c_in -> filters * E``, then ``1 x 1`` conv to ``filters`` (Eq. 1).

    Weights: ``spatial_kernel`` ``(kh, kw, c_in, filters * E)`` (``None`` with
    a ``bank``), ``pointwise_kernel`` ``(1, 1, filters * E, filters)`` and,
    with ``use_bias``, ``bias``. The defaults are PyTorch's (the paper's):
    ``U[-a, a]``, ``a = 1 / sqrt(c_in k^2)`` and ``U[-b, b]``,
    ``b = 1 / sqrt(filters * E)``
    (:class:`~keras_structinit.initializers.TorchDefaultUniform`), and no bias.
    Channels last.

    Args:
        filters: output channels.
        kernel_size: int or ``(kh, kw)``.
        expansion: ``E >= 1``, spatial filters per output channel.
        strides: of the spatial conv, int or pair.
        padding: the spatial conv's: ``"same"``, ``"valid"`` or ``"symmetric"``
            (PyTorch's ``padding=k // 2``, the paper's model: at stride 2 it centres
            output ``i`` on input ``2i``, as the option-A shortcut does;
            :mod:`keras_structinit.ops.padding`).
        frozen: the spatial kernel is non-trainable from construction; saved
            in the config, and it follows the variable's flag (e.g. after
            :func:`keras_structinit.freeze_spatial`).
        spatial_initializer, pointwise_initializer, bias_initializer: anything
            ``keras.initializers.get`` accepts; ``None`` for PyTorch's defaults.
        bank: a :class:`SharedKernelBank` to slice the spatial kernel from
            (always frozen: ``frozen=False`` is an error).
        use_bias: add a bias after the pointwise conv.
        pointwise_regularizer: e.g. ``keras.regularizers.L1(5e-5)`` (Eq. 5);
            see :func:`keras_structinit.lc.apply_pointwise_l1`.
        **kwargs: base layer arguments (``name``, ``dtype``).

    Example:

    ```python
    conv = LCConv2D(16, 3, expansion=8)        # frozen random 3x3 filters
    y = conv(np.zeros((2, 32, 32, 3), "float32"))
    kernel = conv.fold()                       # (3, 3, 3, 16), the equivalent conv
    ```
    """

    def __init__(
        self,
        filters,
        kernel_size,
        expansion=1,
        strides=1,
        padding="same",
        frozen=True,
        spatial_initializer=None,
        pointwise_initializer=None,
        bank=None,
        use_bias=False,
        bias_initializer=None,
        pointwise_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.filters = validation.positive_int(filters, "filters")
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.expansion = validation.positive_int(expansion, "expansion")
        self.strides = _pair(strides, "strides")
        self.padding = validation.one_of(padding, "padding", PADDINGS)
        self.frozen = validation.boolean(frozen, "frozen")
        self.use_bias = validation.boolean(use_bias, "use_bias")
        if bank is not None and not isinstance(bank, SharedKernelBank):
            raise TypeError(
                "`bank` must be None or a SharedKernelBank. "
                f"Received: bank={bank!r} of type {type(bank).__name__}"
            )
        if bank is not None and not frozen:
            raise ValueError(
                "A shared kernel bank is frozen: pass frozen=True with `bank`. Received: frozen=False"
            )
        self.bank = bank
        self.spatial_initializer = keras.initializers.get(spatial_initializer or TorchDefaultUniform())
        self.pointwise_initializer = keras.initializers.get(pointwise_initializer or TorchDefaultUniform())
        self.bias_initializer = keras.initializers.get(
            bias_initializer or TorchDefaultUniform(fan_in=self.filters * self.expansion)
        )
        self.pointwise_regularizer = keras.regularizers.get(pointwise_regularizer)
        self.spatial_kernel = None

    @property
    def width(self):
        """``M = filters * E``, the spatial conv's output channels."""
        return self.filters * self.expansion

    def build(self, input_shape):
        validation.shape_rank(input_shape, 4, "input_shape", "(batch, height, width, channels)")
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(f"LCConv2D {self.name!r} needs a known number of input channels: {input_shape}")
        if self.padding == "valid" and any(
            size is not None and size < k for size, k in zip(input_shape[1:3], self.kernel_size, strict=True)
        ):
            raise ValueError(
                f"`padding`='valid' needs inputs at least as large as the kernel {self.kernel_size}; "
                f"LCConv2D {self.name!r} received input shape {tuple(input_shape)}. Use padding='same'."
            )
        self.spatial_shape = (*self.kernel_size, int(channels), self.width)
        if self.bank is None:
            self.spatial_kernel = self.add_weight(
                name="spatial_kernel",
                shape=self.spatial_shape,
                initializer=self.spatial_initializer,
                trainable=not self.frozen,
            )
        else:
            self.bank.check_fits(self.spatial_shape)
        self.pointwise_kernel = self.add_weight(
            name="pointwise_kernel",
            shape=(1, 1, self.width, self.filters),
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
        )
        self.bias = (
            self.add_weight(name="bias", shape=(self.filters,), initializer=self.bias_initializer)
            if self.use_bias
            else None
        )

    def effective_spatial_kernel(self):
        """``S``: the spatial kernel variable, or its slice of the bank times ``s``."""
        if self.bank is None:
            return self.spatial_kernel
        return self.bank.kernel(self.spatial_shape) * kernel_scale(self.spatial_shape)

    def call(self, inputs):
        padding = self.padding
        if padding == SYMMETRIC:
            inputs, padding = symmetric_pad(inputs, self.kernel_size), "valid"
        y = ops.conv(inputs, self.effective_spatial_kernel(), strides=self.strides, padding=padding)
        y = ops.matmul(y, ops.reshape(self.pointwise_kernel, (self.width, self.filters)))
        return y + self.bias if self.use_bias else y

    def compute_output_shape(self, input_shape):
        def size(n, k, s):
            if n is None:
                return None
            if self.padding == SYMMETRIC:
                return symmetric_output_size(n, k, s)
            return -(-n // s) if self.padding == "same" else (n - k) // s + 1

        sizes = [
            size(n, k, s) for n, k, s in zip(input_shape[1:3], self.kernel_size, self.strides, strict=True)
        ]
        return (input_shape[0], *sizes, self.filters)

    def fold(self):
        """``K = S P`` (Eq. 1): the ``(kh, kw, c_in, filters)`` kernel of the equivalent conv.

        Computed in float64 from the stored values (the bank's slice in float64
        too); the bias, if any, is the folded conv's bias unchanged.
        """
        if not self.built:
            raise ValueError(f"LCConv2D {self.name!r} must be built before it can be folded.")
        if self.bank is None:
            spatial = keras.ops.convert_to_numpy(self.spatial_kernel)
        else:
            bank = keras.ops.convert_to_numpy(self.bank.values)
            spatial = bank_kernel(bank, self.spatial_shape, self.bank.recycle)
            spatial *= kernel_scale(self.spatial_shape)
        return fold_kernels(spatial, np.asarray(keras.ops.convert_to_numpy(self.pointwise_kernel)))

    def get_config(self):
        frozen = self.frozen
        if self.built and self.spatial_kernel is not None:
            frozen = not self.spatial_kernel.trainable  # e.g. after freeze_spatial
        regularizer = self.pointwise_kernel.regularizer if self.built else self.pointwise_regularizer
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "expansion": self.expansion,
            "strides": self.strides,
            "padding": self.padding,
            "frozen": frozen,
            "spatial_initializer": keras.initializers.serialize(self.spatial_initializer),
            "pointwise_initializer": keras.initializers.serialize(self.pointwise_initializer),
            "bank": None if self.bank is None else _serialize_shared(self.bank),
            "use_bias": self.use_bias,
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "pointwise_regularizer": keras.regularizers.serialize(regularizer) if regularizer else None,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("bank"), dict):
            # Inside a .keras load, Keras returns the one object for every layer sharing it.
            config["bank"] = keras.saving.deserialize_keras_object(config["bank"])
        return cls(**config)
