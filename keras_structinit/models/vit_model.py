"""Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16 Words", ICLR 2021)."""

from __future__ import annotations

import keras

from keras_structinit.baseline.torch_default import TorchDefaultUniform
from keras_structinit.layers.class_token import ClassToken
from keras_structinit.layers.position_embedding import PositionEmbedding
from keras_structinit.mimetic.layers import ScalarBiasDense
from keras_structinit.models.common import (
    check_initializer,
    clone_initializer,
    positive_int_arguments,
    trunc_normal,
)
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import validation

LN_EPSILON = 1e-6


def _dropout(x, rate, name):
    return keras.layers.Dropout(rate, name=name)(x) if rate > 0 else x


def _dense(x, units, initializer, name, activation=None, layer=keras.layers.Dense):
    """``layer(units)`` with a clone of ``initializer`` and a zero bias."""
    return layer(
        units,
        activation=activation,
        kernel_initializer=clone_initializer(initializer),
        bias_initializer="zeros",
        name=name,
    )(x)


def _check_divisors(dim, heads, height, width, patch_size):
    if dim % heads:
        raise ValueError(
            f"`heads` must divide `dim` (key_dim = dim // heads). Received: dim={dim}, heads={heads}"
        )
    if height % patch_size or width % patch_size:
        raise ValueError(
            f"`patch_size` must divide the image size {height}x{width}. Received: patch_size={patch_size}"
        )


def _embedding(inputs, patch_size, dim, kernel_initializer, dropout):
    """``z_0 = [c; P x_1; ...; P x_N] + E_pos`` (then dropout): layers ``patch_embedding``,
    ``patch_tokens``, ``class_token``, ``position_embedding`` (``embedding_dropout``)."""
    height, width, channels = inputs.shape[1:]
    num_patches = (height // patch_size) * (width // patch_size)
    x = keras.layers.Conv2D(
        dim,
        patch_size,
        strides=patch_size,
        kernel_initializer=clone_initializer(kernel_initializer),
        bias_initializer=TorchDefaultUniform(fan_in=patch_size * patch_size * channels),
        name="patch_embedding",
    )(inputs)
    x = keras.layers.Reshape((num_patches, dim), name="patch_tokens")(x)
    x = ClassToken(name="class_token")(x)
    x = PositionEmbedding(name="position_embedding")(x)
    return _dropout(x, dropout, "embedding_dropout")


def _block(x, i, heads, mlp_ratio, dropout, initializers, mlp_scalar_bias):
    """Block ``i``: ``z' = z + MHSA(LN(z))``, ``z = z' + W_2 GELU(W_1 LN(z'))``; layers ``block_{i}_*``.

    ``initializers``: ``(mlp, dense)``, of ``W_1`` and of ``W_2`` and the attention's projections.
    """
    mlp_initializer, dense_initializer = initializers
    dim = x.shape[-1]
    y = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"block_{i}_norm_1")(x)
    y = keras.layers.MultiHeadAttention(
        num_heads=heads,
        key_dim=dim // heads,
        kernel_initializer=clone_initializer(dense_initializer),
        bias_initializer="zeros",
        name=f"block_{i}_attention",
    )(y, y)
    y = _dropout(y, dropout, f"block_{i}_attention_dropout")
    x = keras.layers.Add(name=f"block_{i}_attention_residual")([x, y])
    y = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name=f"block_{i}_norm_2")(x)
    first = ScalarBiasDense if mlp_scalar_bias else keras.layers.Dense
    y = _dense(y, mlp_ratio * dim, mlp_initializer, f"block_{i}_mlp_1", activation="gelu", layer=first)
    y = _dropout(y, dropout, f"block_{i}_mlp_1_dropout")
    y = _dense(y, dim, dense_initializer, f"block_{i}_mlp_2")
    y = _dropout(y, dropout, f"block_{i}_mlp_2_dropout")
    return keras.layers.Add(name=f"block_{i}_mlp_residual")([x, y])


def _head(x, num_classes):
    """The final LN and a ``Dense`` head on the class token: layers ``final_norm``,
    ``class_token_select``, ``class_token_output``, ``head``."""
    num_patches = x.shape[1] - 1
    x = keras.layers.LayerNormalization(epsilon=LN_EPSILON, name="final_norm")(x)
    x = keras.layers.Cropping1D((0, num_patches), name="class_token_select")(x)
    x = keras.layers.Flatten(name="class_token_output")(x)
    return _dense(x, num_classes, trunc_normal(), "head")


