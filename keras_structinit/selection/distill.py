"""The weight-selection paper's distillation (Sec. 5.4 of Xu et al.), configured on ``keras.distillation``.

Logit distillation trains the student on

    L = L_class + alpha * KL(p_t || p_s),    p = softmax(logits), temperature 1;

feature distillation on

    L = L_class + alpha * mean |O_t - MLP(O_s)|,

with ``O`` the final features (what the classifier reads) and ``MLP`` a
projector from the student's width to the teacher's, trained with the
student and discarded after training.

Keras' ``Distiller`` minimizes ``w * L_student + (1 - w) * sum_i a_i L_i`` and
its ``LogitsDistillation`` computes ``T^2 KL(softmax(z_t / T) || softmax(z_s / T))``
(default ``T = 3``). With ``T = 1``, ``w = 1/2``, ``a = 2 alpha`` and the
student's loss doubled, the total is exactly the paper's ``L``. The logged
terms are the paper's too: ``student_loss`` is ``L_class`` and
``distillation_loss`` is ``alpha * KL`` (or ``alpha * L1``), so that
``loss = student_loss + distillation_loss``.

``p`` comes from logits. A teacher or student whose head gives probabilities (a softmax or sigmoid,
as keras.applications' default head does) is read as such (:func:`keras_structinit.engine.heads.read_head`)
and its outputs turned back into logits (``log p``: ``softmax(log p) = p``) before the KL, so the
target is the teacher's distribution, not a softmax of its probabilities (issue 64).
"""

from __future__ import annotations

import keras

from keras_structinit.engine.contract import check_model
from keras_structinit.engine.heads import read_head, to_logits
from keras_structinit.utils import validation

__all__ = ["FeatureProjector", "paper_distiller"]

MODES = ("logits", "features")


class _Doubled:
    """``2 * loss(y, y_pred)``: the student-loss half that ``Distiller``'s weight ``w = 1/2`` takes away."""

    def __init__(self, loss):
        self.loss = keras.losses.get(loss)

    def __call__(self, y_true, y_pred):
        return 2.0 * self.loss(y_true, y_pred)


class _HalfMean(keras.metrics.Mean):
    """The mean of ``values / 2``: the Distiller's terms as the paper writes them (see the module)."""

    def update_state(self, values, sample_weight=None):
        return super().update_state(keras.ops.multiply(values, 0.5), sample_weight=sample_weight)


def _log_papers_terms(distiller):
    """The Distiller logs ``2 L_class`` and ``2 alpha L_distill`` (the weights above); log the paper's."""
    distiller.student_loss_tracker = _HalfMean(name="student_loss")
    distiller.distillation_loss_tracker = _HalfMean(name="distillation_loss")
    return distiller


@keras.saving.register_keras_serializable(package="keras_structinit")
class FeatureProjector(keras.layers.Layer):
    """``MLP(o) = W_2 GELU(W_1 o + b_1) + b_2``: student features (width d_s) to the teacher's width d_t.

    Both layers are ``d_t`` wide. Example: ``FeatureProjector(384)(features_192)``.
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = validation.positive_int(units, "units")
        self.hidden = keras.layers.Dense(self.units, activation="gelu", name="hidden")
        self.out = keras.layers.Dense(self.units, name="out")

    def build(self, input_shape):
        self.hidden.build(input_shape)
        self.out.build((*input_shape[:-1], self.units))

    def call(self, inputs):
        return self.out(self.hidden(inputs))

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class _ProjectedFeatureDistillation(keras.distillation.FeatureDistillation):
    """Keras' feature distillation (L1) on ``projector(student features)``."""

    def __init__(self, projector, teacher_layer_name, student_layer_name):
        super().__init__(keras.losses.MeanAbsoluteError(), teacher_layer_name, student_layer_name)
        self.projector = projector

    def validate_outputs(self, teacher_outputs, student_outputs):
        super().validate_outputs(teacher_outputs, self.projector(student_outputs))

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        return super().compute_loss(teacher_outputs, self.projector(student_outputs))


class _HeadLogitsDistillation(keras.distillation.LogitsDistillation):
    """Keras' logit distillation on logits: a probability head's outputs (``teacher_head``,
    ``student_head``, :class:`~keras_structinit.engine.heads.Head`) are turned into logits first."""

    def __init__(self, teacher_head, student_head, **kwargs):
        super().__init__(**kwargs)
        self.teacher_head, self.student_head = teacher_head, student_head

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        return super().compute_loss(
            to_logits(teacher_outputs, self.teacher_head),
            to_logits(student_outputs, self.student_head),
            **kwargs,
        )


