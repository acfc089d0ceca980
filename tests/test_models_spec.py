"""ModelSpec: a model argument parsed once; the zoo's names declared beside their builders (issue 61.1)."""

import ast
import re
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_structinit
from keras_structinit.models import ModelSpec, build_model, registry
from keras_structinit.models.convmixer_model import convmixer
from keras_structinit.models.lcresnet_model import lcresnet
from keras_structinit.models.spec import FORMS, KINDS, load_model, model_from
from keras_structinit.models.zoo import ZooEntry
from keras_structinit.utils import arguments

from conftest import once_per_suite, to_numpy

PACKAGE = Path(keras_structinit.__file__).parent


@pytest.mark.parametrize(
    "text, family, params",
    [
        ("convmixer-256/8", "convmixer", {"dim": 256, "depth": 8}),
        ("ConvMixer-1536/20", "convmixer", {"dim": 1536, "depth": 20}),
        ("convnext-iso-16/3", "convnext_isotropic", {"dim": 16, "depth": 3}),
        ("lcresnet-20-16x8", "lcresnet", {"depth": 20, "width": 16, "expansion": 8}),
        ("vit-tiny-8/2", "vit", {"patch_size": 2, "dim": 192, "depth": 8, "heads": 3}),
        ("convnext-atto", "convnext_atto", {}),
        (" simple-cnn ", "simple_cnn", {"num_conv_layers": 2, "num_filters": 256, "num_units": 64}),
        ("resnet18-gn", "resnet18_gn", {}),
    ],
)
def test_a_zoo_name_parses_to_its_declaration(text, family, params):
    spec = ModelSpec.parse(text)
    assert (spec.kind, spec.family, dict(spec.params), spec.weights) == ("zoo", family, params, None)
    assert spec.sized and spec.entry in registry.ENTRIES
    assert registry.parse_model_name(text) == (family, params)  # the old entry point agrees


def test_the_other_forms_parse(tmp_path):
    spec = ModelSpec.parse("keras.applications:ResNet50")
    assert (spec.kind, spec.family, spec.weights, spec.sized) == ("applications", None, None, True)
    weights = tmp_path / "resnet.weights.h5"
    weights.touch()
    spec = ModelSpec.parse(f"keras.applications:ResNet50:{weights}")
    assert (spec.kind, spec.weights, spec.sized) == ("applications", str(weights), False)
    saved = tmp_path / "m.keras"
    saved.write_bytes(b"")
    spec = ModelSpec.parse(str(saved))
    assert (spec.kind, spec.family, spec.sized, spec.freezes_itself) == ("keras_file", None, False, False)
    preset = tmp_path / "vgg16"  # a folder is a preset, even when its name is a zoo name
    preset.mkdir()
    with pytest.raises(ValueError, match="is a folder without config.json, not a KerasHub preset"):
        ModelSpec.parse(str(preset))
    (preset / "config.json").write_text("{}")
    spec = ModelSpec.parse(str(preset))
    assert (spec.kind, spec.family, spec.sized) == ("preset", None, False)
    assert ModelSpec.parse("vgg16") == ModelSpec.parse("vgg16", name="--model")  # the spelling is no part


@pytest.mark.parametrize(
    "text", ["convmixer-256", "convmixer-0/8", "lcresnet-21-16x8", "resnet50", "vit-base"]
)
def test_bad_text_names_model_and_the_forms(text):
    with pytest.raises(ValueError, match="`model`") as info:
        ModelSpec.parse(text)
    message = str(info.value)
    assert "convmixer-H/D" in message and "lcresnet-D-WxE" in message and "resnet18-gn" in message
    assert all(form in message for form, _, _ in FORMS[1:])  # every other form of the one grammar


def test_bad_library_and_file_names(tmp_path):
    with pytest.raises(ValueError, match="keras.applications has no model 'NoSuchNet'"):
        ModelSpec.parse("keras.applications:NoSuchNet")
    with pytest.raises(FileNotFoundError, match="--model .* does not exist"):
        ModelSpec.parse(str(tmp_path / "missing.keras"), name="--model")
    with pytest.raises(TypeError, match="`model`"):
        ModelSpec.parse(None)


