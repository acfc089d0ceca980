"""Covariance initialization of depthwise convolution filters.

Each 2-D slice ``kernel[..., a, b]`` over the spatial axes is one filter, sampled
i.i.d. as ``vec(F) = L z`` with ``z ~ N(0, I)`` and ``L L^T`` the PSD-handled
closed-form covariance ``Sigma'(sigma(d))`` of :mod:`keras_structinit.covariance`
(Eq. 1, 10, 11 of Trockman et al., ICLR 2023). This covers
``DepthwiseConv2D`` kernels ``(kh, kw, C, multiplier)``, grouped ``Conv2D``
kernels ``(kh, kw, cin / groups, cout)`` (keras.applications ConvNeXt's
depthwise layer is ``(7, 7, 1, C)``), plain ``Conv2D`` kernels, and the 1-D and
3-D analogues (``(k, C, m)``, ``(kd, kh, kw, C, m)``), for which the covariance
construction is applied per axis (an extension of the paper).
"""

from __future__ import annotations

import functools
import math

import keras

from keras_structinit import covariance as cov_math
from keras_structinit.initializers.base import (
    SeededInitializer,
    check_kernel_shape,
    resolve_dtype,
)
from keras_structinit.layer_utils import (
    resolve_seed_generator,
    spatial_depthwise_convs,
)


@functools.lru_cache(maxsize=256)
def _cached_factor(kernel_size, sigma, psd):
    factor = cov_math.psd_factor(cov_math.conv_covariance(kernel_size, sigma), psd)
    factor.setflags(write=False)
    return factor


def sample_filters(factor, shape, dtype, seed):
    """Draws ``prod(shape[-2:])`` filters ``vec(F) = factor @ z`` into ``shape``.

    ``factor`` is ``(n, n)`` with ``n = prod(shape[:-2])``; the flattened filter
    is row-major over the spatial axes, so ``reshape(f, shape)`` puts filter
    ``(a, b)`` at ``kernel[..., a, b]``.
    """
    dtype = resolve_dtype(dtype)
    compute_dtype = "float64" if dtype == "float64" else "float32"
    num_pixels = math.prod(shape[:-2])
    num_filters = shape[-2] * shape[-1]
    z = keras.random.normal((num_pixels, num_filters), seed=seed, dtype=compute_dtype)
    filters = keras.ops.matmul(keras.ops.convert_to_tensor(factor, compute_dtype), z)
    return keras.ops.cast(keras.ops.reshape(filters, shape), dtype)


