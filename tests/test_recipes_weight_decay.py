"""RecipeConfig.no_weight_decay (timm's parameter groups) and the ImageNet input normalization: what
the weight-selection setup takes from its authors' code (issue 59, point 7)."""

import json

import keras
import numpy as np
import pytest

from keras_structinit import recipes
from keras_structinit.models import vit
from keras_structinit.recipes import RecipeConfig, Run
from keras_structinit.recipes import training as training_module
from keras_structinit.recipes.config import TIMM_NO_WEIGHT_DECAY, exclude_from_weight_decay
from keras_structinit.recipes.data import IMAGENET_MEAN_STD, input_normalization
from keras_structinit.recipes.optimizers import TorchSGD

from conftest import once_per_suite

LR, DECAY = 0.1, 0.5  # one AdamW step shrinks a decayed variable by LR * DECAY = 5%


def _tiny_vit():
    return vit(patch_size=4, dim=8, depth=1, heads=2, num_classes=3, input_shape=(8, 8, 3))


def _one_zero_gradient_step(model, no_weight_decay):
    """Every trainable variable set to ones, then one AdamW step with zero gradients: only the
    decoupled decay moves a variable. Returns ``{path: (name, value after the step)}``."""
    for variable in model.trainable_variables:
        variable.assign(np.ones(variable.shape, "float32"))
    optimizer = keras.optimizers.AdamW(LR, weight_decay=DECAY)
    excluded = exclude_from_weight_decay(optimizer, model.trainable_variables, no_weight_decay)
    optimizer.apply_gradients([(keras.ops.zeros(v.shape), v) for v in model.trainable_variables])
    after = {v.path: (v.name, keras.ops.convert_to_numpy(v)) for v in model.trainable_variables}
    return excluded, after


def test_timm_groups_keep_biases_norms_position_table_and_class_token_from_decay():
    model = _tiny_vit()
    excluded, after = _one_zero_gradient_step(model, "timm")
    kept = {path for path, (_, value) in after.items() if np.all(value == 1.0)}
    shrunk = {path for path, (_, value) in after.items() if np.allclose(value, 1.0 - LR * DECAY)}
    assert kept | shrunk == set(after) and not kept & shrunk
    assert kept == set(excluded)
    assert {after[p][0] for p in kept} == {"bias", "gamma", "beta", "embedding", "token"}
    assert {after[p][0] for p in shrunk} == {"kernel"}  # patch embedding, attention, MLP, head
    # The attention biases are 2-D (heads x head_dim): kept by name, as timm keeps `.bias`.
    assert any(after[p][1].ndim == 2 for p in kept if after[p][0] == "bias")
    assert "position_embedding/embedding" in kept and "class_token/token" in kept


def test_without_exclusions_every_variable_decays_and_patterns_pick_by_name():
    model = _tiny_vit()
    excluded, after = _one_zero_gradient_step(model, None)
    assert excluded == [] and all(np.allclose(v, 1.0 - LR * DECAY) for _, v in after.values())
    excluded, after = _one_zero_gradient_step(_tiny_vit(), ["^token$", "embedding"])
    assert sorted(after[p][0] for p in excluded) == ["embedding", "token"]
    assert all(np.all(v == 1.0) == (p in excluded) for p, (_, v) in after.items())


def test_the_recipes_pass_the_field_to_the_optimizer(monkeypatch):
    seen = []

    def spy(optimizer, variables, no_weight_decay):
        seen.append((no_weight_decay, len(variables)))
        return exclude_from_weight_decay(optimizer, variables, no_weight_decay)

    monkeypatch.setattr(training_module, "exclude_from_weight_decay", spy)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(2, 3),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(3),
        ]
    )
    rng = np.random.default_rng(0)
    data = (rng.integers(0, 256, (16, 8, 8, 3), dtype=np.uint8), np.arange(16) % 3)
    history = recipes.fit_cifar(
        model,
        data,
        1,
        batch_size=8,
        rand_augment=None,
        pad=0,
        flip=False,
        no_weight_decay="timm",
        normalization="imagenet",
        verbose=0,
    )
    assert seen == [("timm", 4)]
    assert history.normalization == {"mean": list(IMAGENET_MEAN_STD[0]), "std": list(IMAGENET_MEAN_STD[1])}
    assert history.config.to_dict()["no_weight_decay"] == "timm"


@once_per_suite("validation is plain Python")
def test_bad_values_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="`no_weight_decay` must be None, 'timm'"):
        RecipeConfig("cifar10", no_weight_decay="all")
    with pytest.raises(TypeError, match="`no_weight_decay` must be"):
        RecipeConfig("cifar10", no_weight_decay=3)
    with pytest.raises(TypeError, match="`no_weight_decay` must be"):
        RecipeConfig("cifar10", no_weight_decay=["bias", 1])
    with pytest.raises(ValueError, match="`no_weight_decay`: '\\(' is not a regular expression"):
        RecipeConfig("cifar10", no_weight_decay=["("])
    with pytest.raises(ValueError, match="`no_weight_decay` holds an empty pattern"):
        RecipeConfig("cifar10", no_weight_decay=[""])
    with pytest.raises(ValueError, match="`no_weight_decay` applies to the decoupled decay"):
        RecipeConfig("cifar10", optimizer="sgd", no_weight_decay="timm")
    with pytest.raises(ValueError, match="`no_weight_decay` applies to Keras' decoupled"):
        exclude_from_weight_decay(TorchSGD(0.1, l2=0.01), [], "timm")
    with pytest.raises(ValueError, match="`normalization` must be one of"):
        input_normalization(np.zeros((1, 2, 2, 3), np.uint8), "imagenet-ish")


@once_per_suite("RecipeConfig is plain Python")
def test_the_field_is_every_recipes_and_serializes():
    assert RecipeConfig("cifar10", epochs=1).resolved()["no_weight_decay"] is None
    assert RecipeConfig("imagenet", epochs=1, no_weight_decay="timm").resolved()["no_weight_decay"] == "timm"
    config = RecipeConfig("cifar100", epochs=1, no_weight_decay=["^bias$"], normalization="imagenet")
    assert config.no_weight_decay == ("^bias$",)  # a list is kept as a tuple
    record = json.loads(json.dumps(config.to_dict()))
    again = RecipeConfig(**record)
    assert again.no_weight_decay == ("^bias$",) and again.to_dict() == config.to_dict()
    assert input_normalization(np.zeros((1, 2, 2, 3), np.uint8), "imagenet") == IMAGENET_MEAN_STD


@once_per_suite("a paper setup is plain Python")
def test_the_selection_setup_follows_the_authors_code_and_says_so():
    run = Run.from_paper("selection")
    filled = run.config.filled()
    assert (filled.no_weight_decay, filled.normalization) == ("timm", "imagenet")
    notes = " ".join(run.paper["notes"])
    assert "no_weight_decay='timm'" in notes and "normalization='imagenet'" in notes
    assert "authors'" in run.paper["settings"]["no_weight_decay"]["source"]
    assert set(TIMM_NO_WEIGHT_DECAY) >= {"^bias$", "^embedding$", "^token$"}
