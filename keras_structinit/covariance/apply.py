"""Model-level functions of the covariance method.

Both walk the model with :func:`keras_structinit.engine.walker.find_kernels` and give
the i-th of the ``D`` kernels found the depth fraction ``d = i / (D - 1)``::

    apply_conv_covariance(model, *, layers=None, seed=None, preset=..., scale=..., ...) -> paths
    apply_covariance_transfer(model, *, bank, layers=None, seed=None, ...) -> paths

The presets of Eq. 11 were fitted on isotropic ConvMixers (every depthwise kernel of one
shape, App. B). On any other model (MobileNets, EfficientNets: widths and kernel sizes that
change with depth) :func:`apply_conv_covariance` says in one ``UserWarning`` which preset and
scale it used; its default there, ``scale="auto"`` -> :data:`OTHER_MODELS_SCALE`, is the
scale that trained at least as well in ``benchmarks/results/cpu/covariance_applications.json``.
"""

from __future__ import annotations

import warnings

import keras
import numpy as np

from keras_structinit.covariance.bank import RESIZE_METHODS
from keras_structinit.covariance.initializers import (
    ConvCovariance,
    CovarianceTransfer,
    _as_bank,
    _cached_factor,
)
from keras_structinit.covariance.psd import PSD_MODES, matched_scale
from keras_structinit.covariance.schedule import depth_fractions, resolve_schedule, variance_schedule
from keras_structinit.engine.contract import model_function
from keras_structinit.engine.initializer_base import seed_generator
from keras_structinit.engine.walker import find_kernels
from keras_structinit.utils import validation

__all__ = [
    "OTHER_MODELS_SCALE",
    "SCALES",
    "apply_conv_covariance",
    "apply_covariance_transfer",
    "presets_fit",
]

#: ``scale`` of :func:`apply_conv_covariance`: ``"preset"`` samples Eq. 1 as the paper does
#: (variance ~0.5 at the filter's centre); ``"matched"`` multiplies each layer's samples so
#: that their mean variance is the kernel's before the call (its own init);
#: ``"auto"`` is ``"preset"`` where :func:`presets_fit`, :data:`OTHER_MODELS_SCALE` elsewhere.
SCALES = ("auto", "preset", "matched")

#: The scale ``"auto"`` takes on a model the presets were not fitted for. Measured on
#: keras.applications MobileNetV2 (3x3) and MobileNetV3Small (3x3 and 5x5), 5 seeds each, thawed
#: (benchmarks/results/cpu/covariance_applications.json, 2-core CPU): matched - preset -0.18 +- 0.85
#: points on the validation part over the 10 pairs (+0.47 on MobileNetV2, -0.83 on MobileNetV3Small;
#: test part +0.06 +- 0.99), no difference; the paper's own scale stays (and gains +4.6 points over
#: MobileNetV3Small's own init on validation).
OTHER_MODELS_SCALE = "preset"


def presets_fit(found):
    """Whether the presets were fitted for kernels like ``found`` (``[(layer, kernel)]``): an
    isotropic net, every kernel of one shape, as the paper's ConvMixers (App. B)."""
    return len({tuple(kernel.shape) for _, kernel in found}) == 1


def _second_moment(layer, kernel):
    """The mean square of ``kernel``'s values now; ``ValueError`` naming ``layer`` where it is 0."""
    value = float(np.mean(np.square(keras.ops.convert_to_numpy(kernel).astype(np.float64))))
    if not value > 0.0:
        raise ValueError(
            f"scale='matched' (init form conv-cov:matched) sets each layer's variance from its kernel's "
            f"values, but layer {layer.name!r}'s kernel is all zeros; use scale='preset' "
            "(conv-cov:PRESET)"
        )
    return value


def _resolve_scale(model, found, scale, preset):
    """``"preset"`` or ``"matched"`` for ``scale``, with the one-line warning on a model the
    presets were not fitted for (``scale`` validated by the caller)."""
    fit = presets_fit(found)
    if scale == "auto":
        scale = "preset" if fit else OTHER_MODELS_SCALE
    if not fit:
        sizes = sorted({"x".join(map(str, kernel.shape[:-2])) for _, kernel in found})
        how = (
            "each layer's samples scaled to its kernel's own variance (conv-cov:matched)"
            if scale == "matched"
            else "the preset's own scale, ~0.5 variance at the filter centre (conv-cov:PRESET)"
        )
        warnings.warn(
            f"conv-cov: {model.name}'s {len(found)} depthwise kernels ({', '.join(sizes)}, widths or "
            f"sizes varying with depth) are not an isotropic ConvMixer's, which the presets were "
            f"fitted for; used preset {preset}'s schedule with {how}",
            UserWarning,
            stacklevel=4,
        )
    return scale


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
    scale="auto",
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
        scale: ``"auto"`` (default), ``"preset"`` or ``"matched"`` (:data:`SCALES`):
            ``"matched"`` multiplies layer i's samples by ``s_i`` with
            ``s_i^2 trace(Sigma'_i) / n`` the mean square of its kernel before the call.
            On a model that is not an isotropic ConvMixer a ``UserWarning`` names the
            preset and scale used.

    Returns:
        The re-initialized kernel variables' paths, in model order.

    Example:
        >>> paths = apply_conv_covariance(model, preset="cifar-p2", seed=0)
    """
    schedule = resolve_schedule(preset, sigma0, v_sigma, a_sigma)  # validate before walking
    validation.one_of(psd, "psd", PSD_MODES)
    validation.one_of(scale, "scale", SCALES)
    found = find_kernels(model, which=which, layers=layers)
    scale = _resolve_scale(model, found, scale, preset)
    moments = [_second_moment(layer, kernel) for layer, kernel in found] if scale == "matched" else None
    generator = seed_generator(seed)
    # All NumPy set-up first, then all backend work: interleaving the two makes
    # their thread pools compete (measured 2-6x slower on 2 cores with torch).
    inits = []
    for i, (d, (_, kernel)) in enumerate(zip(depth_fractions(len(found)), found, strict=True)):
        factor = _cached_factor(tuple(kernel.shape[:-2]), variance_schedule(d, *schedule), psd)
        inits.append(
            ConvCovariance(
                sigma0,
                v_sigma,
                a_sigma,
                depth_fraction=d,
                preset=preset,
                psd=psd,
                scale=1.0 if moments is None else matched_scale(factor, moments[i]),
                seed=generator,
            )
        )
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
