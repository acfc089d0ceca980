"""Covariance transfer: filters sampled from a trained model's filter statistics.

Trockman et al. (ICLR 2023, Sec. 2, App. A) initialize a new model by sampling
each depthwise filter from the per-layer filter covariance of a trained one::

    vec(F) ~ N(mu(d) if use_mean else 0, Sigma(d)),   (mu(d), Sigma(d)) = bank.at_depth(d)

where ``d`` is the layer's depth fraction and the bank is a
:class:`~keras_structinit.covariance.FilterCovariance` (linear interpolation
between the source layers nearest in depth). Because only sampling is
involved, the target may be wider than the source; ``apply_covariance_transfer``
also handles other depths (interpolation) and kernel sizes (``resized``).
"""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_structinit import covariance as cov_math
from keras_structinit.covariance_transfer import FilterCovariance
from keras_structinit.initializers.base import SeededInitializer, check_kernel_shape
from keras_structinit.initializers.conv_covariance import sample_filters
from keras_structinit.layer_utils import resolve_seed_generator, spatial_depthwise_convs


def _as_bank(bank):
    if isinstance(bank, FilterCovariance):
        return bank
    if isinstance(bank, (str, os.PathLike)):
        return FilterCovariance.load(bank)
    if isinstance(bank, dict):  # from get_config: one layer, already at depth
        return FilterCovariance([bank["mean"]], [bank["covariance"]], tuple(bank["kernel_size"]))
    raise TypeError(
        "`bank` must be a FilterCovariance or the path of one saved with "
        f"FilterCovariance.save. Received: {type(bank).__name__}"
    )


@keras.saving.register_keras_serializable(package="keras_structinit")
class CovarianceTransfer(SeededInitializer):
    """Samples depthwise filters from a learned covariance at depth ``depth``.

    Args:
        bank: a :class:`~keras_structinit.covariance.FilterCovariance` or the
            path of a saved one.
        depth: depth fraction ``d`` in [0, 1] of the layer (``None``: 0, the
            first source layer). Models built by this package and
            :func:`apply_covariance_transfer` set it per layer.
        use_mean: also add the bank's mean filter ``mu(d)`` (Eq. 4).
        psd: ``"abs"`` or ``"clip"``, how an indefinite interpolated covariance
            is made sampleable (see :func:`keras_structinit.covariance.psd_factor`).
        seed: ``None``, an int or a ``keras.random.SeedGenerator``.

    Serialization: the config stores this layer's ``(mu(d), Sigma(d))`` as
    lists (``k^2 + k^4`` numbers), not the whole bank or a path, so a saved
    ``.keras`` model is self-contained.
    """

    def __init__(self, bank, depth=None, use_mean=False, psd="abs", seed=None):
        self._bank = _as_bank(bank)
        self.depth = 0.0 if depth is None else cov_math.check_depth_fraction(depth, "depth")
        if not isinstance(use_mean, bool):
            raise TypeError(f"`use_mean` must be a bool. Received: use_mean={use_mean!r}")
        self.use_mean = use_mean
        self.psd = cov_math.check_psd_mode(psd)
        self.kernel_size = self._bank.kernel_size
        self.mean, self.covariance = self._bank.at_depth(self.depth)
        self._factor = cov_math.psd_factor(self.covariance, psd)
        super().__init__(seed=seed)

    def at_depth(self, depth, index=0):
        """A copy for the ``index``-th layer, at depth fraction ``depth``.

        An int seed ``s`` becomes ``s + index`` (independent layers); a
        ``SeedGenerator`` is shared.
        """
        return type(self)(
            self._bank, depth=depth, use_mean=self.use_mean, psd=self.psd, seed=self.layer_seed(index)
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
            bank={
                "mean": self.mean.tolist(),
                "covariance": self.covariance.tolist(),
                "kernel_size": list(self.kernel_size),
            },
            depth=None,  # the stored statistics are already at this layer's depth
            use_mean=self.use_mean,
            psd=self.psd,
        )
        return config


def apply_covariance_transfer(model, bank, use_mean=False, kronecker=False, seed=None, psd="abs"):
    """Re-initializes a built model's depthwise filters from a filter bank.

    Layer ``i`` of the ``D`` spatial depthwise convs (found as in
    ``apply_conv_covariance``) gets depth fraction ``i / (D - 1)`` and filters
    sampled from ``bank.at_depth(i / (D - 1))``: any width (sampling), any
    depth (interpolation), any kernel size (``bank.resized`` first). With
    ``kronecker=True`` each covariance is first replaced by its nearest
    ``A kron A`` (``bank.kronecker()``, after resizing), which the paper found
    slightly better than the raw covariance.

    Returns:
        The re-initialized kernel variables' paths, in model order.
    """
    bank = _as_bank(bank)
    found = spatial_depthwise_convs(model)
    cov_math.check_psd_mode(psd)
    generator = resolve_seed_generator(seed)
    banks = {}
    for depth, (_, kernel) in zip(cov_math.depth_fractions(len(found)), found):
        size = tuple(kernel.shape[:-2])
        if size not in banks:
            sized = bank if size == bank.kernel_size else bank.resized(size)
            banks[size] = sized.kronecker()[0] if kronecker else sized
        init = CovarianceTransfer(banks[size], depth=depth, use_mean=use_mean, psd=psd, seed=generator)
        kernel.assign(init(tuple(kernel.shape), dtype=kernel.dtype))
    return [kernel.path for _, kernel in found]
