"""LC blocks: linear combinations of frozen random filters (Gavrikov & Keuper,
"Rethinking 1x1 Convolutions: Can we train CNNs with Frozen Random Filters?").

A ``k x k`` conv to ``filters * E`` channels followed by a ``1 x 1`` conv back to
``filters`` trains well with *frozen random* spatial filters once ``E`` is
large enough (the gap closes near ``E = 8`` for LCResNet-20-16xE on CIFAR-10).

Pure math (NumPy float64, no Keras import):

* :mod:`.folding`: ``fold_kernels`` (Definition 3.1: the equivalent single conv);
* :mod:`.sharing`: one random tensor sliced into every spatial kernel
  (``bank_kernel``, ``bank_size``, ``kernel_scale``; App. D);
* :mod:`.pruning`: global magnitude pruning masks (``magnitude_masks``);
* :mod:`.counting`: LCResNet parameter arithmetic (Table 1);
* :mod:`.diversity`: ``variance_entropy`` of a layer's filters (Sec. 4.2, App. E);
* :mod:`.position`: ``position_variance`` and ``pooled_position_variance``, the weight variance
  at each kernel position (Sec. 4.4, Fig. 13).

Keras objects, imported on first use:

* :mod:`.layers`: ``LCConv2D``, ``SharedKernelBank`` (also in
  :mod:`keras_structinit.layers`);
* :mod:`.apply`: ``fold_model``, ``apply_pointwise_l1``, ``prune_pointwise``,
  ``pointwise_sparsity``, ``parameter_counts``, ``find_pointwise_kernels``;
* :mod:`.callbacks`: ``PrunePointwise`` (also in :mod:`keras_structinit.callbacks`);
* :mod:`.inspect`: its part of ``structinit inspect``'s spatial section and its
  ``position_variance`` section.

The LCResNets are :func:`keras_structinit.models.lcresnet`.
"""

from keras_structinit._lazy import lazy_exports
from keras_structinit.lc.counting import SHARING, lcresnet_convs, lcresnet_parameter_counts
from keras_structinit.lc.diversity import randomness_threshold, variance_entropy
from keras_structinit.lc.folding import fold_kernels
from keras_structinit.lc.method import METHOD
from keras_structinit.lc.position import centre_border_ratio, pooled_position_variance, position_variance
from keras_structinit.lc.pruning import magnitude_masks, pruned_count
from keras_structinit.lc.sharing import bank_kernel, bank_size, check_bank_fits, kernel_scale

__getattr__, __dir__, _ = lazy_exports(__name__, METHOD.exports)

__all__ = [
    "SHARING",
    "LCConv2D",
    "PrunePointwise",
    "SharedKernelBank",
    "apply_pointwise_l1",
    "bank_kernel",
    "bank_size",
    "centre_border_ratio",
    "check_bank_fits",
    "find_pointwise_kernels",
    "fold_kernels",
    "fold_model",
    "kernel_scale",
    "lcresnet_convs",
    "lcresnet_parameter_counts",
    "magnitude_masks",
    "parameter_counts",
    "pointwise_sparsity",
    "pooled_position_variance",
    "position_variance",
    "prune_pointwise",
    "pruned_count",
    "randomness_threshold",
    "variance_entropy",
]
