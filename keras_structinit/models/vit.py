"""Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16 Words", ICLR 2021)."""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.initializers.torch_default import TorchDefaultUniform
from keras_structinit.covariance import check_positive_int
from keras_structinit.models.common import (
    check_input_shape,
    check_rate,
    trunc_normal,
    trunc_normal_kwargs,
)

LN_EPSILON = 1e-6


@keras.saving.register_keras_serializable(package="keras_structinit")
class ClassToken(keras.layers.Layer):
    """Prepends a learned token: ``(B, N, d) -> (B, N + 1, d)``, ``[c; x_1; ...; x_N]``.

    The token ``c`` (weight ``token``, shape ``(1, 1, d)``) is shared by all
    samples. Default init ``N(0, 1e-6^2)``, as in timm.
    """

    def __init__(self, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.initializer = keras.initializers.get(
            initializer or keras.initializers.RandomNormal(stddev=1e-6)
        )

    def build(self, input_shape):
        self.token = self.add_weight(
            name="token", shape=(1, 1, input_shape[-1]), initializer=self.initializer
        )

    def call(self, inputs):
        token = ops.cast(self.token, inputs.dtype)
        # Broadcast to the (possibly dynamic) batch size.
        token = ops.zeros_like(inputs[:, :1, :]) + token
        return ops.concatenate([token, inputs], axis=1)

    def compute_output_shape(self, input_shape):
        tokens = None if input_shape[1] is None else input_shape[1] + 1
        return (input_shape[0], tokens, input_shape[2])

    def get_config(self):
        return {
            **super().get_config(),
            "initializer": keras.initializers.serialize(self.initializer),
        }


@keras.saving.register_keras_serializable(package="keras_structinit")
class PositionEmbedding(keras.layers.Layer):
    """Adds a learned position embedding: ``z_n = x_n + E_pos[n]``.

    ``E_pos`` (weight ``embedding``) has shape ``(1, N, d)``, fixed by the
    built input. Default init :func:`~keras_structinit.models.common.trunc_normal`
    (std 0.02).
    """

    def __init__(self, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.initializer = keras.initializers.get(initializer or trunc_normal())

    def build(self, input_shape):
        if input_shape[1] is None:
            raise ValueError(
                "PositionEmbedding needs a fixed number of tokens. "
                f"Received: input_shape={input_shape!r}"
            )
        self.embedding = self.add_weight(
            name="embedding",
            shape=(1, input_shape[1], input_shape[2]),
            initializer=self.initializer,
        )

    def call(self, inputs):
        return inputs + ops.cast(self.embedding, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "initializer": keras.initializers.serialize(self.initializer),
        }


def _dropout(x, rate, name):
    return keras.layers.Dropout(rate, name=name)(x) if rate > 0 else x


def vit(
    patch_size,
    dim,
    depth,
    heads,
    mlp_ratio=4,
    num_classes=10,
    input_shape=(32, 32, 3),
    dropout=0.0,
    name=None,
):
    """Builds ViT (pre-norm, class token) as a functional ``keras.Model`` (logits).

    ``z_0 = [c; P x_1; ...; P x_N] + E_pos`` with ``P`` the patch embedding
    ``Conv2D(dim, p, stride p)`` (``patch_embedding``); then ``depth`` blocks

        z' = z + MHSA(LN(z)),    z = z' + W_2 GELU(W_1 LN(z'))

    (``W_1``: ``dim -> mlp_ratio * dim``), a final LN and a ``Dense`` head on
    the class token. LNs use ``eps = 1e-6``. ``dropout`` (if > 0) follows the
    position embedding, the attention output projection and both MLP layers.

    Layers: ``patch_embedding``, ``patch_tokens``, ``class_token``,
    ``position_embedding``, ``block_{i}_norm_1``, ``block_{i}_attention``
    (``keras.layers.MultiHeadAttention``, ``key_dim = dim // heads``),
    ``block_{i}_attention_residual``, ``block_{i}_norm_2``,
    ``block_{i}_mlp_1``, ``block_{i}_mlp_2``, ``block_{i}_mlp_residual``
    (i from 1), ``final_norm``, ``class_token_output``, ``head``.

    Initialization as timm's ViT: dense and attention kernels and the position
    embedding ``N(0, 0.02^2)`` (official ``trunc_normal_(std=0.02)``, see
    :func:`~keras_structinit.models.common.trunc_normal`), zero biases, class
    token ``N(0, 1e-6^2)``, patch embedding PyTorch's default uniform.

    Args:
        patch_size: patch size and stride; must divide the image size.
        dim: token width.
        depth: number of blocks.
        heads: attention heads; must divide ``dim``.
        mlp_ratio: MLP hidden width over ``dim``.
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last.
        dropout: dropout rate in ``[0, 1)``.
        name: model name, default ``vit_{dim}_{depth}``.
    """
    patch_size = check_positive_int(patch_size, "patch_size")
    dim = check_positive_int(dim, "dim")
    depth = check_positive_int(depth, "depth")
    heads = check_positive_int(heads, "heads")
    mlp_ratio = check_positive_int(mlp_ratio, "mlp_ratio")
    num_classes = check_positive_int(num_classes, "num_classes")
    input_shape = check_input_shape(input_shape)
    dropout = check_rate(dropout, "dropout")
    if dim % heads:
        raise ValueError(
            f"`heads` must divide `dim` (key_dim = dim // heads). Received: dim={dim}, heads={heads}"
        )
    height, width, channels = input_shape
    if height % patch_size or width % patch_size:
        raise ValueError(
            f"`patch_size` must divide the image size {height}x{width}. "
            f"Received: patch_size={patch_size}"
        )
    num_patches = (height // patch_size) * (width // patch_size)

    inputs = keras.Input(shape=input_shape, name="image")
    x = keras.layers.Conv2D(
        dim,
        patch_size,
        strides=patch_size,
        name="patch_embedding",
        kernel_initializer=TorchDefaultUniform(),
        bias_initializer=TorchDefaultUniform(fan_in=patch_size * patch_size * channels),
    )(inputs)
    x = keras.layers.Reshape((num_patches, dim), name="patch_tokens")(x)
    x = ClassToken(name="class_token")(x)
    x = PositionEmbedding(name="position_embedding")(x)
    x = _dropout(x, dropout, "embedding_dropout")
    for i in range(1, depth + 1):
        y = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"block_{i}_norm_1")(x)
        y = keras.layers.MultiHeadAttention(
            num_heads=heads,
            key_dim=dim // heads,
            name=f"block_{i}_attention",
            **trunc_normal_kwargs(),
        )(y, y)
        y = _dropout(y, dropout, f"block_{i}_attention_dropout")
        x = keras.layers.Add(name=f"block_{i}_attention_residual")([x, y])
        y = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"block_{i}_norm_2")(x)
        y = keras.layers.Dense(
            mlp_ratio * dim, activation="gelu", name=f"block_{i}_mlp_1", **trunc_normal_kwargs()
        )(y)
        y = _dropout(y, dropout, f"block_{i}_mlp_1_dropout")
        y = keras.layers.Dense(dim, name=f"block_{i}_mlp_2", **trunc_normal_kwargs())(y)
        y = _dropout(y, dropout, f"block_{i}_mlp_2_dropout")
        x = keras.layers.Add(name=f"block_{i}_mlp_residual")([x, y])
    x = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name="final_norm")(x)
    x = keras.layers.Cropping1D((0, num_patches), name="class_token_select")(x)
    x = keras.layers.Flatten(name="class_token_output")(x)
    outputs = keras.layers.Dense(num_classes, name="head", **trunc_normal_kwargs())(x)
    return keras.Model(inputs, outputs, name=name or f"vit_{dim}_{depth}")


def vit_tiny(patch_size=16, num_classes=1000, input_shape=(224, 224, 3), **kwargs):
    """ViT-Ti/``patch_size``: ``vit(patch_size, dim=192, depth=12, heads=3, ...)``.

    Patch 16 for 224 x 224 inputs; 2 or 4 for 32 x 32 (CIFAR). Other keyword
    arguments as in :func:`vit`.
    """
    kwargs.setdefault("name", f"vit_tiny_{patch_size}")
    return vit(patch_size, 192, 12, 3, num_classes=num_classes, input_shape=input_shape, **kwargs)


def vit_small(patch_size=16, num_classes=1000, input_shape=(224, 224, 3), **kwargs):
    """ViT-S/``patch_size``: ``vit(patch_size, dim=384, depth=12, heads=6, ...)``.

    Other keyword arguments as in :func:`vit_tiny`.
    """
    kwargs.setdefault("name", f"vit_small_{patch_size}")
    return vit(patch_size, 384, 12, 6, num_classes=num_classes, input_shape=input_shape, **kwargs)
