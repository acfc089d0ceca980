"""Weight selection for models of no hand-written family: the plan derived from the two models (issue 60).

Six pairs, built from config (no downloads): keras.applications ResNet101 -> ResNet50, VGG19 -> VGG16,
EfficientNetB3 -> B0, MobileNetV2 alpha 1.0 -> 0.5, a KerasHub DINOV2 backbone (384 wide, 6 layers ->
192, 3) and a user's builder (automatic layer names) at two sizes. For each, every student variable
whose normalized path the teacher also has must equal the teacher variable sliced by the reference
uniform rule on each shrunk axis (``arange(s) * (t // s)`` when ``s`` divides ``t``, else
``round(linspace(0, t - 1, s))``), at least 90 % of the student's variables must be so mapped, and the
teacher must be unchanged.
"""

import re
import time
import tracemalloc

import keras
import numpy as np
import pytest
from keras import layers

from conftest import assert_round_trip_in_fresh_process, to_numpy
from selection_helpers import assert_selected_slices, fingerprint, randomize

A = keras.applications


def reference_uniform(t, s):
    """The paper's uniform element selection (the authors' ``uniform_element_selection``)."""
    if t % s == 0:
        return np.arange(s) * (t // s)
    return np.round(np.linspace(0, t - 1, s)).astype(np.int64)


def uniform_slice(value, shape):
    value = np.asarray(value)
    for axis, (t, s) in enumerate(zip(value.shape, shape, strict=True)):
        if t != s:
            value = np.take(value, reference_uniform(t, s), axis=axis)
    return value


def normalized(path):
    """A variable path without Keras's automatic-name counter (``normalization_1/mean``)."""
    return re.sub(r"^([a-z]+)_\d+/", r"\1/", path)


def check_pair(teacher, student, normalize=normalized, **options):
    """Selects ``teacher`` into ``student`` and checks the issue's acceptance; returns
    ``(fraction mapped, report, seconds)``."""
    from keras_structinit.selection import select_weights, selection_report

    options.setdefault("copy_head", True)  # every variable, the classifier too (tests/test_selection_head.py)
    randomize(teacher)
    before = fingerprint(teacher)
    report = selection_report(student, teacher=teacher, **options)
    assert report.family == "derived"
    start = time.perf_counter()
    written = select_weights(student, teacher=teacher, **options)
    seconds = time.perf_counter() - start
    assert written == [e["student"] for e in report.entries]
    assert fingerprint(teacher) == before  # the teacher is only read
    assert_selected_slices(teacher, student, report)
    t_vars = {normalize(v.path): v for v in teacher.weights}
    mapped = 0
    for v in student.weights:
        source = t_vars.get(normalize(v.path))
        if source is None:
            continue
        expected = uniform_slice(to_numpy(source), tuple(v.shape))
        np.testing.assert_array_equal(to_numpy(v), expected, err_msg=v.path)
        mapped += 1
    print(f"{student.name}: {mapped}/{len(student.weights)} variables mapped")
    return mapped / len(student.weights), report, seconds


@pytest.fixture(scope="module")
def resnets():
    return (
        A.ResNet101(weights=None, input_shape=(32, 32, 3), classes=10),
        A.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10),
    )


@pytest.fixture(scope="module")
def mobilenets():
    return (
        A.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10, alpha=1.0),
        A.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10, alpha=0.5),
    )


def test_resnet101_to_resnet50(resnets):
    teacher, student = resnets
    fraction, report, seconds = check_pair(teacher, student)
    assert fraction == 1.0
    assert report.left_out == [f"conv4_block{b}" for b in range(7, 24)]
    # The weights (not the image size) set the cost: 32x32 here is 224x224's selection work but for
    # the 1000-class head (at 224 with 1000 classes, measured 0.7-0.8 s on each backend, 2 cores).
    from keras_structinit.selection import select_weights

    tracemalloc.start()
    select_weights(student, teacher=teacher)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    teacher_bytes = sum(int(np.prod(v.shape)) * 4 for v in teacher.weights)
    print(
        f"ResNet101 -> ResNet50: selected in {seconds:.2f} s, NumPy peak {peak / teacher_bytes:.2f}x "
        "the teacher's weights"
    )
    assert seconds < 5
    assert peak < 1.5 * teacher_bytes


