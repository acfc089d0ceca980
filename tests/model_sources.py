"""Every method on every model source: the matrix behind ``docs/model-sources.md``.

A *source* builds a small model the way a user gets one: the package's zoo, keras.applications
(through Keras' generic builders, with tiny widths), KerasHub backbones from config, and a user's
own Sequential, functional and subclassed models. A *method* acts on such a model and returns how
many variables it acted on; a method that does not apply raises a one-line ``ValueError``.

``python tests/model_sources.py`` (any backend) prints the Markdown table of
``docs/model-sources.md``; ``tests/test_model_sources.py`` checks every cell against it, fresh and
after a ``.keras`` round trip.
"""

from __future__ import annotations

import re

import keras
import numpy as np

import keras_structinit as ks

SHAPE = (32, 32, 3)


# --------------------------------------------------------------------------- sources


def _zoo(name, **kwargs):
    return lambda: ks.models.build_model(name, 10, SHAPE, **kwargs)


def _app_convnext():
    from keras.src.applications.convnext import ConvNeXt  # the generic builder (private; pinned Keras range)

    return ConvNeXt(
        depths=[1, 1, 1, 1],
        projection_dims=[8, 8, 16, 16],
        input_shape=SHAPE,
        weights=None,
        classes=10,
        include_preprocessing=False,
        name="convnext_user",
    )


def _app_mobilenet_v2():
    return keras.applications.MobileNetV2(weights=None, input_shape=SHAPE, alpha=0.35, classes=10)


def _app_resnet():
    from keras.src.applications.resnet import ResNet, stack_residual_blocks_v1

    def stacks(x):
        x = stack_residual_blocks_v1(x, 8, 1, stride1=1, name="conv2")
        return stack_residual_blocks_v1(x, 16, 1, name="conv3")

    return ResNet(
        stacks, preact=False, use_bias=True, weights=None, input_shape=SHAPE, classes=10, name="resnet_user"
    )


def _app_efficientnet():
    from keras.src.applications.efficientnet import EfficientNet

    return EfficientNet(0.1, 0.1, 32, weights=None, input_shape=SHAPE, classes=10, name="efficientnet_user")


def _hub_vit():
    import keras_hub

    return keras_hub.models.ViTBackbone(
        image_shape=SHAPE, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32
    )


def _hub_resnet():
    import keras_hub

    return keras_hub.models.ResNetBackbone(
        input_conv_filters=[64],
        input_conv_kernel_sizes=[3],
        stackwise_num_filters=[64, 16],
        stackwise_num_blocks=[1, 1],
        stackwise_num_strides=[1, 2],
        block_type="basic_block",
        image_shape=SHAPE,
    )


def _user_sequential():
    return keras.Sequential(
        [
            keras.Input(SHAPE),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.DepthwiseConv2D(5, padding="same"),
            keras.layers.Conv2D(8, 1),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ],
        name="user_sequential",
    )


def _user_functional():
    inputs = keras.Input(SHAPE)
    x = keras.layers.Conv2D(8, 3, padding="same", name="stem")(inputs)
    y = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    x = keras.ops.relu(x + keras.layers.Conv2D(8, 1, name="pw")(y))  # an operation, not a layer
    x = keras.layers.Dense(16, name="mlp_1")(keras.layers.GlobalAveragePooling2D()(x))
    return keras.Model(inputs, keras.layers.Dense(10, name="head")(x), name="user_functional")


@keras.saving.register_keras_serializable(package="structinit_tests")
class UserNet(keras.Model):
    """A subclassed model: layers as attributes, ``call`` in Python."""

    def __init__(self, classes=10, **kwargs):
        super().__init__(**kwargs)
        self.classes = classes
        self.stem = keras.layers.Conv2D(8, 3, name="stem")
        self.dw = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")
        self.pw = keras.layers.Conv2D(8, 1, name="pw")
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.head = keras.layers.Dense(classes, name="head")

    def call(self, x):
        return self.head(self.pool(self.pw(self.dw(self.stem(x)))))

    def get_config(self):
        return {**super().get_config(), "classes": self.classes}


def _user_subclassed():
    model = UserNet(name="user_subclassed")
    model(np.zeros((1, *SHAPE), "float32"))
    return model


#: name -> (builder, library extra it needs or None)
SOURCES = {
    "zoo ConvMixer": (_zoo("convmixer-8/2", kernel_size=5, patch_size=2), None),
    "zoo ConvNeXt": (_zoo("convnext-iso-8/2", kernel_size=3), None),
    "zoo ViT": (_zoo("vit-tiny-8/2"), None),
    "zoo LCResNet": (_zoo("lcresnet-8-4x2"), None),
    "keras.applications ConvNeXt": (_app_convnext, None),
    "keras.applications MobileNetV2": (_app_mobilenet_v2, None),
    "keras.applications ResNet": (_app_resnet, None),
    "keras.applications EfficientNet": (_app_efficientnet, None),
    "KerasHub ViT": (_hub_vit, "keras_hub"),
    "KerasHub ResNet": (_hub_resnet, "keras_hub"),
    "user Sequential": (_user_sequential, None),
    "user functional": (_user_functional, None),
    "user subclassed": (_user_subclassed, None),
}


