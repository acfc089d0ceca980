"""SelectWeightsFrom: selection at the start of fit, and refusal on a trained student."""

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.callbacks import SelectWeightsFrom

from conftest import to_numpy


def convmixer(dim):
    return ks.models.convmixer(dim, 2, kernel_size=3, patch_size=2, num_classes=3, input_shape=(8, 8, 3))


def test_selects_when_training_starts_and_refuses_a_trained_student(tmp_path):
    teacher = convmixer(16)
    rng = np.random.default_rng(0)
    for v in teacher.weights:
        v.assign(rng.standard_normal(tuple(v.shape)).astype("float32") + ("variance" in v.path))
    teacher.save(tmp_path / "teacher.keras")
    student = convmixer(8)
    student.compile(optimizer=keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy")
    callback = SelectWeightsFrom(str(tmp_path / "teacher.keras"), element_selection="consecutive")
    x, y = rng.standard_normal((4, 8, 8, 3)).astype("float32"), np.arange(4) % 3
    student.fit(x, y, epochs=1, batch_size=4, verbose=0, callbacks=[callback])
    assert (
        callback.report.family == "convmixer"
        and callback.report.options["element_selection"] == "consecutive"
    )
    # With a zero learning rate the trained kernels are the selected ones.
    got = to_numpy(student.get_layer("block_1_pointwise_conv").kernel)
    np.testing.assert_array_equal(
        got, to_numpy(teacher.get_layer("block_1_pointwise_conv").kernel)[:, :, :8, :8]
    )
    with pytest.raises(ValueError, match="already trained"):
        student.fit(x, y, epochs=1, batch_size=4, verbose=0, callbacks=[SelectWeightsFrom(teacher)])


def test_bad_options_are_refused_up_front():
    with pytest.raises(TypeError, match="Unknown select_weights option"):
        SelectWeightsFrom("t.keras", layers="all")
    with pytest.raises(ValueError, match="element_selection"):
        SelectWeightsFrom("t.keras", element_selection="stride")


def test_teacher_is_checked_at_construction(tmp_path):
    # Both were accepted and failed only when fit started.
    with pytest.raises(
        TypeError, match=r"`teacher` must be a keras.Model or a model argument .*Received: teacher=42 "
    ):
        SelectWeightsFrom(42)
    with pytest.raises(FileNotFoundError, match=r"`teacher` 'missing.keras' does not exist"):
        SelectWeightsFrom("missing.keras")
    with pytest.raises(FileNotFoundError, match="`teacher` .* does not exist"):
        SelectWeightsFrom(str(tmp_path / "no_such_dir"))
    with pytest.raises(FileNotFoundError, match="the weights file .* does not exist"):
        SelectWeightsFrom(f"keras.applications:ConvNeXtTiny:{tmp_path / 'missing.weights.h5'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="`teacher` .* is a folder without config.json"):
        SelectWeightsFrom(tmp_path / "empty")
    with pytest.raises(ValueError, match="`teacher`"):
        SelectWeightsFrom("")


def test_teacher_names_resolved_later_stay_accepted(tmp_path):
    # Nothing is loaded or downloaded here: presets, handles and keras.applications names pass as given.
    for spec in (
        "keras_hub:vit_base_patch16_224_imagenet",
        "kaggle://keras/vit/keras/vit_base_patch16_224_imagenet",
        "keras_cv:resnet50_imagenet",
        "keras.applications:ConvNeXtTiny:imagenet",
        "keras.applications:ConvNeXtTiny",
        "vit-tiny",
    ):
        assert SelectWeightsFrom(spec).teacher == spec
    weights = tmp_path / "convnext.weights.h5"
    weights.write_bytes(b"")
    spec = f"keras.applications:ConvNeXtTiny:{weights}"
    assert SelectWeightsFrom(spec).teacher == spec
    with pytest.raises(ValueError, match="write keras.applications:ConvNeXtTiny"):  # the old bare form
        SelectWeightsFrom("ConvNeXtTiny")
    preset = tmp_path / "preset"
    preset.mkdir()
    (preset / "config.json").write_text("{}")
    assert SelectWeightsFrom(preset).teacher == preset
    model = convmixer(8)
    assert SelectWeightsFrom(model).teacher is model
