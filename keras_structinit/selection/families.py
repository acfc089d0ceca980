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

A rule is ``(regex, roles)`` or ``(regex, roles, key)``: ``regex`` matches
the whole variable path and may capture ``group`` (a stage) and ``block``
(the block number inside it); ``roles`` is a tuple, or a function of the
match returning one (for roles that depend on the block, e.g. a ResNet
stage's first block reads the previous stage's width); ``key`` names the
component in the package's naming (see :class:`Family`), which is how
KerasHub and keras.applications variables find their counterparts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FAMILIES", "SAME", "TOKENS", "Family", "VariableRole"]

SAME = "=same"
TOKENS = "=tokens"


@dataclass(frozen=True)
class VariableRole:
    """Where one variable sits in its family: its block (or ``None``), its axes' roles and its component.

    ``key`` names the component with the block number left out (``"{block}"``
    in its place), in the naming of the kind's reference family (the
    package's own models): a student variable's teacher variable is the one
    with the same key in the mapped block, also across libraries.
    """

    group: str | None
    block: int | None
    roles: tuple
    key: str

    def scoped(self):
        """Roles with the ``@`` ones bound to this block (``"hidden@"`` -> ``"hidden@stage_1/3"``)."""
        where = f"{self.group or ''}/{self.block}"
        return tuple(r + where if isinstance(r, str) and r.endswith("@") else r for r in self.roles)


@dataclass(frozen=True)
class Family:
    """A model family: the rules that describe its variables.

    A rule is ``(regex, roles)`` or ``(regex, roles, key)``. ``key`` is a
    template formatted with the match's named groups (``group`` made 1-based,
    ``block`` left as ``"{block}"``) or a function of the match; without it
    the key is the path with its block number replaced by ``"{block}"``.
    Families of one ``kind`` share keys and roles, so a teacher of one can
    initialize a student of another (a KerasHub ViT into the package's ViT).
    ``group_base`` is the number of a family's first stage (0 or 1).
    """

    name: str
    description: str
    rules: tuple
    kind: str = ""
    group_base: int = 1

    def __post_init__(self):
        if not self.kind:
            object.__setattr__(self, "kind", self.name)

    def describe(self, path):
        """The :class:`VariableRole` of ``path``, or ``None`` if no rule matches."""
        for rule in self.rules:
            regex, roles, key = rule if len(rule) == 3 else (*rule, None)
            match = re.fullmatch(regex, path)
            if match is None:
                continue
            found = match.groupdict()
            group, block = found.get("group"), found.get("block")
            if group is not None and group.isdigit():
                group = str(int(group) - self.group_base + 1)
            if callable(key):
                key = key(match)
            elif key is not None:
                key = key.format(**{**found, "group": group, "block": "{block}"})
            else:
                key = path
                if block is not None:
                    key = path[: match.start("block")] + "{block}" + path[match.end("block") :]
            return VariableRole(
                group,
                None if block is None else int(block),
                roles(match) if callable(roles) else tuple(roles),
                key,
            )
        return None


def _stage_width(match, offset=0, base=1):
    stage = int(match.group("group")) + offset - base + 1
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
    kind="vit",
    description="the package's ViT (models.vit): patch embedding, class token, blocks of attention + MLP",
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
    rules=(
        (r"stem_conv/kernel", (SAME, SAME, SAME, "width1")),
        (r"stem_conv/bias", ("width1",)),
        (r"stem_norm/(?:gamma|beta)", ("width1",)),
        (r"stage_(?P<group>\d+)_downsample_norm/(?:gamma|beta)", lambda m: (_stage_width(m, -1),)),
        (
            r"stage_(?P<group>\d+)_downsample_conv/kernel",
            lambda m: (SAME, SAME, _stage_width(m, -1), _stage_width(m)),
        ),
        (r"stage_(?P<group>\d+)_downsample_conv/bias", lambda m: (_stage_width(m),)),
        (_STAGE_BLOCK + r"depthwise_conv/kernel", lambda m: (SAME, SAME, _stage_width(m), SAME)),
        (
            _STAGE_BLOCK + r"(?:depthwise_conv/bias|norm/gamma|norm/beta|pointwise_2/bias|layer_scale/gamma)",
            lambda m: (_stage_width(m),),
        ),
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
    rules=(
        (r"stem_conv/kernel", (SAME, SAME, SAME, "width1")),
        (_STAGE_BLOCK + r"(?P<part>norm_1|norm_2)/(?:gamma|beta)", _resnet_roles),
        (_STAGE_BLOCK + r"(?P<part>conv_1|conv_2|shortcut)/kernel", _resnet_roles),
        (r"final_norm/(?:gamma|beta)", ("width_last",)),
        (r"head/kernel", ("width_last", SAME)),
        (r"head/bias", (SAME,)),
    ),
)

_HUB_BLOCK = r"vit_encoder/transformer_block_(?P<block>\d+)/"