# --------------------------------------------------------------------------- methods


def _images(n=8):
    return np.random.default_rng(0).uniform(-1, 1, (n, *SHAPE)).astype("float32")


def _bank():
    source = ks.models.build_model("convmixer-8/2", 10, SHAPE, kernel_size=3, patch_size=2)
    return ks.covariance.FilterCovariance.from_model(source)


def _count_lc(model):
    return sum(isinstance(layer, ks.layers.LCConv2D) for layer in model._flatten_layers())


def _fold(model, source):
    folded = ks.lc.fold_model(model)
    return _count_lc(model) - _count_lc(folded)


#: name -> function(model, source builder) -> how many variables (or LC blocks) it acted on
METHODS = {
    "covariance init": lambda m, b: len(ks.apply_conv_covariance(m, seed=0)),
    "covariance transfer": lambda m, b: len(ks.apply_covariance_transfer(m, bank=_bank(), seed=0)),
    "filter transfer": lambda m, b: len(
        ks.apply_filter_transfer(
            m, source=ks.models.build_model("convmixer-8/2", 10, SHAPE, kernel_size=3, patch_size=2), seed=0
        )
    ),
    "freeze spatial": lambda m, b: len(ks.freeze_spatial(m, which="all_spatial")),
    "mean shift": lambda m, b: len(ks.apply_mean_shift(m, b=0.2, seed=0)),
    "mimetic attention": lambda m, b: len(ks.apply_mimetic_attention(m, seed=0)),
    "data-aligned": lambda m, b: len(ks.align_conv_layers(m, images=_images(), n_components=4, seed=0)),
    "weight selection": lambda m, b: len(ks.select_weights(m, teacher=b(), skip=(), copy_head=True)),
    "LC fold": _fold,
    "LC prune 1x1": lambda m, b: len(ks.lc.prune_pointwise(m, ratio=0.5)),
}


def outcome(method, model, builder):
    """``("yes", count)`` when ``method`` applies to ``model``, ``("no", message)`` when it says it does
    not (a one-line ``ValueError``). Anything else propagates: a crash is a bug."""
    try:
        count = METHODS[method](model, builder)
    except ValueError as err:
        message = str(err)
        assert "\n" not in message, f"{method}: a multi-line error: {message!r}"
        return "no", message
    return "yes", count


def cell(result):
    kind, value = result
    return f"yes ({value})" if kind == "yes" else "no"


def table(results):
    """The Markdown table of ``{(method, source): result}``, then why each "no" is a no."""
    sources = [s for s in SOURCES if any((m, s) in results for m in METHODS)]
    lines = ["| method | " + " | ".join(sources) + " |", "|---|" + "---|" * len(sources)]
    for method in METHODS:
        lines.append(f"| {method} | " + " | ".join(cell(results[(method, s)]) for s in sources) + " |")
    lines += ["", 'Each "no" is a one-line `ValueError` (first clause shown):', ""]
    for method in METHODS:
        reasons = {}
        for source in sources:
            kind, value = results[(method, source)]
            if kind == "no":
                reasons.setdefault(_reason(value), []).append(source)
        for reason, where in reasons.items():
            lines.append(f"- {method} on {', '.join(where)}: {reason}")
    return "\n".join(lines)


def _reason(message):
    """The model-independent first clause of an error message."""
    message = re.sub(r"`model` \([^)]*\) ", "the model ", message)
    message = re.sub(
        r"layer '[^']*' has \((\d+), \d+\) but its matched source layer '[^']*' has",
        r"a \1x\1 target layer's source has",
        message,
    )
    return re.split(r"[:;.](?:\s|$)", message)[0].split(" (families")[0]


def read_table(text):
    """``{(method, source): cell}`` of the first table in ``text`` (as :func:`table` writes it)."""
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in rows[0][1:]]
    return {
        (row[0].strip(), source): value.strip()
        for row in rows[1:]
        for source, value in zip(header, row[1:], strict=True)
    }


def restore(model, snapshot):
    """Puts back the variable values and trainable flags recorded by :func:`snapshot`."""
    for variable, (value, trainable) in zip(model.variables, snapshot, strict=True):
        variable.assign(value)
        variable.trainable = trainable
    model.__dict__.pop("_structinit_frozen", None)
    model.__dict__.pop("save_assets", None)


def snapshot(model):
    return [(keras.ops.convert_to_numpy(v).copy(), v.trainable) for v in model.variables]


if __name__ == "__main__":  # pragma: no cover - regenerates the docs table
    import importlib.util

    results = {}
    for source, (builder, extra) in SOURCES.items():
        if extra and importlib.util.find_spec(extra) is None:
            continue
        model = builder()
        state = snapshot(model)
        for method in METHODS:
            results[(method, source)] = outcome(method, model, builder)
            restore(model, state)
    print(table(results))
