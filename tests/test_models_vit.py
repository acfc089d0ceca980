"""ViT: structure, parameter counts, init, class token / position embedding, round trips."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.models import ClassToken

from conftest import assert_round_trip_in_fresh_process, assert_round_trip_in_process, to_numpy


def vit_params(patch, dim, depth, mlp_ratio=4, channels=3, size=224, classes=1000):
    """ViT parameter count, written out per part."""
    tokens = (size // patch) ** 2 + 1
    embedding = patch * patch * channels * dim + dim  # patch conv
    embedding += dim + tokens * dim  # class token, position embedding
    norms = 2 * (2 * dim)
    attention = 4 * (dim * dim + dim)  # q, k, v, output projections
    mlp = (dim * mlp_ratio * dim + mlp_ratio * dim) + (mlp_ratio * dim * dim + dim)
    head = 2 * dim + dim * classes + classes  # final LN + dense
    return embedding + depth * (norms + attention + mlp) + head


# Counts do not depend on values: zeros spare JAX compiling a random-number program per shape.
ZEROS = {name: "zeros" for name in ("kernel_initializer", "mlp_initializer", "dense_initializer")}


def test_vit_tiny_16_has_timms_parameter_count():
    expected = vit_params(16, 192, 12)
    assert expected == 5_717_416
    model = ks.models.vit_tiny(**ZEROS)
    assert model.name == "vit_tiny_16"
    assert model.count_params() == expected


def test_vit_small_16_has_timms_parameter_count():
    expected = vit_params(16, 384, 12)
    assert expected == 22_050_664
    model = ks.models.vit_small(**ZEROS)
    assert model.count_params() == expected
    assert model.get_layer("block_12_attention").num_heads == 6


def test_structure_names_and_forward_shape():
    model = ks.models.vit(4, 32, 2, 4, num_classes=5)
    out = model(np.zeros((2, 32, 32, 3), "float32"))
    assert tuple(out.shape) == (2, 5)
    assert model.count_params() == vit_params(4, 32, 2, size=32, classes=5)
    assert model.get_layer("patch_embedding").strides == (4, 4)
    assert tuple(model.get_layer("class_token").token.shape) == (1, 1, 32)
    assert tuple(model.get_layer("position_embedding").embedding.shape) == (1, 65, 32)
    for i in (1, 2):
        attention = model.get_layer(f"block_{i}_attention")
        assert isinstance(attention, keras.layers.MultiHeadAttention)
        assert attention.num_heads == 4 and attention.key_dim == 8
        assert model.get_layer(f"block_{i}_norm_1").epsilon == 1e-6
        assert model.get_layer(f"block_{i}_norm_2").epsilon == 1e-6
        assert model.get_layer(f"block_{i}_mlp_1").units == 128
        assert model.get_layer(f"block_{i}_mlp_2").units == 32
    assert model.get_layer("final_norm").epsilon == 1e-6
    assert model.get_layer("class_token_output").output.shape[1:] == (32,)
    # No dropout layers unless asked for.
    assert not any(isinstance(layer, keras.layers.Dropout) for layer in model.layers)


def test_head_reads_the_class_token():
    model = ks.models.vit(8, 16, 1, 2, num_classes=3)
    x = np.random.default_rng(0).random((2, 32, 32, 3)).astype("float32")
    features = keras.Model(model.input, model.get_layer("final_norm").output)(x)
    pooled = keras.Model(model.input, model.get_layer("class_token_output").output)(x)
    np.testing.assert_allclose(to_numpy(pooled), to_numpy(features)[:, 0], rtol=1e-6)


def test_timm_initialization():
    model = ks.models.vit(4, 64, 1, 4)
    kernel = to_numpy(model.get_layer("block_1_mlp_1").kernel)  # 64 x 256
    assert np.std(kernel) == pytest.approx(0.02, rel=0.05)
    position = to_numpy(model.get_layer("position_embedding").embedding)  # 65 x 64
    assert np.std(position) == pytest.approx(0.02, rel=0.06)
    assert np.abs(to_numpy(model.get_layer("class_token").token)).max() < 1e-4
    attention = model.get_layer("block_1_attention")
    by_path = {w.path.split("/", 1)[1]: w for w in attention.weights}
    q, k = to_numpy(by_path["query/kernel"]), to_numpy(by_path["key/kernel"])
    assert np.std(q) == pytest.approx(0.02, rel=0.1) and not np.allclose(q, k)
    for name in ("block_1_mlp_1", "block_1_mlp_2", "head"):
        np.testing.assert_array_equal(to_numpy(model.get_layer(name).bias), 0.0)
    # Patch embedding: PyTorch's default uniform, bound 1/sqrt(4*4*3).
    patch = to_numpy(model.get_layer("patch_embedding").kernel)
    assert 0.9 / np.sqrt(48) < np.abs(patch).max() <= 1 / np.sqrt(48)


def test_dropout_layers_and_deterministic_inference():
    model = ks.models.vit(8, 16, 2, 2, num_classes=3, dropout=0.5)
    for name in ("embedding_dropout", "block_2_attention_dropout", "block_1_mlp_1_dropout"):
        assert model.get_layer(name).rate == 0.5
    x = np.random.default_rng(0).random((2, 32, 32, 3)).astype("float32")
    np.testing.assert_array_equal(to_numpy(model(x)), to_numpy(model(x)))


def test_bad_arguments():
    with pytest.raises(ValueError, match="heads"):
        ks.models.vit(4, 30, 2, 4)
    with pytest.raises(ValueError, match="patch_size"):
        ks.models.vit(5, 32, 2, 4)
    with pytest.raises(ValueError, match="dropout"):
        ks.models.vit(4, 32, 2, 4, dropout=1.0)
    with pytest.raises(ValueError, match="input_shape"):
        ks.models.vit(4, 32, 2, 4, input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="depth"):
        ks.models.vit(4, 32, 0, 4)
    with pytest.raises(ValueError, match="patch_size"):
        ks.models.vit_tiny(patch_size=0, input_shape=(32, 32, 3))


def kernels(model):
    """Every kernel of the model, by weight path (attention: four per layer)."""
    return {w.path: to_numpy(w) for w in model.weights if w.path.endswith("kernel")}


def test_mlp_initializer_sets_exactly_the_first_mlp_dense():
    model = ks.models.vit(4, 16, 2, 2, num_classes=3, mlp_initializer=keras.initializers.Constant(0.5))
    found = kernels(model)
    w1 = {path for path in found if "_mlp_1/" in path}
    assert w1 == {"block_1_mlp_1/kernel", "block_2_mlp_1/kernel"}
    for path, kernel in found.items():
        if path in w1:
            np.testing.assert_array_equal(kernel, 0.5)
        else:  # W2, the 4 attention projections per block, patch embedding, head
            assert not np.any(kernel == 0.5), path
    assert len(found) == 2 * (1 + 1 + 4) + 2


def test_dense_and_kernel_initializers_reach_w2_attention_and_the_patch_embedding():
    model = ks.models.vit(
        4,
        16,
        1,
        2,
        num_classes=3,
        dense_initializer="ones",
        kernel_initializer=keras.initializers.Constant(0.25),
    )
    for path, kernel in kernels(model).items():
        if path.startswith(("block_1_mlp_2/", "block_1_attention/")):
            np.testing.assert_array_equal(kernel, 1.0, err_msg=path)
        elif path.startswith("patch_embedding/"):
            np.testing.assert_array_equal(kernel, 0.25)
        else:  # W1 and the head keep timm's N(0, 0.02^2)
            assert np.std(kernel) == pytest.approx(0.02, rel=0.3), path
    # Biases keep their init: PyTorch's uniform for the patch embedding, zeros elsewhere.
    assert np.abs(to_numpy(model.get_layer("patch_embedding").bias)).max() > 0
    np.testing.assert_array_equal(to_numpy(model.get_layer("block_1_mlp_2").bias), 0.0)


def test_initializer_arguments_are_checked():
    with pytest.raises(TypeError, match="dense_initializer"):
        ks.models.vit(4, 16, 1, 2, dense_initializer=[0.1])
    with pytest.raises(ValueError, match="mlp_initializer"):
        ks.models.vit_tiny(patch_size=4, input_shape=(32, 32, 3), mlp_initializer="no_such_initializer")


def test_keras_round_trip_with_a_non_default_initializer(tmp_path):
    model = ks.models.vit(
        4, 16, 2, 2, num_classes=4, input_shape=(16, 16, 3), mlp_initializer=keras.initializers.Orthogonal()
    )
    x = np.random.default_rng(2).random((3, 16, 16, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("block_2_mlp_1").kernel_initializer, keras.initializers.Orthogonal)


def test_keras_round_trip_in_process(tmp_path):
    model = ks.models.vit(4, 16, 2, 2, num_classes=4, input_shape=(16, 16, 3), dropout=0.1)
    x = np.random.default_rng(0).random((3, 16, 16, 3)).astype("float32")
    loaded = assert_round_trip_in_process(model, x, tmp_path)
    assert isinstance(loaded.get_layer("class_token"), ClassToken)


def test_keras_round_trip_in_fresh_process(tmp_path):
    model = ks.models.vit_tiny(patch_size=8, num_classes=3, input_shape=(16, 16, 3))
    x = np.random.default_rng(1).random((2, 16, 16, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        """
        from keras_structinit.models import ClassToken, PositionEmbedding
        assert isinstance(model.get_layer("class_token"), ClassToken)
        assert isinstance(model.get_layer("position_embedding"), PositionEmbedding)
        assert model.name == "vit_tiny_8"
    """,
    )


def test_one_compiled_training_step():
    model = ks.models.vit(4, 16, 1, 2, num_classes=3, input_shape=(8, 8, 3), dropout=0.1)
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random((8, 8, 8, 3)).astype("float32"), rng.integers(0, 3, 8)
    before = to_numpy(model.get_layer("position_embedding").embedding)
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert not np.allclose(to_numpy(model.get_layer("position_embedding").embedding), before)
