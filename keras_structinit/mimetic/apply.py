"""Model-level functions of the mimetic inits::

    apply_mean_shift(model, *, b=None, mode="constant", variance=None, base=None,
                     redraw=True, layers=None, seed=None) -> paths
    apply_mimetic_attention(model, *, alpha=None, beta=None, position_embedding="sinusoidal",
                            layers=None, seed=None, cross_attention=False) -> paths

The MLP blocks are found by structure (:func:`find_mlp_blocks`, :mod:`.structure`: a widening
Dense / 1x1 conv / EinsumDense, an activation and a narrowing one, in a residual branch or one
sub-layer; the names of :data:`~keras_structinit.mimetic.blocks.MLP_FIRST_LAYERS` must agree); the
self-attention layers by structure too (the ``"attention"`` selector: ``MultiHeadAttention``, fused
qkv layers such as KerasHub Swin's window attention, separate q/k/v/output Dense layers), cross-attention
left out unless asked (:func:`~keras_structinit.mimetic.structure.is_cross_attention`).
"""

from __future__ import annotations

import warnings

import keras

from keras_structinit.baseline.sampling import variable_rngs
from keras_structinit.engine.contract import check_model, model_function
from keras_structinit.engine.initializer_base import check_seed, seed_generator
from keras_structinit.engine.walker import dense_kernel, find, iter_layers
from keras_structinit.mimetic import structure
from keras_structinit.mimetic.attention import resolve_pair
from keras_structinit.mimetic.blocks import MLP_FIRST_PATTERN
from keras_structinit.mimetic.initializers import MeanShift, check_base
from keras_structinit.mimetic.shift import resolve_shift
from keras_structinit.utils import validation

__all__ = [
    "apply_mean_shift",
    "apply_mimetic_attention",
    "attention_query_kernel",
    "find_attention_layers",
    "find_mlp_blocks",
    "find_mlp_kernels",
    "mlp_first_kernel",
    "position_embedding_variable",
    "self_attention_layers",
]


def mlp_first_kernel(layer):
    """The kernel of a built layer that is the first Dense / 1x1 conv of an MLP block, or ``None``."""
    kernel = dense_kernel(layer)
    return kernel if kernel is not None and MLP_FIRST_PATTERN.search(kernel.path) else None


def find_mlp_kernels(model, layers=None):
    """``[(layer, kernel), ...]`` of the first Dense / 1x1 conv / EinsumDense of every MLP block, in
    model order.

    With ``layers=None`` the blocks are found by structure
    (:func:`~keras_structinit.mimetic.structure.find_mlp_blocks`: a widening layer, an activation and
    a narrowing one, in a residual branch or one sub-layer), in the package's models, KerasHub's and
    keras.applications' blocks and your own; the names of :data:`MLP_FIRST_LAYERS` are a faster path
    that must agree with the structure (a named layer the structure does not confirm is an error).
    ``layers`` names the first layers of any model's MLP blocks (each a ``Dense`` or a 1x1
    convolution). A model without MLP blocks gets a one-line ``ValueError`` naming what was looked for.
    """
    if layers is not None:
        return find(model, "dense", layers)
    return [(block.first, block.first_kernel) for block in find_mlp_blocks(model)]


def find_mlp_blocks(model):
    """Every :class:`~keras_structinit.mimetic.structure.MLPBlock` of ``model`` (its two kernels
    paired), in model order; ``ValueError`` (one line, naming what was looked for) where there is
    none, or where a layer named like an MLP block's first layer (:data:`MLP_FIRST_LAYERS`) is not
    the first layer of one by structure."""
    check_model(model, "model")
    blocks = structure.find_mlp_blocks(model)
    if not blocks:
        raise ValueError(f"`model` ({model.name}) has no {structure.MLP_STRUCTURE}.")
    firsts = {id(block.first) for block in blocks}
    for layer in iter_layers(model):
        if mlp_first_kernel(layer) is not None and id(layer) not in firsts:
            raise ValueError(
                f"`model` layer {layer.name!r} is named like the first layer of an MLP block "
                f"but is not one by structure; expected {structure.MLP_STRUCTURE}."
            )
    return blocks


