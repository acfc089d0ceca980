"""Covariance initialization of conv filters (Trockman, Willmott & Kolter, ICLR 2023).

Pure math (NumPy float64, no Keras import):

* :mod:`.closed_form`: ``conv_covariance`` (Eq. 1, 5, 6, 10), block/vector layouts;
* :mod:`.schedule`: the variance schedule over depth (Eq. 11), ``PRESETS``;
* :mod:`.psd`: making the covariance sampleable (``psd_factor``), ``matched_scale``;
* :mod:`.bank`: ``FilterCovariance``, per-layer statistics of trained models
  (Eq. 3, 4) with interpolation over depth, resizing and Kronecker fits;
* :mod:`.bank_io`: its ``.npz`` file and config dict (``FilterCovariance.save``, ``load``);
* :mod:`.fit`: ``filter_statistics`` and the closed form nearest a measured covariance.

Keras objects, imported on first use:

* :mod:`.measure`: reads a model's filters for ``FilterCovariance.from_model``;
* :mod:`.initializers`: ``ConvCovariance``, ``CovarianceTransfer``;
* :mod:`.apply`: ``apply_conv_covariance``, ``apply_covariance_transfer``;
* :mod:`.filter_transfer`: ``apply_filter_transfer`` (direct-copy baseline);
* :mod:`.callbacks`: ``RecordFilterCovariance``;
* :mod:`.plots`: ``plot_covariances`` (Fig. 5's block form);
* :mod:`.inspect`: its section of ``structinit inspect`` (the spatial convs);

:mod:`.method` declares the method (its init forms and exports) once.
"""

from keras_structinit._lazy import lazy_exports
from keras_structinit.covariance.bank import FilterCovariance
from keras_structinit.covariance.closed_form import (
    block_to_vector,
    conv_covariance,
    conv_covariance_blocks,
    vector_to_block,
)
from keras_structinit.covariance.fit import filter_statistics
from keras_structinit.covariance.method import METHOD
from keras_structinit.covariance.psd import PSD_MODES, matched_scale, psd_factor, psd_project
from keras_structinit.covariance.schedule import PRESETS, depth_fractions, resolve_schedule, variance_schedule

__getattr__, __dir__, _ = lazy_exports(__name__, METHOD.exports)

__all__ = [
    "PRESETS",
    "PSD_MODES",
    "ConvCovariance",
    "CovarianceTransfer",
    "FilterCovariance",
    "RecordFilterCovariance",
    "apply_conv_covariance",
    "apply_covariance_transfer",
    "apply_filter_transfer",
    "block_to_vector",
    "conv_covariance",
    "conv_covariance_blocks",
    "depth_fractions",
    "filter_statistics",
    "matched_scale",
    "psd_factor",
    "psd_project",
    "resolve_schedule",
    "variance_schedule",
    "vector_to_block",
]
