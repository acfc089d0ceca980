"""Mimetic initialization of MLPs (Trockman & Kolter, "Mimetic Initialization of MLPs").

Trained first layers ``W1`` of MLP blocks are striped: each input carries a
nonzero mean shared by all outputs. Giving ``W1`` such a mean at init,
``W1 + b`` (Eq. 2) or one ``b_n[j] ~ N(b, variance)`` per input (Eq. 1),
speeds up short training, more so together with the covariance init of the
depthwise convs (:mod:`keras_structinit.covariance`).

Pure math (NumPy float64, no Keras import):

* :mod:`.shift`: ``MODES``, ``DEFAULT_B`` (0.2, from the CPU-suite sweep), ``resolve_shift``,
  ``shift_shape``, ``expected_statistics``, ``row_mean_statistics`` (measure
  the stripe of a trained kernel).

Keras objects, imported on first use:

* :mod:`.initializers`: ``MeanShift`` (also in :mod:`keras_structinit.initializers`);
* :mod:`.apply`: ``apply_mean_shift``;
* :mod:`.inspect`: its section of ``structinit inspect`` (the MLP blocks).

Example:
    >>> model = ks.models.convnext_isotropic(256, 8)
    >>> ks.apply_conv_covariance(model, seed=0); ks.mimetic.apply_mean_shift(model, seed=0)
"""

from keras_structinit._lazy import lazy_exports
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
    "DEFAULT_B",
    "MODES",
    "MLP_FIRST_LAYERS",
    "MeanShift",
    "apply_mean_shift",
    "expected_statistics",
    "find_mlp_kernels",
    "resolve_shift",
    "row_mean_statistics",
    "shift_shape",
    "torch_default_variance",
]
