"""padding="symmetric": PyTorch's padding=k // 2 on the package's convs, LC blocks and max-pool."""

import keras
import numpy as np
import pytest

from keras_structinit.layers import Conv2D, DepthwiseConv2D, GroupedConv2D, MaxPooling2D
from keras_structinit.lc import LCConv2D
from keras_structinit.ops.padding import symmetric_output_size, symmetric_padding

from conftest import to_numpy

TORCH = keras.backend.backend() == "torch"
IMAGES = np.random.default_rng(0).normal(size=(2, 8, 8, 4)).astype("float32")


def test_padding_sizes_follow_pytorch():
    assert symmetric_padding((3, 5)) == (1, 2) and symmetric_padding(3, 2) == (2,)
    # floor((n + 2p - d (k - 1) - 1) / s) + 1: PyTorch's output size.
    assert [symmetric_output_size(n, 3, 2) for n in (7, 8, 32)] == [4, 4, 16]
    assert symmetric_output_size(8, 1, 2) == 4 and symmetric_output_size(None, 3, 2) is None


def _reference(layer, images):
    """The same layer with padding='valid' on the input padded by k // 2 on both sides."""
    config = {**layer.get_config(), "padding": "valid"}
    valid = type(layer).from_config(config)
    k = (layer.kernel_size if hasattr(layer, "kernel_size") else layer.pool_size)[0]
    value = -np.inf if isinstance(layer, MaxPooling2D) else 0.0
    padded = np.pad(images, ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)), constant_values=value)
    valid.build(padded.shape)
    valid.set_weights(layer.get_weights())
    return to_numpy(valid(padded))


@pytest.mark.parametrize(
    "make",
    [
        lambda: Conv2D(6, 3, strides=2, padding="symmetric"),
        lambda: DepthwiseConv2D(3, strides=2, padding="symmetric", depth_multiplier=2),
        lambda: GroupedConv2D(8, 3, strides=2, groups=4, padding="symmetric"),
        lambda: MaxPooling2D(3, strides=2, padding="symmetric"),
        lambda: Conv2D(6, 5, strides=1, padding="symmetric"),
    ],
    ids=["conv", "depthwise", "grouped", "maxpool", "conv-k5-s1"],
)
def test_symmetric_pads_both_sides_at_any_stride_and_round_trips(make):
    layer = make()
    out = to_numpy(layer(IMAGES))
    assert out.shape[1:3] == layer.compute_output_shape(IMAGES.shape)[1:3]
    np.testing.assert_allclose(out, _reference(layer, IMAGES), rtol=1e-5, atol=1e-5)
    assert layer.get_config()["padding"] == "symmetric"
    clone = type(layer).from_config(layer.get_config())
    clone.build(IMAGES.shape)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(to_numpy(clone(IMAGES)), out, rtol=1e-6, atol=1e-6)
    if layer.strides == (2, 2) and not isinstance(layer, MaxPooling2D):  # Keras' "same" is centred elsewhere
        same = type(layer).from_config({**layer.get_config(), "padding": "same"})
        same.build(IMAGES.shape)
        same.set_weights(layer.get_weights())
        assert np.abs(to_numpy(same(IMAGES)) - out).max() > 1e-2


def test_other_paddings_pass_through():
    assert Conv2D(4, 3, padding="same").padding == "same"
    with pytest.raises(ValueError, match="padding"):
        Conv2D(4, 3, padding="reflect")
    with pytest.raises(ValueError, match="`padding`"):
        LCConv2D(4, 3, padding="reflect")


def _torch(x):
    import torch

    return torch.as_tensor(np.ascontiguousarray(x, dtype="float32"))


@pytest.mark.skipif(not TORCH, reason="compares with torch.nn.functional on the torch backend")
def test_stride_2_lc_block_equals_pytorch_padding_1():
    """Issue 35 item 4: a stride-2 LC block is PyTorch's conv2d(padding=1), then the 1x1 conv."""
    import torch.nn.functional as F

    block = LCConv2D(6, 3, expansion=2, strides=2, padding="symmetric")
    out = to_numpy(block(IMAGES))
    spatial, pointwise = to_numpy(block.spatial_kernel), to_numpy(block.pointwise_kernel)
    x = _torch(IMAGES.transpose(0, 3, 1, 2))
    y = F.conv2d(x, _torch(spatial.transpose(3, 2, 0, 1)), stride=2, padding=1)
    y = F.conv2d(y, _torch(pointwise.transpose(3, 2, 0, 1)))
    np.testing.assert_allclose(out, y.numpy().transpose(0, 2, 3, 1), atol=1e-5)
    same = LCConv2D.from_config({**block.get_config(), "padding": "same"})
    same.build(IMAGES.shape)
    same.set_weights(block.get_weights())
    assert np.abs(to_numpy(same(IMAGES)) - out).max() > 0.1  # the difference the issue measured


@pytest.mark.skipif(not TORCH, reason="compares with torch.nn.functional on the torch backend")
def test_conv_depthwise_and_maxpool_equal_pytorch():
    import torch.nn.functional as F

    x = _torch(IMAGES.transpose(0, 3, 1, 2))
    conv = Conv2D(6, 3, strides=2, padding="symmetric")
    out = to_numpy(conv(IMAGES))
    kernel, bias = (to_numpy(w) for w in conv.weights)
    ref = F.conv2d(x, _torch(kernel.transpose(3, 2, 0, 1)), _torch(bias), stride=2, padding=1)
    np.testing.assert_allclose(out, ref.numpy().transpose(0, 2, 3, 1), atol=1e-5)
    dw = DepthwiseConv2D(3, strides=2, padding="symmetric", use_bias=False)
    out = to_numpy(dw(IMAGES))
    kernel = to_numpy(dw.kernel)  # (3, 3, C, 1) -> (C, 1, 3, 3)
    ref = F.conv2d(x, _torch(kernel.transpose(2, 3, 0, 1)), stride=2, padding=1, groups=4)
    np.testing.assert_allclose(out, ref.numpy().transpose(0, 2, 3, 1), atol=1e-5)
    ref = F.max_pool2d(x, 3, stride=2, padding=1)
    out = to_numpy(MaxPooling2D(3, strides=2, padding="symmetric")(IMAGES))
    np.testing.assert_allclose(out, ref.numpy().transpose(0, 2, 3, 1), atol=1e-6)
