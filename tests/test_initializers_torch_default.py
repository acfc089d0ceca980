"""TorchDefaultUniform: PyTorch's default conv/linear initialization."""

import keras
import numpy as np
import pytest

from keras_structinit.initializers import TorchDefaultUniform


def test_torch_default_uniform():
    init = TorchDefaultUniform(seed=0)
    w = keras.ops.convert_to_numpy(init((3, 3, 16, 32)))
    bound = 1 / np.sqrt(3 * 3 * 16)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert np.std(w) == pytest.approx(bound / np.sqrt(3), rel=0.05)
    dw = keras.ops.convert_to_numpy(TorchDefaultUniform(depthwise=True, seed=0)((7, 7, 64, 1)))
    assert np.abs(dw).max() <= 1 / 7 and np.abs(dw).max() > 0.98 / 7
    b = keras.ops.convert_to_numpy(TorchDefaultUniform(fan_in=4, seed=0)((1000,)))
    assert np.abs(b).max() <= 0.5 and np.abs(b).max() > 0.49
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(init))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(clone((3, 3, 16, 32))), w)
    with pytest.raises(ValueError, match="shape"):
        TorchDefaultUniform()((10,))
    with pytest.raises(ValueError, match="fan_in"):
        TorchDefaultUniform(fan_in=0)
    with pytest.raises(TypeError, match="depthwise"):
        TorchDefaultUniform(depthwise="yes")


@pytest.mark.parametrize(
    "shape, error",
    [((0, 3), ValueError), ((3, 3, 4, 0), ValueError), ((3, 0, 4, 2), ValueError), ((3.5, 2), TypeError),
     ("abc", TypeError)],
)
def test_shapes_with_a_zero_size_or_non_int_axis_are_refused(shape, error):
    # (0, 3) divided by a zero fan-in; (3, 3, 4, 0) returned an empty kernel.
    with pytest.raises(error, match=r"`shape` must be a non-empty list or tuple of positive ints"):
        TorchDefaultUniform()(shape)
    with pytest.raises(error, match="`shape`"):
        TorchDefaultUniform(fan_in=4)(shape)
