"""Argument checks shared by the whole package (no Keras import).

One rule everywhere: a value of the wrong *type* raises ``TypeError``, a value
of the right type but outside the accepted range raises ``ValueError``; the
message names the argument and the expected form, then shows what was
received::

    >>> positive_int(0, "epochs")
    Traceback (most recent call last):
    ValueError: `epochs` must be a positive int. Received: epochs=0

Every checker returns the normalized value (``int``, ``float``, ``tuple``...)
so callers write ``self.depth = positive_int(depth, "depth")``.
"""

from __future__ import annotations

import math
import os
from numbers import Integral, Real

__all__ = [
    "boolean",
    "clipped",
    "finite_float",
    "fraction",
    "input_shape",
    "int_value",
    "kernel_size",
    "non_negative_float",
    "one_of",
    "optional",
    "path",
    "positive_float",
    "quoted",
    "positive_int",
    "positive_ints",
    "random_seed",
    "derive_seed",
    "rate",
    "shape_rank",
    "shown",
    "text",
]

#: The most characters of a received value an error message echoes.
SHOWN_CHARS = 1000


def clipped(text, limit=SHOWN_CHARS):
    """``text`` cut to ``limit`` characters, with its length said where it was cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def shown(value, limit=SHOWN_CHARS):
    """``repr(value)`` :func:`clipped` to ``limit`` characters (what an error message echoes)."""
    return clipped(repr(value), limit)


def quoted(name):
    """``name`` as messages name an argument: in backticks, once (a name a caller already put in
    backticks, as a run's Python-API names are, is kept as it is: never ````name````)."""
    return name if len(name) > 1 and name[0] == name[-1] == "`" else f"`{name}`"


def _bare(name):
    """``name`` without the backticks :func:`quoted` adds (for ``Received: name=...``)."""
    return name[1:-1] if len(name) > 1 and name[0] == name[-1] == "`" else name


def _fail_type(name, expected, value):
    raise TypeError(
        f"{quoted(name)} must be {expected}. Received: {_bare(name)}={shown(value)} of type "
        f"{type(value).__name__}"
    )


def _fail_value(name, expected, value):
    raise ValueError(f"{quoted(name)} must be {expected}. Received: {_bare(name)}={shown(value)}")


def _is_int(value):
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_real(value):
    return isinstance(value, Real) and not isinstance(value, bool)


def optional(check, value, name, *args, **kwargs):
    """``None`` passes through; anything else goes to ``check(value, name, ...)``."""
    return None if value is None else check(value, name, *args, **kwargs)


def boolean(value, name):
    """``value`` if it is a ``bool`` (``TypeError`` otherwise; 0/1 are refused)."""
    if not isinstance(value, bool):
        _fail_type(name, "a bool (True or False)", value)
    return value


def int_value(value, name, minimum=None):
    """An ``int`` (bools refused), ``>= minimum`` when given."""
    expected = "an int" if minimum is None else f"an int >= {minimum}"
    if not _is_int(value):
        _fail_type(name, expected, value)
    if minimum is not None and value < minimum:
        _fail_value(name, expected, value)
    return int(value)


def positive_int(value, name):
    """An ``int >= 1``."""
    if not _is_int(value):
        _fail_type(name, "a positive int", value)
    if value < 1:
        _fail_value(name, "a positive int", value)
    return int(value)


def positive_ints(values, name):
    """A non-empty list/tuple of positive ints, as a tuple."""
    expected = "a non-empty list or tuple of positive ints"
    if not isinstance(values, (tuple, list)) or not all(_is_int(v) for v in values):
        _fail_type(name, expected, values)
    if not values or any(v < 1 for v in values):
        _fail_value(name, expected, values)
    return tuple(int(v) for v in values)


#: The int seeds every Keras backend accepts: JAX keeps a seed as a uint32.
SEED_RANGE = (0, 2**32 - 1)


def random_seed(value, name="seed"):
    """An int seed in :data:`SEED_RANGE`, the range Keras' ``SeedGenerator`` holds on every backend.

    JAX stores seeds as uint32 (a negative or larger int overflows there) while
    TensorFlow and torch accept any int; refusing the rest everywhere gives one
    answer on every backend.
    """
    low, high = SEED_RANGE
    expected = f"an int in [{low}, 2**32 - 1]"
    if not _is_int(value):
        _fail_type(name, expected, value)
    if not low <= value <= high:
        _fail_value(name, expected, value)
    return int(value)


def derive_seed(seed):
    """An int seed in ``[0, 2**31)`` unrelated to ``seed``, for a second draw that must not reuse its bits.

    Keras' random functions given the same int seed reuse the same random bits
    (in JAX a normal is a transform of the uniform's bits), so a draw made
    after another one (a mean shift on top of its base init, the next form of
    an init spec) needs another seed. A fixed odd multiplier and offset modulo
    ``2**31`` (a bijection) keep it reproducible and away from the ``seed + index``
    seeds of neighbouring layers.
    """
    return (int_value(seed, "seed") * 0x9E3779B1 + 0x7F4A7C15) % 2**31


def shape_rank(shape, expected_rank, name, form):
    """``tuple(shape)`` if it has ``expected_rank`` axes (``ValueError`` naming ``name`` and ``form``).

    For a layer's ``input_shape``: ``shape_rank(input_shape, 3, "input_shape", "(batch, tokens, channels)")``.
    """
    shape = tuple(shape)
    if len(shape) != expected_rank:
        raise ValueError(
            f"{quoted(name)} must have rank {expected_rank}, {form}. "
            f"Received: {_bare(name)}={shape!r} of rank {len(shape)}"
        )
    return shape


def finite_float(value, name):
    """A finite real number, as a ``float``."""
    if not _is_real(value):
        _fail_type(name, "a real number", value)
    value = float(value)
    if not math.isfinite(value):
        _fail_value(name, "a finite number", value)
    return value


def positive_float(value, name):
    """A finite real number ``> 0``, as a ``float``."""
    if not _is_real(value):
        _fail_type(name, "a real number > 0", value)
    value = float(value)
    if not (math.isfinite(value) and value > 0.0):
        _fail_value(name, "a finite number > 0", value)
    return value


def non_negative_float(value, name):
    """A finite real number ``>= 0``, as a ``float`` (e.g. a variance)."""
    if not _is_real(value):
        _fail_type(name, "a real number >= 0", value)
    value = float(value)
    if not (math.isfinite(value) and value >= 0.0):
        _fail_value(name, "a finite number >= 0", value)
    return value


def fraction(value, name, what="a number in [0, 1]"):
    """A real number in the closed interval ``[0, 1]`` (e.g. a depth fraction)."""
    if not _is_real(value):
        _fail_type(name, what, value)
    value = float(value)
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        _fail_value(name, what, value)
    return value


def rate(value, name):
    """A probability in the half-open interval ``[0, 1)`` (dropout, hold-out split)."""
    if not _is_real(value):
        _fail_type(name, "a number in [0, 1)", value)
    value = float(value)
    if not 0.0 <= value < 1.0:
        _fail_value(name, "a number in [0, 1)", value)
    return value


def one_of(value, name, choices):
    """``value`` if it is one of ``choices`` (``ValueError`` listing them)."""
    if not isinstance(value, str) and all(isinstance(c, str) for c in choices):
        _fail_type(name, f"one of {tuple(choices)}", value)
    if value not in choices:
        _fail_value(name, f"one of {tuple(choices)}", value)
    return value


def text(value, name, allow_empty=False):
    """A ``str`` (non-empty unless ``allow_empty``)."""
    if not isinstance(value, str):
        _fail_type(name, "a str", value)
    if not value and not allow_empty:
        _fail_value(name, "a non-empty str", value)
    return value


def path(value, name):
    """A ``str`` or ``os.PathLike`` file-system path, as a non-empty ``str``."""
    if not isinstance(value, (str, os.PathLike)):
        _fail_type(name, "a str or os.PathLike path", value)
    value = os.fspath(value)
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not value:
        _fail_value(name, "a non-empty path", value)
    return value


def kernel_size(value, name="kernel_size"):
    """A filter size: an int ``k`` (meaning ``(k, k)``) or a tuple of positive ints."""
    expected = "a positive int or a non-empty tuple of positive ints such as (kh, kw)"
    if _is_int(value):
        value = (int(value), int(value))
    if not isinstance(value, (tuple, list)) or not all(_is_int(k) for k in value):
        _fail_type(name, expected, value)
    if not value or any(k < 1 for k in value):
        _fail_value(name, expected, value)
    return tuple(int(k) for k in value)


def input_shape(value, name="input_shape", allow_none=False):
    """``(height, width, channels)`` of positive ints; with ``allow_none`` the
    spatial sizes may be ``None`` (fully convolutional models)."""
    expected = "(height, width, channels) of positive ints" + (
        " (height and width may be None)" if allow_none else ""
    )
    if not isinstance(value, (tuple, list)):
        _fail_type(name, expected, value)

    def ok(v, none_ok):
        return (v is None and none_ok) or (_is_int(v) and v >= 1)

    if len(value) != 3 or not (ok(value[0], allow_none) and ok(value[1], allow_none) and ok(value[2], False)):
        _fail_value(name, expected, value)
    return tuple(None if v is None else int(v) for v in value)
