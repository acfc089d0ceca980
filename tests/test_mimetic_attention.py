"""Mimetic self-attention init (Trockman & Kolter, ICML 2023, Sec. 3) and the scalar-bias baseline of
the mimetic MLP paper (Sec. 3, Fig. 4).

The paper's form, per head ``h`` of width ``k`` in a token width ``d``:
``W_q,h W_k,h^T`` = the rank-``k`` truncation of ``alpha_1 Z + beta_1 I`` and, over all heads,
``W_v W_proj = alpha_2 Z' - beta_2 I`` (full rank when ``H k_v = d``), ``Z`` i.i.d. ``N(0, 1/d)``.
The statistics' tolerances come from that form: the value-projection product is the matrix
itself, whose diagonal mean and off-diagonal magnitudes have closed-form sampling laws; the
query-key truncation has none, so its statistics are checked against the sampling distribution
of the NumPy reference (:func:`keras_structinit.mimetic.query_key_factors`) at the same sizes.
"""

import math

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.mimetic import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    attention_statistics,
    query_key_factors,
    sincos_position_embedding,
    token_grid,
    value_projection_factors,
)

from conftest import assert_round_trip_in_fresh_process, once_per_suite, to_numpy

D, HEADS = 32, 2  # every model below: width 32, 2 heads of 16


def zoo_vit(**kwargs):
    return ks.models.vit(4, D, 2, HEADS, num_classes=3, input_shape=(8, 8, 3), **kwargs)


def hub_vit():
    keras_hub = pytest.importorskip("keras_hub", reason="keras_hub is not installed (the `hub` extra)")
    return keras_hub.models.ViTBackbone(
        image_shape=(8, 8, 3), patch_size=4, num_layers=2, num_heads=HEADS, hidden_dim=D, mlp_dim=2 * D
    )


def functional_mha():
    inputs = keras.Input((6, D))
    x = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="attention_a")(inputs, inputs)
    x = keras.layers.LayerNormalization()(x)
    x = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="attention_b")(x, x)
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x), name="functional_mha")


SOURCES = {"zoo ViT": zoo_vit, "KerasHub ViT": hub_vit, "functional MultiHeadAttention": functional_mha}


def kernels(layer):
    return [
        to_numpy(getattr(layer, part).kernel)
        for part in ("query_dense", "key_dense", "value_dense", "output_dense")
    ]


def reference_qk(d, key_dim, draws=200):
    """Sampling distribution of the per-head query-key statistics under the paper's form."""
    rng = np.random.default_rng(1234)
    rows = []
    for _ in range(draws):
        wq, wk = query_key_factors(rng.standard_normal((1, d, d)), key_dim)
        z = np.zeros((1, 1, d))
        stats = attention_statistics(wq, wk, np.zeros((d, 1, 1)), z)
        rows.append((stats["qk_diag"][0], stats["qk_offdiag"][0]))
    diag, off = np.array(rows).T
    return diag, off, diag / off


# ------------------------------------------------------------------ the NumPy math


@once_per_suite("NumPy only")
def test_query_key_product_is_the_truncated_target():
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((3, 12, 12))
    wq, wk = query_key_factors(noise, 4, alpha=0.7, beta=0.7)
    assert wq.shape == wk.shape == (12, 3, 4)
    for h in range(3):
        u, s, vt = np.linalg.svd(0.7 * noise[h] / math.sqrt(12) + 0.7 * np.eye(12))
        np.testing.assert_allclose(wq[:, h] @ wk[:, h].T, (u[:, :4] * s[:4]) @ vt[:4], atol=1e-12)
        # The SVD split gives both factors the same singular values, sqrt(s).
        np.testing.assert_allclose(np.linalg.svd(wq[:, h], compute_uv=False), np.sqrt(s[:4]), rtol=1e-10)
        np.testing.assert_allclose(np.linalg.svd(wk[:, h], compute_uv=False), np.sqrt(s[:4]), rtol=1e-10)


@once_per_suite("NumPy only")
def test_value_projection_product_is_the_target_at_full_rank():
    noise = np.random.default_rng(1).standard_normal((12, 12))
    wv, wo = value_projection_factors(noise, 3, 4, alpha=0.4, beta=0.4)
    assert wv.shape == (12, 3, 4) and wo.shape == (3, 4, 12)
    np.testing.assert_allclose(
        wv.reshape(12, -1) @ wo.reshape(-1, 12), 0.4 * noise / math.sqrt(12) - 0.4 * np.eye(12), atol=1e-12
    )
    wv, wo = value_projection_factors(noise, 1, 16)  # more columns than d: zero past the rank
    assert np.all(wv[:, 0, 12:] == 0) and np.all(wo[0, 12:] == 0)


