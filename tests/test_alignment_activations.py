"""Every conv and Dense layer's neuron activations (Maennel et al., App. F, Figs. 10-11) and their
course over training (Fig. 24): ``inspect``'s rows and ``callbacks.RecordSpecialization``."""

import json

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.alignment.activations import activation_targets, layer_activations
from keras_structinit.alignment.specialization import fraction_histogram
from keras_structinit.callbacks import RecordSpecialization

#: The conv and Dense layers of :func:`model`, in order, and the layer whose output is counted.
MEASURED = {
    "conv_relu": "conv_relu",
    "conv_bn": "relu",
    "depthwise": "gelu",
    "hidden": "hidden",
    "head": "head",
}


def model(seed=0):
    """Each way a conv or Dense layer meets its activation: its own ReLU, BatchNorm then ReLU,
    a GELU layer after it, a Dense ReLU, and a logits head with none."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(6, 3, padding="same", activation="relu", name="conv_relu")(inputs)
    x = keras.layers.Conv2D(5, 3, padding="same", name="conv_bn")(x)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.ReLU(name="relu")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="depthwise")(x)
    x = keras.layers.Activation("gelu", name="gelu")(x)
    x = keras.layers.MaxPooling2D(name="pool")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(12, activation="relu", name="hidden")(x)
    outputs = keras.layers.Dense(3, name="head")(x)
    return keras.Model(inputs, outputs)


def images(count=30, seed=1):
    return np.random.default_rng(seed).normal(size=(count, 8, 8, 3)).astype("float32")


def by_numpy(net, x, name):
    """The definition in NumPy: the counted layer's output above 0, per image and neuron."""
    out = keras.Model(net.input, net.get_layer(MEASURED[name]).output)(x, training=False)
    return keras.ops.convert_to_numpy(out).reshape(len(x), -1) > 0


def test_inspect_lists_every_conv_and_dense_layer_and_what_it_counts():
    net, x = model(), images()
    section = ks.inspect(net, data=x).specialization
    rows = section["layers"]
    assert [row["layer"] for row in rows] == list(MEASURED)  # pooling, flatten, BN, activations: none
    assert [row["kind"] for row in rows] == ["Conv2D", "Conv2D", "DepthwiseConv2D", "Dense", "Dense"]
    what = {row["layer"]: row["measured"] for row in rows}
    assert what["conv_relu"] == "its relu output" and what["hidden"] == "its relu output"
    assert what["conv_bn"] == "relu (ReLU)" and what["depthwise"] == "gelu (gelu)"
    assert what["head"].startswith("its output")
    assert [row["neurons"] for row in rows] == [8 * 8 * 6, 8 * 8 * 5, 8 * 8 * 5, 12, 3]
    assert {row["examples"] for row in rows} == {30}
    assert section["layer"] == "head" and section["neurons"] == 12  # the last Dense layer's inputs, kept
    markdown = ks.inspect(net, data=x).to_markdown()
    assert "## Activations of every conv and Dense layer" in markdown
    assert all(f"| {name} |" in markdown for name in MEASURED)
    assert ks.inspect(net).specialization is None  # no data, nothing measured


def test_each_layers_fractions_are_the_definitions():
    """Per neuron: the fraction of images whose value is above 0; per image: the fraction of the
    layer's neurons; ``active``: their mean; ``dead_neurons``: the neurons no image activates."""
    net, x = model(), images()
    with_batches = layer_activations(net, x, batch_size=7)  # batches of 7: the counts are summed
    report = ks.inspect(net, data=x)
    rows = {row["layer"]: row for row in report.specialization["layers"]}
    for measured in with_batches:
        name = measured.target.layer.name
        active = by_numpy(net, x, name)
        neuron, example = active.mean(axis=0), active.mean(axis=1)
        np.testing.assert_array_equal(measured.counts, active.sum(axis=0))
        np.testing.assert_allclose(measured.neuron_fractions, neuron)
        np.testing.assert_allclose(measured.example_fractions, example)
        np.testing.assert_allclose(report.arrays[f"neuron_fractions/{name}"], neuron)
        np.testing.assert_allclose(report.arrays[f"example_fractions/{name}"], example)
        row = rows[name]
        assert row["active"] == pytest.approx(active.mean())
        assert row["dead_neurons"] == pytest.approx(np.mean(~active.any(axis=0)))
        np.testing.assert_allclose(row["neuron_histogram"], fraction_histogram(neuron))
        np.testing.assert_allclose(row["example_histogram"], fraction_histogram(example))
    assert 0.0 < rows["conv_relu"]["active"] < 1.0


