"""``MaxPooling2D`` with ``padding="symmetric"``: PyTorch's ``nn.MaxPool2d(k, s, padding=k // 2)``."""

from __future__ import annotations

import keras

from keras_structinit.layers.padding import SymmetricPadding

__all__ = ["MaxPooling2D"]


@keras.saving.register_keras_serializable(package="keras_structinit")
class MaxPooling2D(SymmetricPadding, keras.layers.MaxPooling2D):
    """``keras.layers.MaxPooling2D`` that also takes ``padding="symmetric"``.

    ``"symmetric"`` pads ``k // 2`` pixels of ``-inf`` on both sides (padded
    pixels never win), as PyTorch's ``padding=k // 2`` does; e.g. a ResNet stem's
    ``MaxPool2d(3, 2, padding=1)`` (see :mod:`keras_structinit.ops.padding`).
    """

    pad_value = float("-inf")
