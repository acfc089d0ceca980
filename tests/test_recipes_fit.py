"""fit_cifar / fit_imagenet smoke runs: steps, eval_data reporting, precision, distribution."""

import dataclasses
import os
import textwrap

import keras
import numpy as np
import pytest

from keras_structinit import recipes
from keras_structinit.recipes.data import channel_stats
from keras_structinit.recipes.devices import accelerator, jax_cpu_only

from conftest import REPO_ROOT, run_fresh_python

pytest.importorskip("tensorflow")


def tiny_model(num_classes=3, size=8):
    inputs = keras.Input((size, size, 3))
    x = keras.layers.Conv2D(4, 3, padding="same", activation="relu", name="conv")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes, name="head")(x))


def tiny_data(n=24, size=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8), np.arange(n) % 3


def test_fit_cifar_takes_a_config_and_keyword_overrides_alike():
    x, y = tiny_data(16)
    config = recipes.RecipeConfig("cifar10", epochs=1, batch_size=8, rand_augment=None, seed=3)
    by_config = recipes.fit_cifar(tiny_model(), (x, y), config=config, verbose=0)
    by_keywords = recipes.fit_cifar(
        tiny_model(), (x, y), 1, batch_size=8, rand_augment=None, seed=3, verbose=0
    )
    assert by_config.config == by_keywords.config == config
    assert by_config.config.resolved()["schedule"] == "triangular"  # a default, filled in
    assert set(by_config.history) == set(by_keywords.history) and np.isfinite(by_config.history["loss"]).all()
    with pytest.raises(TypeError, match=r"unexpected recipe option\(s\) \['lr'\]"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, lr=0.1)


def write_image_folder(root, x, y):
    from PIL import Image

    for i, (image, label) in enumerate(zip(x, y, strict=True)):
        os.makedirs(root / f"class_{label}", exist_ok=True)
        Image.fromarray(image).save(root / f"class_{label}" / f"{i:03d}.png")  # lossless
    return str(root)


def test_fit_cifar_two_steps_from_an_image_folder_and_eval_data_report(tmp_path, capsys):
    x0, y0 = tiny_data(n=30)
    (x, y), (vx, vy) = recipes.load_cifar_data(
        write_image_folder(tmp_path / "train", x0, y0), validation_split=0.2, seed=0
    )
    assert len(x) == 24 and len(vx) == 6 and sorted(set(vy.tolist())) == [0, 1, 2]
    for image, label in zip(x, y, strict=True):  # decoded pixels and labels are the ones written
        assert any(np.array_equal(image, a) and label == b for a, b in zip(x0, y0, strict=True))
    ex, ey = tiny_data(n=9, seed=1)
    np.savez(tmp_path / "eval.npz", x=ex, y=ey)
    model = tiny_model()
    before = keras.ops.convert_to_numpy(model.get_layer("conv").kernel).copy()
    history = recipes.fit_cifar(
        model,
        (x, y),
        epochs=1,
        batch_size=8,
        steps_per_epoch=2,
        validation_data=(ex, ey),
        eval_data=str(tmp_path / "eval.npz"),
        rand_augment=None,
        verbose=0,
    )
    assert len(history.history["loss"]) == 1 and np.isfinite(history.history["loss"][0])
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    assert not np.array_equal(before, keras.ops.convert_to_numpy(model.get_layer("conv").kernel))
    # The reported eval accuracy is the model's accuracy on the normalized eval set.
    mean, std = channel_stats(x)
    logits = model.predict((ex / 255.0 - mean) / std, verbose=0)
    assert history.eval_results["accuracy"] == pytest.approx(np.mean(logits.argmax(-1) == ey))
    assert "eval_data: accuracy" in capsys.readouterr().out
    assert history.normalization["mean"] == pytest.approx(list(mean))