def vit(
    patch_size,
    dim,
    depth,
    heads,
    mlp_ratio=4,
    num_classes=10,
    input_shape=(32, 32, 3),
    dropout=0.0,
    kernel_initializer=None,
    mlp_initializer=None,
    dense_initializer=None,
    mlp_scalar_bias=False,
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
    token ``N(0, 1e-6^2)``, patch embedding PyTorch's default uniform. The
    ``*_initializer`` arguments (anything ``keras.initializers.get`` accepts;
    ``None``: timm's init) replace it per kind of kernel; the head, class
    token and position embedding keep it.

    Args:
        patch_size: patch size and stride; must divide the image size.
        dim: token width.
        depth: number of blocks.
        heads: attention heads; must divide ``dim``.
        mlp_ratio: MLP hidden width over ``dim``.
        num_classes: logits.
        input_shape: ``(height, width, channels)``, channels last.
        dropout: dropout rate in ``[0, 1)``.
        kernel_initializer: patch-embedding kernel.
        mlp_initializer: ``W_1`` (``block_{i}_mlp_1``), the first Dense of
            each block's MLP, e.g. the mimetic
            :class:`~keras_structinit.initializers.MeanShift`.
        dense_initializer: ``W_2`` (``block_{i}_mlp_2``) and the query, key,
            value and output projections of the attention.
        mlp_scalar_bias: ``W_1`` is a :class:`~keras_structinit.layers.ScalarBiasDense` (the mimetic
            MLP paper's learnable scalar-bias baseline, Fig. 4; the scalar starts at 0).
        name: model name, default ``vit_{dim}_{depth}``.

    Example: ``vit(4, 192, 12, 3, mlp_initializer=keras.initializers.Orthogonal())``.
    """
    patch_size, dim, depth, heads, mlp_ratio, num_classes = positive_int_arguments(
        patch_size=patch_size, dim=dim, depth=depth, heads=heads, mlp_ratio=mlp_ratio, num_classes=num_classes
    )
    height, width, channels = validation.input_shape(input_shape)
    dropout = validation.rate(dropout, "dropout")
    kernel_initializer = check_initializer(kernel_initializer, "kernel_initializer", TorchDefaultUniform())
    mlp_initializer = check_initializer(mlp_initializer, "mlp_initializer", trunc_normal())
    dense_initializer = check_initializer(dense_initializer, "dense_initializer", trunc_normal())
    _check_divisors(dim, heads, height, width, patch_size)
    mlp_scalar_bias = validation.boolean(mlp_scalar_bias, "mlp_scalar_bias")

    inputs = keras.Input(shape=(height, width, channels), name="image")
    x = _embedding(inputs, patch_size, dim, kernel_initializer, dropout)
    for i in range(1, depth + 1):
        x = _block(x, i, heads, mlp_ratio, dropout, (mlp_initializer, dense_initializer), mlp_scalar_bias)
    outputs = _head(x, num_classes)
    return keras.Model(inputs, outputs, name=name or f"vit_{dim}_{depth}")


def vit_tiny(patch_size=16, num_classes=1000, input_shape=(224, 224, 3), **kwargs):
    """ViT-Ti/``patch_size``: ``vit(patch_size, dim=192, depth=12, heads=3, ...)``.

    Patch 16 for 224 x 224 inputs; 2 or 4 for 32 x 32 (CIFAR). Other keyword
    arguments as in :func:`vit`.
    """
    kwargs["name"] = kwargs.get("name") or f"vit_tiny_{patch_size}"
    return vit(patch_size, 192, 12, 3, num_classes=num_classes, input_shape=input_shape, **kwargs)


def vit_small(patch_size=16, num_classes=1000, input_shape=(224, 224, 3), **kwargs):
    """ViT-S/``patch_size``: ``vit(patch_size, dim=384, depth=12, heads=6, ...)``.

    Other keyword arguments as in :func:`vit_tiny`.
    """
    kwargs["name"] = kwargs.get("name") or f"vit_small_{patch_size}"
    return vit(patch_size, 384, 12, 6, num_classes=num_classes, input_shape=input_shape, **kwargs)


#: The zoo's names of these builders (:mod:`keras_structinit.models.zoo`). ``vit-tiny-8/2``: the
#: mimetic-MLP paper's "tiny ViT" for CIFAR: ViT-Ti's width and heads, depth 8, patch 2.
ZOO = (
    ZooEntry("vit-tiny", vit_tiny),
    ZooEntry("vit-small", vit_small),
    ZooEntry("vit-tiny-8/2", vit, params={"patch_size": 2, "dim": 192, "depth": 8, "heads": 3}),
)
