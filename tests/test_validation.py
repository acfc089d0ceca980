"""The one argument-checking module: TypeError for a wrong type, ValueError for a wrong value."""

import math
import os
import pathlib

import numpy as np
import pytest

from keras_structinit.utils import validation as v

from conftest import once_per_suite

pytestmark = once_per_suite("argument checks are pure Python")


@pytest.mark.parametrize(
    "check, good, normalized, wrong_types, wrong_values",
    [
        (v.positive_int, np.int64(5), 5, (2.0, True, "3", None), (0, -1)),
        (v.positive_float, 2, 2.0, ("1", None, True), (0.0, -1.0, math.nan, math.inf)),
        (v.finite_float, -3, -3.0, ("1", None, False), (math.nan, -math.inf)),
        (v.non_negative_float, 0, 0.0, ("1", None, True), (-0.5, math.nan, math.inf)),
        (v.fraction, 1, 1.0, ("0.5", None, True), (1.5, -0.01, math.nan)),
        (v.rate, 0.25, 0.25, ("0.5", None), (1.0, -0.1, math.nan)),
        (v.boolean, True, True, (0, 1, "True", None), ()),
        (v.text, "abc", "abc", (1, None, b"abc"), ("",)),
        (v.path, pathlib.Path("a/b"), os.path.join("a", "b"), (1, None), ("",)),
        (v.kernel_size, 3, (3, 3), ((3, 2.5), True, "3", None), (0, (), (3, 0))),
        (v.positive_ints, [2, np.int32(3)], (2, 3), ("23", (2, 2.0), None), ((), (0,))),
    ],
)
def test_type_and_value_errors_name_the_argument(check, good, normalized, wrong_types, wrong_values):
    assert check(good, "arg") == normalized
    for bad in wrong_types:
        with pytest.raises(TypeError, match=r"`arg` must be .*Received: arg="):
            check(bad, "arg")
    for bad in wrong_values:
        with pytest.raises(ValueError, match=r"`arg` must be .*Received: arg="):
            check(bad, "arg")


def test_int_value_minimum_and_optional():
    assert v.int_value(0, "n", minimum=0) == 0
    with pytest.raises(ValueError, match=">= 0"):
        v.int_value(-1, "n", minimum=0)
    assert v.optional(v.positive_int, None, "n") is None
    with pytest.raises(ValueError, match="`n`"):
        v.optional(v.positive_int, 0, "n")


def test_one_of_lists_the_choices():
    assert v.one_of("abs", "psd", ("abs", "clip")) == "abs"
    with pytest.raises(ValueError, match=r"`psd` must be one of \('abs', 'clip'\)"):
        v.one_of("svd", "psd", ("abs", "clip"))
    with pytest.raises(TypeError, match="`psd`"):
        v.one_of(1, "psd", ("abs", "clip"))


def test_input_shape():
    assert v.input_shape([32, 32, 3]) == (32, 32, 3)
    assert v.input_shape((None, None, 3), allow_none=True) == (None, None, 3)
    with pytest.raises(ValueError, match="input_shape"):
        v.input_shape((None, 32, 3))
    with pytest.raises(ValueError, match="input_shape"):
        v.input_shape((32, 32))
    with pytest.raises(TypeError, match="input_shape"):
        v.input_shape(32)


def test_random_seed_is_an_int_every_backend_can_hold():
    assert v.random_seed(np.int64(7)) == 7 and v.random_seed(2**32 - 1) == 2**32 - 1
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match=r"`seed` must be an int in \[0, 2\*\*32 - 1\]. Received: seed="):
            v.random_seed(bad)
    for bad in (1.0, True, "1", None):
        with pytest.raises(TypeError, match="`seed`"):
            v.random_seed(bad)


def test_shape_rank():
    assert v.shape_rank([2, None, 8], 3, "input_shape", "(batch, tokens, channels)") == (2, None, 8)
    with pytest.raises(
        ValueError,
        match=r"`input_shape` must have rank 3, \(batch, tokens, channels\)\. "
        r"Received: input_shape=\(2, 4\) of rank 2",
    ):
        v.shape_rank((2, 4), 3, "input_shape", "(batch, tokens, channels)")
