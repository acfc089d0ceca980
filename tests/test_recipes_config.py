"""RecipeConfig: one typed set of recipe options for fit_cifar, fit_imagenet and `structinit train`."""

import json

import numpy as np
import pytest

from keras_structinit import cli, recipes
from keras_structinit.recipes import CIFAR_DEFAULTS, DEFAULT, IMAGENET_DEFAULTS, RecipeConfig

from conftest import once_per_suite

pytestmark = once_per_suite("RecipeConfig is pure Python")


def test_fields_not_given_take_the_recipe_defaults():
    cifar = RecipeConfig("cifar100", epochs=3, optimizer="sgd").resolved()
    assert cifar["optimizer"] == "sgd" and cifar["epochs"] == 3 and cifar["warmup_epochs"] is None
    assert {k: cifar[k] for k in CIFAR_DEFAULTS if k != "optimizer"} == {
        k: v for k, v in CIFAR_DEFAULTS.items() if k != "optimizer"
    }
    assert "image_size" not in cifar and "loss" not in cifar
    imagenet = RecipeConfig("imagenet", epochs=2).resolved()
    assert imagenet["learning_rate"] is None  # scaled with the batch size when the run starts
    assert imagenet["image_size"] == IMAGENET_DEFAULTS["image_size"] and "optimizer" not in imagenet
    assert repr(RecipeConfig().batch_size) == "DEFAULT" and RecipeConfig().batch_size is DEFAULT


def test_to_dict_is_json_and_epochs_are_required():
    record = RecipeConfig("cifar10", epochs=1, rand_augment=(2, 0.4), distribution=object()).to_dict()
    assert json.loads(json.dumps(record))["rand_augment"] == "keras:n2-f0.4"  # the legacy pair, named
    assert isinstance(record["distribution"], str)
    with pytest.raises(ValueError, match="`epochs` is needed"):
        RecipeConfig("cifar10").resolved()


def test_options_of_the_other_recipe_and_unknown_options_are_refused():
    with pytest.raises(ValueError, match=r"`optimizer`, `pad` apply to the CIFAR recipes"):
        RecipeConfig("imagenet", optimizer="sgd", pad=0)
    with pytest.raises(ValueError, match="`image_size` apply to the ImageNet recipe"):
        RecipeConfig("cifar10", image_size=64)
    with pytest.raises(ValueError, match="`recipe` must be one of"):
        RecipeConfig("mnist")
    with pytest.raises(TypeError, match=r"unexpected recipe option\(s\) \['lr'\]"):
        RecipeConfig.build("cifar", lr=0.1)
    with pytest.raises(ValueError, match="`config` is for recipe='imagenet'"):
        RecipeConfig.build("cifar", RecipeConfig("imagenet", epochs=1))
    with pytest.raises(TypeError, match="`config` must be a RecipeConfig"):
        recipes.fit_cifar(None, (np.zeros((1, 8, 8, 3), "uint8"), np.zeros(1, int)), config={"epochs": 1})


def _config(*extra):
    """The ``RecipeConfig`` of ``structinit train``'s flags: each flag's dest is its field."""
    from keras_structinit.cli import train

    args = cli.build_parser().parse_args(["train", "--model", "simple-cnn", "--epochs", "2", *extra])
    return train._run_of(args, {}).config


def test_the_command_line_keeps_what_it_was_given():
    config = _config(
        "--optimizer",
        "sgd",
        "--schedule",
        "cosine",
        "--warmup-epochs",
        "0",
        "--rand-augment",
        "none",
        "--seed",
        "4",
    )
    assert config == RecipeConfig(
        "cifar10", epochs=2, optimizer="sgd", schedule="cosine", warmup_epochs=0.0, rand_augment=None, seed=4
    )
    assert _config() == RecipeConfig("cifar10", epochs=2, seed=0)
    imagenet = _config("--recipe", "imagenet", "--warmup-epochs", "2", "--image-size", "64")
    assert imagenet.warmup_epochs == 2 and isinstance(imagenet.warmup_epochs, int)
    assert imagenet.image_size == 64
    with pytest.raises(ValueError, match="`warmup_epochs` applies to schedule='cosine'"):
        _config("--warmup-epochs", "1")
    with pytest.raises(TypeError, match="`warmup_epochs`"):
        _config("--recipe", "imagenet", "--warmup-epochs", "0.5")
    mixed = _config("--mixup", "0.8", "--cutmix", "1", "--random-erasing", "0.25", "--random-labels", "1")
    assert (mixed.mixup_alpha, mixed.cutmix_alpha, mixed.random_erasing, mixed.random_labels) == (
        0.8,
        1.0,
        0.25,
        1.0,
    )
    imagenet = _config("--recipe", "imagenet", "--random-erasing", "0.25")
    assert imagenet.random_erasing == 0.25
    with pytest.raises(ValueError, match="`random_labels` apply to the CIFAR recipes"):
        RecipeConfig("imagenet", random_labels=0.5)
    defaults = RecipeConfig("cifar10", epochs=1).resolved()
    assert (
        defaults["mixup_alpha"],
        defaults["cutmix_alpha"],
        defaults["random_erasing"],
        defaults["random_labels"],
    ) == (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "field, value",
    [
        ("optimizer", "adamx"),
        ("pad", -3),
        ("learning_rate", -1),
        ("batch_size", -5),
        ("epochs", 0),
        ("schedule", "linearr"),
        ("label_smoothing", 2.0),
        ("weight_decay", float("nan")),
        ("seed", 2**32),
        ("seed", -1),
        ("steps_per_epoch", 0),
        ("precision", "fp8"),
        ("distribution", "everywhere"),
        ("ema", 1.5),
        ("ema", 0.0),
        ("jit_compile", "yes"),
        ("normalization", "zca"),
        ("random_labels", 1.5),
        ("mixup_alpha", -0.2),
        ("random_erasing", 2.0),
        ("warmup_epochs", -1),
    ],
)
def test_each_bad_field_is_refused_at_construction_naming_it(field, value):
    """Issue 61: RecipeConfig checks every field when it is built, so Run.check() is true."""
    with pytest.raises(ValueError, match=rf"`{field}`"):
        RecipeConfig("cifar10", **{field: value})


@pytest.mark.parametrize("field, value", [("image_size", 0), ("loss", "hinge")])
def test_each_bad_imagenet_field_is_refused_at_construction(field, value):
    with pytest.raises(ValueError, match=rf"`{field}`"):
        RecipeConfig("imagenet", **{field: value})


def test_wrong_types_are_type_errors_naming_the_field():
    for field, value in (("epochs", 2.5), ("flip", 1), ("optimizer", 3), ("seed", "0")):
        with pytest.raises(TypeError, match=rf"`{field}`"):
            RecipeConfig("cifar10", **{field: value})
