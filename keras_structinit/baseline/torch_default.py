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

from keras_structinit.baseline.sampling import assign, uniform, variable_rngs
from keras_structinit.engine.contract import model_function
from keras_structinit.engine.initializer_base import SeededInitializer, check_seed, resolve_dtype
from keras_structinit.engine.walker import find_kernels, is_depthwise_layout, iter_layers, resolve_layers
from keras_structinit.utils import validation

__all__ = [
    "TorchDefaultUniform",
    "apply_torch_default",
    "apply_torch_uniform",
    "conv_and_dense_variables",
    "torch_default_fan_ins",
]


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
        seed: ``None``, an int (reproducible: the same values on every backend) or a
            ``keras.random.SeedGenerator``; each kernel is drawn in NumPy from its own generator,
            seeded from ``seed`` and its place in the model
            (:func:`~keras_structinit.baseline.sampling.variable_rngs`).
        which: ``"depthwise"`` or ``"all_spatial"`` (see :mod:`keras_structinit.engine.walker`).

    Returns:
        The re-initialized kernel variables' paths, in model order.
    """
    check_seed(seed)
    found = find_kernels(model, which=which, layers=layers)
    rngs = variable_rngs(seed, model, [kernel for _, kernel in found])
    for (layer, kernel), rng in zip(found, rngs, strict=True):
        shape = tuple(kernel.shape)
        fan_in = TorchDefaultUniform(depthwise=is_depthwise_layout(layer)).compute_fan_in(shape)
        assign(kernel, uniform(rng, shape, 1.0 / math.sqrt(fan_in)))
    return [kernel.path for _, kernel in found]


def _einsum_fan_in(layer):
    """Fan-in of an ``EinsumDense`` kernel: the product of its axes summed over (in the input, not
    the output)."""
    inputs, output = layer.equation.split("->")
    source, kernel_axes = inputs.split(",")
    return math.prod(
        size
        for axis, size in zip(kernel_axes, layer.kernel.shape, strict=True)
        if axis in source and axis not in output
    )


def torch_default_fan_ins(layer):
    """``[(variable, fan_in), ...]``: the variables of a built ``layer`` that PyTorch's default init draws.

    The layers PyTorch has an equivalent of: ``Dense`` and ``EinsumDense``
    (``nn.Linear``), ``Conv1D/2D/3D`` with any ``groups`` and their transposes
    (``nn.Conv*d``, ``nn.ConvTranspose*d``), ``DepthwiseConv1D/2D`` (``groups ==
    C``: fan-in ``prod(k)``) and ``SeparableConv1D/2D`` (a depthwise and a 1x1
    conv), subclasses included. A bias takes its weight's fan-in, as in PyTorch.
    Any other layer (normalizations, embeddings, LC blocks) gives ``[]``.
    """
    layers = keras.layers
    if isinstance(layer, (layers.SeparableConv1D, layers.SeparableConv2D)):
        pointwise = layer.pointwise_kernel
        fan_ins = [
            (layer.depthwise_kernel, math.prod(layer.depthwise_kernel.shape[:-2])),
            (pointwise, math.prod(pointwise.shape[:-1])),
        ]
    elif isinstance(layer, (layers.DepthwiseConv1D, layers.DepthwiseConv2D)):
        fan_ins = [(layer.kernel, math.prod(layer.kernel.shape[:-2]))]
    elif isinstance(
        layer,
        (
            layers.Dense,
            layers.Conv1D,
            layers.Conv2D,
            layers.Conv3D,
            layers.Conv1DTranspose,
            layers.Conv2DTranspose,
            layers.Conv3DTranspose,
        ),
    ):
        fan_ins = [(layer.kernel, math.prod(layer.kernel.shape[:-1]))]
    elif isinstance(layer, layers.EinsumDense):
        fan_ins = [(layer.kernel, _einsum_fan_in(layer))]
    else:
        return []
    bias = getattr(layer, "bias", None)
    if bias is not None:
        fan_ins.append((bias, fan_ins[-1][1]))
    return fan_ins


def conv_and_dense_variables(model, layers, drawn_by):
    """``[(variable, fan_in), ...]`` of :func:`torch_default_fan_ins` over ``model``'s layers (or
    ``layers``); ``ValueError`` for none, or for a layer of ``layers`` without such variables."""
    candidates = [*iter_layers(model), model] if layers is None else resolve_layers(model, layers)
    found = []
    for layer in candidates:
        fan_ins = torch_default_fan_ins(layer)
        if layers is not None and not fan_ins:
            raise ValueError(
                f"`layers` includes {layer.name!r}, which has no conv or Dense weights that {drawn_by}."
            )
        found += fan_ins
    if not found:
        raise ValueError(
            f"`model` ({model.name}) has no conv or Dense layer (Conv*, DepthwiseConv*, "
            "SeparableConv*, Dense, EinsumDense)."
        )
    return found


@model_function
def apply_torch_default(model, *, layers=None, seed=None):
    """Re-initializes every conv and Dense layer of a built model as PyTorch does by default.

    Each kernel and bias found by :func:`torch_default_fan_ins` is drawn from
    ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]`` (:class:`TorchDefaultUniform`), the
    baseline of the mimetic paper (Trockman & Kolter, Sec. 3: PyTorch's default
    in place of ConvNeXt's ``N(0, 0.02^2)`` kernels and zero biases) and of the
    covariance and LC papers. Normalization layers, embeddings, tokens, layer
    scales and layers without a PyTorch counterpart (``LCConv2D``) keep their values.

    Args:
        model: a built ``keras.Model`` (nested models are searched).
        layers: optional list of layer names/objects to restrict to; each must hold such variables.
        seed: ``None``, an int (reproducible: the same values on every backend) or a
            ``keras.random.SeedGenerator``; every variable gets its own samples, drawn in NumPy in
            one call from a generator seeded from ``seed`` and its place in the model
            (:func:`~keras_structinit.baseline.sampling.variable_rngs`).

    Returns:
        The re-initialized variables' paths (kernel, then bias), in model order.

    Raises:
        ValueError: the model (or a layer of ``layers``) has no conv or Dense layer.
    """
    check_seed(seed)
    found = conv_and_dense_variables(model, layers, "PyTorch's default init draws")
    rngs = variable_rngs(seed, model, [variable for variable, _ in found])
    for (variable, fan_in), rng in zip(found, rngs, strict=True):
        assign(variable, uniform(rng, tuple(variable.shape), 1.0 / math.sqrt(fan_in)))
    return [variable.path for variable, _ in found]
