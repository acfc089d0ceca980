"""Logit distillation: the configured Keras Distiller computes the paper's loss; fit_distill trains."""

import keras
import numpy as np
import pytest

from keras_structinit import recipes
from keras_structinit.selection.distill import paper_distiller

from conftest import to_numpy
from selection_helpers import fingerprint

pytest.importorskip("tensorflow")  # the recipes' input pipelines


def classifier(units, seed, size=8, classes=3):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((size, size, 3))
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(units, 3, activation="relu")(inputs))
    return keras.Model(inputs, keras.layers.Dense(classes, name="head")(x))


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_configured_loss_is_the_papers_formula(alpha):
    teacher, student = classifier(8, 0), classifier(4, 1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 8, 8, 3)).astype("float32")
    y = np.eye(3, dtype="float32")[[0, 1, 2, 1, 0]]
    distiller, student_loss = paper_distiller(
        teacher, student, keras.losses.CategoricalCrossentropy(from_logits=True), alpha
    )
    distiller.compile(keras.optimizers.AdamW(), loss=student_loss)
    got = float(to_numpy(distiller.compute_loss(x, y, student(x, training=False), training=False)))
    z_t, z_s = to_numpy(teacher(x)), to_numpy(student(x))
    log_p_t, log_p_s = _log_softmax(z_t), _log_softmax(z_s)
    cross_entropy = -(y * log_p_s).sum(-1).mean()
    kl = (np.exp(log_p_t) * (log_p_t - log_p_s)).sum(-1).mean()
    assert got == pytest.approx(cross_entropy + alpha * kl, rel=1e-5)
    # The logged terms are the paper's (issue 33: student_loss was 2 L_class), and add up to the loss.
    logged = {m.name: float(to_numpy(m.result())) for m in distiller.metrics}
    assert logged["student_loss"] == pytest.approx(cross_entropy, rel=1e-5)
    assert logged["distillation_loss"] == pytest.approx(alpha * kl, rel=1e-5)


def test_fit_distill_trains_the_student_and_leaves_the_teacher(tmp_path):
    teacher, student = classifier(8, 0), classifier(4, 1)
    before, trainable = fingerprint(teacher), teacher.trainable
    kernel = to_numpy(student.get_layer("head").kernel).copy()
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 256, (16, 8, 8, 3), dtype=np.uint8), np.arange(16) % 3
    history = recipes.fit_distill(
        student, teacher, (x, y), 1, batch_size=8, rand_augment=None, verbose=0, validation_data=(x, y)
    )
    assert isinstance(history.model, keras.distillation.Distiller)
    assert np.isfinite(history.history["loss"][0]) and "val_accuracy" in history.history
    assert not np.array_equal(kernel, to_numpy(student.get_layer("head").kernel))
    assert fingerprint(teacher) == before and teacher.trainable == trainable
    student.save(tmp_path / "student.keras")  # the student alone is saved: no teacher inside
    reloaded = keras.saving.load_model(tmp_path / "student.keras")
    assert len(reloaded.weights) == len(student.weights)


def test_distillation_errors():
    teacher, student = classifier(8, 0, classes=4), classifier(4, 1)
    with pytest.raises(ValueError, match="teacher's logits to have the student's shape"):
        paper_distiller(teacher, student, "categorical_crossentropy")
    data = (np.zeros((4, 8, 8, 3), np.uint8), np.arange(4) % 3)
    with pytest.raises(ValueError, match="alpha"):
        recipes.fit_distill(student, classifier(8, 0), data, 1, alpha=0.0)
    with pytest.raises(TypeError, match="wrap"):
        recipes.fit_distill(student, classifier(8, 0), data, 1, wrap=None)


def test_feature_loss_is_the_papers_formula():
    teacher, student = classifier(8, 0, classes=4), classifier(4, 1)  # another head: features only
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 8, 8, 3)).astype("float32")
    y = np.eye(3, dtype="float32")[[0, 1, 2, 1, 0]]
    distiller, student_loss = paper_distiller(
        teacher, student, keras.losses.CategoricalCrossentropy(from_logits=True), 0.7, mode="features"
    )
    distiller.compile(keras.optimizers.AdamW(), loss=student_loss)
    projector = distiller.projector
    for v in projector.weights:  # nonzero biases too
        v.assign(rng.standard_normal(tuple(v.shape)).astype("float32") * 0.5)
    got = float(to_numpy(distiller.compute_loss(x, y, student(x, training=False), training=False)))

    def features(model):
        return to_numpy(keras.Model(model.inputs, model.get_layer("head").input)(x))

    o_t, o_s = features(teacher), features(student)
    w1, b1, w2, b2 = (
        to_numpy(v)
        for v in (projector.hidden.kernel, projector.hidden.bias, projector.out.kernel, projector.out.bias)
    )
    h = o_s @ w1 + b1
    gelu = 0.5 * h * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2)))
    projected = gelu @ w2 + b2
    cross_entropy = -(y * _log_softmax(to_numpy(student(x)))).sum(-1).mean()
    assert got == pytest.approx(cross_entropy + 0.7 * np.abs(o_t - projected).mean(), rel=1e-4)


def test_fit_distill_features_from_a_headless_keras_hub_teacher(tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    import keras_structinit as ks

    teacher = keras_hub.models.ViTBackbone(
        image_shape=(8, 8, 3), patch_size=4, num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32
    )
    before = fingerprint(teacher)
    student = ks.models.vit(4, 8, 1, 2, num_classes=3, input_shape=(8, 8, 3))
    n_student = len(student.weights)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 256, (16, 8, 8, 3), dtype=np.uint8), np.arange(16) % 3
    history = recipes.fit_distill(
        student, teacher, (x, y), 1, mode="features", batch_size=8, rand_augment=None, verbose=0
    )
    projector = history.model.projector
    assert projector.units == 16
    assert history.model.distillation_losses[0].teacher_layer_name == "teacher_features"
    trained = {id(v) for v in history.model.trainable_variables}
    assert all(id(v) in trained for v in projector.trainable_weights)  # trained with the student
    assert np.isfinite(history.history["loss"][0])
    assert fingerprint(teacher) == before
    assert len(student.weights) == n_student  # the projector lives on the distiller
    student.save(tmp_path / "student.keras")
    assert len(keras.saving.load_model(tmp_path / "student.keras").weights) == n_student
    with pytest.raises(ValueError, match="mode"):
        recipes.fit_distill(student, teacher, (x, y), 1, mode="hidden")
