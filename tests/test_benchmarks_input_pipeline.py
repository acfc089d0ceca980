"""``benchmarks/input_pipeline.py``'s CPU suite entry: the tf.data pipelines at Keras' RandAugment forms."""

import json

from benchmarks import RESULTS_DIR, input_pipeline
from benchmarks.suite import CPU
from keras_structinit.recipes.rand_augment import parse_rand_augment

from conftest import once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entry itself")


def test_the_entry_times_keras_forms_named_as_the_recipes_name_them():
    (entry,) = [b for b in CPU if b.name == input_pipeline.NAME]
    assert entry.run_key is None
    for form in (input_pipeline.CIFAR_FORM, input_pipeline.IMAGENET_FORM):
        parsed = parse_rand_augment(form)
        assert str(parsed) == form and parsed.library == "keras"
    labels = [label for label, _ in input_pipeline.CIFAR_STAGES + input_pipeline.IMAGENET_STAGES]
    assert f"+ RandAugment {input_pipeline.CIFAR_FORM}" in labels
    assert f"+ RandAugment {input_pipeline.IMAGENET_FORM}" in labels


def test_the_headline_compares_keras_per_image_with_the_batched_stage():
    data = json.loads((RESULTS_DIR / "cpu" / f"{input_pipeline.NAME}.json").read_text())
    line, verdict = input_pipeline.headline(input_pipeline.NAME, data)
    assert verdict is None
    stock = data["cifar"]["stock_rand_augment"]
    ratio = stock["stage_ms"] / stock["package_stage_ms"]
    assert f"per image {ratio:.1f}x the batched stage's time" in line
    assert line.startswith("tf.data on one core, full recipe: cifar ")
