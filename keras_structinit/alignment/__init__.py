"""Data-aligned initialization (Maennel et al., "What Do Neural Networks Learn When
Trained With Random Labels?", NeurIPS 2020).

Training, even on random labels, aligns the covariance ``Sigma_w`` of the
first layer's filters with the covariance ``Sigma_x`` of the input patches;
initializing the filters from the leading eigenvectors of ``Sigma_x`` trains
faster (App. E.3).

Pure math (NumPy float64, no Keras import):

* :mod:`.patches`: ``patch_covariance`` (streamed, patches flattened in the
  ``(kh, kw, C)`` order of a ``Conv2D`` kernel), ``extract_patches``, ``sorted_eigh``;
* :mod:`.measures`: ``misalignment`` (App. D.4, Prop. 2), ``filter_covariance``,
  ``random_basis``, ``transfer_function`` (``tau_i^2``, Sec. 2.3, App. A.8);
* :mod:`.components`: ``component_scales`` (``tau_i = f(lambda_i)``), ``MODES``;
* :mod:`.specialization`: neuron activation frequencies and class selectivity (App. F, A.11).

Keras objects, imported on first use:

* :mod:`.initializers`: ``DataAligned`` (also in :mod:`keras_structinit.initializers`);
* :mod:`.apply`: ``align_conv_layers``, ``weight_covariance``, ``weight_norms``,
  ``rescale_to_initial_norms`` (the transfer protocol of App. A.4);
* :mod:`.callbacks`: ``RecordInitialNorms``, ``RecordSpecialization`` (Fig. 24: each conv and
  Dense layer's activation frequency per epoch);
* :mod:`.activations`: ``layer_activations`` (every conv and Dense layer's neurons on images);
* :mod:`.inspect`: its sections of ``structinit inspect`` (the first layer against the data, the
  neurons' specialization).

Example:
    >>> images = x_train[:10000] / 127.5 - 1.0
    >>> ks.alignment.align_conv_layers(model, images=images, num_layers=3, seed=0)
"""

from keras_structinit._lazy import lazy_exports
from keras_structinit.alignment.components import MODES, component_scales
from keras_structinit.alignment.measures import (
    filter_covariance,
    misalignment,
    random_basis,
    transfer_function,
)
from keras_structinit.alignment.method import METHOD
from keras_structinit.alignment.patches import extract_patches, patch_covariance, sorted_eigh

__getattr__, __dir__, _ = lazy_exports(__name__, METHOD.exports)

__all__ = [
    "COMPONENTS",
    "MODES",
    "DataAligned",
    "RecordInitialNorms",
    "RecordSpecialization",
    "align_conv_layers",
    "component_scales",
    "conv_targets",
    "extract_patches",
    "filter_covariance",
    "layer_activations",
    "misalignment",
    "patch_covariance",
    "random_basis",
    "rescale_to_initial_norms",
    "sorted_eigh",
    "transfer_function",
    "weight_covariance",
    "weight_norms",
]
