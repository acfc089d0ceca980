"""PyTorch's default initialization, the papers' "uniform" baseline.

``torch.nn.Conv*d`` and ``torch.nn.Linear`` draw weights (and biases) from
``U[-b, b]`` with ``b = 1 / sqrt(fan_in)`` (``kaiming_uniform_(a=sqrt(5))``),
where ``fan_in = (cin / groups) * prod(kernel_size)``. Keras' default
``glorot_uniform`` differs, and counts a ``DepthwiseConv2D`` kernel's channel
axis as fan-in; this initializer reproduces the PyTorch baseline on Keras'
kernel layouts.
"""

from __future__ import annotations

import math

import keras

from keras_structinit import validation
from keras_structinit.initializer_base import SeededInitializer, resolve_dtype
from keras_structinit.walker import find_kernels, is_depthwise_layout, model_function, seed_generator

__all__ = ["TorchDefaultUniform", "apply_torch_uniform"]


def _check_shape(shape):
    """``shape`` as a tuple of positive ints; ``()`` (a scalar) passes, a zero-size axis does not."""
    if isinstance(shape, (tuple, list)) and len(shape) == 0:
        return ()
    return validation.positive_ints(shape, "shape")


@keras.saving.register_keras_serializable(package="keras_structinit")
class TorchDefaultUniform(SeededInitializer):
    """``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]``, PyTorch's default for conv/linear.

    ``fan_in`` is inferred from the kernel ``shape``:

    * ``depthwise=False`` (``Dense`` ``(in, out)``, ``Conv`` ``(*k, cin/groups,
      cout)``): ``fan_in = prod(shape[:-1])``;
    * ``depthwise=True`` (``DepthwiseConv`` ``(*k, C, multiplier)``):
      ``fan_in = prod(shape[:-2])``, since each output sees one input channel.

    Pass ``fan_in`` explicitly for biases (PyTorch bounds a bias by its
    weight's fan-in).

    Args:
        depthwise: whether ``shape`` is a depthwise kernel layout.
        fan_in: explicit fan-in, overriding the inference.
        seed: ``None``, an int or a ``keras.random.SeedGenerator``.
    """

    def __init__(self, depthwise=False, fan_in=None, seed=None):
        self.depthwise = validation.boolean(depthwise, "depthwise")
        self.fan_in = validation.optional(validation.positive_int, fan_in, "fan_in")
        super().__init__(seed=seed)

    def compute_fan_in(self, shape):
        shape = _check_shape(shape)
        if self.fan_in is not None:
            return self.fan_in
        min_rank = 3 if self.depthwise else 2
        if len(shape) < min_rank:
            raise ValueError(
                f"`shape` must have rank >= {min_rank} to infer fan_in "
                f"(depthwise={self.depthwise}); pass `fan_in` for biases. "
                f"Received: shape={shape!r}"
            )
        return math.prod(shape[:-2] if self.depthwise else shape[:-1])

    def __call__(self, shape, dtype=None):
        shape = _check_shape(shape)
        bound = 1.0 / math.sqrt(self.compute_fan_in(shape))
        return keras.random.uniform(
            shape, minval=-bound, maxval=bound, dtype=resolve_dtype(dtype), seed=self.seed
        )

    def get_config(self):
        config = super().get_config()
        config.update(depthwise=self.depthwise, fan_in=self.fan_in)
        return config


@model_function
def apply_torch_uniform(model, *, layers=None, seed=None, which="depthwise"):
    """Re-initializes a built model's spatial kernels with :class:`TorchDefaultUniform`.

    The papers' baseline applied after the fact, e.g. to a model whose
    builder used another default: kernel ``i`` gets ``U[-b, b]``,
    ``b = 1 / sqrt(fan_in)``, with the depthwise fan-in for depthwise layouts.

    Args:
        model: a built ``keras.Model``.
        layers: optional list of layer names/objects to restrict to.
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``.
        which: ``"depthwise"`` or ``"all_spatial"`` (see :mod:`keras_structinit.walker`).

    Returns:
        The re-initialized kernel variables' paths, in model order.
    """
    found = find_kernels(model, which=which, layers=layers)
    generator = seed_generator(seed)
    for layer, kernel in found:
        init = TorchDefaultUniform(depthwise=is_depthwise_layout(layer), seed=generator)
        kernel.assign(init(tuple(kernel.shape), dtype=kernel.dtype))
    return [kernel.path for _, kernel in found]
