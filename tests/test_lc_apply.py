"""LC model functions: fold_model, the L1 penalty, pruning (and its callback), parameter counts."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import lc
from keras_structinit.callbacks import PrunePointwise
from keras_structinit.engine.walker import find_kernels
from keras_structinit.layers import LCConv2D
from keras_structinit.lc import find_pointwise_kernels

from conftest import to_numpy


def small_lcresnet(**kwargs):
    return ks.models.lcresnet(8, 4, expansion=2, num_classes=3, input_shape=(16, 16, 3), **kwargs)


def data(n=16, classes=3):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 16, 16, 3)).astype("float32"), rng.integers(0, classes, n)


def compiled(model, lr=0.01):
    model.compile(
        optimizer=keras.optimizers.SGD(lr, momentum=0.9),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def test_fold_model_gives_the_same_outputs():
    model = small_lcresnet(kernel_size=5)
    x, _ = data(4)
    rng = np.random.default_rng(2)
    for variable in model.weights:  # non-trivial BatchNorm statistics and parameters
        if "moving" in variable.path or variable.path.endswith(("gamma", "beta")):
            variable.assign(rng.uniform(0.5, 1.5, variable.shape).astype("float32"))
    folded = ks.lc.fold_model(model)
    assert not any(isinstance(layer, LCConv2D) for layer in folded.layers)
    stem = folded.get_layer("stem_conv")
    assert isinstance(stem, keras.layers.Conv2D) and tuple(stem.kernel.shape) == (5, 5, 3, 4)
    assert folded.get_layer("stage_2_block_1_conv_1").strides == (2, 2)
    want = to_numpy(model(x, training=False))
    np.testing.assert_allclose(to_numpy(folded(x, training=False)), want, rtol=1e-5, atol=1e-5)
    counts = lc.parameter_counts(folded)
    assert counts["total"] < lc.parameter_counts(model)["total"]


def test_fold_model_handles_nested_models_and_biases():
    inner_in = keras.Input((8, 8, 3))
    inner_out = LCConv2D(4, 3, expansion=3, use_bias=True, name="lc")(inner_in)
    inner = keras.Model(inner_in, inner_out, name="inner")
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.GlobalAveragePooling2D()(inner(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(x))
    folded = ks.lc.fold_model(model)
    conv = folded.get_layer("inner").get_layer("lc")
    assert isinstance(conv, keras.layers.Conv2D) and conv.use_bias
    x = np.random.default_rng(1).standard_normal((2, 8, 8, 3)).astype("float32")
    np.testing.assert_allclose(to_numpy(folded(x)), to_numpy(model(x)), rtol=1e-5, atol=1e-6)


def test_fold_model_passes_operations_without_weights_through():
    """Issue 33: `x + y` (an operation, not a layer) made fold_model fail on set_weights."""
    inputs = keras.Input((8, 8, 3))
    a = LCConv2D(4, 3, expansion=2, padding="same", name="lc_a")(inputs)
    b = keras.layers.Conv2D(4, 1, name="skip")(inputs)
    x = keras.ops.relu(a + b) * 0.5
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(keras.layers.GlobalAveragePooling2D()(x)))
    folded = ks.lc.fold_model(model)
    assert isinstance(folded.get_layer("lc_a"), keras.layers.Conv2D)
    skip_kernels = [to_numpy(m.get_layer("skip").kernel) for m in (folded, model)]
    np.testing.assert_array_equal(*skip_kernels)
    x = np.random.default_rng(1).standard_normal((2, 8, 8, 3)).astype("float32")
    np.testing.assert_allclose(to_numpy(folded(x)), to_numpy(model(x)), rtol=1e-5, atol=1e-6)


def test_walker_finds_lc_kernels():
    model = small_lcresnet()
    pointwise = find_pointwise_kernels(model)
    assert [k.path for _, k in pointwise][:2] == [
        "stem_conv/pointwise_kernel",
        "stage_1_block_1_conv_1/pointwise_kernel",
    ]
    assert len(pointwise) == 7
    assert [k.path for _, k in find_kernels(model, which="all_spatial")] == [
        k.path.replace("pointwise", "spatial") for _, k in pointwise
    ]
    stem = find_pointwise_kernels(model, layers=["stem_conv"])
    assert [k.path for _, k in stem] == ["stem_conv/pointwise_kernel"]
    with pytest.raises(ValueError, match="not a LC block"):
        find_pointwise_kernels(model, layers=["head"])
    with pytest.raises(ValueError, match="no LC blocks"):
        find_pointwise_kernels(ks.models.resnet18_gn(widths=(8, 8, 8, 8), groups=4))


def test_pointwise_l1_is_keras_l1_on_every_lc_block(tmp_path):
    model = small_lcresnet()
    paths = lc.apply_pointwise_l1(model, l1=5e-5)
    assert paths == [k.path for _, k in find_pointwise_kernels(model)]
    assert all(isinstance(k.regularizer, keras.regularizers.L1) for _, k in find_pointwise_kernels(model))
    want = 5e-5 * sum(np.abs(to_numpy(k)).sum() for _, k in find_pointwise_kernels(model))
    assert float(sum(to_numpy(loss) for loss in model.losses)) == pytest.approx(want, rel=1e-5)
    config = model.get_layer("stem_conv").get_config()["pointwise_regularizer"]
    assert config["config"]["l1"] == pytest.approx(5e-5)
    model.save(tmp_path / "l1.keras")
    loaded = keras.saving.load_model(tmp_path / "l1.keras")
    assert float(sum(to_numpy(loss) for loss in loaded.losses)) == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match="l1"):
        lc.apply_pointwise_l1(model, l1=0.0)


def test_prune_pointwise_reaches_the_ratio_exactly():
    model = small_lcresnet()
    total = sum(int(np.prod(k.shape)) for _, k in find_pointwise_kernels(model))
    spatial_before = [to_numpy(k) for _, k in find_kernels(model, which="all_spatial")]
    before = np.concatenate([to_numpy(k).ravel() for _, k in find_pointwise_kernels(model)])
    paths = lc.prune_pointwise(model, ratio=0.7)
    assert paths == [k.path for _, k in find_pointwise_kernels(model)]
    zeros = sum(int((to_numpy(k) == 0).sum()) for _, k in find_pointwise_kernels(model))
    assert zeros == round(0.7 * total)
    assert lc.pointwise_sparsity(model) == {"total": total, "zeros": zeros, "sparsity": zeros / total}
    after = np.concatenate([to_numpy(k).ravel() for _, k in find_pointwise_kernels(model)])
    assert np.abs(after[after != 0]).min() >= np.abs(before[after == 0]).max()  # the smallest went
    np.testing.assert_array_equal(after[after != 0], before[after != 0])
    for before, (_, kernel) in zip(spatial_before, find_kernels(model, which="all_spatial"), strict=True):
        np.testing.assert_array_equal(to_numpy(kernel), before)
    lc.prune_pointwise(model, ratio=0.7)  # pruning again changes nothing
    lc.prune_pointwise(model, ratio=0.0)
    assert lc.pointwise_sparsity(model)["zeros"] == zeros
    for ratio, error in ((1.0, ValueError), (-0.2, ValueError), (None, TypeError)):
        with pytest.raises(error, match="ratio"):
            lc.prune_pointwise(model, ratio=ratio)


def test_prune_callback_applies_at_train_end():
    model = compiled(small_lcresnet())
    x, y = data()
    callback = PrunePointwise(0.5)
    seen = []

    class Spy(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(sum(int((to_numpy(k) == 0).sum()) for _, k in find_pointwise_kernels(self.model)))

    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[Spy(), callback])
    assert seen == [0, 0]  # nothing pruned while training
    zeros = sum(int((to_numpy(k) == 0).sum()) for _, k in find_pointwise_kernels(model))
    assert zeros == callback.result["zeros"] == round(0.5 * callback.result["total"])
    assert callback.paths == [k.path for _, k in find_pointwise_kernels(model)]
    assert callback.get_config() == {"ratio": 0.5}
    with pytest.raises(ValueError, match="ratio"):
        PrunePointwise(1.5)


def test_parameter_counts_exclude_statistics_and_count_banks_once():
    model = small_lcresnet()
    want = lc.lcresnet_parameter_counts(8, 4, 2, num_classes=3)
    counts = lc.parameter_counts(model)
    assert (counts["total"], counts["learnable"]) == (want["total"], want["learnable"])
    bn = sum(int(np.prod(v.shape)) for v in model.weights if "moving" in v.path)
    assert model.count_params() == counts["total"] + bn  # Keras also counts the moving statistics
    betas = sum(int(np.prod(v.shape)) for v in model.weights if v.path.endswith("/beta"))
    assert counts["nonzero"] == counts["total"] - betas  # BatchNorm betas start at zero
    shared = small_lcresnet(sharing="global")
    assert (
        lc.parameter_counts(shared)["total"]
        == lc.lcresnet_parameter_counts(8, 4, 2, num_classes=3, sharing="global")["total"]
    )
    with pytest.raises(TypeError, match="model"):
        lc.parameter_counts("model")
