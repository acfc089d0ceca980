"""Every public layer of the package passes one shared layer test (``conftest.run_layer_test``, after
Keras' own ``run_layer_test``): shapes, weight counts, config and serialization round trips, a fit
step that moves only trainable weights, mixed precision, and a ``.keras`` round trip."""

import keras
import pytest

import keras_structinit as ks

from conftest import run_layer_test

L = ks.layers
#: ``(layer, kwargs, input shape, output shape, trainable, non-trainable, frozen names)``.
CASES = [
    (L.ClassToken, {}, (2, 5, 8), (2, 6, 8), 1, 0, ()),
    (L.PositionEmbedding, {}, (2, 5, 8), (2, 5, 8), 1, 0, ()),
    (L.LayerScale, {"init_value": 0.1}, (2, 4, 4, 6), (2, 4, 4, 6), 1, 0, ()),
    (L.StochasticDepth, {"rate": 0.0}, (2, 4, 4, 6), (2, 4, 4, 6), 0, 0, ()),
    (L.Conv2D, {"filters": 4, "kernel_size": 2, "strides": 2}, (2, 8, 8, 3), (2, 4, 4, 4), 2, 0, ()),
    (L.DepthwiseConv2D, {"kernel_size": 3, "padding": "same"}, (2, 6, 6, 4), (2, 6, 6, 4), 2, 0, ()),
    (
        L.DepthwiseConv2D,
        {"kernel_size": 3, "padding": "same", "kernel_trainable": False},
        (2, 6, 6, 4),
        (2, 6, 6, 4),
        1,
        1,
        ("kernel",),
    ),
    (
        L.GroupedConv2D,
        {"filters": 4, "kernel_size": 3, "groups": 2, "padding": "same"},
        (2, 6, 6, 4),
        (2, 6, 6, 4),
        2,
        0,
        (),
    ),
    (L.MaxPooling2D, {"pool_size": 2, "strides": 2, "padding": "same"}, (2, 6, 6, 3), (2, 3, 3, 3), 0, 0, ()),
    (L.ZeroPadShortcut, {"filters": 8, "strides": 2}, (2, 6, 6, 4), (2, 3, 3, 8), 0, 0, ()),
    (L.LCConv2D, {"filters": 4, "kernel_size": 3, "expansion": 2}, (2, 6, 6, 3), (2, 6, 6, 4), 1, 1, ()),
    (L.ScalarBiasDense, {"units": 4, "scalar": 0.1}, (2, 5, 8), (2, 5, 4), 3, 0, ()),
]


@pytest.mark.parametrize(
    "layer_cls, kwargs, input_shape, output_shape, trainable, non_trainable, frozen",
    CASES,
    ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)],
)
def test_public_layer_passes_the_layer_test(
    layer_cls, kwargs, input_shape, output_shape, trainable, non_trainable, frozen, tmp_path
):
    run_layer_test(
        layer_cls,
        kwargs,
        input_shape,
        expected_output_shape=output_shape,
        expected_trainable=trainable,
        expected_non_trainable=non_trainable,
        frozen=frozen,
        training=trainable > 0,
        tmp_path=tmp_path,
    )


def test_every_public_layer_has_a_case():
    covered = {case[0] for case in CASES}
    public = {getattr(L, name) for name in dir(L) if name[:1].isupper()}
    public = {cls for cls in public if isinstance(cls, type) and issubclass(cls, keras.layers.Layer)}
    # SharedKernelBank is not called on inputs: LC layers slice it (tests/test_lc_sharing.py).
    missing = sorted(cls.__name__ for cls in public - covered if cls is not L.SharedKernelBank)
    assert not missing, f"public layers without a run_layer_test case: {missing}"