def _same_config(a, b):
    assert a.to_json() == b.to_json()
    assert a.count_params() == b.count_params()


def test_build_of_a_zoo_spec_is_build_model():
    spec = ModelSpec.parse("convmixer-8/2")
    _same_config(
        spec.build(5, (16, 16, 3), kernel_size=3), build_model("convmixer-8/2", 5, (16, 16, 3), kernel_size=3)
    )
    with pytest.raises(ValueError, match="`dim` is set by the model name"):
        spec.build(5, (16, 16, 3), dim=4)
    with pytest.raises(ValueError, match="`kernel_size` apply to the zoo's models"):
        ModelSpec.parse("keras.applications:MobileNetV2").build(10, (32, 32, 3), kernel_size=3)


def test_model_from_sizes_zoo_and_applications_models(tmp_path):
    model = model_from("convmixer-8/1", input_shape=(16, 16, 3), classes=3)
    assert tuple(model.input_shape) == (None, 16, 16, 3) and tuple(model.output_shape) == (None, 3)
    saved = tmp_path / "m.keras"
    model.save(saved)
    loaded = model_from(str(saved))
    assert tuple(loaded.output_shape) == (None, 3)
    with pytest.raises(ValueError, match="MODEL .* brings its own"):
        model_from(str(saved), classes=4)


def test_the_freezing_declarations():
    lc, mixer = ModelSpec.parse("lcresnet-8-2x1"), ModelSpec.parse("convmixer-8/1")
    assert lc.freezes_itself and not mixer.freezes_itself
    assert lc.builder_arguments(True) == {"frozen": True} and mixer.builder_arguments(True) == {}
    assert [e.form for e in registry.ENTRIES if e.freezes_itself] == ["lcresnet-D-WxE"]
    # LCResNet: built frozen, `freeze` only reports; ConvMixer: frozen after the build.
    model = lc.build(10, (16, 16, 3), **lc.builder_arguments(True))
    frozen = lc.freeze(model, True)
    assert frozen and all(not v.trainable for v in model.weights if v.path in frozen)
    model = mixer.build(10, (16, 16, 3))
    trainable = len(model.trainable_weights)
    assert mixer.freeze(model, False) == [] and len(model.trainable_weights) == trainable
    frozen = mixer.freeze(model, True)
    assert frozen and all("depthwise" in path for path in frozen)
    assert mixer.freeze(mixer.build(10, (16, 16, 3)), True) == frozen


def test_available_models_and_the_help_derive_from_the_declarations():
    modules = ("convmixer", "convnext", "lcresnet", "vit", "simple_cnn", "vgg16", "resnet18_gn")
    declared = [
        e for m in modules for e in __import__(f"keras_structinit.models.{m}_model", fromlist=["ZOO"]).ZOO
    ]
    assert list(registry.ENTRIES) == declared and all(isinstance(e, ZooEntry) for e in declared)
    names = registry.available_models()
    assert sorted(names) == sorted(e.form for e in declared)
    assert names[:3] == ["convmixer-H/D", "convnext-iso-H/D", "lcresnet-D-WxE"]
    assert arguments.ZOO_NAMES == registry.model_forms()  # written out, Keras-free, equal
    assert registry.BUILDERS["convmixer"] is convmixer and registry.BUILDERS["lcresnet"] is lcresnet


