"""The covariance method's initializers: closed-form and transferred covariances.

``ConvCovariance`` samples filters from the closed-form covariance;
``CovarianceTransfer`` samples them from a trained model's measured
statistics. Both draw ``vec(F) = L z (+ mu)`` through :func:`sample_filters`.

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
import os

import keras
import numpy as np

from keras_structinit.covariance.bank import FilterCovariance
from keras_structinit.covariance.closed_form import conv_covariance
from keras_structinit.covariance.psd import PSD_MODES, psd_factor
from keras_structinit.covariance.schedule import resolve_schedule, variance_schedule
from keras_structinit.engine.initializer_base import SeededInitializer, check_kernel_shape, resolve_dtype
from keras_structinit.utils import validation

__all__ = ["ConvCovariance", "CovarianceTransfer", "sample_filters"]


def _depth_fraction(value):
    return validation.fraction(value, "depth_fraction", "a depth fraction in [0, 1]")


@functools.lru_cache(maxsize=256)
def _cached_factor(kernel_size, sigma, psd):
    factor = psd_factor(conv_covariance(kernel_size, sigma), psd)
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
        depth_fraction: depth fraction ``d`` in [0, 1] of the layer
            (``(i-1)/(D-1)`` for the i-th of ``D`` depthwise layers).
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
        >>> init = ConvCovariance(depth_fraction=0.5, seed=0)
        >>> layer = keras.layers.DepthwiseConv2D(9, depthwise_initializer=init)
    """

    def __init__(
        self,
        sigma0=None,
        v_sigma=None,
        a_sigma=None,
        depth_fraction=None,
        preset="cifar-p2",
        psd="abs",
        scale=1.0,
        seed=None,
    ):
        self.schedule = resolve_schedule(preset, sigma0, v_sigma, a_sigma)
        self.sigma0, self.v_sigma, self.a_sigma = sigma0, v_sigma, a_sigma
        self.preset = preset
        self.depth_fraction = _depth_fraction(0.0 if depth_fraction is None else depth_fraction)
        self.psd = validation.one_of(psd, "psd", PSD_MODES)
        self.scale = validation.finite_float(scale, "scale")
        self.sigma = variance_schedule(self.depth_fraction, *self.schedule)
        super().__init__(seed=seed)

    def at_depth(self, depth_fraction, index=0):
        """A copy for the layer at ``depth_fraction`` (the ``index``-th).

        Models built by this package call this once per depthwise layer, so
        one ``ConvCovariance`` passed as ``depthwise_initializer`` follows the
        variance schedule over depth. An int seed ``s`` becomes ``s + index``
        so that layers get independent samples; a ``SeedGenerator`` is shared
        (fresh values per layer); ``None`` stays ``None`` (a new random seed).
        """
        config = self.get_config()
        config.update(depth_fraction=depth_fraction, seed=self.layer_seed(index))
        return type(self).from_config(config)

    def covariance(self, kernel_size):
        """The PSD-handled ``Sigma'`` this initializer samples from (float64)."""
        factor = self.scale * _cached_factor(validation.kernel_size(kernel_size), self.sigma, self.psd)
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
            depth_fraction=self.depth_fraction,
            preset=self.preset,
            psd=self.psd,
            scale=self.scale,
        )
        return config


def _as_bank(bank):
    if isinstance(bank, FilterCovariance):
        return bank
    if isinstance(bank, (str, os.PathLike)):
        return FilterCovariance.load(bank)
    if isinstance(bank, dict) and "mean" in bank:  # configs of version 0.1: one layer, at its depth
        return FilterCovariance([bank["mean"]], [bank["covariance"]], tuple(bank["kernel_size"]))
    if isinstance(bank, dict):  # from get_config
        return FilterCovariance.from_config(bank)
    raise TypeError(
        "`bank` must be a FilterCovariance or the path of one saved with "
        f"FilterCovariance.save. Received: {type(bank).__name__}"
    )


@keras.saving.register_keras_serializable(package="keras_structinit")
class CovarianceTransfer(SeededInitializer):
    """Samples depthwise filters from a learned covariance at ``depth_fraction``.

    Args:
        bank: a :class:`~keras_structinit.covariance.FilterCovariance` or the
            path of a saved one.
        depth_fraction: depth fraction ``d`` in [0, 1] of the layer (``None``:
            0, the first source layer). Models built by this package and
            :func:`apply_covariance_transfer` set it per layer.
        use_mean: also add the bank's mean filter ``mu(d)`` (Eq. 4).
        psd: ``"abs"`` or ``"clip"``, how an indefinite interpolated covariance
            is made sampleable (see :func:`keras_structinit.covariance.psd_factor`).
        seed: ``None``, an int or a ``keras.random.SeedGenerator``.

    Serialization: the config holds the whole bank
    (:meth:`FilterCovariance.get_config`, exact float64) and the depth
    fraction, so a saved ``.keras`` model is self-contained and a reloaded
    initializer answers :meth:`at_depth` for every depth as the original did.

    Example:
        >>> bank = FilterCovariance.load("convmixer_32_8.npz")
        >>> init = CovarianceTransfer(bank, depth_fraction=0.5, seed=0)
    """

    def __init__(self, bank, depth_fraction=None, use_mean=False, psd="abs", seed=None):
        self.bank = _as_bank(bank)
        self.depth_fraction = _depth_fraction(0.0 if depth_fraction is None else depth_fraction)
        self.use_mean = validation.boolean(use_mean, "use_mean")
        self.psd = validation.one_of(psd, "psd", PSD_MODES)
        self.kernel_size = self.bank.kernel_size
        self.mean, self.covariance = self.bank.at_depth(self.depth_fraction)
        self._factor = psd_factor(self.covariance, psd)
        super().__init__(seed=seed)

    def at_depth(self, depth_fraction, index=0):
        """A copy for the ``index``-th layer, at ``depth_fraction``.

        An int seed ``s`` becomes ``s + index`` (independent layers); a
        ``SeedGenerator`` is shared.
        """
        return type(self)(
            self.bank,
            depth_fraction=depth_fraction,
            use_mean=self.use_mean,
            psd=self.psd,
            seed=self.layer_seed(index),
        )

    def __call__(self, shape, dtype=None):
        shape = check_kernel_shape(shape)
        if tuple(shape[:-2]) != self.kernel_size:
            raise ValueError(
                f"The bank holds {self.kernel_size} filters but the kernel has shape "
                f"{tuple(shape)}; use `bank.resized({tuple(shape[:-2])})` or "
                "keras_structinit.apply_covariance_transfer, which resizes."
            )
        filters = sample_filters(self._factor, shape, dtype, self.seed)
        if self.use_mean:
            mean = np.reshape(self.mean, self.kernel_size + (1, 1))
            filters = filters + keras.ops.cast(mean, filters.dtype)
        return filters

    def get_config(self):
        config = super().get_config()
        config.update(
            bank=self.bank.get_config(),
            depth_fraction=self.depth_fraction,
            use_mean=self.use_mean,
            psd=self.psd,
        )
        return config
