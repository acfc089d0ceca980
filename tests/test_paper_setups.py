"""Each ``--paper`` setup against its paper, fact by fact (issue 52).

The tables below are written from the papers' texts (``../shared/papers``), not from the setups:
each row is a value the paper states, with the section that states it. A test builds the run
``Run.from_paper(name)`` and checks what it would train with: its fields, the optimizer and schedule
the recipe makes of them, and the model it builds. A departure a setup documents in its notes is
not a row here.
"""

import dataclasses
import importlib.util
import math
import pathlib

import keras
import numpy as np
import pytest

from keras_structinit import methods
from keras_structinit.engine.walker import iter_layers
from keras_structinit.models import build_model
from keras_structinit.recipes import RecipeConfig, Run
from keras_structinit.recipes.optimizers import make_optimizer
from keras_structinit.recipes.rand_augment import parse_rand_augment
from keras_structinit.recipes.schedules import TriangularSchedule, step_decay, warmup_cosine

from conftest import once_per_suite

#: ``{setup: {field: (the paper's value, where the paper says it)}}``: run fields, recipe fields,
#: and builder arguments (``model_kwargs``) as ``Run.from_paper`` exposes them. One file per setup in
#: ``tests/paper_facts/`` (a new method's setup adds its file; no shared file changes).
FACTS = {}
for _path in sorted((pathlib.Path(__file__).parent / "paper_facts").glob("*.py")):
    _spec = importlib.util.spec_from_file_location(f"paper_facts_{_path.stem}", _path)
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    FACTS[_module.SETUP] = _module.FACTS


def _value(run, key):
    """A field of ``run``, of its recipe config (defaults filled) or of its builder arguments;
    ``rand_augment.<attribute>``: that attribute of its RandAugment form."""
    if key.startswith("rand_augment."):
        form = parse_rand_augment(_value(run, "rand_augment"))
        return getattr(form, key.partition(".")[2])
    if key in run.model_kwargs:
        return run.model_kwargs[key]
    if hasattr(run, key) and key != "config":
        return getattr(run, key)
    return getattr(run.config.filled(), key)


def test_every_setup_has_a_table_of_facts():
    assert set(FACTS) == set(methods.paper_setups())


@once_per_suite("dataclass fields do not depend on the backend")
def test_run_settings_are_the_fields_of_run():
    """``RUN_SETTINGS`` is written out below the recipes (which it may not import): it must be ``Run``'s
    fields but ``config`` and ``paper``, in their order, none a ``RecipeConfig`` field, and every
    setting of a setup is one of them or a ``RecipeConfig`` field (issue 61, point 3)."""
    run_fields = [f.name for f in dataclasses.fields(Run) if f.name not in ("config", "paper")]
    recipe_fields = {f.name for f in dataclasses.fields(RecipeConfig)} - {"recipe"}
    assert methods.RUN_SETTINGS == tuple(run_fields)
    assert not set(run_fields) & recipe_fields
    for setup in methods.paper_setups().values():
        assert set(setup.settings) <= set(run_fields) | recipe_fields, setup.name
        assert set(setup.recipe_fields()) == set(setup.settings) & recipe_fields, setup.name


@pytest.mark.parametrize("name", sorted(FACTS))
def test_the_setup_runs_with_the_papers_values(name):
    run = Run.from_paper(name)
    wrong = {
        key: (_value(run, key), wanted, where)
        for key, (wanted, where) in FACTS[name].items()
        if _value(run, key) != wanted
    }
    assert not wrong, wrong


def test_randaugment_rows_are_only_those_the_papers_state():
    """004 Table 13 states (9, 0.5); 000 and 001 name RandAugment without N or M."""
    rows = {(name, key) for name, table in FACTS.items() for key in table if key.startswith("rand_augment")}
    assert rows == {
        ("selection", "rand_augment.magnitude"),
        ("selection", "rand_augment.magnitude_std"),
        ("lc", "rand_augment"),
        ("alignment", "rand_augment"),
    }  # the last two: none at all
    assert str(parse_rand_augment(Run.from_paper("selection").config.filled().rand_augment)) == (
        "timm:m9-n2-mstd0.5-inc1"
    )  # the authors' ConvNeXt code: --aa rand-m9-mstd0.5-inc1


def test_the_convmixer_setups_say_where_n2_m12_comes_from():
    """``torchvision:n2-m12`` is the ConvMixer CIFAR README's 92.5% command, not train.py's default
    (``--ra-n 1 --ra-m 8``); neither paper states N or M. The setups, their notes and their docs
    pages say so."""
    setups = methods.paper_setups()
    pages = {"convcov": "covariance.md", "mimetic": "mimetic.md", "mimetic-vit": "mimetic.md"}
    docs = pathlib.Path(__file__).resolve().parents[1] / "docs"
    for name, page in pages.items():
        setup = setups[name]
        value, source = setup.settings["rand_augment"]
        assert value == "torchvision:n2-m12", name
        assert "not its N or M" in source and "92.5% command of the README" in source, name
        assert "--ra-n=2 --ra-m=12" in source and "not train.py's default (--ra-n 1 --ra-m 8)" in source, name
        note = next(n for n in setup.notes if "RandAugment:" in n)
        assert note.startswith("the paper states no N") and "1 op at magnitude 8" in note, name
        text = (docs / page).read_text()
        assert f"| `rand_augment` | `{value}` | {source} |" in text, name
        assert f"- {note}\n" in text, name


