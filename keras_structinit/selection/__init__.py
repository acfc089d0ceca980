"""Weight selection (Xu, Liu, Darrell & Liu, "Initializing Models with Larger Ones", ICLR 2024).

A student is initialized with a subset of a larger trained teacher's weights
of the same family: layer selection, component mapping, element selection.

Pure math (NumPy, no Keras import):

* :mod:`.indices`: ``element_indices`` (uniform, consecutive, random),
  ``l1_indices`` and ``magnitude_elements`` (Table 7's pruning baselines, from
  values) and ``layer_indices`` (first_n, last_n, mid_n, uniform);
* :mod:`.families`: family adapters (blocks and dimension roles per variable)
  for the package's ViT, ConvNeXt, isotropic ConvNeXt, ConvMixer and ResNets;
* :mod:`.planning`: ``plan_selection``, consistent indices per dimension role.

Keras, imported on first use: :mod:`.select`: ``select_weights``,
``selection_report``, ``SelectionReport``, ``plan`` (the plan, printable); :mod:`.derive`: the plan
derived from two models of no hand-written family; :mod:`.callbacks`: ``SelectWeightsFrom``;
:mod:`.teachers`: ``load_teacher`` (KerasHub, KerasCV, keras.applications,
``.keras``) and ``smaller_config``.
"""

from keras_structinit._lazy import lazy_exports
from keras_structinit.selection.families import FAMILIES
from keras_structinit.selection.indices import (
    ELEMENT_METHODS,
    LAYER_METHODS,
    element_indices,
    l1_indices,
    layer_indices,
    magnitude_elements,
)
from keras_structinit.selection.method import METHOD
from keras_structinit.selection.planning import HEAD_MODES, plan_selection

__getattr__, __dir__, _ = lazy_exports(__name__, METHOD.exports)

__all__ = [
    "ELEMENT_METHODS",
    "FAMILIES",
    "HEAD_MODES",
    "LAYER_METHODS",
    "SelectWeightsFrom",
    "SelectionPlan",
    "SelectionReport",
    "element_indices",
    "l1_indices",
    "layer_indices",
    "load_teacher",
    "magnitude_elements",
    "plan",
    "plan_selection",
    "select_weights",
    "selection_report",
    "smaller_config",
]
