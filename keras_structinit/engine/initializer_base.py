"""Seed handling shared by the package's random initializers and model functions, and the check of
initializer arguments.

Follows the semantics of Keras' own random initializers: an ``int`` seed (or
``None``, which draws one int at construction) gives the same values on every
call; a ``keras.random.SeedGenerator`` gives fresh values on every call.
"""

from __future__ import annotations

import random
from numbers import Integral

import keras

from keras_structinit.utils import validation


def check_seed(seed):
    """``seed`` if it is ``None``, an int (returned as ``int``) or a ``keras.random.SeedGenerator``.

    Int seeds must lie in ``[0, 2**32 - 1]`` (:func:`keras_structinit.utils.validation.random_seed`):
    Keras on JAX holds a seed as a uint32, so other ints would work on TensorFlow and
    torch but overflow on JAX; every backend refuses them here instead.
    """
    if seed is None or isinstance(seed, keras.random.SeedGenerator):
        return seed
    expected = "None, an int in [0, 2**32 - 1] or a keras.random.SeedGenerator"
    if not (isinstance(seed, Integral) and not isinstance(seed, bool)):
        raise TypeError(f"`seed` must be {expected}. Received: seed={seed!r} of type {type(seed).__name__}")
    low, high = validation.SEED_RANGE
    if not low <= seed <= high:
        raise ValueError(f"`seed` must be {expected}. Received: seed={seed!r}")
    return int(seed)


def seed_generator(seed):
    """A ``keras.random.SeedGenerator`` from ``None``, an int or a generator.

    An int gives a new generator seeded with it, so a call using it is
    reproducible while successive draws differ.
    """
    seed = check_seed(seed)
    return seed if isinstance(seed, keras.random.SeedGenerator) else keras.random.SeedGenerator(seed)


class SeededInitializer(keras.Initializer):
    """A ``keras.Initializer`` holding a Keras-style ``seed``: ``None``, an int in ``[0, 2**32 - 1]``
    or a ``keras.random.SeedGenerator`` (see :func:`check_seed`)."""

    def __init__(self, seed=None):
        self._init_seed = seed
        if seed is None:
            seed = random.randint(1, int(1e9))
        elif isinstance(seed, dict):
            seed = keras.saving.deserialize_keras_object(seed)
        self.seed = check_seed(seed)

    def layer_seed(self, index):
        """The seed for the ``index``-th layer of a model sharing this initializer.

        An int seed ``s`` becomes ``s + index`` (independent layers), a
        ``SeedGenerator`` is shared (fresh values per layer) and ``None`` stays
        ``None`` (a new random seed).
        """
        if isinstance(self.seed, keras.random.SeedGenerator):
            return self.seed
        if self._init_seed is None:
            return None
        return int(self._init_seed) + int(index)

    def get_config(self):
        return {"seed": keras.saving.serialize_keras_object(self._init_seed)}


def resolve_dtype(dtype):
    """Standardized dtype name, ``keras.config.floatx()`` when ``None``."""
    dtype = keras.backend.standardize_dtype(dtype or keras.config.floatx())
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(
            "`dtype` must be a floating dtype (float16, bfloat16, float32 or "
            f"float64). Received: dtype={dtype!r}"
        )
    return dtype


def check_kernel_shape(shape, min_rank=3):
    """Validates a conv kernel shape ``(*spatial, cin_per_group, cout)``."""
    shape = validation.positive_ints(shape, "shape")
    if len(shape) < min_rank:
        raise ValueError(
            f"`shape` must be a convolution kernel shape (*spatial, "
            f"channels_per_group, filters) of rank >= {min_rank}, e.g. "
            f"(kh, kw, C, 1) for a DepthwiseConv2D. Received: shape={shape!r}"
        )
    return shape


def check_initializer(value, name, default):
    """An initializer argument ``name`` (of a layer or a model builder) as a Keras initializer.

    ``None`` gives ``default``; otherwise anything ``keras.initializers.get``
    accepts: a name (``"he_normal"``), a config dict, an ``Initializer`` or a
    callable ``(shape, dtype) -> tensor``. Raises ``TypeError`` for another
    type and ``ValueError`` for an unknown name or config, naming ``name``.
    """
    if value is None:
        return default
    expected = "None or a Keras initializer (a name, a config dict or an instance)"
    if not (isinstance(value, (str, dict)) or callable(value)):
        raise TypeError(
            f"`{name}` must be {expected}. Received: {name}={value!r} of type {type(value).__name__}"
        )
    try:
        return keras.initializers.get(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`{name}` must be {expected} ({error}). Received: {name}={value!r}") from None
