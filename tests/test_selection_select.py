"""select_weights on the package's families: exact slices, consistency, teacher untouched, function."""

import json

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit.selection import select_weights
from keras_structinit.selection.planning import QKV

from conftest import assert_round_trip_in_fresh_process, to_numpy
from selection_helpers import indices_of, randomize, select_and_check, select_with_report

IMAGE = (16, 16, 3)


def vit(dim, depth, heads):
    return ks.models.vit(4, dim, depth, heads, num_classes=5, input_shape=IMAGE)


def convnext(dim, depths=(2, 2)):
    return ks.models.convnext(depths, (dim, 2 * dim), num_classes=5, input_shape=IMAGE)


def convnext_iso(dim, depth=2):
    return ks.models.convnext_isotropic(dim, depth, patch_size=4, num_classes=5, input_shape=IMAGE)


def convmixer(dim, depth=2):
    return ks.models.convmixer(dim, depth, kernel_size=3, patch_size=2, num_classes=5, input_shape=IMAGE)


def resnet(dim):
    return ks.models.resnet18_gn(
        num_classes=5, input_shape=IMAGE, groups=2, widths=(dim, 2 * dim, 2 * dim, 4 * dim)
    )


# (teacher, student) builders per family: twice the width, more blocks.
PAIRS = {
    "vit": (lambda: vit(32, 4, 4), lambda: vit(16, 2, 2)),
    "convnext": (lambda: convnext(16, (3, 3)), lambda: convnext(8, (2, 1))),
    "convnext_isotropic": (lambda: convnext_iso(16, 3), lambda: convnext_iso(8, 2)),
    "convmixer": (lambda: convmixer(16, 3), lambda: convmixer(8, 2)),
    "resnet": (lambda: resnet(8), lambda: resnet(4)),
}


@pytest.mark.parametrize("family", sorted(PAIRS))
def test_every_student_variable_is_the_teachers_slice(family):
    report = select_and_check(randomize(PAIRS[family][0]()), PAIRS[family][1]())
    assert report.family == family
    assert report.skipped == ["head/kernel", "head/bias"]


def _indices_of(report, path, axis):
    return indices_of(report, [(path, axis)])[0]


@pytest.mark.parametrize("method", ["uniform", "consecutive", "random", "random_inconsistent"])
def test_vit_indices_are_consistent_across_tensors_sharing_a_dimension(method):
    report = select_with_report(vit(16, 2, 2), teacher=vit(32, 2, 4), element_selection=method, seed=1)
    width = indices_of(
        report,
        [
            ("patch_embedding/kernel", 3),
            ("class_token/token", 2),
            ("position_embedding/embedding", 2),
            ("block_1_norm_1/gamma", 0),
            ("block_1_attention/query/kernel", 0),
            ("block_1_mlp_2/kernel", 1),
            ("block_2_attention/attention_output/kernel", 2),
            ("final_norm/beta", 0),
        ],
    )
    hidden = [
        _indices_of(report, p, a)
        for p, a in [("block_1_mlp_1/kernel", 1), ("block_1_mlp_1/bias", 0), ("block_1_mlp_2/kernel", 0)]
    ]
    heads = [
        _indices_of(report, f"block_1_attention/{p}/kernel", a)
        for p, a in [("query", 1), ("key", 1), ("value", 1), ("attention_output", 0)]
    ]
    if method == "random_inconsistent":
        assert any(w != width[0] for w in width) and any(h != hidden[0] for h in hidden)
        return
    for group in (width, hidden, heads):
        assert all(g == group[0] for g in group), group
    if method == "uniform":
        assert width[0] == list(range(0, 32, 2))
    if method == "consecutive":
        assert width[0] == list(range(16))


def test_heads_select_keeps_whole_heads():
    teacher = randomize(vit(32, 1, 4))
    student = vit(16, 1, 2)  # head_dim 8 in both
    report = select_with_report(student, teacher=teacher, heads="select")
    assert _indices_of(report, "block_1_attention/query/kernel", 1) == [0, 2]  # heads 0 and 2 of 4
    assert _indices_of(report, "block_1_attention/query/kernel", 2) == "all"  # every channel of a head
    path = "block_1_attention/query/kernel"
    got = to_numpy({v.path: v for v in student.weights}[path])
    want = to_numpy({v.path: v for v in teacher.weights}[path])[::2][:, [0, 2]]
    np.testing.assert_array_equal(got, want)