def test_an_entry_builds_what_it_declares():
    entry = ZooEntry("tiny-mixer", convmixer, params={"dim": 4, "depth": 1, "kernel_size": 3})
    assert entry.match("tiny-mixer") == ({"dim": 4, "depth": 1, "kernel_size": 3}, True)
    assert entry.match("tiny-mixer-2") is None
    model = entry.build(dict(entry.params), 3, (8, 8, 3), {"kernel_size": 5}, name="tiny-mixer")
    assert tuple(model.get_layer("block_1_depthwise_conv").kernel.shape) == (5, 5, 4, 1)
    with pytest.raises(ValueError, match="`depth` is set by the model name"):
        entry.build(dict(entry.params), 3, (8, 8, 3), {"depth": 2}, name="tiny-mixer")
    form = ZooEntry(
        "m-H", convmixer, pattern=r"m-(?P<dim>\d+)", params={"depth": 1}, check=lambda p: p["dim"] > 1
    )
    assert form.match("m-4") == ({"depth": 1, "dim": 4}, True) and form.match("m-1") == (
        {"depth": 1, "dim": 1},
        False,
    )


def test_no_family_name_in_the_recipes():
    """The recipes ask the ModelSpec what a model means (freezing, head); they name no family."""
    families = {e.family for e in registry.ENTRIES} | {e.form.split("-")[0] for e in registry.ENTRIES}
    for path in sorted((PACKAGE / "recipes").glob("*.py")):
        text = path.read_text()
        assert "lcresnet" not in text.lower(), path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare):  # no `family == "..."` decision
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and isinstance(side.value, str):
                        assert side.value not in families, (path.name, side.value)


def test_a_run_parses_its_model_once(monkeypatch, tmp_path):
    from keras_structinit.recipes import RecipeConfig, Run

    calls = []
    parse = ModelSpec.parse.__func__
    monkeypatch.setattr(
        ModelSpec, "parse", classmethod(lambda cls, *a, **k: calls.append(a) or parse(cls, *a, **k))
    )
    data = tmp_path / "tiny.npz"
    rng = np.random.default_rng(0)
    np.savez(data, x=rng.integers(0, 255, (8, 8, 8, 3), dtype=np.uint8), y=np.arange(8) % 2)
    run = Run("lcresnet-8-2x1", RecipeConfig("cifar10", epochs=1, batch_size=4), frozen=True, data=str(data))
    checked = run.check()
    model = checked.build()
    assert len(calls) == 1
    spatial = [v for v in model.weights if "spatial" in v.path]
    assert spatial and not any(v.trainable for v in spatial)
    assert np.isfinite(to_numpy(model(np.zeros((1, 8, 8, 3), "float32")))).all()
    assert isinstance(model, keras.Model)


# ------------------------------------------------------------------ one grammar (issue 75, point 1)

ROOT = PACKAGE.parent
_PREFIXED = re.compile(r"(?:keras\.applications|keras_hub|keras_cv):[\w.:/-]+")
_FLAG = re.compile(r"--(?:model|teacher|student|distill-from)[ =]([^\s`'\"]+)")
_CALL = re.compile(r"(?:load_teacher|load_model)\(\"([^\"]+)\"")
_PLACEHOLDERS = {"NAME": "ResNet50", "WEIGHTS": "imagenet", "PRESET": "some_preset", "FILE": "model.keras"}


def _shown_texts():
    """The help of every subcommand (``train``'s in full) and the user docs."""
    from keras_structinit.cli import build_parser

    parser = build_parser(full=True)
    subparsers = next(a for a in parser._actions if a.choices and "train" in a.choices).choices
    texts = [sub.format_help() for sub in subparsers.values()]
    texts += [p.read_text() for p in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))]
    return texts


def _shown_models():
    """Every model argument the help and the docs show: prefixed forms anywhere, and the values of
    the model flags on ``structinit`` command lines and of ``load_teacher``/``load_model`` calls."""
    found = set()
    for text in _shown_texts():
        found |= {m.rstrip(".,:;)") for m in _PREFIXED.findall(text)}
        for line in text.splitlines():
            if "structinit " in line:
                values = (m.rstrip("]") for m in _FLAG.findall(line))
                found |= {m for m in values if m in _PLACEHOLDERS or not (m.isupper() or m[0] in "-<$")}
            found |= set(_CALL.findall(line))
    return found