KERAS_HUB_VIT = Family(
    name="keras_hub_vit",
    kind="vit",
    description="KerasHub's ViTBackbone (keras_hub.models.ViTBackbone, class token, MHA bias on)",
    rules=(
        (
            r"vit_patching_and_embedding/patch_embedding/kernel",
            (SAME, SAME, SAME, _DIM),
            "patch_embedding/kernel",
        ),
        (r"vit_patching_and_embedding/patch_embedding/bias", (_DIM,), "patch_embedding/bias"),
        (r"vit_patching_and_embedding/class_token", (SAME, SAME, _DIM), "class_token/token"),
        (
            r"vit_patching_and_embedding/position_embedding/embeddings",
            (TOKENS, _DIM),
            "position_embedding/embedding",
        ),
        (_HUB_BLOCK + r"ln_(?P<i>[12])/(?P<v>gamma|beta)", (_DIM,), "block_{block}_norm_{i}/{v}"),
        (
            _HUB_BLOCK + r"mha/(?P<p>query|key|value)/kernel",
            (_DIM, "heads@", "head_dim@"),
            "block_{block}_attention/{p}/kernel",
        ),
        (
            _HUB_BLOCK + r"mha/(?P<p>query|key|value)/bias",
            ("heads@", "head_dim@"),
            "block_{block}_attention/{p}/bias",
        ),
        (
            _HUB_BLOCK + r"mha/attention_output/kernel",
            ("heads@", "head_dim@", _DIM),
            "block_{block}_attention/attention_output/kernel",
        ),
        (_HUB_BLOCK + r"mha/attention_output/bias", (_DIM,), "block_{block}_attention/attention_output/bias"),
        (_HUB_BLOCK + r"mlp/dense_1/kernel", (_DIM, "hidden@"), "block_{block}_mlp_1/kernel"),
        (_HUB_BLOCK + r"mlp/dense_1/bias", ("hidden@",), "block_{block}_mlp_1/bias"),
        (_HUB_BLOCK + r"mlp/dense_2/kernel", ("hidden@", _DIM), "block_{block}_mlp_2/kernel"),
        (_HUB_BLOCK + r"mlp/dense_2/bias", (_DIM,), "block_{block}_mlp_2/bias"),
        (r"vit_encoder/ln/(?P<v>gamma|beta)", (_DIM,), "final_norm/{v}"),
    ),
)


def _app_width(match, name="group", offset=0):
    return f"width{int(match.group(name)) + 1 + offset}"  # 0-based in keras.applications


_APP_BLOCK = r"\w+_stage_(?P<group>\d+)_block_(?P<block>\d+)_"
# The stem and the downsampling layers are nested Sequentials: their variables are
# "<model>_stem/<model>_stem_conv/kernel" as built, "<model>_stem_conv/kernel" once the model is
# saved and loaded again (Keras names a variable by the layers around it when it is created).
_APP_STEM = r"(?:\w+_stem/)?\w+_stem_"
_APP_DOWN = r"(?:\w+_downsampling_block_\d+/)?\w+_downsampling_"
_APP_PARTS = {"layernorm": "norm", "pointwise_conv_1": "pointwise_1", "pointwise_conv_2": "pointwise_2"}

KERAS_CONVNEXT = Family(
    name="keras_convnext",
    description="keras.applications ConvNeXt (ConvNeXtTiny ... XLarge, include_preprocessing=False)",
    group_base=0,
    rules=(
        (_APP_STEM + r"conv/kernel", (SAME, SAME, SAME, "width1"), "stem_conv/kernel"),
        (_APP_STEM + r"conv/bias", ("width1",), "stem_conv/bias"),
        (_APP_STEM + r"layernorm/(?P<v>gamma|beta)", ("width1",), "stem_norm/{v}"),
        (
            _APP_DOWN + r"layernorm_(?P<i>\d+)/(?P<v>gamma|beta)",
            lambda m: (_app_width(m, "i"),),
            lambda m: f"stage_{int(m['i']) + 2}_downsample_norm/{m['v']}",
        ),
        (
            _APP_DOWN + r"conv_(?P<i>\d+)/kernel",
            lambda m: (SAME, SAME, _app_width(m, "i"), _app_width(m, "i", 1)),
            lambda m: f"stage_{int(m['i']) + 2}_downsample_conv/kernel",
        ),
        (
            _APP_DOWN + r"conv_(?P<i>\d+)/bias",
            lambda m: (_app_width(m, "i", 1),),
            lambda m: f"stage_{int(m['i']) + 2}_downsample_conv/bias",
        ),
        (
            _APP_BLOCK + r"depthwise_conv/kernel",
            lambda m: (SAME, SAME, SAME, _app_width(m)),
            "stage_{group}_block_{block}_depthwise_conv/kernel",
        ),
        (
            _APP_BLOCK + r"(?P<p>depthwise_conv|pointwise_conv_2)/bias",
            lambda m: (_app_width(m),),
            lambda m: f"stage_{int(m['group']) + 1}_block_{{block}}_{_APP_PARTS.get(m['p'], m['p'])}/bias",
        ),
        (
            _APP_BLOCK + r"layernorm/(?P<v>gamma|beta)",
            lambda m: (_app_width(m),),
            "stage_{group}_block_{block}_norm/{v}",
        ),
        (
            _APP_BLOCK + r"layer_scale/variable(?:_\d+)?",
            lambda m: (_app_width(m),),
            "stage_{group}_block_{block}_layer_scale/gamma",
        ),
        (
            _APP_BLOCK + r"pointwise_conv_1/kernel",
            lambda m: (_app_width(m), "hidden@"),
            "stage_{group}_block_{block}_pointwise_1/kernel",
        ),
        (_APP_BLOCK + r"pointwise_conv_1/bias", ("hidden@",), "stage_{group}_block_{block}_pointwise_1/bias"),
        (
            _APP_BLOCK + r"pointwise_conv_2/kernel",
            lambda m: ("hidden@", _app_width(m)),
            "stage_{group}_block_{block}_pointwise_2/kernel",
        ),
        (r"\w+_head_layernorm/(?P<v>gamma|beta)", ("width_last",), "head_norm/{v}"),
        (r"\w+_head_dense/kernel", ("width_last", SAME), "head/kernel"),
        (r"\w+_head_dense/bias", (SAME,), "head/bias"),
    ),
)


