"""Which layers are the first layer of an MLP block, by name (the faster path, which must agree with
the structure of :mod:`.structure`), and what the structural searches look for (no Keras import)."""

from __future__ import annotations

import re

__all__ = [
    "ATTENTION_DESCRIPTION",
    "MLP_DESCRIPTION",
    "MLP_FIRST_LAYERS",
    "MLP_FIRST_PATTERN",
    "MLP_STRUCTURE",
    "second_layer_path",
]

#: The first layer of an MLP block: ``(model family, layer name, regex)``, the regex
#: matching the end of the kernel's variable path (the names ``selection/families.py`` maps).
MLP_FIRST_LAYERS = (
    ("the package's ConvNeXt", "{prefix}_pointwise_1", r"\w*_pointwise_1"),
    ("the package's ViT", "block_{i}_mlp_1", r"block_\d+_mlp_1"),
    ("keras.applications ConvNeXt", "{model}_stage_{s}_block_{b}_pointwise_conv_1", r"\w+_pointwise_conv_1"),
    ("KerasHub ViTBackbone", "dense_1 in each block's mlp", r"mlp/dense_1"),
)
MLP_FIRST_PATTERN = re.compile(r"(?:^|/)(?:" + "|".join(p for *_, p in MLP_FIRST_LAYERS) + r")/kernel$")

#: What the ``"attention"`` selector looks for (:mod:`.structure`).
ATTENTION_DESCRIPTION = (
    "self-attention layers: looked for keras.layers.MultiHeadAttention, or a layer "
    "with `num_heads` holding a fused qkv Dense (d -> 3Hk) and an output Dense "
    "(Hk -> d), or query, key, value and output Dense layers (built)"
)

#: What the structural search for MLP blocks looks for (:mod:`.structure`; the one-line refusal).
MLP_STRUCTURE = (
    "MLP blocks: looked for a Dense / 1x1 conv / EinsumDense that widens the features "
    "(d -> h > d), an activation and one that narrows them back (h -> d), in a residual "
    "branch of a functional graph or within one sub-layer; pass `layers=[...]` to name the "
    "first layers of another model's MLP blocks"
)

#: How the walker's errors describe MLP blocks (the ``"mlp_first"`` selector).
MLP_DESCRIPTION = (
    "MLP blocks: looked for the first Dense / 1x1 conv of each, named "
    + "; ".join(f"{name} ({family})" for family, name, _ in MLP_FIRST_LAYERS)
    + "; pass `layers=[...]` to name the first layers of another model's MLP blocks"
)


#: The first layer's name ends in ``1`` (``_pointwise_1``, ``_mlp_1``, ``_pointwise_conv_1``,
#: ``dense_1``); the block's second layer is named alike, ending in ``2``.
_FIRST_SUFFIX = re.compile(r"(pointwise_|mlp_|pointwise_conv_|dense_)1(/kernel)$")


def second_layer_path(first_path):
    """The kernel path of the second layer ``W2`` of the MLP block whose first kernel is at
    ``first_path`` (one of :data:`MLP_FIRST_LAYERS`' names), or ``None`` for another name."""
    if not isinstance(first_path, str):
        raise TypeError(f"`first_path` must be a variable path (str). Received: {type(first_path).__name__}")
    second, count = _FIRST_SUFFIX.subn(r"\g<1>2\2", first_path)
    return second if count else None
