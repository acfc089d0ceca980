"""The weight-selection paper's logit distillation, configured on ``keras.distillation``.

Sec. 5.4 of Xu et al. trains the student on

    L = L_class + alpha * KL(p_t || p_s),    p = softmax(logits), temperature 1.

Keras' ``Distiller`` minimizes ``w * L_student + (1 - w) * sum_i a_i L_i`` and
its ``LogitsDistillation`` computes ``T^2 KL(softmax(z_t / T) || softmax(z_s / T))``
(default ``T = 3``). With ``T = 1``, ``w = 1/2``, ``a = 2 alpha`` and the
student's loss doubled, the total is exactly the paper's ``L``.
"""

from __future__ import annotations

import keras

from keras_structinit import validation, walker

__all__ = ["paper_distiller"]


class _Doubled:
    """``2 * loss(y, y_pred)``: the student-loss half that ``Distiller``'s weight ``w = 1/2`` takes away."""

    def __init__(self, loss):
        self.loss = keras.losses.get(loss)

    def __call__(self, y_true, y_pred):
        return 2.0 * self.loss(y_true, y_pred)


def paper_distiller(teacher, student, loss, alpha=1.0):
    """A ``keras.distillation.Distiller`` whose loss is ``loss(y, z_s) + alpha * KL(p_t || p_s)``.

    Args:
        teacher: a model producing logits of the student's classes (load
            ``keras.applications`` models with ``classifier_activation=None``).
        student: the model trained.
        loss: the classification loss (a ``keras.losses.Loss`` or a name).
        alpha: weight of the distillation term (the paper: 1).

    Returns:
        ``(distiller, student_loss)``: compile the distiller with
        ``loss=student_loss``. Keras' ``Distiller`` sets
        ``teacher.trainable = False``; callers that must leave the teacher as
        they found it restore the flag after training.

    Example:

    >>> distiller, student_loss = paper_distiller(teacher, student, "categorical_crossentropy")
    >>> distiller.compile("adamw", loss=student_loss, metrics=["accuracy"])
    """
    walker.check_model(teacher, "teacher")
    walker.check_model(student, "student")
    alpha = validation.positive_float(alpha, "alpha")
    if tuple(teacher.output_shape) != tuple(student.output_shape):
        raise ValueError(
            "Logit distillation needs the teacher's logits to have the student's shape: teacher "
            f"{teacher.output_shape}, student {student.output_shape}."
        )
    distiller = keras.distillation.Distiller(
        teacher=teacher,
        student=student,
        # A KLDivergence *instance*: given the name "kl_divergence", Keras 3.15's LogitsDistillation
        # gets a plain function, fails its isinstance check and applies KL to the raw logits.
        distillation_losses=[
            keras.distillation.LogitsDistillation(temperature=1.0, loss=keras.losses.KLDivergence())
        ],
        distillation_loss_weights=[2.0 * alpha],
        student_loss_weight=0.5,
    )
    return distiller, _Doubled(loss)