def test_resnet_plan_names_the_left_out_blocks(resnets):
    from keras_structinit.selection import plan

    teacher, student = resnets
    text = str(plan(student, teacher))
    assert "Teacher blocks left out (17): conv4_block7, conv4_block8" in text and "conv4_block23" in text
    assert (
        "conv2_block1_1_conv/kernel (1, 1, 64, 64) <- conv2_block1_1_conv/kernel (1, 1, 64, 64): "
        "whole, whole, whole, whole" in text
    )


def test_cli_plan_of_a_keras_applications_student(resnets):
    """What ``structinit select --teacher T --student keras.applications:ResNet50 --plan`` prints."""
    from keras_structinit.selection.cli import plan_student

    teacher, _ = resnets
    text = str(plan_student(teacher, "keras.applications:ResNet50"))  # the teacher's classes and size
    left_out = ", ".join(f"conv4_block{b}" for b in range(7, 24))
    assert f"Teacher blocks left out (17): {left_out}" in text


def test_vgg19_to_vgg16():
    teacher = A.VGG19(weights=None, input_shape=(32, 32, 3), classes=10)
    student = A.VGG16(weights=None, input_shape=(32, 32, 3), classes=10)
    fraction, report, _ = check_pair(teacher, student)
    assert fraction == 1.0
    used = {e["teacher"].split("/")[0] for e in report.entries}
    assert {"block3_conv4", "block4_conv4", "block5_conv4"}.isdisjoint(used)


def test_efficientnet_b3_to_b0():
    teacher = A.EfficientNetB3(weights=None, input_shape=(32, 32, 3), classes=10)
    student = A.EfficientNetB0(weights=None, input_shape=(32, 32, 3), classes=10)
    fraction, report, _ = check_pair(teacher, student)
    assert fraction == 1.0, fraction  # the bar is 0.9
    assert "block2c" in report.left_out and "block1b" in report.left_out
    entries = {e["student"]: e for e in report.entries}
    # 40 -> 32 stem channels (widths rounded to multiples of 8): round(linspace(0, 39, 32))
    assert entries["stem_conv/kernel"]["indices"][3] == reference_uniform(40, 32).tolist()


def test_mobilenet_v2_alpha(mobilenets, tmp_path):
    teacher, student = mobilenets
    fraction, report, _ = check_pair(teacher, student)
    x = np.random.default_rng(0).standard_normal((2, 32, 32, 3)).astype("float32")
    assert_round_trip_in_fresh_process(student, x, tmp_path)
    assert fraction == 1.0
    entries = {e["student"]: e for e in report.entries}
    assert entries["Conv1/kernel"]["indices"][3] == reference_uniform(32, 16).tolist()


def test_unrelated_pair_is_refused_in_one_line(resnets, mobilenets):
    from keras_structinit.selection import select_weights

    _, resnet50 = resnets
    _, student = mobilenets
    before = fingerprint(student)
    with pytest.raises(ValueError, match=r"student layer 'Conv1' cannot map") as err:
        select_weights(student, teacher=resnet50)
    assert "\n" not in str(err.value)
    assert fingerprint(student) == before


def _dinov2(width, depth, heads):
    keras_hub = pytest.importorskip("keras_hub")
    return keras_hub.models.DINOV2Backbone(
        patch_size=14,
        num_layers=depth,
        hidden_dim=width,
        num_heads=heads,
        intermediate_dim=4 * width,
        image_shape=(28, 28, 3),
        position_embedding_shape=(28, 28, 3),
    )


def test_keras_hub_dinov2():
    teacher, student = _dinov2(384, 6, 6), _dinov2(192, 3, 3)
    fraction, report, _ = check_pair(teacher, student)
    assert fraction == 1.0
    assert report.left_out == ["encoder/layers_3", "encoder/layers_4", "encoder/layers_5"]
    entries = {e["student"]: e for e in report.entries}
    query = entries["encoder/layers_0/attention/attention/query/kernel"]
    assert query["indices"] == [reference_uniform(384, 192).tolist(), [0, 2, 4], "all"]