def test_fit_cifar_mixed_bfloat16_builder():
    x, y = tiny_data()
    history = recipes.fit_cifar(
        tiny_model,
        (x, y),
        epochs=1,
        batch_size=8,
        steps_per_epoch=2,
        precision="mixed_bfloat16",
        rand_augment=(1, 0.3),
        verbose=0,
    )
    model = history.model
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert model.get_layer("conv").compute_dtype == "bfloat16"
    assert model.get_layer("conv").kernel.dtype == "float32"
    assert np.isfinite(history.history["loss"][0])
    assert keras.config.dtype_policy().name == "float32"  # restored after the run


def test_fit_cifar_rejects_mismatched_set_up():
    x, y = tiny_data()
    with pytest.raises(ValueError, match="dtype policy"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, batch_size=8, precision="mixed_bfloat16", verbose=0)
    with pytest.raises(ValueError, match="builder"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, batch_size=8, distribution="auto", verbose=0)
    with pytest.raises(TypeError, match="data"):
        recipes.fit_cifar(tiny_model(), x, 1)
    with pytest.raises(ValueError, match="schedule"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, schedule="exponential")
    with pytest.raises(ValueError, match="epochs"):
        recipes.fit_cifar(tiny_model(), (x, y), 0, batch_size=8, verbose=0)
    with pytest.raises(ValueError, match="ema"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, ema=1.5, verbose=0)
    with pytest.raises(ValueError, match="num_classes"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, num_classes=2, rand_augment=None, verbose=0)