@model_function
def apply_mean_shift(
    model, *, b=None, mode="constant", variance=None, base=None, redraw=True, layers=None, seed=None
):
    """Re-initializes the first layer ``W1`` of every MLP block with :class:`MeanShift`.

    Each kernel is drawn anew as ``base + b`` (``mode="constant"``, Eq. 2) or
    ``base + b_n 1^T`` with ``b_n ~ N(b, variance)`` per input
    (``"per_input"``, Eq. 1); with ``redraw=False`` the kernel's current values
    are the base and only the shift is added (``--init mean-shift`` does this
    after ``torch-default``, so that ``b = 0`` leaves the baseline as it was).
    Only the first layers' kernels change: not their biases, not the second
    layers, attention or the head.

    Recognised without ``layers`` (:data:`MLP_FIRST_LAYERS`):
    the package's ConvNeXt, hierarchical and isotropic (``{prefix}_pointwise_1``),
    and ViT (``block_{i}_mlp_1``), keras.applications ConvNeXt
    (``..._pointwise_conv_1``) and KerasHub's ``ViTBackbone`` (``mlp/dense_1``).

    Args:
        model: a built ``keras.Model`` (nested models are searched).
        b, mode, variance: as in :class:`MeanShift` (``b=None``: its default).
        base: the initializer of the unshifted kernel, as in
            :class:`MeanShift`; ``None``: PyTorch's default uniform (the
            paper's baseline), drawn from ``seed``. A base with an int seed
            draws the same values for every layer of one shape.
        redraw: ``False`` shifts the kernels' current values instead of drawing
            a base (``base`` must then be ``None``).
        layers: optional list of layer names or objects: restricts the
            recognised layers, or names the first layers of another model's
            MLP blocks (each a ``Dense`` or a 1x1 convolution).
        seed: ``None``, an int (reproducible) or a ``keras.random.SeedGenerator``;
            every layer gets different samples.

    Returns:
        The re-initialized kernel variables' paths, in model order.

    Raises:
        ValueError: no MLP block found (the message lists the names looked
            for), or a bad ``b``, ``mode``, ``variance`` or ``base``.

    Example:
        >>> paths = apply_mean_shift(model, b=0.05, seed=0)
        ['block_1_pointwise_1/kernel', ...]
    """
    resolve_shift(b, mode, variance)  # validate before walking
    if not validation.boolean(redraw, "redraw") and base is not None:
        raise ValueError(
            f"`base` must be None with `redraw=False` (the kernels' values are the base). "
            f"Received: base={base!r}"
        )
    base = "zeros" if not redraw else None if base is None else check_base(base)
    found = find_mlp_kernels(model, layers=layers)
    generator = seed_generator(seed)
    init = MeanShift(base=base, b=b, mode=mode, variance=variance, seed=generator)
    for _, kernel in found:
        drawn = init(tuple(kernel.shape), dtype=kernel.dtype)
        kernel.assign(drawn if redraw else keras.ops.add(kernel, drawn))
    return [kernel.path for _, kernel in found]


# ------------------------------------------------------------------ mimetic self-attention


def attention_query_kernel(layer):
    """The query kernel (the fused ``qkv`` kernel of a fused layer) of a built self-attention layer
    found by structure (:func:`~keras_structinit.mimetic.structure.attention_projections`, the
    ``"attention"`` selector: the layer stands for its four projections), or ``None``."""
    found = structure.attention_projections(layer)
    return None if found is None else found.query_kernel


def find_attention_layers(model, layers=None):
    """``[(layer, query_kernel), ...]`` of every self-attention layer of ``model`` found by structure
    (``keras.layers.MultiHeadAttention``; a layer with ``num_heads`` holding a fused qkv Dense and an
    output Dense, as KerasHub Swin's window attention, or query, key, value and output Dense layers),
    in model order; ``layers`` restricts them.
    Errors as in :func:`keras_structinit.engine.walker.find`."""
    return find(model, "attention", layers)