@once_per_suite("the grammar reads text and builds no model")
def test_every_model_form_the_help_and_the_docs_show_parses(tmp_path, monkeypatch):
    """Each form means one model everywhere: every model argument written in ``--help`` or the docs
    parses with :class:`ModelSpec` (placeholders filled in, files made in a temporary folder)."""
    monkeypatch.chdir(tmp_path)
    shown = _shown_models()
    assert {"keras.applications:NAME:WEIGHTS", "keras_hub:PRESET", "keras_cv:PRESET"} <= shown
    for text in sorted(shown):
        filled = ":".join(_PLACEHOLDERS.get(part, part) for part in text.split(":"))
        if filled in _PLACEHOLDERS:
            filled = _PLACEHOLDERS[filled]
        target = filled.rpartition(":")[2] if filled.startswith("keras.applications:") else filled
        if target.endswith((".keras", ".h5")):
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).touch()
        elif target.endswith("_preset"):
            Path(target).mkdir(parents=True, exist_ok=True)
            (Path(target) / "config.json").write_text("{}")
        spec = ModelSpec.parse(filled, "`model`")
        assert spec.kind in KINDS, text


@once_per_suite("the grammar reads text and builds no model")
def test_each_form_means_one_model_and_weights_are_asked_for(tmp_path, monkeypatch):
    """``keras.applications:NAME`` is built without weights for a model and a teacher alike; weights
    only with ``:WEIGHTS``; a bare constructor name, the old teacher form, is refused with the way to
    write it; handles and prefixes give the preset kinds."""
    monkeypatch.chdir(tmp_path)
    assert ModelSpec.parse("keras.applications:ResNet50").weights is None
    assert ModelSpec.parse("keras.applications:ResNet50:imagenet").weights == "imagenet"
    Path("w.weights.h5").touch()
    assert ModelSpec.parse("keras.applications:ResNet50:w.weights.h5").weights == "w.weights.h5"
    with pytest.raises(FileNotFoundError, match="weights file 'gone.h5' does not exist"):
        ModelSpec.parse("keras.applications:ResNet50:gone.h5")
    with pytest.raises(ValueError, match="write keras.applications:ResNet50"):
        ModelSpec.parse("ResNet50", "teacher")
    assert ModelSpec.parse("keras_hub:vit_base_patch16_224_imagenet").kind == "keras_hub"
    assert ModelSpec.parse("kaggle://keras/vit/keras/vit_base").kind == "keras_hub"
    assert ModelSpec.parse("keras_cv:resnet50_v2_imagenet").target == "resnet50_v2_imagenet"
    with pytest.raises(ValueError, match="names no preset"):
        ModelSpec.parse("keras_hub:")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ModelSpec.parse("./missing/folder")
    assert [form for form, _, _ in FORMS][1:] == [
        "keras.applications:NAME",
        "keras.applications:NAME:WEIGHTS",
        "FILE.keras",
        "DIR",
        "keras_hub:PRESET",
        "keras_cv:PRESET",
    ]
    for form, example, _ in FORMS:  # every example parses (files made here)
        if form == "FILE.keras":
            Path(example).touch()
        elif form == "DIR":
            Path(example).mkdir(parents=True)
            (Path(example) / "config.json").write_text("{}")
        assert ModelSpec.parse(example).kind in KINDS


def test_load_model_builds_applications_without_weights_and_sized():
    model = load_model("keras.applications:MobileNetV2", input_shape=(32, 32, 3), classes=10, alpha=0.35)
    assert model.output_shape == (None, 10)
    assert model.layers[-1].activation.__name__ == "linear"  # logits, as the package's models give
    with pytest.raises(TypeError, match="`teacher` must be a keras.Model or one of"):
        load_model(3, name="teacher")


def test_no_model_string_is_parsed_outside_models():
    """The prefixes of the grammar are written in ``models/`` only (and the CLI's help text)."""
    found = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "models"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"""startswith\(\s*["'](keras\.applications|keras_hub|keras_cv):""", line)
        or re.search(r"""=\s*["']keras\.applications:["']""", line)
    ]
    assert found == []
