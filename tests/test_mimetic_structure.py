"""MLP blocks and self-attention layers found by structure, not by name (issue 63): KerasHub DeiT,
DINOV2, ViT, BERT and Swin built from config (no downloads), keras.applications ConvNeXt, the
package's models and a plain functional ViT."""

import math

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.engine import walker
from keras_structinit.mimetic import DEFAULT_ALPHA, DEFAULT_BETA, attention_statistics
from keras_structinit.mimetic.apply import find_mlp_blocks
from keras_structinit.mimetic.structure import attention_projections

from conftest import assert_round_trip_in_fresh_process, to_numpy

D = 16  # token width of every transformer below; MLP width 2 D


def hub():
    return pytest.importorskip("keras_hub", reason="keras_hub is not installed (the `hub` extra)")


def functional_vit(depth=2):
    """LayerNormalization -> MultiHeadAttention -> LayerNormalization -> Dense(2d, gelu) -> Dense(d),
    residual around each, names as Keras gives them."""
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Reshape((16, D))(keras.layers.Conv2D(D, 2, strides=2)(inputs))
    for _ in range(depth):
        y = keras.layers.LayerNormalization()(x)
        x = keras.layers.Add()([x, keras.layers.MultiHeadAttention(2, D // 2)(y, y)])
        y = keras.layers.LayerNormalization()(x)
        y = keras.layers.Dense(2 * D, activation="gelu")(y)
        x = keras.layers.Add()([x, keras.layers.Dense(D)(y)])
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(3)(x), name="plain_vit")


def hub_deit():
    return hub().models.DeiTBackbone(
        image_shape=(8, 8, 3), patch_size=4, num_layers=3, num_heads=2, hidden_dim=D, intermediate_dim=2 * D
    )


def hub_dinov2():
    return hub().models.DINOV2Backbone(
        patch_size=4,
        num_layers=3,
        hidden_dim=D,
        num_heads=2,
        intermediate_dim=2 * D,
        image_shape=(8, 8, 3),
        position_embedding_shape=(8, 8),
    )


def hub_bert():
    return hub().models.BertBackbone(
        vocabulary_size=20,
        num_layers=2,
        num_heads=2,
        hidden_dim=D,
        intermediate_dim=2 * D,
        max_sequence_length=6,
    )


def hub_swin(dim=D):
    return hub().models.SwinTransformerBackbone(
        image_shape=(16, 16, 3), patch_size=2, embed_dim=dim, depths=[2], num_heads=[2], window_size=4
    )


def hub_mit():
    return hub().models.MiTBackbone(
        layerwise_depths=[1, 1],
        num_layers=2,
        layerwise_num_heads=[1, 2],
        layerwise_sr_ratios=[2, 1],
        max_drop_path_rate=0.0,
        layerwise_patch_sizes=[3, 3],
        layerwise_strides=[2, 2],
        image_shape=(16, 16, 3),
        hidden_dims=[8, 16],
    )


def _mix_ffn_pairs(model):
    """MiT's Mix-FFN: fc1, a depthwise conv, GELU (applied in its ``call``), fc2."""
    ffns = [layer for layer in walker.iter_layers(model) if type(layer).__name__ == "MixFFN"]
    assert len(ffns) == 2
    return [(f.fc1.kernel.path, f.fc2.kernel.path) for f in ffns]


def _functional_pairs(model):
    dense = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    return [(a.kernel.path, b.kernel.path) for a, b in zip(dense[0:-1:2], dense[1:-1:2], strict=True)]


#: model -> the (first kernel, second kernel) paths of its MLP blocks, one per transformer layer.
PAIRS = {
    "functional ViT": (functional_vit, _functional_pairs),
    "KerasHub DeiT": (
        hub_deit,
        lambda m: [
            (
                f"deit_encoder/transformer_block_{i}/mlp/dense/kernel",
                f"deit_encoder/transformer_block_{i}/output_layer/output/kernel",
            )
            for i in (1, 2, 3)
        ],
    ),
    "KerasHub DINOV2": (
        hub_dinov2,
        lambda m: [
            (f"encoder/layers_{i}/mlp/fc1/kernel", f"encoder/layers_{i}/mlp/fc2/kernel") for i in (0, 1, 2)
        ],
    ),
    "KerasHub BERT": (
        hub_bert,
        lambda m: [
            (
                f"transformer_layer_{i}/feedforward_intermediate_dense/kernel",
                f"transformer_layer_{i}/feedforward_output_dense/kernel",
            )
            for i in (0, 1)
        ],
    ),
    "KerasHub MiT": (hub_mit, _mix_ffn_pairs),
    "KerasHub Swin": (
        hub_swin,
        lambda m: [
            (f"stage_0/blocks_{i}/mlp/fc1/kernel", f"stage_0/blocks_{i}/mlp/fc2/kernel") for i in (0, 1)
        ],
    ),
    "package ViT": (
        lambda: ks.models.vit(4, D, 2, 2, num_classes=3, input_shape=(8, 8, 3)),
        lambda m: [(f"block_{i}_mlp_1/kernel", f"block_{i}_mlp_2/kernel") for i in (1, 2)],
    ),
}


@pytest.mark.parametrize("source", sorted(PAIRS))
def test_mlp_blocks_are_found_with_their_two_kernels_paired(source):
    build, expected = PAIRS[source]
    model = build()
    blocks = find_mlp_blocks(model)
    assert [(b.first_kernel.path, b.second_kernel.path) for b in blocks] == expected(model)
    assert [k.path for _, k in ks.mimetic.find_mlp_kernels(model)] == [p for p, _ in expected(model)]
    if source == "KerasHub MiT":
        assert all([type(x).__name__ for x in b.between] == ["DepthwiseConv2D"] for b in blocks)


def test_keras_applications_convnext_blocks_agree_with_the_names():
    """The names (the faster path) and the structure find the same layers; the second layer is the
    block's ``_pointwise_conv_2``, reached through the GELU between them."""
    from keras.src.applications.convnext import ConvNeXt

    model = ConvNeXt(
        depths=[1, 1, 2, 1],
        projection_dims=[8, 8, 16, 16],
        input_shape=(32, 32, 3),
        weights=None,
        include_preprocessing=False,
        include_top=False,
        name="small",
    )
    blocks = find_mlp_blocks(model)
    named = [kernel.path for _, kernel in walker.find(model, "mlp_first")]
    assert [b.first_kernel.path for b in blocks] == named and len(named) == 5
    assert all(b.second_kernel.path == b.first_kernel.path.replace("_conv_1/", "_conv_2/") for b in blocks)
    assert all(any("gelu" in layer.name for layer in b.between) for b in blocks)


def _baseline_and_shifted(build):
    def fresh():
        keras.utils.set_random_seed(0)
        return build()

    baseline, moved = fresh(), fresh()
    ks.initialize(baseline, "torch-default", seed=5)
    paths = ks.initialize(moved, "mean-shift:0.1", seed=5)
    return baseline, moved, paths


@pytest.mark.parametrize("source", ["KerasHub DeiT", "KerasHub DINOV2", "functional ViT"])
def test_mean_shift_writes_the_first_kernel_of_every_block_and_nothing_else(source):
    """On PyTorch's default (the paper's baseline), mean-shift:0.1 adds exactly b = 0.1 to every entry
    of each block's first kernel (Eq. 2, mode "constant": W1 = W_base + b 1 1^T) and leaves every other
    variable as the baseline drew it; the kernel's mean is then 0.1 up to the base's own mean,
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) over n entries: |mean| < 6 / sqrt(3 fan_in n)."""
    build, expected = PAIRS[source]
    baseline, moved, paths = _baseline_and_shifted(build)
    firsts = [first for first, _ in expected(moved)]
    assert len(firsts) == (2 if source == "functional ViT" else 3)
    assert [p for p in paths if p in firsts] == firsts
    for a, b in zip(baseline.weights, moved.weights, strict=True):
        delta = to_numpy(b) - to_numpy(a)
        if b.path in firsts:  # the moved model's paths (Keras numbers a second build's layers anew)
            np.testing.assert_allclose(delta, 0.1, atol=1e-6, err_msg=b.path)
            value = to_numpy(b)
            fan_in = value.shape[0]
            assert abs(value.mean() - 0.1) < 6 / math.sqrt(3 * fan_in * value.size), b.path
        else:
            np.testing.assert_array_equal(delta, 0, err_msg=b.path)


def test_round_trip_reproduces_the_shifted_model(tmp_path):
    _, model, _ = _baseline_and_shifted(functional_vit)
    x = np.random.default_rng(0).normal(size=(2, 8, 8, 3)).astype("float32")
    assert_round_trip_in_fresh_process(model, x, tmp_path)


def no_residual():
    inputs = keras.Input((4, D))
    x = keras.layers.Dense(2 * D, activation="gelu", name="wide")(inputs)
    return keras.Model(inputs, keras.layers.Dense(D, name="narrow")(x), name="no_residual")


def no_activation():
    inputs = keras.Input((4, D))
    x = keras.layers.Dense(2 * D, name="wide")(inputs)
    return keras.Model(
        inputs, keras.layers.Add()([inputs, keras.layers.Dense(D, name="narrow")(x)]), name="no_activation"
    )


@pytest.mark.parametrize("build", [no_residual, no_activation])
def test_a_model_without_mlp_blocks_is_refused_in_one_line_and_unchanged(build):
    model = build()
    before = [to_numpy(v) for v in model.weights]
    with pytest.raises(ValueError, match=rf"\({model.name}\) has no MLP blocks: looked for") as info:
        ks.initialize(model, "torch-default+mean-shift:0.1", seed=0)
    message = str(info.value)
    assert "\n" not in message and "widens" in message and "activation" in message and "residual" in message
    for variable, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(to_numpy(variable), value)  # all or nothing
    assert ks.inspect(model).mlp == []


def test_a_layer_named_like_a_block_but_not_one_is_refused():
    """The names are a faster path that must agree with the structure."""
    inputs = keras.Input((4, D))
    y = keras.layers.Dense(2 * D, activation="gelu", name="block_1_mlp_1")(inputs)
    x = keras.layers.Add()([inputs, keras.layers.Dense(D, name="block_1_mlp_2")(y)])
    x = keras.layers.Dense(D, name="block_2_mlp_1")(x)  # named like a first layer, widens nothing
    model = keras.Model(inputs, x)
    with pytest.raises(ValueError, match="'block_2_mlp_1' is named like the first layer of an MLP block"):
        ks.apply_mean_shift(model)


def test_inspect_and_the_init_report_list_the_blocks_paired(tmp_path):
    model = functional_vit()
    expected = _functional_pairs(model)
    rows = ks.inspect(model).mlp
    assert [(r["path"], r["second_path"]) for r in rows] == expected
    source = tmp_path / "vit.keras"
    model.save(source)
    from keras_structinit.cli.init import init_model

    _, report = init_model(
        str(source), "mean-shift:0.1", str(tmp_path / "out.keras"), report=str(tmp_path / "report.md")
    )
    text = (tmp_path / "report.md").read_text()
    assert "## MLP blocks" in text and "2 MLP blocks found by structure" in text
    for first, second in expected:
        assert any(first in line and second in line for line in text.splitlines()), (first, second)


# ------------------------------------------------------------------ attention by structure


def test_swin_window_attention_gets_the_papers_form_per_head():
    """Swin's fused qkv kernel (d, 3 H k) and projection (H k, d): per head a positive mean diagonal
    of W_q W_k^T, of the size the paper's form gives, and W_v W_proj = alpha_2 Z - beta_2 I; the
    relative position tables and everything else stay as built."""
    d = 32
    model = hub_swin(d)
    before = {v.path: to_numpy(v) for v in model.weights}
    paths = ks.initialize(model, "mimetic-attention", seed=0)
    assert paths == [
        f"stage_0/blocks_{i}/attn/attention_{part}/kernel" for i in (0, 1) for part in ("qkv", "projection")
    ]
    for v in model.weights:
        if v.path not in paths:
            np.testing.assert_array_equal(to_numpy(v), before[v.path], err_msg=v.path)
    layers = [layer for layer, _ in ks.mimetic.find_attention_layers(model)]
    assert [type(layer).__name__ for layer in layers] == ["WindowAttention"] * 2
    a2, b2 = DEFAULT_ALPHA[1], DEFAULT_BETA[1]
    for layer in layers:
        q, k, v, o = attention_projections(layer).kernels()
        assert q.shape == (d, 2, d // 2) and o.shape == (2, d // 2, d)
        stats = attention_statistics(q, k, v, o)
        for diag, off in zip(stats["qk_diag"], stats["qk_offdiag"], strict=True):
            assert diag > 0 and diag > 3 * off, (layer.name, diag, off)
        assert abs(stats["vo_diag"] + b2) < 6 * a2 / d + 1e-5, stats["vo_diag"]
        assert all(h < 0 for h in stats["vo_head_diag"]), stats["vo_head_diag"]
        # the fused kernel's columns are q | k | v, each (H, k) head-major, as Swin's call reshapes them
        qkv = to_numpy(layer.qkv.kernel)
        np.testing.assert_array_equal(qkv[:, :d].reshape(q.shape), q)
        np.testing.assert_array_equal(qkv[:, 2 * d :].reshape(v.shape), v)
    x = np.random.default_rng(0).normal(size=(1, 16, 16, 3)).astype("float32")
    assert np.isfinite(to_numpy(model(x))).all()


class SeparateAttention(keras.layers.Layer):
    """Self-attention with its own query, key, value and output Dense layers (no MultiHeadAttention)."""

    def __init__(self, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads

    def build(self, shape):
        d = shape[-1]
        self.q, self.k, self.v = (keras.layers.Dense(d, name=n) for n in ("q", "k", "v"))
        self.o = keras.layers.Dense(d, name="o")
        for layer in (self.q, self.k, self.v, self.o):
            layer.build(shape)

    def call(self, x):
        return self.o(self.v(x)) + 0 * self.q(x) + 0 * self.k(x)


def test_separate_projections_with_heads_are_self_attention():
    inputs = keras.Input((4, D))
    model = keras.Model(inputs, SeparateAttention(2, name="attention")(inputs))
    paths = ks.apply_mimetic_attention(model, position_embedding=None, seed=0)
    assert paths == [f"attention/{n}/kernel" for n in "qkvo"]
    q, k, v, o = attention_projections(model.get_layer("attention")).kernels()
    stats = attention_statistics(q, k, v, o)
    assert all(diag > 0 for diag in stats["qk_diag"]) and stats["vo_diag"] < 0


def test_a_model_without_attention_is_refused_in_one_line():
    model = no_residual()
    before = [to_numpy(v) for v in model.weights]
    with pytest.raises(ValueError, match="has no self-attention layers: looked for") as info:
        ks.initialize(model, "torch-default+mimetic-attention", seed=0)
    assert "\n" not in str(info.value) and "fused qkv" in str(info.value)
    for variable, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(to_numpy(variable), value)  # all or nothing