@keras.saving.register_keras_serializable(package="keras_structinit")
class ConvCovariance(SeededInitializer):
    """Samples conv filters from the closed-form covariance ``Sigma'(sigma)``.

    ``sigma = sigma0 + v_sigma * d + 0.5 * a_sigma * d^2`` (Eq. 11) at depth
    fraction ``d = depth``; each filter is drawn from ``N(0, Sigma'(sigma))``
    (Eq. 1, 10) made PSD by ``psd`` and multiplied by ``scale``. There is no
    fan-in rescaling: the paper's filters have variance ~0.5 at the centre.

    Args:
        sigma0, v_sigma, a_sigma: schedule coefficients; each one given
            overrides the preset's.
        depth: depth fraction ``d`` in [0, 1] of the layer (``(i-1)/(D-1)``
            for the i-th of ``D`` depthwise layers).
        preset: one of ``"cifar-p2"`` (default), ``"cifar-p1"``,
            ``"imagenet-frozen"``, ``"imagenet-thawed"``, or ``None`` (then all
            three coefficients are required).
        psd: ``"abs"`` (covariance ``Q|Lambda|Q^T``, as
            ``numpy.random.multivariate_normal``) or ``"clip"``
            (``Q max(Lambda, 0) Q^T``).
        scale: multiplies every sample.
        seed: ``None``, an int (same values on each call) or a
            ``keras.random.SeedGenerator`` (fresh values on each call).

    Example:
        >>> init = ConvCovariance(depth=0.5, seed=0)
        >>> layer = keras.layers.DepthwiseConv2D(9, depthwise_initializer=init)
    """

    def __init__(
        self,
        sigma0=None,
        v_sigma=None,
        a_sigma=None,
        depth=0.0,
        preset="cifar-p2",
        psd="abs",
        scale=1.0,
        seed=None,
    ):
        self.schedule = cov_math.resolve_schedule(preset, sigma0, v_sigma, a_sigma)
        self.sigma0, self.v_sigma, self.a_sigma = sigma0, v_sigma, a_sigma
        self.preset = preset
        self.depth = cov_math.check_depth_fraction(depth, "depth")
        self.psd = cov_math.check_psd_mode(psd)
        self.scale = cov_math.check_finite(scale, "scale")
        self.sigma = cov_math.variance_schedule(self.depth, *self.schedule)
        super().__init__(seed=seed)

    def at_depth(self, depth, index=0):
        """A copy for the layer at depth fraction ``depth`` (the ``index``-th).

        Models built by this package call this once per depthwise layer, so
        one ``ConvCovariance`` passed as ``depthwise_initializer`` follows the
        variance schedule over depth. An int seed ``s`` becomes ``s + index``
        so that layers get independent samples; a ``SeedGenerator`` is shared
        (fresh values per layer); ``None`` stays ``None`` (a new random seed).
        """
        config = self.get_config()
        config.update(depth=depth, seed=self.layer_seed(index))
        return type(self).from_config(config)

    def covariance(self, kernel_size):
        """The PSD-handled ``Sigma'`` this initializer samples from (float64)."""
        factor = self.scale * _cached_factor(
            cov_math.normalize_kernel_size(kernel_size), self.sigma, self.psd
        )
        return factor @ factor.T

    def __call__(self, shape, dtype=None):
        shape = check_kernel_shape(shape)
        factor = self.scale * _cached_factor(tuple(shape[:-2]), self.sigma, self.psd)
        return sample_filters(factor, shape, dtype, self.seed)

    def get_config(self):
        config = super().get_config()
        config.update(
            sigma0=self.sigma0,
            v_sigma=self.v_sigma,
            a_sigma=self.a_sigma,
            depth=self.depth,
            preset=self.preset,
            psd=self.psd,
            scale=self.scale,
        )
        return config


def apply_conv_covariance(
    model,
    preset="cifar-p2",
    sigma0=None,
    v_sigma=None,
    a_sigma=None,
    psd="abs",
    seed=None,
    layers=None,
):
    """Re-initializes a built model's depthwise filters with :class:`ConvCovariance`.

    Finds the spatial depthwise convolutions (``DepthwiseConv1D/2D``, the
    depthwise part of ``SeparableConv1D/2D``, and ``Conv1D/2D/3D`` with
    ``groups`` equal to the input channels; kernels larger than 1 pixel) in
    model order, gives the i-th of ``D`` of them the depth fraction
    ``d = i / (D - 1)`` and overwrites its kernel in place with samples of
    ``ConvCovariance(depth=d, ...)``. Biases are untouched.

    Args:
        model: a built ``keras.Model`` (or layer).
        preset, sigma0, v_sigma, a_sigma, psd: as in :class:`ConvCovariance`.
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``;
            every layer gets different samples.
        layers: optional list of layer names or layer objects restricting the
            re-initialized layers (depth fractions are spread over these).

    Returns:
        The re-initialized kernel variables' paths, in model order.
    """
    found = spatial_depthwise_convs(model, layers=layers)
    cov_math.resolve_schedule(preset, sigma0, v_sigma, a_sigma)  # validate early
    cov_math.check_psd_mode(psd)
    generator = resolve_seed_generator(seed)
    inits = [
        ConvCovariance(
            sigma0=sigma0,
            v_sigma=v_sigma,
            a_sigma=a_sigma,
            depth=depth,
            preset=preset,
            psd=psd,
            seed=generator,
        )
        for depth in cov_math.depth_fractions(len(found))
    ]
    # All NumPy set-up first, then all backend work: interleaving the two makes
    # their thread pools compete (measured 2-6x slower on 2 cores with torch).
    for init, (_, kernel) in zip(inits, found):
        _cached_factor(tuple(kernel.shape[:-2]), init.sigma, psd)
    for init, (_, kernel) in zip(inits, found):
        kernel.assign(init(tuple(kernel.shape), dtype=kernel.dtype))
    return [kernel.path for _, kernel in found]
