"""Model names in the papers' form (``convmixer-256/8``, ``lcresnet-20-16x8``, ...) -> builders."""

from __future__ import annotations

from keras_structinit.models.convmixer_model import ZOO as CONVMIXER
from keras_structinit.models.convnext_model import ZOO as CONVNEXT
from keras_structinit.models.lcresnet_model import ZOO as LCRESNET
from keras_structinit.models.resnet18_gn_model import ZOO as RESNET18_GN
from keras_structinit.models.simple_cnn_model import DEFAULTS as SIMPLE_CNN_DEFAULTS  # noqa: F401 - its old place
from keras_structinit.models.simple_cnn_model import ZOO as SIMPLE_CNN
from keras_structinit.models.vgg16_model import ZOO as VGG16
from keras_structinit.models.vit_model import ZOO as VIT

#: Every zoo module's declarations (its ``ZOO``), in the order ``--model``'s help lists them.
ENTRIES = (
    *CONVMIXER,
    *CONVNEXT,
    *LCRESNET,
    *VIT,
    *SIMPLE_CNN,
    *VGG16,
    *RESNET18_GN,
)
#: The builders by name (``"convmixer"``, ``"convnext_atto"``), as :func:`parse_model_name` names them.
BUILDERS = {entry.family: entry.builder for entry in ENTRIES}


def available_models():
    """The accepted model names and forms (``H``, ``D``, ``W``, ``E``: positive ints): the forms
    first, then the fixed names, as the zoo modules declare them."""
    return [e.form for e in ENTRIES if e.pattern] + [e.form for e in ENTRIES if not e.pattern]


def model_forms():
    """``--model``'s list of the zoo (``arguments.ZOO_NAMES`` writes it out, and a test checks
    that the two agree)."""
    ordered = [e for e in ENTRIES if e.pattern] + [e for e in ENTRIES if not e.pattern]
    return ", ".join(dict.fromkeys(e.help for e in ordered))


def _bad_name(name, why=""):
    return ValueError(
        f"`model` must be one of {', '.join(available_models())} "
        f"(H, W = width, D = depth, E = expansion: positive ints; an LCResNet's D is 6n + 2){why}. "
        f"Received: model={name!r}"
    )


def zoo_entry(name):
    """``(entry, params)``: the :class:`~keras_structinit.models.zoo.ZooEntry` that declares the
    model name ``name`` and the builder arguments it sets; errors as :func:`parse_model_name`."""
    if not isinstance(name, str):
        raise TypeError(
            f"`model` must be a model name (a str, e.g. 'convmixer-256/8'). "
            f"Received: model={name!r} of type {type(name).__name__}"
        )
    key = name.strip().lower()
    for entry in ENTRIES:
        found = entry.match(key)
        if found is not None:
            params, ok = found
            if not ok:
                raise _bad_name(name, f"; {entry.why}")
            return entry, params
    raise _bad_name(name)


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
    entry, params = zoo_entry(name)
    return entry.family, params


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
    paper's layouts, ``models.simple_cnn_model.PAPER_LAYOUTS``); for ``lcresnet-D-WxE`` e.g. ``kernel_size``,
    ``frozen``, ``shortcut``, ``sharing``. Arguments fixed by the name
    (``dim``, ``depth``, ``width``, ``expansion``) cannot be passed again.
    """
    entry, params = zoo_entry(name)
    return entry.build(params, num_classes, input_shape, kwargs, name=name)