def test_the_optimizers_are_the_papers():
    """LC App. C: Nesterov 0.9; Maennel App. A.3: momentum 0.9 (no Nesterov); the rest AdamW."""
    for name, momentum, nesterov in (("lc", 0.9, True), ("alignment", 0.9, False)):
        config = Run.from_paper(name).config.filled()
        optimizer = make_optimizer(config.optimizer, config.learning_rate, config.weight_decay)
        assert (optimizer.momentum, optimizer.nesterov) == (momentum, nesterov), name
        assert optimizer.l2 == config.weight_decay  # PyTorch's coupled L2 (LC: 1e-2, alignment: 0)
    for name in ("convcov", "mimetic", "mimetic-vit", "selection"):
        config = Run.from_paper(name).config.filled()
        optimizer = make_optimizer(config.optimizer, config.learning_rate, config.weight_decay)
        assert isinstance(optimizer, keras.optimizers.AdamW) and optimizer.weight_decay == config.weight_decay


def test_the_schedules_are_the_papers():
    rate = lambda schedule, step: float(keras.ops.convert_to_numpy(schedule(step)))  # noqa: E731
    # Maennel App. A.3: divided by 3 after 1/3 and 2/3 of the steps.
    schedule = step_decay(0.01, 300)
    assert [rate(schedule, s) for s in (0, 99, 101, 199, 201, 299)] == pytest.approx(
        [0.01, 0.01, 0.01 / 3, 0.01 / 3, 0.01 / 9, 0.01 / 9]
    )
    # Trockman et al. Sec. 4 (the ConvMixer script): interp(t, [0, 2/5, 4/5, 1], [0, lr, lr/20, 0]).
    schedule = TriangularSchedule(0.01, 100)
    assert [rate(schedule, s) for s in (0, 40, 80, 100)] == pytest.approx([0.0, 0.01, 0.0005, 0.0], abs=1e-9)
    # Xu et al. Table 13/15: linear warmup over 50 of 300 epochs, then cosine decay to 0.
    schedule = warmup_cosine(0.002, 300, 50)
    assert [rate(schedule, s) for s in (25, 50, 175, 300)] == pytest.approx(
        [0.001, 0.002, 0.001, 0.0], abs=2e-5
    )


@once_per_suite("the models the setups build: their structure, not the backend's numbers")
def test_the_setups_build_the_papers_models():
    def layers(model, kind):
        return [layer for layer in iter_layers(model) if type(layer).__name__ == kind]

    def built(name):
        run = Run.from_paper(name)
        return build_model(run.model, 10, (32, 32, 3), **run.model_kwargs)

    convmixer = built("convcov")  # Trockman et al. Sec. 4: ConvMixer-H/D has D depthwise layers of H filters
    depthwise = layers(convmixer, "DepthwiseConv2D")
    assert len(depthwise) == 8 and {d.kernel_size for d in depthwise} == {(9, 9)}
    stem = layers(convmixer, "Conv2D")[0]
    assert (stem.filters, stem.kernel_size, stem.strides) == (256, (2, 2), (2, 2))
    assert {bn.momentum for bn in layers(convmixer, "BatchNormalization")} == {0.9}  # PyTorch's 0.1
    preset = methods.parse_init_spec(Run.from_paper("convcov").init)[-1].value
    from keras_structinit.covariance.schedule import PRESETS

    assert PRESETS[preset] == (0.08, 0.37, 2.9)  # App. B: sigma_0 .08, v_sigma .37, a_sigma 2.9

    convnext = built("mimetic")  # Sec. 3: isotropic ConvNeXt-256/8, 7x7 filters, 2x2 patches
    assert len(layers(convnext, "DepthwiseConv2D")) == 8
    assert {d.kernel_size for d in layers(convnext, "DepthwiseConv2D")} == {(7, 7)}
    assert layers(convnext, "Conv2D")[0].strides == (2, 2)

    for name, depth in (("mimetic-vit", 8), ("selection", 12)):  # Sec. 3 / Xu et al. Table 1: 192, 3 heads
        vit = built(name)
        attention = layers(vit, "MultiHeadAttention")
        assert len(attention) == depth and {(a.num_heads, a.key_dim) for a in attention} == {(3, 64)}

    lc = built("lc")  # Gavrikov & Keuper: LCResNet-20-16x8, 19 LC blocks of 3x3 filters, expansion 8
    blocks = layers(lc, "LCConv2D")
    assert len(blocks) == 19 and {b.expansion for b in blocks} == {8} and blocks[0].filters == 16

    vgg = built("alignment")  # App. A.2: 13 3x3 convs with biases, 5 max-pools, one dense head
    convs = layers(vgg, "Conv2D")
    assert [c.filters for c in convs] == [64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512]
    assert {(c.kernel_size, c.padding) for c in convs} == {((3, 3), "same")}
    assert len(layers(vgg, "MaxPooling2D")) == 5 and len(layers(vgg, "Dense")) == 1
    # App. A.3: He normal times init_scale, zero biases.
    for conv in convs[2:]:
        kernel = keras.ops.convert_to_numpy(conv.kernel)
        wanted = 0.526 * math.sqrt(2.0 / np.prod(kernel.shape[:-1]))
        assert abs(kernel.std() / wanted - 1) < 5 * math.sqrt(0.5 / kernel.size) + 0.02, conv.name
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(conv.bias), 0.0)