def user_builder(width, blocks, classes=10):
    """A user's own model: a stem, residual blocks of depthwise + two 1x1 convs, a head; Keras's
    automatic layer names."""
    inputs = keras.Input((16, 16, 3))
    x = layers.Conv2D(width, 3, padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    for _ in range(blocks):
        y = layers.DepthwiseConv2D(3, padding="same")(x)
        y = layers.BatchNormalization()(y)
        y = layers.Conv2D(4 * width, 1, activation="gelu")(y)
        y = layers.Conv2D(width, 1)(y)
        x = layers.Add()([x, y])
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(classes)(x)
    return keras.Model(inputs, outputs)


def by_position(model):
    """``normalize`` for :func:`user_builder`: a layer's place (stem, block b's k-th layer, head),
    counted independently of the derived plan."""
    weighted = [layer for layer in model.layers if layer.weights]
    places = {}
    for k, layer in enumerate(weighted):
        if k < 2:
            place = f"stem{k}"
        elif k == len(weighted) - 1:
            place = "head"
        else:
            place = f"block{(k - 2) // 4}_{(k - 2) % 4}"
        for v in layer.weights:
            places[v.path] = f"{place}/{v.path.rsplit('/', 1)[-1]}"
    return places.__getitem__


def test_user_builder_two_sizes(tmp_path):
    teacher, student = user_builder(64, 4), user_builder(32, 2)
    t_place, s_place = by_position(teacher), by_position(student)
    names = {v.path: s_place(v.path) for v in student.weights}
    names |= {v.path: t_place(v.path) for v in teacher.weights}
    fraction, report, _ = check_pair(teacher, student, normalize=names.__getitem__)
    assert fraction == 1.0
    assert report.left_out == ["stage0 block 2", "stage0 block 3"]
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 3)).astype("float32")
    assert_round_trip_in_fresh_process(student, x, tmp_path)


def test_user_builder_head_for_other_classes():
    from keras_structinit.selection import plan, select_weights

    teacher, student = user_builder(64, 4, classes=10), user_builder(32, 2, classes=3)
    randomize(teacher)
    head = student.layers[-1]
    before = [to_numpy(v) for v in head.weights]
    shown = plan(student, teacher=teacher)
    assert shown.kept == {
        v.path: "head with other classes (10 in the teacher, 3 here; choose them with head_classes=..., "
        "--head-classes on the command line)"
        for v in head.weights
    }
    select_weights(student, teacher=teacher)  # the head keeps its initialization, as in the paper
    for v, b in zip(head.weights, before, strict=True):
        np.testing.assert_array_equal(to_numpy(v), b)  # kept its initialization
    select_weights(student, teacher=teacher, head_classes=[3, 5, 7])
    t_head = teacher.layers[-1]
    np.testing.assert_array_equal(
        to_numpy(head.kernel), to_numpy(t_head.kernel)[reference_uniform(64, 32)][:, [3, 5, 7]]
    )
    np.testing.assert_array_equal(to_numpy(head.bias), to_numpy(t_head.bias)[[3, 5, 7]])
    with pytest.raises(ValueError, match="must list 3 teacher classes"):
        select_weights(student, teacher=teacher, head_classes=[3, 5, 10])


def _saved(model, path):
    model.save(path)
    return str(path)


