"""Family adapters: how a model family's variables split into blocks and dimension roles (no Keras).

Weight selection keeps the selected indices *consistent*: every tensor that
has a given dimension (the residual width, one block's MLP hidden width, one
attention's heads...) uses the same indices along it. An adapter says, for
each variable path of a family, which block it belongs to and what role each
of its axes plays:

* a role string names a dimension shared across tensors. Roles ending in
  ``@`` are scoped to the block (``"hidden@"`` of block 3 is its own role);
* :data:`SAME` marks an axis whose size must be equal in teacher and student
  (kernel taps, RGB input channels, a depthwise multiplier);
* :data:`TOKENS` marks a position-embedding token axis (equal, or resized
  when the caller allows it).

A rule is ``(regex, roles)``: ``regex`` matches the whole variable path and
may capture ``group`` (a stage) and ``block`` (the block number inside it);
``roles`` is a tuple, or a function of the match returning one (for roles
that depend on the block, e.g. a ResNet stage's first block reads the
previous stage's width).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FAMILIES", "SAME", "TOKENS", "Family", "VariableRole"]

SAME = "=same"
TOKENS = "=tokens"


@dataclass(frozen=True)
class VariableRole:
    """Where one variable sits in its family: its block (or ``None``) and its axes' roles."""

    group: str | None
    block: int | None
    roles: tuple

    def scoped(self):
        """Roles with the ``@`` ones bound to this block (``"hidden@"`` -> ``"hidden@stage_1/3"``)."""
        where = f"{self.group or ''}/{self.block}"
        return tuple(r + where if isinstance(r, str) and r.endswith("@") else r for r in self.roles)


@dataclass(frozen=True)
class Family:
    """A model family: the rules that describe its variables, and its block pattern.

    ``block_pattern`` captures ``group`` and ``block`` in a path prefix such
    as ``stage_2_block_3_`` or ``block_3_``; :meth:`rename` swaps the block
    number, which is how a student variable finds its teacher variable.
    """

    name: str
    description: str
    rules: tuple
    block_pattern: str
    head: tuple = ("head/",)

    def describe(self, path):
        """The :class:`VariableRole` of ``path``, or ``None`` if no rule matches."""
        for regex, roles in self.rules:
            match = re.fullmatch(regex, path)
            if match:
                found = match.groupdict()
                block = found.get("block")
                return VariableRole(
                    found.get("group"),
                    None if block is None else int(block),
                    roles(match) if callable(roles) else tuple(roles),
                )
        return None

    def rename(self, path, block):
        """``path`` with its block number replaced by ``block``."""
        match = re.match(self.block_pattern, path)
        if match is None:
            return path
        start, end = match.span("block")
        return path[:start] + str(block) + path[end:]


def _stage_width(match, offset=0):
    stage = int(match.group("group")) + offset
    return f"width{stage}"


def _resnet_roles(match):
    """Pre-activation ResNet blocks: the first block of a stage reads the previous stage's width."""
    stage, block, part = int(match.group("group")), int(match.group("block")), match.group("part")
    here = f"width{stage}"
    before = f"width{stage - 1}" if block == 1 and stage > 1 else here
    return {
        "norm_1": (before,),
        "conv_1": (SAME, SAME, before, here),
        "norm_2": (here,),
        "conv_2": (SAME, SAME, here, here),
        "shortcut": (SAME, SAME, before, here),
    }[part]


_DIM = "embed"
_NORM = r"(?:gamma|beta|moving_mean|moving_variance)"

VIT = Family(
    name="vit",
    description="the package's ViT (models.vit): patch embedding, class token, blocks of attention + MLP",
    block_pattern=r"block_(?P<block>\d+)_",
    rules=(
        (r"patch_embedding/kernel", (SAME, SAME, SAME, _DIM)),
        (r"patch_embedding/bias", (_DIM,)),
        (r"class_token/token", (SAME, SAME, _DIM)),
        (r"position_embedding/embedding", (SAME, TOKENS, _DIM)),
        (r"block_(?P<block>\d+)_norm_[12]/(?:gamma|beta)", (_DIM,)),
        (r"block_(?P<block>\d+)_attention/(?:query|key|value)/kernel", (_DIM, "heads@", "head_dim@")),
        (r"block_(?P<block>\d+)_attention/(?:query|key|value)/bias", ("heads@", "head_dim@")),
        (r"block_(?P<block>\d+)_attention/attention_output/kernel", ("heads@", "head_dim@", _DIM)),
        (r"block_(?P<block>\d+)_attention/attention_output/bias", (_DIM,)),
        (r"block_(?P<block>\d+)_mlp_1/kernel", (_DIM, "hidden@")),
        (r"block_(?P<block>\d+)_mlp_1/bias", ("hidden@",)),
        (r"block_(?P<block>\d+)_mlp_2/kernel", ("hidden@", _DIM)),
        (r"block_(?P<block>\d+)_mlp_2/bias", (_DIM,)),
        (r"block_(?P<block>\d+)_layer_scale_[12]/gamma", (_DIM,)),
        (r"final_norm/(?:gamma|beta)", (_DIM,)),
        (r"head/kernel", (_DIM, SAME)),
        (r"head/bias", (SAME,)),
    ),
)