def _official_uniform(t, s):
    """The authors' rule (weight_selection.py, current version): float32 linspace, rounded, as int64."""
    import torch

    if t % s == 0:
        return (torch.arange(s) * (t // s)).numpy()
    return torch.round(torch.linspace(0, t - 1, s)).long().numpy()


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the authors' rule runs in torch; the plan "
    "is NumPy, the same on every backend: runs once, on torch",
)
def test_heads_fused_equals_the_authors_selection_of_fused_qkv_384_to_320():
    """ViT-S width 384 -> 320: the authors select rows of timm's fused (3 D, D) qkv weight."""
    teacher, student = randomize(vit(384, 1, 6)), vit(320, 1, 5)
    weights = {v.path: to_numpy(v) for v in teacher.weights}
    prefix = "block_1_attention/"
    # timm's layout: out x in, query rows, then key rows, then value rows.
    fused = np.concatenate([weights[f"{prefix}{p}/kernel"].reshape(384, 384).T for p in QKV])
    fused_bias = np.concatenate([weights[f"{prefix}{p}/bias"].reshape(384) for p in QKV])
    rows, cols = _official_uniform(3 * 384, 3 * 320), _official_uniform(384, 320)
    official, official_bias = fused[rows][:, cols], fused_bias[rows]
    select_weights(student, teacher=teacher, heads="fused")
    got = {v.path: to_numpy(v) for v in student.weights}
    for i, p in enumerate(QKV):
        np.testing.assert_array_equal(
            got[f"{prefix}{p}/kernel"].reshape(320, 320).T, official[i * 320 : (i + 1) * 320]
        )
        np.testing.assert_array_equal(
            got[f"{prefix}{p}/bias"].reshape(320), official_bias[i * 320 : (i + 1) * 320]
        )
    # "flatten" selects the same rows for every projection: 32 query and 32 value rows differ here.
    flat = vit(320, 1, 5)
    select_weights(flat, teacher=teacher, heads="flatten")
    flat_rows = {v.path: to_numpy(v) for v in flat.weights}
    differ = [
        int((flat_rows[f"{prefix}{p}/bias"].reshape(320) != official_bias[i * 320 : (i + 1) * 320]).sum())
        for i, p in enumerate(QKV)
    ]
    assert differ == [32, 0, 32]
    # At an integer ratio the two are the same.
    half_fused, half_flat = vit(192, 1, 3), vit(192, 1, 3)
    select_weights(half_fused, teacher=teacher, heads="fused")
    select_weights(half_flat, teacher=teacher, heads="flatten")
    for a, b in zip(half_fused.weights, half_flat.weights, strict=True):
        if not a.path.startswith("head/"):  # the head keeps each student's own init
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    with pytest.raises(ValueError, match="element_selection='uniform'"):
        select_weights(vit(320, 1, 5), teacher=teacher, heads="fused", element_selection="random")


def _numpy_fused_reference(teacher_weights, prefix, t_dim, s_dim):
    """The authors' selection from timm's fused ``(3 D, D)`` qkv weight (weight_selection.py: uniform
    per axis, ``arange(s) * (t // s)`` or ``round(linspace(0, t - 1, s))``) in NumPy, split back into
    query, key and value as ``(s_dim, s_dim)`` out x in matrices and biases."""

    def uniform(t, s):
        return np.arange(s) * (t // s) if t % s == 0 else np.round(np.linspace(0, t - 1, s)).astype(int)

    fused = np.concatenate([teacher_weights[f"{prefix}{p}/kernel"].reshape(t_dim, t_dim).T for p in QKV])
    bias = np.concatenate([teacher_weights[f"{prefix}{p}/bias"].reshape(t_dim) for p in QKV])
    rows, cols = uniform(3 * t_dim, 3 * s_dim), uniform(t_dim, s_dim)
    kernel, bias = fused[rows][:, cols], bias[rows]
    # The output projection's input (timm's proj: D x D, in = the flattened heads): uniform too.
    proj = teacher_weights[f"{prefix}attention_output/kernel"].reshape(t_dim, t_dim)[np.ix_(cols, cols)]
    return (
        [kernel[i * s_dim : (i + 1) * s_dim] for i in range(3)],
        [bias[i * s_dim : (i + 1) * s_dim] for i in range(3)],
        proj,
    )


# (teacher width, heads) -> (student width, heads): head_dim shrinking, equal, growing (96/4 -> 64/2 is
# 24 -> 32), more student heads than teacher heads, widths that divide and widths that do not.
FUSED_LAYOUTS = [
    ((96, 4), (64, 2)),
    ((96, 4), (48, 2)),
    ((64, 4), (48, 4)),
    ((64, 2), (48, 4)),
    ((80, 5), (56, 7)),
    ((96, 6), (40, 2)),
    ((48, 3), (48, 6)),
    ((60, 5), (27, 3)),
]


@pytest.mark.parametrize("teacher_layout, student_layout", FUSED_LAYOUTS)
def test_heads_fused_matches_the_authors_rule_at_every_head_layout(teacher_layout, student_layout):
    (t_dim, t_heads), (s_dim, s_heads) = teacher_layout, student_layout
    teacher, student = randomize(vit(t_dim, 1, t_heads)), vit(s_dim, 1, s_heads)
    weights = {v.path: to_numpy(v) for v in teacher.weights}
    prefix = "block_1_attention/"
    kernels, biases, proj = _numpy_fused_reference(weights, prefix, t_dim, s_dim)
    report = select_and_check(teacher, student, heads="fused")
    got = {v.path: to_numpy(v) for v in student.weights}
    for i, p in enumerate(QKV):
        np.testing.assert_array_equal(got[f"{prefix}{p}/kernel"].reshape(s_dim, s_dim).T, kernels[i])
        np.testing.assert_array_equal(got[f"{prefix}{p}/bias"].reshape(s_dim), biases[i])
    np.testing.assert_array_equal(got[f"{prefix}attention_output/kernel"].reshape(s_dim, s_dim), proj)
    assert report.options["heads"] == "fused"
    # "flatten" accepts the same layouts; "select" keeps whole heads, so it refuses a growing head_dim
    # or more heads.
    select_and_check(teacher, vit(s_dim, 1, s_heads), heads="flatten")
    if s_dim // s_heads > t_dim // t_heads or s_heads > t_heads:
        with pytest.raises(ValueError, match="larger than the teacher along axis"):
            select_weights(vit(s_dim, 1, s_heads), teacher=teacher, heads="select")


def test_heads_fused_refuses_only_a_wider_attention():
    from keras_structinit.selection.planning import plan_selection

    # The package's ViT ties the attention width to the model's; a plan of the kernels alone can widen it.
    path = "block_1_attention/query/kernel"
    for heads in ("fused", "flatten"):
        with pytest.raises(ValueError, match=r"head_dim, flattened\): student_size=64 > teacher_size=48"):
            plan_selection({path: (48, 4, 12)}, {path: (48, 2, 32)}, heads=heads)
        assert plan_selection({path: (48, 4, 12)}, {path: (48, 2, 20)}, heads=heads).entries


def _l1_keep(array, axis, s):
    norms = np.abs(array).sum(axis=tuple(a for a in range(array.ndim) if a != axis))
    return np.sort(np.argsort(-norms, kind="stable")[:s])


def _attention_view(path, array):
    """The package's attention variables with heads x head_dim flattened (timm's 2-D layout)."""
    if "/attention_output/kernel" in path:
        return array.reshape(-1, array.shape[-1])
    if "_attention/" in path and path.endswith("/kernel"):
        return array.reshape(array.shape[0], -1)
    if "_attention/" in path and path.endswith("/bias"):
        return array.reshape(-1)
    return array


@pytest.mark.parametrize("family", ["vit", "convnext"])
@pytest.mark.parametrize("method", ["l1", "magnitude"])
def test_pruning_selections_match_a_numpy_reference(family, method):
    """Table 7's baselines: per tensor, L1 keeps along each shrinking axis the slices of largest L1 norm;
    magnitude keeps the largest-|w| elements, squeezed into the student's shape in row-major order."""
    teacher, student = randomize(PAIRS[family][0]()), PAIRS[family][1]()
    report = select_and_check(teacher, student, element_selection=method)
    t_vars, s_vars = {v.path: to_numpy(v) for v in teacher.weights}, {v.path: v for v in student.weights}
    for entry in report.entries:
        t_value, s_shape = t_vars[entry["teacher"]], tuple(s_vars[entry["student"]].shape)
        if method == "magnitude":
            kept = np.sort(np.argsort(-np.abs(t_value).ravel(), kind="stable")[: int(np.prod(s_shape))])
            want = t_value.ravel()[kept].reshape(s_shape)
        else:
            view = _attention_view(entry["teacher"], t_value)
            s_view = _attention_view(entry["student"], np.zeros(s_shape)).shape
            want = view[np.ix_(*[_l1_keep(view, a, s) for a, s in enumerate(s_view)])].reshape(s_shape)
        np.testing.assert_array_equal(to_numpy(s_vars[entry["student"]]), want, err_msg=entry["student"])
    if method == "l1" and family == "vit":
        # Per tensor: tensors sharing the width keep different indices ("L1 norm inevitably breaks
        # consistency", Sec. 5), unlike every consistent rule.
        width = indices_of(
            report,
            [
                ("patch_embedding/kernel", 3),
                ("block_1_norm_1/gamma", 0),
                ("block_1_mlp_2/kernel", 1),
                ("final_norm/beta", 0),
            ],
        )
        assert len({tuple(w) for w in width}) > 1
    assert report.options["element_selection"] == method
    saved = json.loads(json.dumps(report.to_dict()))  # magnitude's flat indices as a list
    assert all((e["indices"] == "magnitude") == (method == "magnitude") for e in saved["entries"])
    assert ("elements of largest magnitude" in report.summary()) == (method == "magnitude")


def test_pruning_selections_refuse_non_finite_teachers_and_fused_heads():
    teacher = randomize(vit(32, 1, 4))
    teacher.get_layer("block_1_mlp_1").kernel.assign(np.full((32, 128), np.nan, "float32"))
    with pytest.raises(ValueError, match="'block_1_mlp_1/kernel'.*non-finite"):
        select_weights(vit(16, 1, 2), teacher=teacher, element_selection="l1")
    with pytest.raises(ValueError, match="element_selection='uniform'"):
        select_weights(vit(16, 1, 2), teacher=teacher, heads="fused", element_selection="magnitude")


@pytest.mark.parametrize("image", [(8, 8, 3), (12, 12, 3), (24, 24, 3)])
def test_resized_position_embedding_for_another_image_size(image):
    from keras_structinit.selection.resample import resize_tokens

    teacher = randomize(vit(32, 2, 4))  # 16 x 16 images: a 4 x 4 grid and a class token
    student = ks.models.vit(4, 16, 2, 2, num_classes=5, input_shape=image)
    tokens = 1 + (image[0] // 4) ** 2
    report = select_with_report(student, teacher=teacher, resize_position_embeddings=True)
    assert _indices_of(report, "position_embedding/embedding", 1) == f"bilinear 17->{tokens}"
    assert "bilinear 17->" in report.summary()
    got = to_numpy(student.get_layer("position_embedding").embedding)
    source = to_numpy(teacher.get_layer("position_embedding").embedding)[:, :, ::2]
    np.testing.assert_allclose(got, resize_tokens(source, tokens), rtol=1e-6)
    np.testing.assert_array_equal(got[:, 0], source[:, 0])  # the class token's position is kept
    np.testing.assert_array_equal(  # everything else is selected as usual
        to_numpy(student.get_layer("block_1_mlp_1").kernel),
        to_numpy(teacher.get_layer("block_1_mlp_1").kernel)[::2, ::2],
    )


def test_layer_selection_maps_blocks_per_stage():
    teacher = randomize(convnext(8, (2, 4)))
    cases = [("first_n", 1, {1: 1, 2: 2}), ("last_n", 2, {1: 3, 2: 4}), ("uniform", 1, {1: 1, 2: 4})]
    for method, stage_1, stage_2 in cases:
        student = convnext(8, (1, 2))
        report = select_with_report(student, teacher=teacher, layer_selection=method)
        assert report.block_map["2"] == stage_2 and report.block_map["1"] == {1: stage_1}
        for s, t in stage_2.items():
            np.testing.assert_array_equal(
                to_numpy(student.get_layer(f"stage_2_block_{s}_pointwise_1").kernel),
                to_numpy(teacher.get_layer(f"stage_2_block_{t}_pointwise_1").kernel),
            )


@pytest.mark.parametrize("family", ["vit", "convmixer", "convnext"])
def test_same_shape_selection_is_the_identity(family):
    build = PAIRS[family][0]
    teacher, student = randomize(build()), build()
    select_weights(student, teacher=teacher, skip=(), copy_head=True)
    x = np.random.default_rng(0).standard_normal((2, *IMAGE)).astype("float32")
    np.testing.assert_array_equal(to_numpy(student(x, training=False)), to_numpy(teacher(x, training=False)))


def embed(small, large):
    """Places ``small``'s weights into ``large`` at the even positions of every axis that doubled
    (attention heads x head_dim counted as one axis), zeros elsewhere: independent of the
    package's bookkeeping."""
    large_vars = {v.path: v for v in large.weights}
    for v in small.weights:
        target = large_vars[v.path]
        value = to_numpy(v)
        s_shape, t_shape = list(value.shape), list(target.shape)
        if "attention/" in v.path and "attention_output/bias" not in v.path:
            first = 1 if "/kernel" in v.path and "attention_output" not in v.path else 0
            s_shape[first : first + 2] = [s_shape[first] * s_shape[first + 1]]
            t_shape[first : first + 2] = [t_shape[first] * t_shape[first + 1]]
            value = value.reshape(s_shape)
        out = np.zeros(t_shape, np.float32)
        out[tuple(slice(0, None, t // s) for s, t in zip(s_shape, t_shape, strict=True))] = value
        target.assign(out.reshape(tuple(target.shape)))


@pytest.mark.parametrize("family", ["vit", "convnext_isotropic", "convmixer"])
def test_selecting_an_embedded_model_recovers_it(family):
    width = {"vit": (16, 8), "convnext_isotropic": (16, 8), "convmixer": (16, 8)}[family]
    make = {"vit": lambda d: vit(d, 2, d // 4), "convnext_isotropic": convnext_iso, "convmixer": convmixer}[
        family
    ]
    small, large = randomize(make(width[1]), seed=3), make(width[0])
    embed(small, large)
    recovered = make(width[1])
    select_weights(recovered, teacher=large, skip=(), copy_head=True)
    for got, want in zip(recovered.weights, small.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want), err_msg=got.path)


def test_errors_name_what_does_not_fit():
    with pytest.raises(
        ValueError, match=r"student is larger than the teacher along axis 3 of 'patch_embedding/kernel'"
    ):
        select_weights(vit(32, 2, 2), teacher=vit(16, 2, 2))
    with pytest.raises(ValueError, match="blocks"):
        select_weights(vit(16, 2, 2), teacher=vit(32, 1, 4))
    with pytest.raises(ValueError, match="not of one supported family"):
        select_weights(convmixer(8), teacher=vit(32, 2, 4))
    with pytest.raises(ValueError, match="axis 1 of 'position_embedding/embedding'.*resize_position_emb"):
        small_image = ks.models.vit(4, 16, 2, 2, num_classes=5, input_shape=(8, 8, 3))
        select_weights(small_image, teacher=vit(32, 2, 4))
    with pytest.raises(ValueError, match="element_selection"):
        select_weights(vit(16, 2, 2), teacher=vit(32, 2, 4), element_selection="every_other")
    with pytest.raises(TypeError, match="`model`"):
        select_weights("student.keras", teacher=vit(32, 2, 4))
    with pytest.raises(FileNotFoundError, match="teacher"):
        select_weights(vit(16, 2, 2), teacher="missing.keras")


def test_non_finite_teacher_values_are_refused_and_the_student_is_untouched():
    teacher, student = randomize(convmixer(16, 3)), convmixer(8, 2)
    kernel = teacher.get_layer("block_1_pointwise_conv").kernel
    value = to_numpy(kernel).copy()
    value[0, 0, 0, 0], value[0, 0, 2, 4] = np.nan, np.inf  # both among the uniform (even) indices
    kernel.assign(value)
    before = [to_numpy(v).copy() for v in student.weights]
    with pytest.raises(
        ValueError,
        match=r"`teacher` variable 'block_1_pointwise_conv/kernel' has 2 "
        r"non-finite \(NaN or inf\) value\(s\)",
    ):
        select_weights(student, teacher=teacher)
    for v, b in zip(student.weights, before, strict=True):
        np.testing.assert_array_equal(to_numpy(v), b)
    # A NaN among the elements the student does not take is not copied, so not refused.
    value[0, 0, 0, 0], value[0, 0, 2, 4] = 0.0, 0.0
    value[0, 0, 1, 1] = np.nan  # odd indices: dropped by uniform selection of 8 of 16
    kernel.assign(value)
    report = select_with_report(student, teacher=teacher)
    assert "block_1_pointwise_conv/kernel" in [e["student"] for e in report.entries]
    assert all(np.isfinite(to_numpy(v)).all() for v in student.weights)


def test_unmatched_variables_strict_and_not():
    from keras_structinit.selection import plan_selection

    teacher = {p: tuple(v.shape) for p, v in ((v.path, v) for v in vit(32, 2, 4).weights)}
    student = {p: tuple(v.shape) for p, v in ((v.path, v) for v in vit(16, 2, 2).weights)}
    del teacher["final_norm/gamma"]
    with pytest.raises(
        ValueError, match=r"1 student variable\(s\) have no teacher variable.*final_norm/gamma"
    ):
        plan_selection(teacher, student, family="vit")
    plan = plan_selection(teacher, student, family="vit", strict=False)
    assert plan.unmatched == ["final_norm/gamma"]


def test_report_json_summary_and_fresh_process_round_trip(tmp_path):
    teacher, student = randomize(vit(32, 2, 4)), vit(16, 2, 2)
    report = select_with_report(student, teacher=teacher)
    saved = json.loads(open(report.to_json(tmp_path / "report.json")).read())
    assert saved["family"] == "vit" and saved["options"]["element_selection"] == "uniform"
    assert len(saved["entries"]) == len(report.entries) and saved["skipped"] == report.skipped
    summary = report.summary()
    assert (
        "| block_1_mlp_1/kernel | block_1_mlp_1/kernel | (16, 64) | axis 0: 16/32, axis 1: 64/128 |"
        in summary
    )
    assert "| head/kernel | (skipped) |" in summary
    x = np.random.default_rng(1).standard_normal((2, *IMAGE)).astype("float32")
    assert_round_trip_in_fresh_process(student, x, tmp_path)
    # A .keras teacher is read from disk.
    teacher.save(tmp_path / "teacher.keras")
    again = vit(16, 2, 2)
    select_weights(again, teacher=str(tmp_path / "teacher.keras"))
    for a, b in zip(again.weights[:-2], student.weights[:-2], strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_the_report_and_the_write_come_from_one_plan():
    """selection_report writes nothing by default; with write=True it writes exactly what
    select_weights writes, and its entries are the paths written."""
    teacher = randomize(vit(32, 2, 4), seed=5)
    student, again = vit(16, 2, 2), vit(16, 2, 2)
    again.set_weights(student.get_weights())
    before = [to_numpy(v) for v in student.weights]
    report = ks.selection.selection_report(student, teacher=teacher, element_selection="random", seed=2)
    for value, variable in zip(before, student.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(variable), value)
    written = ks.selection.selection_report(
        student, teacher=teacher, element_selection="random", seed=2, write=True
    )
    paths = ks.selection.select_weights(again, teacher=teacher, element_selection="random", seed=2)
    assert written.to_dict() == report.to_dict() and paths == [e["student"] for e in written.entries]
    for a, b in zip(student.weights, again.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    with pytest.raises(TypeError, match="`write`"):
        ks.selection.selection_report(student, teacher=teacher, write="yes")


def test_skip_head_norm_leaves_convnexts_final_norm_as_the_authors_script_does():
    teacher = randomize(convnext(16, (3, 3)))
    copied, kept = convnext(8, (2, 1)), convnext(8, (2, 1))
    before = {v.path: to_numpy(v) for v in kept.weights}
    paths = select_weights(copied, teacher=teacher)
    assert "head_norm/gamma" in paths  # the package's default: selected like every other norm
    paths = select_weights(kept, teacher=teacher, skip=("head", "head_norm"))
    assert not any(p.startswith("head_norm/") for p in paths)
    for path in ("head_norm/gamma", "head_norm/beta"):
        np.testing.assert_array_equal(to_numpy({v.path: v for v in kept.weights}[path]), before[path])