class _ZeroLogits(keras.layers.Layer):
    """A constant 0 of the student's logit shape: ``Distiller`` compares final output shapes, and a
    teacher used for its features alone may have another head or none."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def call(self, inputs):
        return keras.ops.zeros((keras.ops.shape(inputs)[0], self.units), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.units)


class _FirstToken(keras.layers.Layer):
    """``x[:, 0]``: the class token of a ``(B, N, d)`` sequence (a KerasHub ViT's output)."""

    def call(self, inputs):
        return inputs[:, 0]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], *input_shape[2:])


def _feature_layer(model, name):
    """The layer whose output is ``model``'s final features: ``name``, or the one feeding ``head``."""
    if name is not None:
        model.get_layer(name)  # ValueError naming the missing layer
        return name
    try:
        head = model.get_layer("head")
    except ValueError:
        return None
    return head.input._keras_history.operation.name


def _feature_teacher(teacher, layer, units):
    """``(teacher, layer name)`` for feature distillation; a teacher whose logits do not have the
    student's shape is wrapped: its features (class token of a sequence), then a constant-0 head."""
    name = _feature_layer(teacher, layer)
    features = teacher.output if name is None else teacher.get_layer(name).output
    if len(features.shape) == 3:
        features = _FirstToken(name="teacher_features")(features)
        name = "teacher_features"
    elif name is None:
        features = keras.layers.Identity(name="teacher_features")(features)
        name = "teacher_features"
    if tuple(teacher.output_shape) == (None, units) and name != "teacher_features":
        return teacher, name
    wrapped = keras.Model(
        teacher.inputs, _ZeroLogits(units, name="unused_logits")(features), name=f"{teacher.name}_features"
    )
    return wrapped, name


def paper_distiller(teacher, student, loss, alpha=1.0, mode="logits", teacher_layer=None, student_layer=None):
    """A ``keras.distillation.Distiller`` whose loss is the paper's (see the module docstring).

    Args:
        teacher: for ``"logits"``, a model producing scores of the student's
            classes: logits, or probabilities of a softmax/sigmoid head (turned into logits
            for the KL); for ``"features"``, any model of the same input (its head, if any, is
            not used).
        student: the model trained (its head read the same way).
        loss: the classification loss (a ``keras.losses.Loss`` or a name), for the student's
            outputs as they are (``fit_distill`` passes one fitted to its head).
        alpha: weight of the distillation term (the paper: 1).
        mode: ``"logits"`` (KL at temperature 1) or ``"features"`` (L1
            through a :class:`FeatureProjector`, kept on the distiller as
            ``distiller.projector``; it is not part of the student).
        teacher_layer, student_layer: for ``"features"``, the layers whose
            outputs are compared; default the layer feeding ``head`` (the
            package's models), else the teacher's output (its class token
            for a ``(B, N, d)`` sequence).

    Returns:
        ``(distiller, student_loss)``: compile the distiller with
        ``loss=student_loss``. Keras' ``Distiller`` sets
        ``teacher.trainable = False``; callers that must leave the teacher as
        they found it restore the flag after training.

    Example:

    >>> distiller, student_loss = paper_distiller(teacher, student, "categorical_crossentropy")
    >>> distiller.compile("adamw", loss=student_loss, metrics=["accuracy"])
    """
    check_model(teacher, "teacher")
    check_model(student, "student")
    alpha = validation.positive_float(alpha, "alpha")
    validation.one_of(mode, "mode", MODES)
    if mode == "features":
        return _feature_distiller(teacher, student, loss, alpha, teacher_layer, student_layer)
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
            _HeadLogitsDistillation(
                read_head(teacher), read_head(student), temperature=1.0, loss=keras.losses.KLDivergence()
            )
        ],
        distillation_loss_weights=[2.0 * alpha],
        student_loss_weight=0.5,
    )
    return _log_papers_terms(distiller), _Doubled(loss)


def _feature_distiller(teacher, student, loss, alpha, teacher_layer, student_layer):
    s_name = _feature_layer(student, student_layer)
    if s_name is None:
        raise ValueError(
            "`student_layer` is needed: the student has no layer named 'head' whose input would "
            "be its final features."
        )
    teacher, t_name = _feature_teacher(teacher, teacher_layer, student.output_shape[-1])
    t_width = teacher.get_layer(t_name).output.shape[-1]
    s_shape = student.get_layer(s_name).output.shape
    projector = FeatureProjector(t_width, name="feature_projector")
    projector.build(s_shape)
    distiller = keras.distillation.Distiller(
        teacher=teacher,
        student=student,
        distillation_losses=[_ProjectedFeatureDistillation(projector, t_name, s_name)],
        distillation_loss_weights=[2.0 * alpha],
        student_loss_weight=0.5,
    )
    distiller.projector = projector  # tracked: its weights train with the student's
    return _log_papers_terms(distiller), _Doubled(loss)
