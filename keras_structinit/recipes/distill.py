"""``fit_distill``: :func:`fit_cifar` with the weight-selection paper's logit distillation."""

from __future__ import annotations

from keras_structinit.recipes.cifar import fit_cifar

__all__ = ["fit_distill", "load_teacher"]


def load_teacher(spec):
    """A teacher model from ``spec``: :func:`keras_structinit.selection.load_teacher`."""
    from keras_structinit.selection.teachers import load_teacher as load

    return load(spec)


def fit_distill(
    student,
    teacher,
    data,
    epochs=None,
    *,
    mode="logits",
    alpha=1.0,
    teacher_layer=None,
    student_layer=None,
    **kwargs,
):
    """Trains ``student`` on ``data`` with the weight-selection paper's distillation (Xu et al., Sec. 5.4).

    ``mode="logits"``: ``L = L_class + alpha * KL(p_t || p_s)``;
    ``mode="features"``: ``L = L_class + alpha * L1(O_t, MLP(O_s))`` on the
    final features (``teacher_layer``/``student_layer``, see
    :func:`~keras_structinit.selection.distill.paper_distiller`).

    The same input pipeline, optimizer, schedule and ``model.fit`` as
    :func:`fit_cifar` (every keyword of it is accepted), with the student
    trained through a ``keras.distillation.Distiller`` configured by
    :func:`keras_structinit.selection.distill.paper_distiller`. The teacher
    (logits of the student's classes; a model or anything
    :func:`~keras_structinit.selection.load_teacher` takes) is only read:
    its ``trainable`` flag, which ``Distiller`` turns off, is restored.
    Combine with weight selection by selecting into ``student`` first.

    Returns the ``History`` (``history.model`` is the distiller; the student
    is trained in place).

    Example:

    >>> select_weights(student, teacher=teacher)
    >>> fit_distill(student, teacher, (x, y), epochs=10, validation_data=(x_val, y_val))
    """
    from keras_structinit.selection.distill import paper_distiller
    from keras_structinit.utils import validation

    alpha = validation.positive_float(alpha, "alpha")
    validation.one_of(mode, "mode", ("logits", "features"))
    if "wrap" in kwargs:
        raise TypeError("fit_distill sets `wrap` itself; call fit_cifar to pass your own.")
    teacher = load_teacher(teacher)
    trainable = teacher.trainable

    def wrap(model, loss):
        return paper_distiller(teacher, model, loss, alpha, mode, teacher_layer, student_layer)

    try:
        return fit_cifar(student, data, epochs, wrap=wrap, **kwargs)
    finally:
        teacher.trainable = trainable