def test_fit_cifar_cosine_warmup_epochs():
    x, y = tiny_data(n=16)
    seen = []

    class RecordRate(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    recipes.fit_cifar(
        tiny_model(),
        (x, y),
        epochs=2,
        batch_size=8,
        learning_rate=0.1,
        schedule="cosine",
        warmup_epochs=1,
        rand_augment=None,
        callbacks=[RecordRate()],
        verbose=0,
    )
    # 2 steps of warmup 0 -> 0.1, then cosine over the last 2 steps.
    np.testing.assert_allclose(seen, [0.0, 0.05, 0.1, 0.05], atol=1e-6)
    with pytest.raises(ValueError, match="warmup_epochs"):
        recipes.fit_cifar(tiny_model(), (x, y), 2, batch_size=8, schedule="cosine", warmup_epochs=2)
    with pytest.raises(ValueError, match="schedule='cosine'"):
        recipes.fit_cifar(tiny_model(), (x, y), 2, batch_size=8, warmup_epochs=1)
    with pytest.raises(TypeError, match="warmup_epochs"):
        recipes.fit_cifar(tiny_model(), (x, y), 2, batch_size=8, schedule="cosine", warmup_epochs="1")


def test_fit_cifar_with_the_random_labels_papers_recipe(monkeypatch):
    from keras_structinit.recipes import cifar

    pipelines = []
    build = cifar.cifar_dataset
    monkeypatch.setattr(cifar, "cifar_dataset", lambda *a, **k: pipelines.append(k) or build(*a, **k))
    x, y = tiny_data(n=24)
    seen = []

    class RecordRate(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    model = tiny_model()
    history = recipes.fit_cifar(
        model,
        (x, y),
        epochs=3,
        batch_size=8,
        learning_rate=0.09,
        weight_decay=0.0,
        optimizer="sgd_momentum",
        schedule="step",
        rand_augment=None,
        pad=0,
        flip=False,
        normalization="symmetric",
        validation_data=(x, y),
        callbacks=[RecordRate()],
        verbose=0,
    )
    # 9 steps: 0.09, divided by 3 after step 3 and after step 6.
    np.testing.assert_allclose(seen, [0.09] * 4 + [0.03] * 3 + [0.01] * 2, rtol=1e-6)
    assert isinstance(model.optimizer, recipes.TorchSGD) and not model.optimizer.nesterov
    assert history.normalization == {"mean": [0.5] * 3, "std": [0.5] * 3}
    assert all(k["flip"] is False and k["pad"] == 0 for k in pipelines)
    logits = model.predict(x / 127.5 - 1.0, verbose=0)  # inputs in [-1, 1]
    assert history.history["val_accuracy"][-1] == pytest.approx(np.mean(logits.argmax(-1) == y))
    with pytest.raises(ValueError, match="`normalization` must be one of"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, normalization="zca", verbose=0)
    with pytest.raises(TypeError, match="flip"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, flip=1, verbose=0)


@pytest.mark.parametrize("pipeline", ["native", "tf"])
def test_fit_cifar_with_random_labels_and_the_selection_papers_mixing(monkeypatch, pipeline):
    """App. A.1's random labels reach the training stream only; Table 13's mixing trains."""
    from keras_structinit.recipes import cifar, native

    streams = []
    if pipeline == "tf":
        build = cifar.cifar_dataset
        monkeypatch.setattr(
            cifar, "cifar_dataset", lambda *a, **k: streams.append((a[1], k)) or build(*a, **k)
        )
    else:
        stream_class = native.ArrayStream

        def spy(x, y, *args, **kwargs):
            augmentation = kwargs["augmentation"]
            streams.append((y, augmentation and dataclasses.asdict(augmentation)))
            return stream_class(x, y, *args, **kwargs)

        monkeypatch.setattr(native, "ArrayStream", spy)
    x, y = tiny_data(n=24)
    history = recipes.fit_cifar(
        tiny_model(),
        (x, y),
        1,
        batch_size=8,
        random_labels=1.0,
        mixup_alpha=0.8,
        cutmix_alpha=1.0,
        random_erasing=0.25,
        validation_data=(x, y),
        verbose=0,
        pipeline=pipeline,
    )
    (trained_on, options), (validated_on, _) = streams
    np.testing.assert_array_equal(trained_on.argmax(-1), cifar.random_labels(y, 1.0, 3, seed=0))
    np.testing.assert_array_equal(validated_on.argmax(-1), y)  # held-out labels stay true
    assert (options["mixup_alpha"], options["cutmix_alpha"], options["random_erasing"]) == (0.8, 1.0, 0.25)
    assert np.isfinite(history.history["loss"]).all()
    assert history.config.random_labels == 1.0


def test_fit_cifar_random_classes_label_every_set_from_those_classes(monkeypatch):
    """App. A.1 step 3: upstream labels from num_classes_upstream random classes, a head that wide."""
    from keras_structinit.recipes import native

    streams = []
    stream_class = native.ArrayStream
    monkeypatch.setattr(
        native, "ArrayStream", lambda x, y, *a, **k: streams.append(y) or stream_class(x, y, *a, **k)
    )
    x, y = tiny_data(n=24)
    y = np.arange(24) % 6  # 6 true classes, 2 random ones
    history = recipes.fit_cifar(
        tiny_model(num_classes=2),
        (x, y),
        1,
        batch_size=8,
        random_labels=1.0,
        random_classes=2,
        validation_data=(x, y),
        verbose=0,
        pipeline="native",
    )
    trained_on, validated_on = streams
    assert trained_on.shape == validated_on.shape == (24, 2)
    np.testing.assert_array_equal(trained_on.argmax(-1), recipes.cifar.random_labels(y, 1.0, 2, seed=0))
    np.testing.assert_array_equal(validated_on.argmax(-1), recipes.cifar.random_labels(y, 1.0, 2, seed=1))
    assert history.config.random_classes == 2
    with pytest.raises(ValueError, match="`random_classes` .* needs random_labels=1"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, random_classes=2)
    with pytest.raises(ValueError, match="random_classes"):
        recipes.RecipeConfig("cifar10", random_labels=1.0, random_classes=1)
    with pytest.raises(TypeError, match="random_classes"):
        recipes.RecipeConfig("cifar10", random_labels=1.0, random_classes=2.0)
    with pytest.raises(ValueError, match="`random_classes` apply to the CIFAR recipes"):
        recipes.RecipeConfig("imagenet", random_classes=2)


def test_fit_imagenet_on_a_tiny_image_folder(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        for c in ("a", "b", "c"):
            os.makedirs(tmp_path / split / c)
            for i in range(4):
                h, w = rng.integers(16, 30, 2)
                Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(
                    tmp_path / split / c / f"{i}.jpg"
                )
    history = recipes.fit_imagenet(
        lambda: tiny_model(3, 12),
        str(tmp_path / "train"),
        epochs=1,
        image_size=12,
        batch_size=4,
        steps_per_epoch=2,
        eval_data=str(tmp_path / "val"),
        verbose=0,
    )
    assert int(keras.ops.convert_to_numpy(history.model.optimizer.iterations)) == 2
    assert np.isfinite(history.history["loss"][0])
    assert 0.0 <= history.eval_results["accuracy"] <= 1.0
    with pytest.raises(ValueError, match="loss"):
        recipes.fit_imagenet(tiny_model, str(tmp_path / "train"), 1, loss="hinge")


def test_precision_and_distribution_resolution():
    assert recipes.resolve_precision(None) == "float32"
    assert recipes.resolve_precision("auto") == "mixed_bfloat16"  # no GPU on the test machine
    with pytest.raises(ValueError, match="precision"):
        recipes.resolve_precision("fp8")
    with pytest.raises(ValueError, match="distribution"):
        recipes.resolve_distribution("ring")
    with pytest.raises(TypeError, match="distribution"):
        recipes.resolve_distribution(3)
    backend = keras.backend.backend()
    if backend == "torch":
        with pytest.raises(ValueError, match="torch"):
            recipes.resolve_distribution("auto")
    elif backend == "jax":
        with pytest.raises(ValueError, match="TensorFlow"):
            recipes.resolve_distribution("mirrored")
    else:
        with pytest.raises(ValueError, match="JAX"):
            recipes.resolve_distribution("data_parallel")


def test_precision_of_a_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"`precision` must be None or one of .*precision=16 of type int"):
        recipes.resolve_precision(16)


def test_mixed_float16_on_jax_cpu_only_is_refused_and_never_picked():
    # XLA's CPU dot_general has no float16 x float16 -> float32 kernel: a ViT step failed with
    # "The precision 'F16_F16_F32' is not supported by dot_general on CPU".
    if not jax_cpu_only():  # the rule is JAX's: elsewhere an explicit mixed_float16 is kept
        assert recipes.resolve_precision("mixed_float16") == "mixed_float16"
        expected = "mixed_float16" if accelerator() == "gpu" else "mixed_bfloat16"
        assert recipes.resolve_precision("auto") == expected
        return
    assert recipes.resolve_precision("auto") == "mixed_bfloat16"
    with pytest.raises(
        ValueError,
        match=r"`precision` cannot be 'mixed_float16' on JAX with CPU devices "
        r"only: XLA's CPU dot_general has no float16 x float16 -> float32 kernel.*"
        r"use 'mixed_bfloat16' or 'float32'",
    ):
        recipes.resolve_precision("mixed_float16")
    with pytest.raises(ValueError, match="`precision`"):
        with recipes.device_setup("mixed_float16"):
            pass
    assert keras.config.dtype_policy().name == "float32"
    assert recipes.resolve_precision("mixed_bfloat16") == "mixed_bfloat16"


def test_an_unknown_distribution_name_is_named_before_the_model_is_checked():
    x, y = tiny_data()
    with pytest.raises(ValueError, match="`distribution` must be one of"):
        recipes.fit_cifar(tiny_model(), (x, y), 1, distribution="ring")


@pytest.mark.parametrize(
    "option, error",
    [
        ({"learning_rate": -1.0}, ValueError),
        ({"weight_decay": -0.1}, ValueError),
        ({"label_smoothing": 2.0}, ValueError),
        ({"pad": -1}, ValueError),
        ({"pad": 1.5}, TypeError),
        ({"steps_per_epoch": 0}, ValueError),
        ({"callbacks": 3}, TypeError),
    ],
)
def test_fit_cifar_options_are_checked_before_training(option, error):
    # Each was accepted (weight_decay, label_smoothing, steps_per_epoch=0), failed inside tf.data (pad),
    # named another argument (learning_rate: peak_learning_rate) or no argument (callbacks).
    x, y = tiny_data()
    name = next(iter(option))
    with pytest.raises(error, match=f"`{name}`"):
        recipes.fit_cifar(tiny_model, (x, y), 1, rand_augment=None, verbose=0, **option)


def test_fit_cifar_refuses_empty_data():
    x, y = tiny_data()
    with pytest.raises(ValueError, match="`data` holds no images .*: it needs at least one labelled image"):
        recipes.fit_cifar(tiny_model, (x[:0], y[:0]), 1)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.distribute is TensorFlow's")
def test_mirrored_strategy_trains_two_steps():
    import tensorflow as tf

    x, y = tiny_data()
    history = recipes.fit_cifar(
        tiny_model,
        (x, y),
        1,
        batch_size=8,
        steps_per_epoch=2,
        distribution="mirrored",
        rand_augment=None,
        verbose=0,
    )
    assert isinstance(history.model.get_layer("conv").kernel.value, tf.distribute.DistributedValues)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="keras.distribution runs on JAX")
def test_jax_data_parallel_on_two_host_devices(tmp_path):
    code = textwrap.dedent(
        """
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import jax, keras, numpy as np
        from keras_structinit import recipes
        assert len(jax.devices()) == 2, jax.devices()

        def build():
            inputs = keras.Input((8, 8, 3))
            x = keras.layers.Conv2D(4, 3, padding="same", name="conv")(inputs)
            x = keras.layers.GlobalAveragePooling2D()(x)
            return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))

        rng = np.random.default_rng(0)
        x = rng.integers(0, 256, (16, 8, 8, 3), dtype=np.uint8)
        y = np.arange(16) % 3
        h = recipes.fit_cifar(build, (x, y), 1, batch_size=8, steps_per_epoch=2,
                              distribution="data_parallel", rand_augment=None, verbose=0)
        assert int(h.model.optimizer.iterations.value) == 2
        assert np.isfinite(h.history["loss"][0])
        for v in h.model.weights:
            sharding = v.value.sharding
            assert len(sharding.device_set) == 2, (v.path, sharding)
            assert sharding.is_fully_replicated, (v.path, sharding)
        dist = keras.distribution.distribution()
        assert dist is None  # restored after the run
        layout = recipes.resolve_distribution("data_parallel").get_data_layout((8, 8, 8, 3))
        assert layout.axes[0] == "batch"
        print("OK")
        """
    )
    env_backup = os.environ.get("KERAS_BACKEND")
    assert env_backup in (None, "jax") or keras.backend.backend() == "jax"
    assert "OK" in run_fresh_python(code, cwd=str(REPO_ROOT))


def test_fit_cifar_mixed_float16_uses_loss_scaling():
    x, y = tiny_data()
    if jax_cpu_only():  # refused up front there, before any data pipeline is built
        with pytest.raises(ValueError, match="`precision` cannot be 'mixed_float16' on JAX with CPU devices"):
            recipes.fit_cifar(tiny_model, (x, y), epochs=1, batch_size=8, precision="mixed_float16")
        return
    history = recipes.fit_cifar(
        tiny_model,
        (x, y),
        epochs=1,
        batch_size=8,
        steps_per_epoch=2,
        precision="mixed_float16",
        rand_augment=None,
        verbose=0,
    )
    assert isinstance(history.model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert history.model.get_layer("conv").compute_dtype == "float16"
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.parametrize("ema", [False, True])
def test_ema_weights_replace_the_trained_ones(ema):
    x, y = tiny_data()
    keras.utils.set_random_seed(0)
    model = tiny_model()
    before = keras.ops.convert_to_numpy(model.get_layer("head").kernel).copy()
    recipes.fit_cifar(
        model, (x, y), 1, batch_size=8, steps_per_epoch=2, rand_augment=None, ema=ema, verbose=0
    )
    moved = np.abs(keras.ops.convert_to_numpy(model.get_layer("head").kernel) - before).max()
    # Adam moves each weight by ~lr (~0.0075 at the second step); with momentum 0.9999 the
    # average of the two iterates has moved by ~1e-4 of that.
    if ema:
        assert moved < 1e-5
    else:
        assert moved > 1e-3
