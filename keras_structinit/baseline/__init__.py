"""The papers' baseline: PyTorch's default uniform init (``torch-default``,
``torch-default-depthwise``), which the other methods start from.

Keras objects, imported on first use: :mod:`.torch_default`: ``TorchDefaultUniform``,
``apply_torch_default``, ``apply_torch_uniform``; :mod:`.trunc_normal`: ``apply_trunc_normal``.
:mod:`.method` declares the forms and exports.
"""

from keras_structinit._lazy import lazy_exports
from keras_structinit.baseline.method import METHOD

__getattr__, __dir__, _ = lazy_exports(__name__, METHOD.exports)

__all__ = ["TorchDefaultUniform", "apply_torch_default", "apply_torch_uniform", "apply_trunc_normal"]
