"""Model names in the papers' form (``convmixer-256/8``, ``lcresnet-20-16x8``, ...) -> builders."""

from __future__ import annotations

import re

from keras_structinit.models.convmixer import convmixer
from keras_structinit.models.convnext import NAMED as CONVNEXT_NAMED
from keras_structinit.models.convnext import convnext_isotropic
from keras_structinit.models.lcresnet import lcresnet
from keras_structinit.models.resnet18_gn import resnet18_gn
from keras_structinit.models.simple_cnn import PAPER_LAYOUTS as SIMPLE_CNN_LAYOUTS
from keras_structinit.models.simple_cnn import simple_cnn
from keras_structinit.models.vgg16 import vgg16
from keras_structinit.models.vit import vit, vit_small, vit_tiny

BUILDERS = {
    "convmixer": convmixer,
    **{f"convnext_{variant}": builder for variant, builder in CONVNEXT_NAMED.items()},
    "convnext_isotropic": convnext_isotropic,
    "vit": vit,
    "vit_tiny": vit_tiny,
    "vit_small": vit_small,
    "simple_cnn": simple_cnn,
    "vgg16": vgg16,
    "resnet18_gn": resnet18_gn,
    "lcresnet": lcresnet,
}

# Defaults of `simple-cnn`: an assumption, not taken from the paper (two conv
# layers of 256 filters, 64 dense units); override them with keyword arguments.
SIMPLE_CNN_DEFAULTS = {"num_conv_layers": 2, "num_filters": 256, "num_units": 64}

_FIXED = {
    **{f"convnext-{v}": (f"convnext_{v}", {}) for v in CONVNEXT_NAMED},
    "vit-tiny": ("vit_tiny", {}),
    "vit-small": ("vit_small", {}),
    # The mimetic-MLP paper's "tiny ViT" for CIFAR: ViT-Ti's width and heads, depth 8, patch 2.
    "vit-tiny-8/2": ("vit", {"patch_size": 2, "dim": 192, "depth": 8, "heads": 3}),
    "simple-cnn": ("simple_cnn", SIMPLE_CNN_DEFAULTS),
    # Maennel et al.'s layouts with their init (He-normal x init_scale, zero biases).
    "simple-cnn-a2": ("simple_cnn", SIMPLE_CNN_LAYOUTS["a2"]),
    "simple-cnn-e3": ("simple_cnn", SIMPLE_CNN_LAYOUTS["e3"]),
    "vgg16": ("vgg16", {}),
    "resnet18-gn": ("resnet18_gn", {}),
}
# `H/D` families: width H and depth D, positive ints.
_WIDTH_DEPTH = (
    (re.compile(r"convmixer-(\d+)/(\d+)"), "convmixer"),
    (re.compile(r"convnext-iso-(\d+)/(\d+)"), "convnext_isotropic"),
)
# LCResNet-D-WxE (Gavrikov & Keuper): depth D = 6n + 2, width W, expansion E.
_LCRESNET = re.compile(r"lcresnet-(\d+)-(\d+)x(\d+)")
# What a name fixes; passing it again to build_model is an error.
_NAMED_ARGUMENTS = {"dim", "depth", "width", "expansion", "heads", "patch_size"}


def available_models():
    """The accepted model names and forms (``H``, ``D``, ``W``, ``E``: positive ints)."""
    return ["convmixer-H/D", "convnext-iso-H/D", "lcresnet-D-WxE", *_FIXED]


def _bad_name(name, why=""):
    return ValueError(
        f"`model` must be one of {', '.join(available_models())} "
        f"(H, W = width, D = depth, E = expansion: positive ints; an LCResNet's D is 6n + 2){why}. "
        f"Received: model={name!r}"
    )


def parse_model_name(name):
    """``(builder_name, kwargs)`` of a model name, e.g. ``("convmixer", {"dim": 256, "depth": 8})``.

    ``builder_name`` is a key of :data:`BUILDERS`. Names are case-insensitive.
    Kernel and patch sizes are not part of the name: pass them to
    :func:`build_model` as keyword arguments. ``lcresnet-20-16x8`` is
    LCResNet-20-16x8: ``("lcresnet", {"depth": 20, "width": 16, "expansion": 8})``.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: unknown family or malformed ``H/D`` (the message names
            the argument ``model`` and lists the accepted forms).
    """
    if not isinstance(name, str):
        raise TypeError(
            f"`model` must be a model name (a str, e.g. 'convmixer-256/8'). "
            f"Received: model={name!r} of type {type(name).__name__}"
        )
    key = name.strip().lower()
    if key in _FIXED:
        builder, kwargs = _FIXED[key]
        return builder, dict(kwargs)
    for pattern, builder in _WIDTH_DEPTH:
        match = pattern.fullmatch(key)
        if match:
            dim, depth = int(match.group(1)), int(match.group(2))
            if dim < 1 or depth < 1:
                raise _bad_name(name, "; H and D must be >= 1")
            return builder, {"dim": dim, "depth": depth}
    match = _LCRESNET.fullmatch(key)
    if match:
        depth, width, expansion = (int(g) for g in match.groups())
        if depth < 8 or (depth - 2) % 6 or width < 1 or expansion < 1:
            raise _bad_name(name, "; an LCResNet needs D = 6n + 2 >= 8 and W, E >= 1")
        return "lcresnet", {"depth": depth, "width": width, "expansion": expansion}
    raise _bad_name(name)


def build_model(name, /, num_classes=10, input_shape=(32, 32, 3), **kwargs):
    """Builds the model ``name`` (see :func:`available_models`) with logits.

    ``name`` is positional-only, so that a Keras model name can be passed as
    ``name=`` among the builder's keyword arguments. The defaults are
    CIFAR-10's: 10 classes of 32x32 RGB images.

    Example:

    >>> model = build_model("convmixer-256/8")            # CIFAR-10
    >>> model = build_model("vit-small", 1000, (224, 224, 3))

    ``kwargs`` go to the builder (e.g. ``kernel_size``, ``patch_size``,
    ``drop_path``, and the initializers of the kinds of kernel the model has:
    ``kernel_initializer``, ``depthwise_initializer``, ``mlp_initializer``,
    ``dense_initializer``); for ``simple-cnn`` they override
    :data:`SIMPLE_CNN_DEFAULTS` (``simple-cnn-a2`` and ``simple-cnn-e3``: the
    paper's layouts, ``models.simple_cnn.PAPER_LAYOUTS``); for ``lcresnet-D-WxE`` e.g. ``kernel_size``,
    ``frozen``, ``shortcut``, ``sharing``. Arguments fixed by the name
    (``dim``, ``depth``, ``width``, ``expansion``) cannot be passed again.
    """
    builder, params = parse_model_name(name)
    fixed = _NAMED_ARGUMENTS & set(params)
    for key, value in kwargs.items():
        if key in fixed:
            raise ValueError(
                f"`{key}` is set by the model name; leave it out of the keyword "
                f"arguments. Received: model={name!r}, {key}={value!r}"
            )
    params.update(kwargs)
    return BUILDERS[builder](num_classes=num_classes, input_shape=input_shape, **params)