@once_per_suite("NumPy only")
def test_defaults_are_the_papers():
    assert DEFAULT_ALPHA == (0.7, 0.4) and DEFAULT_BETA == (0.7, 0.4)


@once_per_suite("NumPy only")
def test_sincos_table_and_token_grid():
    assert token_grid(65) == (1, 8, 8) and token_grid(64) == (0, 8, 8) and token_grid(7) == (0, 1, 7)
    table = sincos_position_embedding(2, 3, 8, class_tokens=1)
    assert table.shape == (7, 8) and np.all(table[0] == 0)
    # Patch (y, x) = (1, 2), frequencies (1, 1e-4): [sin x w, cos x w, sin y w, cos y w].
    w = np.array([1.0, 1e-4])
    np.testing.assert_allclose(
        table[1 + 5], np.concatenate([np.sin(2 * w), np.cos(2 * w), np.sin(1 * w), np.cos(1 * w)])
    )
    assert np.all(sincos_position_embedding(1, 1, 6)[:, 4:] == 0)  # channels past 4 * (6 // 4)


@once_per_suite("NumPy only")
def test_the_reference_distribution_supports_the_several_times_claim():
    """At d = 32, k = 16 the diagonal is several times the off-diagonal magnitude in every draw: the
    threshold 3 of the model tests sits more than 6 standard deviations below the ratio's mean."""
    _, _, ratio = reference_qk(D, D // HEADS)
    assert ratio.mean() - 6 * ratio.std() > 3.0


# ------------------------------------------------------------------ acceptance on the three sources


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_initialize_gives_the_papers_form_per_head(source):
    model = SOURCES[source]()
    before = {v.path: to_numpy(v) for v in model.weights}
    paths = ks.initialize(model, "mimetic-attention", seed=0)
    layers = [layer for layer, _ in ks.mimetic.find_attention_layers(model)]
    assert len(layers) == 2
    expected = [
        kernel.path
        for layer in layers
        for kernel in (
            layer.query_dense.kernel,
            layer.key_dense.kernel,
            layer.value_dense.kernel,
            layer.output_dense.kernel,
        )
    ]
    assert paths[:8] == expected
    for v in model.weights:  # nothing else changes (the position table is checked below)
        if v.path not in paths:
            np.testing.assert_array_equal(to_numpy(v), before[v.path], err_msg=v.path)

    ref_diag, ref_off, _ = reference_qk(D, D // HEADS)
    a2, b2 = DEFAULT_ALPHA[1], DEFAULT_BETA[1]
    # Off-diagonal |alpha_2 Z_ij|: half-normal, mean alpha_2 sqrt(2 / (pi d)); relative std of the
    # mean of n = d (d - 1) of them sqrt(pi / 2 - 1) / sqrt(n).
    off_mean = a2 * math.sqrt(2 / (math.pi * D))
    off_sd = off_mean * math.sqrt(math.pi / 2 - 1) / math.sqrt(D * (D - 1))
    for layer in layers:
        stats = attention_statistics(*kernels(layer))
        for diag, off in zip(stats["qk_diag"], stats["qk_offdiag"], strict=True):
            assert diag > 0 and diag > 3 * off, (layer.name, diag, off)
            assert abs(diag - ref_diag.mean()) < 6 * ref_diag.std() + 1e-5, (diag, ref_diag.mean())
            assert abs(off - ref_off.mean()) < 6 * ref_off.std() + 1e-5, (off, ref_off.mean())
        # W_v W_proj = alpha_2 Z - beta_2 I exactly (H k_v = d): its mean diagonal is
        # -beta_2 + alpha_2 mean(diag Z), the latter N(0, 1/d^2); float32 kernels add ~1e-6.
        assert stats["vo_diag"] < 0
        assert abs(stats["vo_diag"] + b2) < 6 * a2 / D + 1e-5, stats["vo_diag"]
        assert abs(stats["vo_offdiag"] - off_mean) < 6 * off_sd + 1e-5, stats["vo_offdiag"]
        assert all(h < 0 for h in stats["vo_head_diag"]), stats["vo_head_diag"]


@pytest.mark.parametrize("source", ["zoo ViT", "KerasHub ViT"])
def test_position_embeddings_start_sinusoidal(source):
    model = SOURCES[source]()
    paths = ks.initialize(model, "mimetic-attention", seed=0)
    table = [v for v in model.weights if v.path == paths[-1]][0]
    assert "position_embedding" in table.path
    # 8x8 images, 4x4 patches: a class token, then a 2x2 grid.
    np.testing.assert_allclose(
        to_numpy(table).reshape(5, D), sincos_position_embedding(2, 2, D, class_tokens=1), atol=1e-6
    )
    assert table.trainable


def test_position_embedding_none_keeps_the_table_and_seeds_reproduce():
    a, b = zoo_vit(), zoo_vit()
    table = to_numpy(a.get_layer("position_embedding").embedding)
    paths = ks.apply_mimetic_attention(a, position_embedding=None, seed=3)
    assert not any("position" in p for p in paths)
    np.testing.assert_array_equal(to_numpy(a.get_layer("position_embedding").embedding), table)
    ks.apply_mimetic_attention(b, position_embedding=None, seed=3)
    first, second = (kernels(m.get_layer("block_1_attention")) for m in (a, b))
    for x, y in zip(first, second, strict=True):
        np.testing.assert_array_equal(x, y)
    other = kernels(a.get_layer("block_2_attention"))
    assert not np.allclose(first[0], other[0])  # every layer draws its own Z


def test_alpha_beta_scale_the_form():
    model = functional_mha()
    ks.apply_mimetic_attention(model, alpha=0.0, beta=(0.5, 0.25), seed=0)
    stats = attention_statistics(*kernels(model.get_layer("attention_a")))
    # Without noise W_v W_proj = -0.25 I exactly, and each head's W_q W_k^T a rank-16 projection
    # times 0.5: mean diagonal 0.5 * 16 / 32.
    np.testing.assert_allclose(stats["vo_diag"], -0.25, atol=1e-6)
    np.testing.assert_allclose(stats["qk_diag"], [0.25, 0.25], atol=1e-6)


def test_combines_with_mean_shift_in_stage_order():
    """``mean-shift+mimetic-attention``: torch-default, then the attention, then the MLP shift."""
    names = [p.name for p in ks.parse_init_spec("mean-shift:0.1+mimetic-attention")]
    assert names == ["torch-default", "mimetic-attention", "mean-shift"]
    both, attention, shift = zoo_vit(), zoo_vit(), zoo_vit()
    ks.initialize(both, "mean-shift:0.1+mimetic-attention", seed=0)
    ks.initialize(attention, "torch-default+mimetic-attention", seed=0)
    ks.initialize(shift, "mean-shift:0.1", seed=0)
    for name in ("block_1_attention", "block_2_attention"):
        for x, y in zip(kernels(both.get_layer(name)), kernels(attention.get_layer(name)), strict=True):
            np.testing.assert_array_equal(x, y)
    for name in ("block_1_mlp_1", "block_2_mlp_1"):
        np.testing.assert_array_equal(
            to_numpy(both.get_layer(name).kernel), to_numpy(shift.get_layer(name).kernel)
        )


def test_round_trip_keeps_the_init(tmp_path):
    model = zoo_vit()
    ks.initialize(model, "mimetic-attention", seed=0)
    query = to_numpy(model.get_layer("block_1_attention").query_dense.kernel)
    np.save(tmp_path / "query.npy", query)
    x = np.random.default_rng(0).normal(size=(2, 8, 8, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        checks=f"""
        query = keras.ops.convert_to_numpy(model.get_layer("block_1_attention").query_dense.kernel)
        np.testing.assert_array_equal(query, np.load({str(tmp_path / "query.npy")!r}))
        """,
    )


# ------------------------------------------------------------------ the scalar-bias baseline


def test_scalar_bias_dense_is_the_formula():
    layer = ks.layers.ScalarBiasDense(5, activation="gelu", scalar=0.3, bias_initializer="glorot_uniform")
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    got = to_numpy(layer(x))
    w, b = to_numpy(layer.kernel), to_numpy(layer.bias)
    # W1 x + b 1_p 1_n^T x + bias, then the activation: 1_p 1_n^T x = sum(x) 1_p.
    pre = x @ w + 0.3 * x.sum(axis=-1, keepdims=True) @ np.ones((1, 5)) + b
    np.testing.assert_allclose(got, to_numpy(keras.activations.gelu(pre)), rtol=1e-5, atol=1e-6)
    assert [v.name for v in layer.trainable_weights] == ["kernel", "bias", "scalar"]


def test_scalar_bias_builders_and_round_trip(tmp_path):
    model = zoo_vit(mlp_scalar_bias=True)
    assert [layer.name for layer in model.layers if isinstance(layer, ks.layers.ScalarBiasDense)] == [
        "block_1_mlp_1",
        "block_2_mlp_1",
    ]
    # Still the MLP blocks' first layers for the mean shift; the scalar starts at 0.
    paths = ks.initialize(model, "mean-shift:0.1+mimetic-attention", seed=0)
    assert "block_1_mlp_1/kernel" in paths and not any(p.endswith("scalar") for p in paths)
    assert float(to_numpy(model.get_layer("block_1_mlp_1").scalar)) == 0.0
    model.get_layer("block_1_mlp_1").scalar.assign(0.25)
    convnext = ks.models.convnext_isotropic(
        8, 1, kernel_size=3, num_classes=3, input_shape=(8, 8, 3), mlp_scalar_bias=True
    )
    assert isinstance(convnext.get_layer("block_1_pointwise_1"), ks.layers.ScalarBiasDense)
    x = np.random.default_rng(0).normal(size=(2, 8, 8, 3)).astype("float32")
    assert_round_trip_in_fresh_process(
        model,
        x,
        tmp_path,
        checks="""
        layer = model.get_layer("block_1_mlp_1")
        assert type(layer).__name__ == "ScalarBiasDense", type(layer)
        assert abs(float(keras.ops.convert_to_numpy(layer.scalar)) - 0.25) < 1e-7
        """,
    )


# ------------------------------------------------------------------ issue 77.5: self-attention only


def self_and_cross():
    """A self-attention (query is value) and a cross-attention of equal shapes: only the graph tells."""
    x, y = keras.Input((6, D)), keras.Input((6, D))
    h = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="self_att")(x, x)
    h = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="cross_att")(query=h, value=y)
    return keras.Model([x, y], keras.layers.Dense(3, name="head")(h), name="self_and_cross")


def test_cross_attention_is_skipped_said_and_unchanged():
    model = self_and_cross()
    cross = kernels(model.get_layer("cross_att"))
    with pytest.warns(
        UserWarning, match="skipped 1 cross-attention layer.*'cross_att'.*cross_attention=True"
    ):
        paths = ks.initialize(model, "mimetic-attention", seed=0)
    assert paths == [f"self_att/{p}/kernel" for p in ("query", "key", "value", "attention_output")]
    for before, after in zip(cross, kernels(model.get_layer("cross_att")), strict=True):
        np.testing.assert_array_equal(before, after)
    stats = attention_statistics(*kernels(model.get_layer("self_att")))
    assert min(stats["qk_diag"]) > 0 and stats["vo_diag"] < 0
    both = self_and_cross()
    assert len(ks.initialize(both, "mimetic-attention:all", seed=0)) == 8
    assert len(ks.apply_mimetic_attention(self_and_cross(), cross_attention=True, seed=0)) == 8


def test_the_draws_are_numpy_per_layer_and_backend_free():
    from keras_structinit.baseline.sampling import variable_rngs

    model = functional_mha()
    ks.apply_mimetic_attention(model, seed=4)
    layer = model.get_layer("attention_b")
    (rng,) = variable_rngs(4, model, [layer.query_dense.kernel])
    wq, wk = query_key_factors(rng.standard_normal((HEADS, D, D)), D // HEADS)
    wv, wo = value_projection_factors(rng.standard_normal((D, D)), HEADS, D // HEADS)
    for got, want in zip(kernels(layer), (wq, wk, wv, wo), strict=True):
        np.testing.assert_array_equal(got, want.astype("float32"))


def test_a_model_of_cross_attention_only_is_refused_before_any_write():
    x, y = keras.Input((6, D)), keras.Input((5, D))
    h = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="only_cross")(x, y)
    model = keras.Model([x, y], h)
    before = [to_numpy(v).copy() for v in model.weights]
    with pytest.raises(ValueError, match="no self-attention layer.*'only_cross'.*cross_attention=True"):
        ks.initialize(model, "torch-default+mimetic-attention", seed=0)
    for v, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(to_numpy(v), value)
    form = ks.methods.init_forms()["mimetic-attention"]
    with pytest.raises(ValueError, match="no self-attention layer"):
        form.check(model, "self")  # what the driver can ask before the base form writes
    form.check(model, "all")
    with pytest.raises(ValueError, match="`layers` names the cross-attention layer 'cross_att'"):
        ks.apply_mimetic_attention(self_and_cross(), layers=["cross_att"])
    with pytest.raises(TypeError, match="`cross_attention`"):
        ks.apply_mimetic_attention(self_and_cross(), cross_attention="yes")
    with pytest.raises(ValueError, match="mimetic-attention.*one of self, all"):
        ks.parse_init_spec("mimetic-attention:cross")


def test_kerashub_decoder_cross_attention_is_found_without_a_graph():
    keras_hub = pytest.importorskip("keras_hub", reason="keras_hub is not installed (the `hub` extra)")
    x, y = keras.Input((5, D)), keras.Input((7, D))
    decoder = keras_hub.layers.TransformerDecoder(2 * D, HEADS, name="decoder")
    model = keras.Model([x, y], decoder(x, y))
    from keras_structinit.mimetic.structure import is_cross_attention

    kinds = {layer.name: is_cross_attention(layer) for layer, _ in ks.mimetic.find_attention_layers(model)}
    assert kinds == {"self_attention": False, "cross_attention": True}
    with pytest.warns(UserWarning, match="'cross_attention'"):
        paths = ks.apply_mimetic_attention(model, seed=0)
    assert paths and all("/self_attention/" in p for p in paths)