def self_attention_layers(model, layers=None, cross_attention=False):
    """The attention layers :func:`apply_mimetic_attention` acts on, in model order: those of
    :func:`find_attention_layers`, less the cross-attention layers (named in a ``UserWarning``)
    unless ``cross_attention``. ``ValueError`` (before anything is written) where none is left, or
    where ``layers`` names a cross-attention and ``cross_attention`` is ``False``."""
    cross_attention = validation.boolean(cross_attention, "cross_attention")
    found = [layer for layer, _ in find_attention_layers(model, layers=layers)]
    if cross_attention:
        return found
    cross = [layer for layer in found if structure.is_cross_attention(layer)]
    if cross and layers is not None:
        raise ValueError(
            f"`layers` names the cross-attention layer {cross[0].name!r} (key/value from another input "
            "than the query); the mimetic init is for self-attention: pass cross_attention=True "
            "(init form mimetic-attention:all) to include it"
        )
    if cross and len(cross) == len(found):
        raise ValueError(
            f"`model` ({model.name}) has no self-attention layer: its {len(cross)} attention layers "
            f"({', '.join(repr(layer.name) for layer in cross)}) are cross-attention (key/value from "
            "another input than the query); pass cross_attention=True (init form "
            "mimetic-attention:all) to initialize them"
        )
    if cross:
        warnings.warn(
            f"apply_mimetic_attention skipped {len(cross)} cross-attention layer(s) of {model.name} "
            f"(key/value from another input than the query): "
            f"{', '.join(repr(layer.name) for layer in cross)}; pass cross_attention=True "
            "(init form mimetic-attention:all) to include them",
            UserWarning,
            stacklevel=3,
        )
    return [layer for layer in found if not any(layer is c for c in cross)]


def position_embedding_variable(layer):
    """The learned position table of ``layer``: the package's ``PositionEmbedding`` (``embedding``,
    ``(1, N, d)``) or a ``keras.layers.Embedding`` named ``position_embedding`` (KerasHub's ViT,
    ``embeddings``, ``(N, d)``); ``None`` for any other layer."""
    from keras_structinit.layers.position_embedding import PositionEmbedding

    if isinstance(layer, PositionEmbedding):
        return getattr(layer, "embedding", None)
    if isinstance(layer, keras.layers.Embedding) and layer.name == "position_embedding":
        return getattr(layer, "embeddings", None)
    return None


def _attention_kernels(layer):
    projections = structure.attention_projections(layer)
    q, k, v, o = projections.shapes()
    ok = len(q) == 3 and q == k and len(v) == 3 and v[1] == q[1] and o == (v[1], v[2], q[0]) and v[0] == q[0]
    if not ok:
        raise ValueError(
            f"`model` layer {layer.name!r} is not a self-attention the mimetic init applies "
            f"to: it needs query, key and value inputs and an output of one width d "
            f"(query/key kernels (d, H, k), value (d, H, k_v), output (H, k_v, d)). "
            f"Received kernel shapes {q}, {k}, {v}, {o}"
        )
    return projections


def _attention_arguments(alpha, beta, position_embedding):
    """``(alpha, beta)`` pairs of :func:`apply_mimetic_attention`, its ``position_embedding`` checked."""
    from keras_structinit.mimetic.attention import DEFAULT_ALPHA, DEFAULT_BETA, POSITION_MODES

    pairs = resolve_pair(alpha, "alpha", DEFAULT_ALPHA), resolve_pair(beta, "beta", DEFAULT_BETA)
    if position_embedding not in POSITION_MODES:
        raise ValueError(
            f"`position_embedding` must be one of {POSITION_MODES}. "
            f"Received: position_embedding={position_embedding!r}"
        )
    return pairs


