"""Weight selection (Xu et al., ICLR 2024): initialize a small model from a larger one of its family.

This part holds the index rules (:mod:`.indices`, pure NumPy). The model-level
``select_weights``, family adapters, callback and CLI are tracked in the
weight-selection issues.
"""

from keras_structinit.selection.indices import ELEMENT_METHODS, LAYER_METHODS, element_indices, layer_indices

__all__ = ["ELEMENT_METHODS", "LAYER_METHODS", "element_indices", "layer_indices"]
