"""The mimetic self-attention section of ``structinit inspect`` (issue 77.6): per attention layer and
head, W_q W_k^T and W_v W_o as the paper's figures show them; and ``structinit init``'s layer counts."""

import keras
import numpy as np
import pytest

import keras_structinit as ks

from conftest import to_numpy

D, HEADS = 16, 2


def two_attention_layers():
    inputs = keras.Input((5, D))
    x = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="attention_a")(inputs, inputs)
    x = keras.layers.MultiHeadAttention(HEADS, D // HEADS, name="attention_b")(x, x)
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x), name="two_attention")


def numpy_stats(m):
    diag = np.diagonal(m)
    off = m[~np.eye(*m.shape, dtype=bool)]
    return diag.mean(), off.mean(), np.abs(off).mean()


def test_each_head_shows_the_products_the_init_sets():
    model = two_attention_layers()
    ks.initialize(model, "mimetic-attention", seed=0)
    report = ks.inspect(model)
    rows = {r["layer"]: r for r in report.attention}
    assert list(rows) == ["attention_a", "attention_b"] and not rows["attention_a"]["cross_attention"]
    for name, row in rows.items():
        layer = model.get_layer(name)
        q, k, v, o = (
            to_numpy(getattr(layer, p).kernel).astype(np.float64)
            for p in ("query_dense", "key_dense", "value_dense", "output_dense")
        )
        assert len(row["heads"]) == HEADS
        for h, head in enumerate(row["heads"]):
            diag, off, absolute = numpy_stats(q[:, h] @ k[:, h].T)
            assert head["qk_diag"] == pytest.approx(diag, rel=1e-9)
            assert head["qk_offdiag"] == pytest.approx(off, rel=1e-9, abs=1e-12)
            assert head["qk_abs_offdiag"] == pytest.approx(absolute, rel=1e-9)
            assert head["qk_diag"] > 3 * head["qk_abs_offdiag"]  # the init's +I
            assert head["vo_diag"] == pytest.approx(numpy_stats(v[:, h] @ o[h])[0], rel=1e-9)
        vo = numpy_stats(v.reshape(D, -1) @ o.reshape(-1, D))
        assert row["vo"]["diag"] == pytest.approx(vo[0], rel=1e-9) and row["vo"]["diag"] < 0  # -I
    text = report.to_markdown()
    assert "## Attention" in text and "2 attention layers found by structure" in text


def test_kerashub_and_swin_attention_are_shown():
    keras_hub = pytest.importorskip("keras_hub", reason="keras_hub is not installed (the `hub` extra)")
    vit = keras_hub.models.ViTBackbone(
        image_shape=(8, 8, 3), patch_size=4, num_layers=2, num_heads=HEADS, hidden_dim=D, mlp_dim=2 * D
    )
    assert len(ks.inspect(vit).attention) == 2
    swin = keras_hub.models.SwinTransformerBackbone(
        image_shape=(16, 16, 3), patch_size=2, embed_dim=D, depths=[2], num_heads=[2], window_size=4
    )
    rows = ks.inspect(swin).attention
    assert len(rows) == 2 and {r["layout"] for r in rows} == {"fused-qkv"}
    from keras_structinit.mimetic import structure

    found = ks.mimetic.find_attention_layers(swin)[0][0]
    q, k, _, _ = structure.attention_projections(found).kernels()  # the fused qkv, split per head
    assert rows[0]["heads"][1]["qk_diag"] == pytest.approx(numpy_stats(q[:, 1] @ k[:, 1].T)[0], rel=1e-6)


def test_a_model_without_attention_has_an_empty_section():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    report = ks.inspect(model)
    assert report.attention == [] and "## Attention" not in report.to_markdown()


def test_the_init_report_counts_every_layer_of_a_kind(tmp_path):
    """Two MultiHeadAttention layers hold 8 EinsumDense layers, whose names repeat (query, key, ...)."""
    from keras_structinit.cli.init import init_model

    source = tmp_path / "two.keras"
    two_attention_layers().save(source)
    net, report = init_model(str(source), "torch-default", str(tmp_path / "out.keras"))
    einsum = [x for x in net._flatten_layers() if isinstance(x, keras.layers.EinsumDense)]
    assert len(einsum) == 8
    kinds = {k["kind"]: k for k in report.kinds()}
    assert kinds["EinsumDense"]["layers"] == 8 and kinds["EinsumDense"]["variables"] == 16
    assert kinds["Dense"]["layers"] == 1
    assert "of 9 layers written" in report.to_markdown()
