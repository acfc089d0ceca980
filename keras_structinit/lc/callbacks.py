"""``PrunePointwise``: prunes the 1x1 weights of LC blocks when training ends."""

from __future__ import annotations

import keras

from keras_structinit.lc.apply import pointwise_sparsity, prune_pointwise
from keras_structinit.utils import validation

__all__ = ["PrunePointwise"]


class PrunePointwise(keras.callbacks.Callback):
    """Applies :func:`~keras_structinit.lc.prune_pointwise` at the end of ``fit``.

    The paper's last compression step (Table 1): after training, the
    ``round(ratio * n)`` smallest-magnitude pointwise weights of all LC blocks
    are set to zero, without fine-tuning.

    Args:
        ratio: fraction in ``[0, 1)`` to prune (the paper: 0.7).

    Attributes:
        paths: the pruned kernels' paths (``None`` before the end).
        result: :func:`~keras_structinit.lc.pointwise_sparsity` after pruning (``None`` before the end).

    Example:
        >>> model.fit(x, y, epochs=75, callbacks=[PrunePointwise(0.7)])
    """

    def __init__(self, ratio):
        super().__init__()
        self.ratio = validation.rate(ratio, "ratio")
        self.paths = self.result = None

    def on_train_end(self, logs=None):
        self.paths = prune_pointwise(self.model, ratio=self.ratio)
        self.result = pointwise_sparsity(self.model)

    def get_config(self):
        """The constructor arguments (callbacks are not serialized by Keras)."""
        return {"ratio": self.ratio}
