"""Model-level functions of the covariance method.

Both walk the model with :func:`keras_structinit.engine.walker.find_kernels` and give
the i-th of the ``D`` kernels found the depth fraction ``d = i / (D - 1)``::

    apply_conv_covariance(model, *, layers=None, seed=None, preset=..., ...) -> paths
    apply_covariance_transfer(model, *, bank, layers=None, seed=None, ...) -> paths
"""

from __future__ import annotations

from keras_structinit.covariance.bank import RESIZE_METHODS
from keras_structinit.covariance.initializers import (
    ConvCovariance,
    CovarianceTransfer,
    _as_bank,
    _cached_factor,
)
from keras_structinit.covariance.psd import PSD_MODES
from keras_structinit.covariance.schedule import depth_fractions, resolve_schedule
from keras_structinit.engine.contract import model_function
from keras_structinit.engine.initializer_base import seed_generator
from keras_structinit.engine.walker import find_kernels
from keras_structinit.utils import validation

__all__ = ["apply_conv_covariance", "apply_covariance_transfer"]


def _assign_all(found, inits):
    """Samples every kernel from its initializer; returns the variable paths."""
    for init, (_, kernel) in zip(inits, found, strict=True):
        kernel.assign(init(tuple(kernel.shape), dtype=kernel.dtype))
    return [kernel.path for _, kernel in found]


@model_function
def apply_conv_covariance(
    model,
    *,
    layers=None,
    seed=None,
    preset="cifar-p2",
    sigma0=None,
    v_sigma=None,
    a_sigma=None,
    psd="abs",
    which="depthwise",
):
    """Re-initializes a built model's spatial filters with :class:`ConvCovariance`.

    The i-th of the ``D`` kernels found gets ``ConvCovariance(depth_fraction=i / (D - 1))``
    samples (Eq. 1, 10, 11); biases are untouched.

    Args:
        model: a built ``keras.Model`` (nested models are searched).
        layers: optional list of layer names or layer objects restricting the
            re-initialized layers (depth fractions are spread over these).
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``;
            every layer gets different samples.
        preset, sigma0, v_sigma, a_sigma, psd: as in :class:`ConvCovariance`.
        which: ``"depthwise"`` (default: depthwise/grouped convs) or
            ``"all_spatial"`` (every conv larger than 1x1).

    Returns:
        The re-initialized kernel variables' paths, in model order.

    Example:
        >>> paths = apply_conv_covariance(model, preset="cifar-p2", seed=0)
    """
    resolve_schedule(preset, sigma0, v_sigma, a_sigma)  # validate before walking
    validation.one_of(psd, "psd", PSD_MODES)
    found = find_kernels(model, which=which, layers=layers)
    generator = seed_generator(seed)
    inits = [
        ConvCovariance(sigma0, v_sigma, a_sigma, depth_fraction=d, preset=preset, psd=psd, seed=generator)
        for d in depth_fractions(len(found))
    ]
    # All NumPy set-up first, then all backend work: interleaving the two makes
    # their thread pools compete (measured 2-6x slower on 2 cores with torch).
    for init, (_, kernel) in zip(inits, found, strict=True):
        _cached_factor(tuple(kernel.shape[:-2]), init.sigma, psd)
    return _assign_all(found, inits)


@model_function
def apply_covariance_transfer(
    model,
    *,
    bank,
    layers=None,
    seed=None,
    use_mean=False,
    kronecker=False,
    psd="abs",
    resize="blocks",
):
    """Re-initializes a built model's depthwise filters from a filter bank.

    Layer ``i`` of the ``D`` spatial depthwise convs gets filters sampled from
    ``bank.at_depth(i / (D - 1))``: any width (sampling), any depth
    (interpolation), any kernel size (``bank.resized`` first). With
    ``kronecker=True`` each covariance is first replaced by its nearest
    ``A kron A`` (``bank.kronecker()``, after resizing), which the paper found
    slightly better than the raw covariance.

    Args:
        model: a built ``keras.Model``.
        bank: a :class:`FilterCovariance` or the path of a saved one.
        layers, seed: as in :func:`apply_conv_covariance`.
        use_mean, psd: as in :class:`CovarianceTransfer`.
        kronecker: sample from the nearest Kronecker-structured covariances.
        resize: how a bank is brought to another kernel size, the ``method`` of
            :meth:`FilterCovariance.resized`: ``"blocks"`` (the paper's),
            ``"crop"`` (shrinking only) or ``"interpolate"``.

    Returns:
        The re-initialized kernel variables' paths, in model order.

    Example:
        >>> apply_covariance_transfer(big, bank="convmixer_32_8.npz", seed=0)
    """
    bank = _as_bank(bank)
    validation.boolean(use_mean, "use_mean")
    validation.boolean(kronecker, "kronecker")
    validation.one_of(psd, "psd", PSD_MODES)
    validation.one_of(resize, "resize", RESIZE_METHODS)
    found = find_kernels(model, which="depthwise", layers=layers)
    generator = seed_generator(seed)
    banks = {}
    inits = []
    for d, (_, kernel) in zip(depth_fractions(len(found)), found, strict=True):
        size = tuple(kernel.shape[:-2])
        if size not in banks:
            sized = bank if size == bank.kernel_size else bank.resized(size, method=resize)
            banks[size] = sized.kronecker()[0] if kronecker else sized
        inits.append(
            CovarianceTransfer(banks[size], depth_fraction=d, use_mean=use_mean, psd=psd, seed=generator)
        )
    return _assign_all(found, inits)
