"""The LC paper's part of the spatial section of ``structinit inspect`` (see
:mod:`keras_structinit.covariance.inspect`): an LC block is measured by its combined filters (its
spatial filters times its ``1 x 1`` weights, Def. 3.1), and every spatial conv by its filter
variance entropy (Sec. 4.2)."""

from __future__ import annotations

from keras_structinit import walker
from keras_structinit.inspection import values
from keras_structinit.lc.diversity import variance_entropy
from keras_structinit.lc.folding import fold_kernels

__all__ = ["spatial_part"]


def spatial_part(model):
    """``{"filters": {id(block): ("lc", combine)}, "columns": {"variance_entropy": ...}}`` of ``model``."""
    try:
        found = walker.find(model, "lc_pointwise")
    except ValueError:  # no LC block
        found = []
    filters = {id(layer): ("lc", lambda spatial, kernel=kernel: fold_kernels(spatial, values(kernel)))
               for layer, kernel in found}
    return {"filters": filters,
            "columns": {"variance_entropy": (variance_entropy,
                                             "filter variance entropy (Gavrikov & Keuper, Sec. 4.2)")}}
