"""``DataAligned``: conv filters from the eigenvectors of the input's patch covariance."""

from __future__ import annotations

import math
import numbers

import keras
import numpy as np

from keras_structinit.alignment.components import MODES, check_components, component_scales, cycled_filters
from keras_structinit.engine.initializer_base import SeededInitializer, resolve_dtype
from keras_structinit.utils import validation

__all__ = ["DataAligned"]


#: Negative eigenvalues no larger in size than this times the largest one (plus 1e-12) are taken as
#: round-off of a PSD covariance and read as 0; anything more negative is refused.
_ROUND_OFF = 1e-6


def _check_eigvals(eigvals):
    """``eigvals`` as float64 variances: a non-empty 1-D array, finite and non-negative (round-off
    negatives, see :data:`_ROUND_OFF`, clipped to 0)."""
    try:
        values = np.asarray(eigvals, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            "`eigvals` must be a 1-D array of real numbers. "
            f"Received: eigvals of type {type(eigvals).__name__}"
        ) from None
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            "`eigvals` must be a non-empty 1-D array (the variances along `eigvecs`). "
            f"Received: eigvals of shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(
            "`eigvals` must be finite numbers. "
            f"Received: eigvals with {int(np.sum(~np.isfinite(values)))} NaN or infinite values"
        )
    tolerance = _ROUND_OFF * float(np.max(np.abs(values))) + 1e-12
    if np.any(values < -tolerance):
        raise ValueError(
            "`eigvals` must be non-negative: they are the variances of the data along `eigvecs` (the "
            "eigenvalues of a covariance; a power `f` of a negative one gives a zero filter). "
            f"Received: eigvals with minimum {float(values.min()):.6g}"
        )
    return np.maximum(values, 0.0)


@keras.saving.register_keras_serializable(package="keras_structinit")
class DataAligned(SeededInitializer):
    """Filters aligned with the data (Maennel et al., NeurIPS 2020, App. E.3).

    With ``e_i`` the first ``n = n_components`` columns of ``eigvecs`` and
    ``tau_i = f(lambda_i)`` (:func:`~keras_structinit.alignment.component_scales`),
    filter ``o`` of a kernel ``(kh, kw, C, m)``, flattened like the patches, is::

        mode="eigvecs":  w_o = scale * s_o tau_(o mod n) e_(o mod n)   (s_o = +1 for o < n, else +-1)
        mode="sample":   w_o = scale * sum_i tau_i z_oi e_i,  z_oi ~ N(0, 1)
                         (covariance scale^2 sum_i tau_i^2 e_i e_i^T)

    ``m < n`` uses the first ``m`` components; ``m > n`` repeats them with
    random signs (an extension: the paper uses ``m = n = 16``). Any kernel
    whose axes but the last hold ``d = eigvecs.shape[0]`` weights works
    (``Conv2D`` ``(kh, kw, C, m)``, ``Dense`` ``(d, m)``).

    Args:
        eigvals, eigvecs: ``(k,)`` and ``(d, k)`` with orthonormal columns, as
            returned by :func:`~keras_structinit.alignment.patch_covariance`
            (descending; pass them reversed for the smallest components).
            ``eigvals`` are variances: finite and ``>= 0`` (round-off
            negatives of a covariance's eigenvalues are read as 0).
        n_components: how many of the given components to use (``<= k``).
        f: ``None`` (flat, ``tau = 1``), a power ``p`` (``tau = lambda^p``),
            a list of ``n`` scales or a callable of the eigenvalue.
        mode: ``"eigvecs"`` or ``"sample"``.
        scale: multiplies every filter.
        seed: ``None``, an int or a ``keras.random.SeedGenerator`` (signs of
            repeated filters, samples).

    Serialization: the config holds the ``n`` components used (float64
    lists) and the scales (a callable ``f`` is stored as its values).

    Example:
        >>> eigvals, eigvecs = patch_covariance(images, 3)
        >>> conv = keras.layers.Conv2D(16, 3, kernel_initializer=DataAligned(eigvals, eigvecs))
    """

    def __init__(self, eigvals, eigvecs, n_components=16, f=None, mode="eigvecs", scale=1.0, seed=None):
        self.eigvals, self.eigvecs = check_components(_check_eigvals(eigvals), eigvecs, n_components)
        self.n_components = len(self.eigvals)
        self.taus = component_scales(self.eigvals, f)
        power = isinstance(f, (int, float)) and not isinstance(f, bool)
        if not np.any(self.taus):  # every filter would be zero
            if isinstance(f, numbers.Real) and not isinstance(f, bool):
                raise ValueError(
                    f"`eigvals` of the {self.n_components} components used are all zero, so their power "
                    f"f={f} makes every filter zero; pass f=None (flat scales) or components with variance."
                )
            raise ValueError(
                f"`f` gives every component the scale 0, so every filter would be zero. Received: f={f!r}"
            )
        self.f = f if f is None or power else self.taus.tolist()  # callables are stored as their values
        self.mode = validation.one_of(mode, "mode", MODES)
        self.scale = validation.finite_float(scale, "scale")
        super().__init__(seed=seed)

    def __call__(self, shape, dtype=None):
        shape = validation.positive_ints(shape, "shape")
        dim = self.eigvecs.shape[0]
        if len(shape) < 2 or math.prod(shape[:-1]) != dim:
            raise ValueError(
                f"`shape` must be a kernel (..., filters) with {dim} weights per filter, the dimension of "
                f"the components (e.g. (kh, kw, C, filters) with kh * kw * C = {dim}). "
                f"Received: shape={shape!r}"
            )
        dtype = resolve_dtype(dtype)
        compute = "float64" if dtype == "float64" else "float32"
        num_filters = shape[-1]
        if self.mode == "sample":
            factor = keras.ops.convert_to_tensor(self.eigvecs * (self.scale * self.taus), compute)
            z = keras.random.normal((self.n_components, num_filters), seed=self.seed, dtype=compute)
            filters = keras.ops.matmul(factor, z)
        else:
            filters = keras.ops.convert_to_tensor(
                self.scale * cycled_filters(self.eigvecs, self.taus, num_filters), compute
            )
            if num_filters > self.n_components:
                flips = keras.random.uniform((num_filters - self.n_components,), seed=self.seed) < 0.5
                signs = keras.ops.cast(keras.ops.where(flips, -1.0, 1.0), compute)
                signs = keras.ops.concatenate([keras.ops.ones((self.n_components,), compute), signs])
                filters = filters * signs[None, :]
        return keras.ops.cast(keras.ops.reshape(filters, shape), dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            eigvals=self.eigvals.tolist(),
            eigvecs=self.eigvecs.tolist(),
            n_components=self.n_components,
            f=self.f,
            mode=self.mode,
            scale=self.scale,
        )
        return config
