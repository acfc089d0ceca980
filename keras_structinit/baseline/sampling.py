"""Backend-free sampling of the model-level random inits: one NumPy draw per variable.

The forms applied to a whole model (``torch-default``, ``torch-default-depthwise``,
``trunc-normal``, ``mimetic-attention``) draw each variable's values in one vectorized NumPy call
from a generator of its own, seeded from the call's seed and the variable's position in
``model.weights`` (:func:`variable_rngs`), then assign them. Nothing is traced per kernel shape
(``keras.random`` compiled one op per new shape on JAX: 20 s for a MobileNetV2's 53 kernels), and
one int seed gives the same values on every backend, to a second build of the same model (whose
layers Keras names anew: ``conv2d_1``), and to a subset of its layers (``layers=``).
"""

from __future__ import annotations

import math
import secrets
import zlib

import keras
import numpy as np

from keras_structinit.engine.initializer_base import check_seed

__all__ = ["assign", "int_seed", "truncated_normal", "uniform", "variable_rngs"]

_NUMPY_FLOATS = ("float16", "float32", "float64")


def int_seed(seed):
    """An int seed from ``None`` (a fresh random one), an int in ``[0, 2**32 - 1]`` (itself) or a
    ``keras.random.SeedGenerator`` (one draw from it: fresh values per call, reproducibly)."""
    seed = check_seed(seed)
    if seed is None:
        return secrets.randbits(32)
    if isinstance(seed, keras.random.SeedGenerator):
        drawn = keras.random.randint((), 0, 2**31 - 1, seed=seed)
        return int(keras.ops.convert_to_numpy(drawn))
    return seed


def variable_rngs(seed, model, variables):
    """One ``numpy.random.Generator`` per variable of ``variables``, seeded from ``(seed, i)``, ``i``
    the variable's position in ``model.weights`` (a variable outside them: ``2**32 + crc32(path)``),
    so that its draw depends on the seed and where it sits in the model only, not on its name or
    on the other variables drawn. ``seed`` as :func:`int_seed` takes it."""
    base = int_seed(seed)
    position = {id(v): i for i, v in enumerate(getattr(model, "weights", ()))}
    keys = [position.get(id(v), 2**32 + zlib.crc32(str(v.path).encode())) for v in variables]
    return [np.random.default_rng([base, key]) for key in keys]


def assign(variable, values):
    """Assigns the NumPy ``values`` to ``variable``, cast to its dtype on the host."""
    dtype = keras.backend.standardize_dtype(variable.dtype)
    values = np.asarray(values).reshape(tuple(variable.shape))
    variable.assign(values.astype(dtype if dtype in _NUMPY_FLOATS else "float32"))


def uniform(rng, shape, bound):
    """``U[-bound, bound]`` of ``shape``, float64."""
    return rng.uniform(-bound, bound, size=tuple(shape))


def truncated_normal(rng, shape, std, bound=2.0):
    """``N(0, std^2)`` truncated to ``[-bound, bound]`` (absolute, as timm's ``trunc_normal_``),
    float64, by rejection: normal proposals where the bound is at least one standard deviation
    (accepted with probability >= 0.68), uniform ones on the bounds otherwise (accepted with
    ``exp(-z^2 / 2)`` >= 0.61); the rejected entries are drawn again, vectorized, until none is left."""
    size = math.prod(shape)
    limit = bound / std  # the bound in standard deviations

    def draw(n):
        if limit >= 1.0:
            return rng.standard_normal(n)
        z = rng.uniform(-limit, limit, n)
        return np.where(rng.random(n) < np.exp(-0.5 * z * z), z, np.inf)

    z = draw(size)
    bad = np.flatnonzero(np.abs(z) > limit)
    while bad.size:
        z[bad] = draw(bad.size)
        bad = bad[np.abs(z[bad]) > limit]
    return (z * std).reshape(tuple(shape))
