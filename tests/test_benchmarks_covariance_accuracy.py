"""benchmarks/covariance_accuracy.py: the RandAugment pair (issue 79, point 6) and its report line."""

import numpy as np
import pytest

from benchmarks import covariance_accuracy as ca
from benchmarks.bench_utils import SHARED_CIFAR10

from conftest import once_per_suite

pytestmark = once_per_suite("the plan and the report line are plain Python")

needs_data = pytest.mark.skipif(not SHARED_CIFAR10.exists(), reason="the shared CIFAR-10 split is absent")


@needs_data
def test_the_augmentation_plan_runs_each_pair_with_randaugment_off_and_on():
    args = ca.parse_args(["augmentation", "--budgets", "2", "--frozen", "frozen", "--seeds", "0", "1"])
    assert args.rand_augment == ca.PAPER_RAND_AUGMENT  # the paper's form unless given
    plan = ca.plan(args)
    assert len(plan) == 2 * 2 * 2  # seeds x arms x inits
    assert {run[5] for run in plan} == {None, ca.PAPER_RAND_AUGMENT}
    assert {(run[1], run[2]) for run in plan} == {(True, 9)}
    other = ca.parse_args(["convergence", "--budgets", "2", "--seeds", "0"])
    assert {run[5] for run in ca.plan(other)} == {None}  # one arm: the config's


@needs_data
def test_the_split_options_replace_the_held_out_size():
    args = ca.parse_args(["sigma", "--test-size", "200", "--validation-size", "50"])
    assert (args.test_size, args.validation_size) == (200, 50)
    with pytest.raises(SystemExit):
        ca.parse_args(["sigma", "--held-out-size", "200"])
    with pytest.raises(SystemExit):
        ca.parse_args(["sigma", "--test-size", "0"])


def _augmentation_data(gain_off, gain_on, seeds=range(5)):
    runs = []
    for seed in seeds:
        for augment, gain in ((None, gain_off), (ca.PAPER_RAND_AUGMENT, gain_on)):
            base = 0.40 + 0.01 * seed
            for init, accuracy in (("default", base), ("conv-cov", base + gain(seed) / 100)):
                runs.append(
                    {
                        "init": init,
                        "frozen": True,
                        "kernel_size": 9,
                        "epochs": 8,
                        "seed": seed,
                        "rand_augment": augment,
                        "test_accuracy": accuracy,
                        "epochs_done": 8,
                        "code": {"commit": "a" * 40, "dirty": False},
                    }
                )
    config = {"experiment": "augmentation", "rand_augment": ca.PAPER_RAND_AUGMENT}
    return {"benchmark": "covariance_augmentation", "config": config, "runs": runs}


def test_the_report_line_says_whether_the_verdict_depends_on_randaugment():
    same = _augmentation_data(lambda s: 3.0 + 0.1 * s, lambda s: 2.0 + 0.1 * s)
    line, verdict = ca.headline("covariance_augmentation", same)
    assert verdict == "yes"
    assert "does not depend on RandAugment" in line
    assert f"{ca.PAPER_RAND_AUGMENT}: yes" in line and "off: yes" in line
    counted = [c for c in ca.comparisons("covariance_augmentation", same) if c.counts]
    assert len(counted) == 2 and {c.label.rsplit(": ", 1)[0] for c in counted} == {
        "k=9 8 ep. frozen, RandAugment off",
        f"k=9 8 ep. frozen, RandAugment {ca.PAPER_RAND_AUGMENT}",
    }
    context = [c for c in ca.comparisons("covariance_augmentation", same) if not c.counts]
    assert len(context) == 1 and np.isclose(context[0].unpaired[0], -1.0)
    differs = _augmentation_data(lambda s: 3.0 + 0.1 * s, lambda s: (-1) ** s * 0.5)
    line, verdict = ca.headline("covariance_augmentation", differs)
    assert verdict == "within noise"
    assert "the verdict depends on RandAugment" in line


def test_the_rows_list_each_cells_own_seeds():
    data = _augmentation_data(lambda s: 1.0, lambda s: 1.0, seeds=range(3))
    data["runs"] = [r for r in data["runs"] if r["rand_augment"] is None or r["seed"] < 2]
    rows = ca.summary_rows(data)
    assert [(row["RandAugment"], row["seeds"]) for row in rows] == [
        ("off", "0, 1, 2"),
        (ca.PAPER_RAND_AUGMENT, "0, 1"),
    ]
