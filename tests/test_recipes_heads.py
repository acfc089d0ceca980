"""Issue 64: a model whose head gives probabilities (softmax, sigmoid) is trained and distilled as such.

Read as logits, a 3-class softmax head's cross-entropy cannot fall below -log(e / (e + 2)) = 0.551.
"""

import json
import zipfile

import keras
import numpy as np
import pytest

from keras_structinit import cli
from keras_structinit.engine.heads import Head, loss_for_head, read_head, to_logits
from keras_structinit.models.spec import fit_head as _fitted
from keras_structinit.recipes.run import _Names
from keras_structinit.selection.distill import paper_distiller

from conftest import to_numpy

pytest.importorskip("PIL")

COLOURS = ((200, 40, 40), (40, 200, 40), (40, 40, 200))


def colour_folder(root, per_class=30):
    """An easy 3-class ImageFolder: 32x32 PNGs whose class is their colour (with noise)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for c, colour in enumerate(COLOURS):
        (root / f"class_{c}").mkdir(parents=True)
        for i in range(per_class):
            image = np.clip(np.array(colour) + rng.integers(-40, 41, (32, 32, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(image).save(root / f"class_{c}" / f"{i}.png")
    return str(root)


def small_cnn(activation, seed=0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(3, activation=activation, name="head")(x))


def _ends_in(out_fn, inputs_shape=(4,)):
    inputs = keras.Input(inputs_shape)
    return keras.Model(inputs, out_fn(inputs))


def test_read_head_finds_the_final_activation_through_the_graph():
    dense = keras.layers.Dense
    cases = {
        "softmax": _ends_in(lambda x: dense(3, activation="softmax", name="p")(x)),
        "linear": _ends_in(lambda x: dense(3, name="p")(x)),
        "sigmoid": _ends_in(lambda x: keras.layers.Activation("sigmoid", name="p")(dense(3)(x))),
    }
    assert {k: (h.activation, h.layer) for k, h in ((k, read_head(m)) for k, m in cases.items())} == {
        k: (k, "p") for k in cases
    }
    softmax_layer = _ends_in(lambda x: keras.layers.Dropout(0.1)(keras.layers.Softmax(name="s")(dense(3)(x))))
    assert read_head(softmax_layer) == Head("softmax", "s")
    assert read_head(_ends_in(lambda x: keras.ops.softmax(dense(3)(x)))).activation == "softmax"
    log_softmax = _ends_in(lambda x: keras.layers.Activation("log_softmax")(dense(3)(x)))
    assert read_head(log_softmax).outputs == "logits"  # log-probabilities are logits
    inner = keras.Sequential(
        [keras.Input((4,)), dense(3), keras.layers.Activation("linear"), keras.layers.Softmax(name="inner")]
    )
    assert read_head(_ends_in(inner)) == Head("softmax", "inner")  # a nested model's head
    mobilenet = keras.applications.MobileNetV3Small(weights=None, input_shape=(32, 32, 3), classes=3)
    assert read_head(mobilenet) == Head("softmax", "predictions")  # Conv, Flatten, Activation

    class Subclassed(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = dense(3, activation="softmax")

        def call(self, x):
            return self.dense(x)

    subclassed = Subclassed()
    subclassed(np.ones((1, 4), "float32"))
    assert read_head(subclassed) == Head("unknown") and read_head(subclassed).outputs == "logits"
    with pytest.raises(TypeError, match="`model` must be a keras.Model"):
        read_head("model.keras")


def test_the_loss_and_the_logits_follow_the_head():
    ce = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    on_probabilities = loss_for_head(ce, Head("softmax", "p"))
    assert on_probabilities.get_config() == {**ce.get_config(), "from_logits": False}
    assert loss_for_head(ce, Head("linear")) is ce and loss_for_head("mse", Head("softmax")) == "mse"
    z = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0]], "float32")
    p = to_numpy(keras.ops.softmax(z))
    np.testing.assert_allclose(to_numpy(keras.ops.softmax(to_logits(p, Head("softmax")))), p, rtol=1e-5)
    np.testing.assert_allclose(
        to_numpy(to_logits(to_numpy(keras.ops.sigmoid(z)), Head("sigmoid"))), z, rtol=1e-4, atol=1e-4
    )
    assert to_logits(z, Head("linear")) is z


def _train(model, data, out, capsys):
    path = out.parent / f"{out.name}.keras"
    model.save(path)
    argv = [
        "train",
        "--model",
        str(path),
        "--data",
        data,
        "--epochs",
        "3",
        "--batch-size",
        "8",
        "--rand-augment",
        "none",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    return results, capsys.readouterr().out


def test_a_softmax_head_and_a_linear_head_train_to_the_same_low_loss(tmp_path, capsys):
    """Acceptance 1: the same CNN saved with either head, the same recipe, an easy 3-class folder:
    the final training loss is below 0.5 with either (a softmax read as logits stayed above 0.551)."""
    data = colour_folder(tmp_path / "colours")
    softmax, printed = _train(small_cnn("softmax"), data, tmp_path / "softmax", capsys)
    linear, quiet = _train(small_cnn(None), data, tmp_path / "linear", capsys)
    assert softmax["head"] == {"outputs": "probabilities", "activation": "softmax", "layer": "head"}
    assert linear["head"] == {"outputs": "logits", "activation": "linear", "layer": "head"}
    line = [ln for ln in printed.splitlines() if ln.startswith("Head:")]
    assert line == [
        "Head: 'head' ends in softmax: its outputs are probabilities, so the loss takes them as "
        "probabilities (from_logits=False), not as logits"
    ], printed
    assert "Head:" not in quiet
    losses = softmax["metrics"]["loss"][-1], linear["metrics"]["loss"][-1]
    assert max(losses) < 0.5, losses
    assert losses[0] == pytest.approx(losses[1], abs=0.02)  # one model, one loss: the head's form aside
    with zipfile.ZipFile(tmp_path / "softmax" / "model.keras") as archive:  # the saved model is as given
        config = json.loads(archive.read("config.json"))
    assert config["compile_config"]["loss"]["config"]["from_logits"] is False
    assert (
        keras.saving.load_model(tmp_path / "softmax" / "model.keras")
        .get_layer("head")
        .get_config()["activation"]
        == "softmax"
    )


def test_mobilenet_v3_small_with_its_softmax_head_trains_through_structinit_train(tmp_path, capsys):
    """Acceptance 2: keras.applications' default head (classifier_activation="softmax") is read and
    trained on probabilities through ``structinit train --model``."""
    data = colour_folder(tmp_path / "colours", per_class=8)
    model = keras.applications.MobileNetV3Small(weights=None, input_shape=(32, 32, 3), classes=3)
    model.save(tmp_path / "mobilenet.keras")
    argv = [
        "train",
        "--model",
        str(tmp_path / "mobilenet.keras"),
        "--data",
        data,
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--rand-augment",
        "none",
        "--out",
        str(tmp_path / "run"),
    ]
    assert cli.main(argv) == 0
    assert "Head: 'predictions' ends in softmax" in capsys.readouterr().out
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["head"]["outputs"] == "probabilities" and np.isfinite(results["metrics"]["loss"][0])
    with zipfile.ZipFile(tmp_path / "run" / "model.keras") as archive:
        loss = json.loads(archive.read("config.json"))["compile_config"]["loss"]["config"]
    assert loss["from_logits"] is False


def test_new_head_is_linear_and_says_what_it_replaced():
    inputs = keras.Input((32, 32, 3))
    features = keras.layers.GlobalAveragePooling2D()(inputs)
    names = _Names({"new_head": "--new-head", "model": "--model"})
    dense = keras.layers.Dense
    for model, dropped in [
        (keras.Model(inputs, dense(10, activation="softmax", name="p")(features)), "its softmax"),
        (
            keras.Model(inputs, keras.layers.Softmax(name="s")(dense(10, name="p")(features))),
            "the softmax layer 's' after it",
        ),
        (keras.Model(inputs, dense(10, name="p")(features)), None),
    ]:
        fitted, note = _fitted(model, "m.keras", 3, (32, 32, 3), True, names)
        assert fitted.output_shape == (None, 3) and read_head(fitted) == Head("linear", "p_3")
        assert note.startswith(
            "New head: Dense 'p_3' of 3 outputs, linear: it gives logits, in place of 'p' (10 outputs"
        )
        assert (f"; {dropped} not kept)" in note) if dropped else note.endswith("(10 outputs)")
    flat = keras.layers.Flatten()(keras.layers.Conv2D(10, 32)(inputs))
    conv = keras.Model(inputs, keras.layers.Softmax()(flat))
    with pytest.raises(
        ValueError,
        match=r"--new-head replaces a last Dense layer .* ends in a "
        r"Flatten then a Softmax$",
    ) as info:
        _fitted(conv, "m.keras", 3, (32, 32, 3), True, names)
    assert "\n" not in str(info.value)


def _with_softmax(model):
    return keras.Model(model.inputs[0], keras.layers.Softmax(name="probabilities")(model.outputs[0]))


@pytest.mark.parametrize("heads", ["teacher", "both"])
def test_distillation_targets_from_a_softmax_head_are_its_distribution(heads):
    """The KL term reads probabilities as probabilities: the same loss as from the logits under them."""

    def classifier(seed):
        keras.utils.set_random_seed(seed)
        inputs = keras.Input((8, 8, 3))
        x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3, activation="relu")(inputs))
        return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))

    teacher, student = classifier(0), classifier(1)
    x = np.random.default_rng(0).standard_normal((5, 8, 8, 3)).astype("float32")
    y = np.eye(3, dtype="float32")[[0, 1, 2, 1, 0]]

    def loss(t, s, from_logits):
        distiller, student_loss = paper_distiller(
            t, s, keras.losses.CategoricalCrossentropy(from_logits=from_logits), 0.5
        )
        distiller.compile(keras.optimizers.AdamW(), loss=student_loss)
        return float(to_numpy(distiller.compute_loss(x, y, s(x, training=False), training=False)))

    want = loss(teacher, student, True)
    got = (
        loss(_with_softmax(teacher), student, True)
        if heads == "teacher"
        else loss(_with_softmax(teacher), _with_softmax(student), False)
    )
    assert got == pytest.approx(want, rel=1e-4)


# ------------------------------------------------------------ backbones train (issue 77, point 2)


def _deit():
    keras_hub = pytest.importorskip("keras_hub")
    keras.utils.set_random_seed(0)
    return keras_hub.models.DeiTBackbone(
        image_shape=(32, 32, 3), patch_size=8, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16
    )


def test_a_token_backbone_gets_its_class_token_and_a_dense_head(tmp_path):
    """DeiT leads with a class and a distillation token: the new head reads the first, as KerasHub's
    classifier does; a ViT without a class token averages its tokens; the model saves and reloads."""
    names = _Names({"new_head": "--new-head", "model": "--model"})
    backbone = _deit()
    with pytest.raises(
        ValueError, match=r"--model 'deit' is a backbone: it ends in a token sequence of shape "
    ):
        _fitted(backbone, "deit", 3, (32, 32, 3), False, names)
    model, note = _fitted(backbone, "deit", 3, (32, 32, 3), True, names)
    assert model.output_shape == (None, 3) and note.startswith("New head: its class token")
    x = np.random.default_rng(0).standard_normal((2, 32, 32, 3)).astype("float32")
    head = model.get_layer("head_3")
    want = to_numpy(backbone(x))[:, 0] @ to_numpy(head.kernel) + to_numpy(head.bias)
    np.testing.assert_allclose(to_numpy(model(x)), want, rtol=1e-5, atol=1e-5)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, np.array([0, 2]), epochs=1, verbose=0)  # it trains (DeiT cannot be saved:
    assert np.isfinite(history.history["loss"][0])  # KerasHub's DeiTEncoder.get_config fails, key_dim)
    keras_hub = pytest.importorskip("keras_hub")
    vit = keras_hub.models.ViTBackbone(
        image_shape=(32, 32, 3),
        patch_size=8,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        mlp_dim=16,
        use_class_token=False,
    )
    averaged, note = _fitted(vit, "vit", 3, (32, 32, 3), True, names)
    assert note.startswith("New head: the average of its tokens")
    head = averaged.get_layer("head_3")
    want = to_numpy(vit(x)).mean(axis=1) @ to_numpy(head.kernel) + to_numpy(head.bias)
    np.testing.assert_allclose(to_numpy(averaged(x)), want, rtol=1e-5, atol=1e-5)
    token_vit = keras_hub.models.ViTBackbone(
        image_shape=(32, 32, 3), patch_size=8, num_layers=1, num_heads=2, hidden_dim=8, mlp_dim=16
    )
    pooled, note = _fitted(token_vit, "vit", 3, (32, 32, 3), True, names)
    assert note.startswith("New head: its class token")
    pooled.save(tmp_path / "m.keras")  # the head's layers are Keras' own: the model reloads as it was
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(to_numpy(reloaded(x)), to_numpy(pooled(x)), rtol=1e-5, atol=1e-6)


def test_a_feature_map_backbone_gets_global_average_pooling():
    names = _Names({"new_head": "--new-head", "model": "--model"})
    backbone = keras.applications.ResNet50(weights=None, include_top=False, input_shape=(32, 32, 3))
    model, note = _fitted(backbone, "resnet", 4, (32, 32, 3), True, names)
    assert model.output_shape == (None, 4) and note.startswith("New head: global average pooling")
    assert "ending in a feature map of shape (1, 1, 2048)" in note


def test_structinit_train_trains_a_vit_backbone_with_a_new_head(tmp_path, capsys):
    """Issue 77's point 2 through the command line: a KerasHub ViT backbone (class token) saved as
    ``.keras`` trains with ``--new-head``. (A DeiT backbone cannot be saved with this KerasHub:
    its ``DeiTEncoder.get_config`` reads a ``key_dim`` it never sets; it trains in Python, above.)"""
    keras_hub = pytest.importorskip("keras_hub")
    from test_cli import write_tiny_cifar

    path = tmp_path / "vit.keras"
    keras.utils.set_random_seed(0)
    keras_hub.models.ViTBackbone(
        image_shape=(32, 32, 3), patch_size=8, num_layers=1, num_heads=2, hidden_dim=8, mlp_dim=16
    ).save(path)
    data = write_tiny_cifar(tmp_path / "train.npz", 40, 0)
    argv = ["train", "--model", str(path), "--new-head", "--epochs", "1", "--batch-size", "20"]
    assert cli.main([*argv, "--data", data, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "New head: its class token" in out
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "class token" in json.dumps(results)  # the new head is recorded with the run
