"""mimetic_sweep's variants: the ViT attention comparison and the scalar-bias baseline (issue 52)."""

import argparse

import keras_structinit as ks
from benchmarks import mimetic_sweep

from conftest import once_per_suite


def options(**kwargs):
    return argparse.Namespace(
        **{
            "b_values": [0.0, 0.2],
            "combo_b": [0.2],
            "attention": False,
            "scalar_bias": [],
            "only": None,
            **kwargs,
        }
    )


@once_per_suite("names only")
def test_variants_add_the_attention_comparison_and_the_scalar_bias_baseline():
    assert mimetic_sweep.variants("vit", options()) == ["default", "mean-shift:0", "mean-shift:0.2"]
    assert mimetic_sweep.variants("vit", options(attention=True, scalar_bias=[0.0])) == [
        "default",
        "mean-shift:0",
        "mean-shift:0.2",
        "torch-default+mimetic-attention",
        "mimetic-attention+mean-shift:0.2",
        "scalar-bias+mean-shift:0",
    ]
    convnext = mimetic_sweep.variants("convnext", options(attention=True))
    assert "torch-default+mimetic-attention" not in convnext


def test_scalar_bias_variant_builds_the_baseline_and_applies_its_spec():
    config = {"vit": {"dim": 8, "depth": 1, "heads": 2, "patch_size": 16}}
    model = mimetic_sweep.build("vit", config, "scalar-bias+mean-shift:0.2")
    assert isinstance(model.get_layer("block_1_mlp_1"), ks.layers.ScalarBiasDense)
    mimetic_sweep.initialize(model, "scalar-bias+mean-shift:0.2", seed=0)
    assert not isinstance(
        mimetic_sweep.build("vit", config).get_layer("block_1_mlp_1"), ks.layers.ScalarBiasDense
    )