def _keras_resnet_roles(bottleneck, first_block):
    """ResNet blocks of KerasHub and KerasCV: ``{stack}_block{b}_{part}_conv|bn``. Part 0 is a
    stage's projection shortcut, 1-2 (basic) or 1-3 (bottleneck) the main path; KerasCV's
    pre-activation ``use_preactivation_bn`` normalizes the block's input. A stage's first block
    (``first_block``: 0 in KerasHub, 1 in KerasCV) reads the previous stage's width."""

    def roles(match):
        stage, block, part = int(match["group"]) + 1, int(match["block"]), match["part"]
        out = f"width{stage}"
        inner = f"inner{stage}" if bottleneck else out
        before = ("stem" if stage == 1 else f"width{stage - 1}") if block == first_block else out
        if part == "use_preactivation":
            return (before,)
        conv = {"0": (before, out), "1": (before, inner), "2": (inner, inner), "3": (inner, out)}[part]
        if match["kind"] == "conv" and match.groupdict().get("v", "kernel") == "kernel":
            return (SAME, SAME, *conv)
        return (conv[1],)  # a conv bias or a BatchNormalization after the conv

    return roles


def _keras_resnet(library, bottleneck):
    """KerasHub's ``ResNetBackbone`` (post-activation; ``library="hub"``) or KerasCV's
    ``ResNetV2Backbone`` (pre-activation; ``"cv"``), basic or bottleneck blocks."""
    blocks = "bottleneck" if bottleneck else "basic"
    parts = "0-3" if bottleneck else "0-2"
    hub = library == "hub"
    block = ("stack" if hub else "v2_stack_") + r"(?P<group>\d+)_block(?P<block>\d+)_"
    roles = _keras_resnet_roles(bottleneck, first_block=0 if hub else 1)
    if hub:
        name, what = "keras_hub_resnet_", "KerasHub's ResNetBackbone, post-activation, one stem conv"
        ends = (
            (rf"conv1_bn/{_NORM}", ("stem",)),
            (rf"{block}(?P<part>[{parts}])_(?P<kind>conv)/kernel", roles),
        )
    else:
        name, what = "keras_cv_resnet_v2_", "KerasCV's ResNetV2Backbone, pre-activation, 64-filter stem"
        ends = (
            (r"conv1_conv/bias", ("stem",)),
            (rf"{block}(?P<part>[{parts}])_(?P<kind>conv)/(?P<v>kernel|bias)", roles),
            (rf"{block}(?P<part>use_preactivation)_(?P<kind>bn)/{_NORM}", roles),
            (rf"post_bn/{_NORM}", ("width_last",)),
        )
    return Family(
        name=name + blocks,
        description=f"{what}, {blocks} blocks",
        group_base=0,
        rules=(
            (r"conv1_conv/kernel", (SAME, SAME, SAME, "stem")),
            (rf"{block}(?P<part>[{parts}])_(?P<kind>bn)/{_NORM}", roles),
            *ends,
        ),
    )


KERAS_HUB_RESNET_BASIC = _keras_resnet("hub", False)
KERAS_HUB_RESNET_BOTTLENECK = _keras_resnet("hub", True)
KERAS_CV_RESNET_V2_BASIC = _keras_resnet("cv", False)
KERAS_CV_RESNET_V2_BOTTLENECK = _keras_resnet("cv", True)

# Detection takes the first family that describes every variable of a model:
# basic ResNet blocks before bottleneck ones (a bottleneck rule set also fits basic blocks).
FAMILIES = {
    family.name: family
    for family in (
        VIT,
        CONVNEXT,
        CONVNEXT_ISOTROPIC,
        CONVMIXER,
        RESNET,
        KERAS_HUB_VIT,
        KERAS_CONVNEXT,
        KERAS_HUB_RESNET_BASIC,
        KERAS_HUB_RESNET_BOTTLENECK,
        KERAS_CV_RESNET_V2_BASIC,
        KERAS_CV_RESNET_V2_BOTTLENECK,
    )
}