CONVMIXER = Family(
    name="convmixer",
    description="the package's ConvMixer (models.convmixer): patch stem, depthwise + pointwise blocks",
    block_pattern=r"block_(?P<block>\d+)_",
    rules=(
        (r"stem_conv/kernel", (SAME, SAME, SAME, _DIM)),
        (r"stem_conv/bias", (_DIM,)),
        (rf"stem_bn/{_NORM}", (_DIM,)),
        (r"block_(?P<block>\d+)_depthwise_conv/kernel", (SAME, SAME, _DIM, SAME)),
        (r"block_(?P<block>\d+)_(?:depthwise_conv|pointwise_conv)/bias", (_DIM,)),
        (rf"block_(?P<block>\d+)_(?:depthwise|pointwise)_bn/{_NORM}", (_DIM,)),
        (r"block_(?P<block>\d+)_pointwise_conv/kernel", (SAME, SAME, _DIM, _DIM)),
        (r"head/kernel", (_DIM, SAME)),
        (r"head/bias", (SAME,)),
    ),
)

CONVNEXT_ISOTROPIC = Family(
    name="convnext_isotropic",
    description="the package's isotropic ConvNeXt (models.convnext_isotropic)",
    block_pattern=r"block_(?P<block>\d+)_",
    rules=(
        (r"stem_conv/kernel", (SAME, SAME, SAME, _DIM)),
        (r"stem_conv/bias", (_DIM,)),
        (r"(?:stem_norm|head_norm)/(?:gamma|beta)", (_DIM,)),
        (r"block_(?P<block>\d+)_depthwise_conv/kernel", (SAME, SAME, _DIM, SAME)),
        (r"block_(?P<block>\d+)_(?:depthwise_conv/bias|norm/gamma|norm/beta|pointwise_2/bias)", (_DIM,)),
        (r"block_(?P<block>\d+)_layer_scale/gamma", (_DIM,)),
        (r"block_(?P<block>\d+)_pointwise_1/kernel", (_DIM, "hidden@")),
        (r"block_(?P<block>\d+)_pointwise_1/bias", ("hidden@",)),
        (r"block_(?P<block>\d+)_pointwise_2/kernel", ("hidden@", _DIM)),
        (r"head/kernel", (_DIM, SAME)),
        (r"head/bias", (SAME,)),
    ),
)

_STAGE_BLOCK = r"stage_(?P<group>\d+)_block_(?P<block>\d+)_"

CONVNEXT = Family(
    name="convnext",
    description="the package's hierarchical ConvNeXt (models.convnext, convnext_atto ... convnext_tiny)",
    block_pattern=_STAGE_BLOCK,
    rules=(
        (r"stem_conv/kernel", (SAME, SAME, SAME, "width1")),
        (r"stem_conv/bias", ("width1",)),
        (r"stem_norm/(?:gamma|beta)", ("width1",)),
        (r"stage_(?P<group>\d+)_downsample_norm/(?:gamma|beta)", lambda m: (_stage_width(m, -1),)),
        (r"stage_(?P<group>\d+)_downsample_conv/kernel",
         lambda m: (SAME, SAME, _stage_width(m, -1), _stage_width(m))),
        (r"stage_(?P<group>\d+)_downsample_conv/bias", lambda m: (_stage_width(m),)),
        (_STAGE_BLOCK + r"depthwise_conv/kernel", lambda m: (SAME, SAME, _stage_width(m), SAME)),
        (_STAGE_BLOCK + r"(?:depthwise_conv/bias|norm/gamma|norm/beta|pointwise_2/bias|layer_scale/gamma)",
         lambda m: (_stage_width(m),)),
        (_STAGE_BLOCK + r"pointwise_1/kernel", lambda m: (_stage_width(m), "hidden@")),
        (_STAGE_BLOCK + r"pointwise_1/bias", ("hidden@",)),
        (_STAGE_BLOCK + r"pointwise_2/kernel", lambda m: ("hidden@", _stage_width(m))),
        (r"head_norm/(?:gamma|beta)", ("width_last",)),
        (r"head/kernel", ("width_last", SAME)),
        (r"head/bias", (SAME,)),
    ),
)

RESNET = Family(
    name="resnet",
    description="the package's pre-activation ResNets (models.resnet18_gn): stages of basic blocks",
    block_pattern=_STAGE_BLOCK,
    rules=(
        (r"stem_conv/kernel", (SAME, SAME, SAME, "width1")),
        (_STAGE_BLOCK + r"(?P<part>norm_1|norm_2)/(?:gamma|beta)", _resnet_roles),
        (_STAGE_BLOCK + r"(?P<part>conv_1|conv_2|shortcut)/kernel", _resnet_roles),
        (r"final_norm/(?:gamma|beta)", ("width_last",)),
        (r"head/kernel", ("width_last", SAME)),
        (r"head/bias", (SAME,)),
    ),
)

FAMILIES = {family.name: family for family in (VIT, CONVNEXT, CONVNEXT_ISOTROPIC, CONVMIXER, RESNET)}
