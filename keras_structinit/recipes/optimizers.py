"""Optimizers of the papers' recipes that Keras does not ship as such.

PyTorch's ``SGD(weight_decay=l)`` adds ``l * w`` to the gradient *before*
momentum (an L2 penalty), while Keras' ``weight_decay`` shrinks the variable
directly (decoupled, as in AdamW). With momentum ``mu`` the two differ by about
a factor ``1 / (1 - mu)`` in effective decay, so recipes taken from PyTorch
papers use :class:`TorchSGD`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_structinit.utils import validation
from keras_structinit.utils.arguments import OPTIMIZERS

__all__ = ["OPTIMIZERS", "TorchSGD", "make_optimizer"]


@keras.saving.register_keras_serializable(package="keras_structinit")
class TorchSGD(keras.optimizers.SGD):
    """SGD with PyTorch's coupled weight decay: ``g <- g + l2 * w``, then Keras' (Nesterov) momentum.

    Keras' momentum update ``m <- mu m - lr g; w <- w + mu m - lr g``
    (Nesterov) equals PyTorch's ``b <- mu b + g; w <- w - lr (g + mu b)`` at a
    constant learning rate (``m = -lr b``); under a schedule Keras keeps the
    learning rate inside the buffer, a difference of one step's change of the
    rate. The penalty applies to every trainable variable, as in PyTorch.

    Args:
        learning_rate: a float or a ``keras.optimizers.schedules`` schedule.
        momentum: ``mu`` in [0, 1).
        nesterov: Nesterov momentum.
        l2: the PyTorch ``weight_decay`` (>= 0). Keras' own decoupled
            ``weight_decay`` argument is refused: use ``keras.optimizers.SGD``.

    Example:
        >>> # torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.01):
        >>> opt = TorchSGD(0.01, momentum=0.9, nesterov=True, l2=0.01)
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, nesterov=True, l2=0.0, name="torch_sgd", **kwargs):
        if kwargs.get("weight_decay") is not None:
            raise ValueError(
                "TorchSGD's decay is `l2` (PyTorch's coupled weight_decay); for Keras' decoupled "
                f"`weight_decay` use keras.optimizers.SGD. Received: weight_decay={kwargs['weight_decay']!r}"
            )
        kwargs.pop("weight_decay", None)
        if isinstance(learning_rate, (int, float)) and not isinstance(learning_rate, bool):
            learning_rate = validation.non_negative_float(learning_rate, "learning_rate")
        super().__init__(
            learning_rate=learning_rate, momentum=momentum, nesterov=nesterov, name=name, **kwargs
        )
        self.l2 = validation.non_negative_float(l2, "l2")

    def update_step(self, gradient, variable, learning_rate):
        if self.l2:
            gradient = ops.add(gradient, ops.multiply(ops.cast(self.l2, variable.dtype), variable))
        super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        return {**config, "l2": self.l2}


def make_optimizer(name, learning_rate, weight_decay, ema=False):
    """The recipes' optimizer ``name`` at ``learning_rate`` (a float or a schedule).

    ``"adamw"``: ``keras.optimizers.AdamW`` (decoupled ``weight_decay``).
    ``"sgd"``: :class:`TorchSGD`, momentum 0.9, Nesterov, ``weight_decay`` as
    PyTorch's L2 (the LC-blocks paper's recipe). ``"sgd_momentum"``: the same
    without Nesterov (plain SGD with momentum 0.9, Maennel et al.'s recipe
    with ``weight_decay=0``). ``ema``: ``False``, ``True``
    (momentum 0.9999) or the EMA momentum of the weights.
    """
    validation.one_of(name, "optimizer", OPTIMIZERS)
    averaging = {"use_ema": bool(ema), "ema_momentum": ema if isinstance(ema, float) else 0.9999}
    if name in ("sgd", "sgd_momentum"):
        return TorchSGD(learning_rate, momentum=0.9, nesterov=name == "sgd", l2=weight_decay, **averaging)
    return keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay, **averaging)
