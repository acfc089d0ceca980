"""Mimetic initialization of MLPs (Trockman & Kolter, "Mimetic Initialization of MLPs") and of
self-attention (Trockman & Kolter, "Mimetic Initialization of Self-Attention Layers", ICML 2023).

Trained first layers ``W1`` of MLP blocks are striped: each input carries a
nonzero mean shared by all outputs. Giving ``W1`` such a mean at init,
``W1 + b`` (Eq. 2) or one ``b_n[j] ~ N(b, variance)`` per input (Eq. 1),
speeds up short training, more so together with the covariance init of the
depthwise convs (:mod:`keras_structinit.covariance`).

Pure math (NumPy float64, no Keras import):

* :mod:`.shift`: ``MODES``, ``DEFAULT_B`` (0.2, from the CPU-suite sweep), ``resolve_shift``,
  ``shift_shape``, ``expected_statistics``, ``row_mean_statistics`` (measure
  the stripe of a trained kernel);
* :mod:`.attention`: ``DEFAULT_ALPHA``, ``DEFAULT_BETA``, ``query_key_factors``,
  ``value_projection_factors`` (the SVD split of ``alpha Z +- beta I``), ``attention_statistics``,
  ``sincos_position_embedding``, ``token_grid``;
* :mod:`.joint`: ``unit_covariance`` and ``population_covariance`` of an MLP block's
  ``[W1, W2]`` (Sec. 2, Fig. 1), ``block_summary``.

Keras objects, imported on first use:

* :mod:`.initializers`: ``MeanShift`` (also in :mod:`keras_structinit.initializers`);
* :mod:`.apply`: ``apply_mean_shift``, ``apply_mimetic_attention``, ``find_mlp_blocks``,
  ``find_mlp_kernels``, ``find_attention_layers`` (found by structure, :mod:`.structure`);
* :mod:`.layers`: ``ScalarBiasDense`` (the scalar-bias baseline of Fig. 4; also in
  :mod:`keras_structinit.layers`);
* :mod:`.inspect`: its section of ``structinit inspect`` (the MLP blocks), ``mlp_weight_pairs``.

Example:
    >>> model = ks.models.convnext_isotropic(256, 8)
    >>> ks.apply_conv_covariance(model, seed=0); ks.mimetic.apply_mean_shift(model, seed=0)
"""

from keras_structinit._lazy import lazy_exports
from keras_structinit.mimetic.attention import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    attention_statistics,
    query_key_factors,
    sincos_position_embedding,
    token_grid,
    value_projection_factors,
)
from keras_structinit.mimetic.joint import block_summary, population_covariance, unit_covariance
from keras_structinit.mimetic.method import METHOD
from keras_structinit.mimetic.shift import (
    DEFAULT_B,
    MODES,
    expected_statistics,
    resolve_shift,
    row_mean_statistics,
    shift_shape,
    torch_default_variance,
)

__getattr__, __dir__, _ = lazy_exports(__name__, METHOD.exports)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_B",
    "DEFAULT_BETA",
    "MODES",
    "MLP_FIRST_LAYERS",
    "MeanShift",
    "ScalarBiasDense",
    "apply_mean_shift",
    "apply_mimetic_attention",
    "attention_statistics",
    "block_summary",
    "expected_statistics",
    "find_attention_layers",
    "find_mlp_blocks",
    "find_mlp_kernels",
    "population_covariance",
    "query_key_factors",
    "resolve_shift",
    "row_mean_statistics",
    "shift_shape",
    "sincos_position_embedding",
    "token_grid",
    "torch_default_variance",
    "unit_covariance",
    "value_projection_factors",
]