@model_function
def apply_mimetic_attention(
    model,
    *,
    alpha=None,
    beta=None,
    position_embedding="sinusoidal",
    layers=None,
    seed=None,
    cross_attention=False,
):
    """Mimetic init of every self-attention layer (Trockman & Kolter, ICML 2023, Sec. 3).

    For each self-attention layer found by structure (``keras.layers.MultiHeadAttention``, a fused
    qkv layer such as KerasHub Swin's window attention, separate q/k/v/output Dense layers: width
    ``d``, ``H`` heads of width ``k``),
    per head ``W_q,h W_k,h^T`` becomes the rank-``k`` truncation of ``alpha_1 Z + beta_1 I``, and
    ``W_v W_proj`` (all heads) that of ``alpha_2 Z' - beta_2 I`` (exact when ``H k_v = d``), each
    ``Z`` of i.i.d. ``N(0, 1/d)`` entries, drawn anew per head and per layer; the SVD split
    gives each factor the square root of the singular values
    (:mod:`keras_structinit.mimetic.attention`). The four kernels change; their biases do not, nor
    do relative position tables (Swin's ``relative_position_bias_table``).

    The paper's init is for self-attention: a cross-attention layer (key/value from another input
    than the query, :func:`~keras_structinit.mimetic.structure.is_cross_attention`) is skipped, and
    named in a ``UserWarning``, unless ``cross_attention=True`` (the init form:
    ``mimetic-attention:all``).

    With ``position_embedding="sinusoidal"`` (the paper's choice) the learned position tables
    the function recognises are set to 2-D sine-cosine embeddings (still trainable): the
    package's ``PositionEmbedding`` and KerasHub ViT's ``position_embedding`` (the class token
    first, its row zero; the grid from :func:`~keras_structinit.mimetic.attention.token_grid`);
    a model without one keeps nothing else changed. ``None`` leaves them as built.

    Args:
        model: a built ``keras.Model`` (nested models and KerasHub blocks are searched).
        alpha: ``(alpha_1, alpha_2)``, or one number for both; ``None``: ``(0.7, 0.4)``.
        beta: ``(beta_1, beta_2)``, or one number for both; ``None``: ``(0.7, 0.4)``.
        position_embedding: ``"sinusoidal"`` or ``None``.
        layers: optional list of self-attention layer names or objects to restrict to.
        seed: ``None``, an int (reproducible: the same values on every backend) or a
            ``keras.random.SeedGenerator``; each layer's ``Z`` are drawn in NumPy from a generator
            seeded from ``seed`` and its query kernel's place in the model.
        cross_attention: ``True`` also initializes cross-attention layers (their query and
            key/value widths must agree); ``False`` (the default) skips them.

    Returns:
        The written variables' paths, in model order: per attention layer its query, key, value
        and output kernels, then the position tables.

    Raises:
        ValueError: no self-attention layer in ``model`` (every attention layer is a
            cross-attention and ``cross_attention=False``), a cross-attention of ``layers`` with
            ``cross_attention=False``, one whose widths differ, or a bad ``alpha``, ``beta`` or
            ``position_embedding``. ``TypeError``: ``cross_attention`` not a bool.

    Example:
        >>> paths = apply_mimetic_attention(ks.models.build_model("vit-tiny-8/2"), seed=0)
    """
    from keras_structinit.mimetic.attention import query_key_factors, value_projection_factors

    alpha, beta = _attention_arguments(alpha, beta, position_embedding)
    check_seed(seed)
    found = self_attention_layers(model, layers=layers, cross_attention=cross_attention)
    checked = [(layer, _attention_kernels(layer)) for layer in found]  # every refusal before a write
    paths = []
    rngs = variable_rngs(seed, model, [projections.query_kernel for _, projections in checked])
    for (_, projections), rng in zip(checked, rngs, strict=True):
        (d, heads, key_dim), _, (_, _, value_dim), _ = projections.shapes()
        z1, z2 = rng.standard_normal((heads, d, d)), rng.standard_normal((d, d))
        wq, wk = query_key_factors(z1, key_dim, alpha[0], beta[0])
        wv, wo = value_projection_factors(z2, heads, value_dim, alpha[1], beta[1])
        projections.write(wq, wk, wv, wo)
        paths.extend(dict.fromkeys(variable.path for variable in projections.variables))
    if position_embedding == "sinusoidal":
        paths.extend(_sinusoidal_position_tables(model))
    return paths


def _sinusoidal_position_tables(model):
    """Sets the learned position tables of ``model`` that :func:`apply_mimetic_attention` recognises
    to 2-D sine-cosine embeddings; returns their paths, in model order."""
    from keras_structinit.mimetic.attention import sincos_position_embedding, token_grid

    paths = []
    for layer in iter_layers(model):
        table = position_embedding_variable(layer)
        if table is None:
            continue
        tokens, dim = table.shape[-2], table.shape[-1]
        extra, rows, cols = token_grid(tokens)
        value = sincos_position_embedding(rows, cols, dim, class_tokens=extra).reshape(table.shape)
        table.assign(keras.ops.cast(value, table.dtype))
        paths.append(table.path)
    return paths