def test_cli_plan_prints_and_writes_nothing(tmp_path, capsys):
    from keras_structinit import cli

    teacher = _saved(randomize(user_builder(64, 4)), tmp_path / "teacher.keras")
    student = _saved(user_builder(32, 2), tmp_path / "student.keras")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli.main(["select", "--teacher", teacher, "--student", student, "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Selection plan (derived): 26 student variable(s) from the teacher, 2 keep")
    assert "dense_1/kernel: classifier: keeps the student's init" in out
    assert "Teacher blocks left out (2): stage0 block 2, stage0 block 3" in out
    assert ": whole, whole, uniform 0:64:2, uniform 0:256:2" in out  # a block's first 1x1 conv
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert cli.main(["select", "--teacher", teacher, "--student", student]) == 2
    assert "--out is required (unless --plan)" in capsys.readouterr().err


def test_cli_refuses_an_unrelated_pair_in_one_line_and_selects_head_classes(tmp_path, capsys):
    from keras_structinit import cli

    teacher = randomize(user_builder(64, 4))
    teacher_file = _saved(teacher, tmp_path / "teacher.keras")
    inputs = keras.Input((16, 16, 3))
    other = keras.Model(inputs, layers.Dense(10, name="classifier")(layers.Flatten(name="flat")(inputs)))
    other_file = _saved(other, tmp_path / "other.keras")
    assert cli.main(["select", "--teacher", teacher_file, "--student", other_file, "--plan"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "student layer 'classifier' cannot map" in err
    student_file = _saved(user_builder(32, 2, classes=3), tmp_path / "student.keras")
    out = tmp_path / "out.keras"
    argv = ["select", "--teacher", teacher_file, "--student", student_file, "--out", str(out)]
    assert cli.main([*argv, "--head-classes", "3,5,7"]) == 0
    capsys.readouterr()
    selected = keras.saving.load_model(out)
    np.testing.assert_array_equal(
        to_numpy(selected.layers[-1].bias), to_numpy(teacher.layers[-1].bias)[[3, 5, 7]]
    )
    assert cli.main([*argv, "--head-classes", "3,x", "--overwrite"]) == 2
    assert "--head-classes must be comma-separated class indices" in capsys.readouterr().err


def test_random_indices_are_shared_through_the_residual_stream():
    from keras_structinit.selection import selection_report

    teacher, student = user_builder(64, 4), user_builder(32, 2)
    report = selection_report(student, teacher=teacher, element_selection="random", seed=5, copy_head=True)
    entries = {e["teacher"]: e["indices"] for e in report.entries}
    stream = entries["conv2d/kernel"][3]
    assert stream != reference_uniform(64, 32).tolist() and len(stream) == 32
    # the stem's output, its BatchNorm, every block's depthwise channels and last 1x1 conv, the head's input
    assert entries["batch_normalization/moving_mean"][0] == stream
    for block in range(2):
        assert entries[f"depthwise_conv2d_{block or ''}".rstrip("_") + "/kernel"][2] == stream
        assert entries[f"conv2d_{2 * block + 2}/kernel"][3] == stream
    assert entries["dense/kernel"][0] == stream
    hidden = [entries[f"conv2d_{2 * b + 1}/kernel"][3] for b in range(2)]
    assert hidden[0] != hidden[1]  # each block's hidden width is its own dimension
    assert entries["conv2d_1/bias"][0] == hidden[0] and entries["conv2d_2/kernel"][2] == hidden[0]


def _branches(a, b, name):
    inputs = keras.Input((8, 8, 3))
    left = layers.Conv2D(a, 1, name="left")(inputs)
    right = layers.Conv2D(b, 1, name="right")(inputs)
    x = layers.Concatenate(name="cat")([left, right])
    x = layers.BatchNormalization(name="cat_bn")(x)
    return keras.Model(inputs, layers.Conv2D(4, 1, name="out")(x), name=name)


@pytest.mark.parametrize("element_selection", ["uniform", "random"])
def test_a_concatenated_axis_takes_each_parts_indices(element_selection):
    """The concatenation of an 8- and a 6-channel branch, 4 + 3 in the student: the axis after it is
    the left branch's indices, then the right branch's shifted by 8 (the left's teacher width)."""
    from keras_structinit.selection import select_weights, selection_report

    teacher, student = randomize(_branches(8, 6, "teacher")), _branches(4, 3, "student")
    report = selection_report(student, teacher=teacher, element_selection=element_selection, seed=1)
    entries = {e["student"]: e["indices"] for e in report.entries}
    left, right = entries["left/kernel"][3], entries["right/kernel"][3]
    joined = left + [8 + i for i in right]
    assert entries["out/kernel"][2] == joined and entries["cat_bn/gamma"][0] == joined
    if element_selection == "uniform":
        assert left == reference_uniform(8, 4).tolist() and right == reference_uniform(6, 3).tolist()
    select_weights(student, teacher=teacher, element_selection=element_selection, seed=1)
    np.testing.assert_array_equal(
        to_numpy(student.get_layer("out").kernel), to_numpy(teacher.get_layer("out").kernel)[:, :, joined]
    )


def staged_builder(widths, blocks):
    """A user's ResNet-like model with automatic names: stages of basic residual blocks, each stage
    after the first opening with a strided block and a 1x1 projection shortcut. Returns the model and
    ``{layer name: its place}`` (stage, block, role), recorded as the layers are made."""
    places = {}

    def made(layer, place):
        places[layer.name] = place
        return layer

    inputs = keras.Input((16, 16, 3))
    x = made(layers.Conv2D(widths[0], 3, padding="same"), "stem")(inputs)
    for stage, (width, depth) in enumerate(zip(widths, blocks, strict=True)):
        for block in range(depth):
            where = f"stage{stage}/block{block}"
            stride = 2 if stage and not block else 1
            y = made(layers.Conv2D(width, 3, strides=stride, padding="same"), f"{where}/conv_a")(x)
            y = made(layers.BatchNormalization(), f"{where}/bn")(y)
            y = made(layers.Conv2D(width, 3, padding="same"), f"{where}/conv_b")(y)
            shortcut = made(layers.Conv2D(width, 1, strides=2), f"{where}/shortcut")(x) if stride == 2 else x
            x = layers.Add()([shortcut, y])
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, made(layers.Dense(10), "head")(x)), places


def test_user_builder_with_stages_and_projection_blocks():
    (teacher, t_places), (student, s_places) = (
        staged_builder((32, 64, 128), (2, 3, 2)),
        staged_builder((16, 32, 64), (1, 2, 1)),
    )
    names = {}
    for model, places in ((teacher, t_places), (student, s_places)):
        for layer in model.layers:
            for v in layer.weights:
                names[v.path] = f"{places[layer.name]}/{v.path.rsplit('/', 1)[-1]}"
    fraction, report, _ = check_pair(teacher, student, normalize=names.__getitem__)
    assert fraction == 1.0
    assert report.left_out == ["stage0 block 1", "stage1 block 2", "stage2 block 1"]


class _Subclassed(keras.Model):
    """A model with no functional graph: the derived plan reads it as one layer."""

    def __init__(self, width, **kwargs):
        super().__init__(**kwargs)
        self.width = width
        self.stem = layers.Conv2D(width, 3, name="stem")
        self.pool = layers.GlobalAveragePooling2D()
        self.head = layers.Dense(5, name="head")

    def call(self, x):
        return self.head(self.pool(self.stem(x)))

    def get_config(self):
        return {**super().get_config(), "width": self.width}


def test_a_model_without_a_graph_maps_whatever_its_name_and_after_a_reload(tmp_path):
    """A fresh subclassed model's variable paths start with its name, a reloaded one's do not:
    the plan matches them without it (the teacher named otherwise, the student reloaded)."""
    teacher, student = _Subclassed(16, name="big"), _Subclassed(8, name="small")
    for model in (teacher, student):
        model(np.zeros((1, 8, 8, 3), "float32"))
    path = tmp_path / "student.keras"
    keras.saving.register_keras_serializable("test_selection_derived")(_Subclassed)
    student.save(path)
    reloaded = keras.saving.load_model(path)
    from keras_structinit.selection import selection_report

    def own(path):
        return re.sub(r"^(big|small)/", "", path)

    for target in (student, reloaded):
        fraction, _, _ = check_pair(teacher, target, normalize=own, skip=())
        assert fraction == 1.0
        # the classifier (the head) keeps its init by default, whatever leads its paths
        assert sorted(map(own, selection_report(target, teacher=teacher).skipped)) == [
            "head/bias",
            "head/kernel",
        ]