def test_a_chosen_layer_and_a_wrong_one():
    net = model()
    assert [t.layer.name for t in activation_targets(net, ["hidden", "conv_bn"])] == ["hidden", "conv_bn"]
    with pytest.raises(ValueError, match="neither a conv nor a Dense layer"):
        activation_targets(net, ["bn"])
    with pytest.raises(ValueError, match="not a layer of the model"):
        activation_targets(net, ["nothing"])


def test_the_callback_records_one_entry_per_epoch_per_layer():
    """Fig. 24 over two epochs: every conv and Dense layer, once per epoch, into ``history``, the
    epoch's logs (so ``History``) and, at the start, ``initial``; the last entry is the definition
    on the trained model's subset."""
    net, x = model(), images(40)
    held_out = images(50, seed=2)
    net.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    record = RecordSpecialization(held_out, num_examples=20, seed=3)
    fitted = net.fit(x, np.arange(40) % 3, epochs=2, batch_size=16, verbose=0, callbacks=[record])
    assert record.epochs == [1, 2]
    assert set(record.history) == set(record.dead) == set(record.initial) == set(MEASURED)
    assert all(len(values) == 2 for values in (*record.history.values(), *record.dead.values()))
    for name in MEASURED:
        assert fitted.history[f"activation/{name}"] == pytest.approx(record.history[name])
        assert record.history[name][-1] == pytest.approx(by_numpy(net, held_out[record.indices], name).mean())
    assert len(record.indices) == 20 and list(record.indices) == sorted(set(record.indices))


def test_the_callbacks_config_and_its_seed_fixed_subset():
    held_out = images(50, seed=2)
    record = RecordSpecialization(held_out, num_examples=20, seed=3, layers=["hidden"], add_to_logs=False)
    config = record.get_config()
    assert json.loads(json.dumps(config)) == {
        "num_examples": 20,
        "seed": 3,
        "layers": ["hidden"],
        "batch_size": 64,
        "add_to_logs": False,
    }
    again = RecordSpecialization(held_out, **config)
    np.testing.assert_array_equal(again.indices, record.indices)  # the same images every time
    other = RecordSpecialization(held_out, num_examples=20, seed=4)
    assert list(other.indices) != list(record.indices)
    assert len(RecordSpecialization(held_out, num_examples=None).indices) == 50
    net, x = model(), images(40)
    net.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    fitted = net.fit(x, np.arange(40) % 3, epochs=2, verbose=0, callbacks=[record])
    assert list(record.history) == ["hidden"] and len(record.history["hidden"]) == 2
    assert not any(key.startswith("activation/") for key in fitted.history)
    with pytest.raises(TypeError, match="list of layer names"):
        RecordSpecialization(held_out, layers="hidden")
    with pytest.raises(ValueError, match="num_examples"):
        RecordSpecialization(held_out, num_examples=0)


def test_an_lc_block_is_a_conv_and_a_model_without_a_plain_conv2d_has_no_first_layer_view():
    from keras_structinit.models import build_model

    net = build_model("lcresnet-8-4x2", 10, (8, 8, 3))
    report = ks.inspect(net, data=images(6))
    rows = report.specialization["layers"]
    assert [row["kind"] for row in rows] == ["LCConv2D"] * 7 + ["Dense"]
    assert rows[0]["measured"] == "stem_relu (relu)" and all(row["neurons"] for row in rows)
    assert report.first_layer is None  # no plain Conv2D to align with the data
