"""benchmarks/covariance_transfer.py without training: its plan, source cache, scheduling and summaries."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import covariance_transfer as ct
from benchmarks.run import merge_runs

from conftest import RECORDED, REPO_ROOT, once_per_suite

pytestmark = once_per_suite("the benchmark's bookkeeping is plain Python")


def args_for(*argv):
    return ct.parse_args([*argv, "--data", str(REPO_ROOT)])  # any existing path passes the check


# ----------------------------------------------------------------------------
# Arguments and plan
# ----------------------------------------------------------------------------
def test_plan_and_sources_of_each_experiment():
    args = args_for("groups", "--dim", "64", "--seeds", "0", "1")
    assert args.narrow_dim == 8 and args.source_dim == 64
    items = ct.plan(args)
    assert len(items) == 2 * 2 * 5
    assert items[0] == ("default", True, 0) and items[-1] == ("conv-cov", False, 1)
    needs = {item[0]: ct.sources_of(args, item, 4000, "torch") for item in items[:5]}
    assert needs["default"] == needs["conv-cov"] == []
    assert needs["transfer-same"] == needs["filters"]
    assert needs["transfer-same"][0]["dim"] == 64 and needs["transfer-narrow"][0]["dim"] == 8
    # Shards split the plan without overlap.
    parts = [ct.shard_of(items, (i, 3)) for i in range(3)]
    assert sorted(sum(parts, [])) == sorted(items)

    args = args_for("patch-kernel", "--dim", "32", "--source-patch-sizes", "2", "4", "--frozen", "frozen")
    items = ct.plan(args)
    assert len(items) == 3 * 3 * 2 * 4  # seeds x target p x target k x inits
    assert {item[0] for item in items} == {"default", "conv-cov", "transfer:p2-k9", "transfer:p4-k9"}
    (spec,) = ct.sources_of(args, ("transfer:p4-k9", True, (1, 5), 0), 4000, "torch")
    assert (spec["dim"], spec["patch_size"], spec["kernel_size"]) == (32, 4, 9)
    assert ct.target_of(args, ("default", True, (1, 5), 0))["patch_size"] == 1


def test_bad_arguments_name_the_option():
    def fails(*argv):
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.covariance_transfer", *argv, "--data", str(REPO_ROOT)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
        )
        assert result.returncode == 2
        return result.stderr.strip().splitlines()[-1]

    assert "--target-kernel-sizes must be odd" in fails("patch-kernel", "--target-kernel-sizes", "4")
    assert "--narrow-dim must be >= 2" in fails("groups", "--narrow-dim", "1")
    assert "--source-epochs must be >= 1" in fails("groups", "--source-epochs", "0")


# ----------------------------------------------------------------------------
# Source cache and scheduling
# ----------------------------------------------------------------------------
def test_source_cache_lock_is_exclusive_and_stale_locks_are_taken_over(tmp_path):
    spec = ct.source_spec(args_for("groups"), 16, 2, 9, 256, "torch")
    assert ct.SourceCache.key(spec) == ct.SourceCache.key(dict(reversed(spec.items())))
    other = dict(spec, epochs=spec["epochs"] + 1)
    first, second = ct.SourceCache(tmp_path), ct.SourceCache(tmp_path)
    assert first.folder(spec) != first.folder(other)
    assert first.try_lock(spec)
    assert not second.try_lock(spec)  # held by a live process (this one)
    assert second.try_lock(other)
    first.unlock(spec)
    assert second.try_lock(spec)
    second.unlock(spec)
    # A lock whose process has exited is taken over.
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    lock = first.folder(spec) / "lock"
    lock.write_text(json.dumps({"pid": int(dead), "host": __import__("socket").gethostname()}))
    assert second.try_lock(spec)
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert not first.ready(spec)


class FakeCache:
    """Sources in memory; ``held`` are locked by another process until ``release_after`` polls."""

    def __init__(self, held=(), release_after=1):
        self.done, self.held, self.locked, self.polls = set(), set(held), set(), 0
        self.release_after = release_after

    def ready(self, spec):
        return spec in self.done

    def try_lock(self, spec):
        if spec in self.held or spec in self.locked:
            return False
        self.locked.add(spec)
        return True

    def unlock(self, spec):
        self.locked.discard(spec)

    def poll(self):
        self.polls += 1
        if self.polls >= self.release_after:
            self.done |= self.held
            self.held = set()


def test_work_through_trains_each_source_once_and_works_around_locked_ones(monkeypatch):
    cache = FakeCache(held={"S"}, release_after=2)
    monkeypatch.setattr(ct.time, "sleep", lambda seconds: cache.poll())
    needs = {"r1": ["S"], "r2": [], "r3": ["T"], "r4": ["T", "S"]}
    events = []

    def train(spec):
        events.append(f"train {spec}")
        cache.done.add(spec)

    ct.work_through(["r1", "r2", "r3", "r4"], needs.get, cache, events.append, train, log=events.append)
    assert events[:3] == ["r2", "train T", "r3"]  # r1 waits for S, locked elsewhere
    assert events[3].startswith("waiting for a source")
    assert events[4:] == ["r1", "r4"] and cache.polls == 2
    assert not cache.locked


def test_failed_source_training_releases_its_lock(tmp_path):
    cache = ct.SourceCache(tmp_path)
    spec = ct.source_spec(args_for("groups"), 16, 2, 9, 256, "torch")

    def train(spec):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError):
        ct.work_through(["r"], lambda item: [spec], cache, lambda item: None, train)
    assert not (cache.folder(spec) / "lock").exists()


def test_transfer_groups_sample_with_the_bank_mean(tmp_path):
    from keras_structinit.covariance import FilterCovariance
    from keras_structinit.models import convmixer

    args = args_for("groups", "--dim", "8", "--depth", "2", "--kernel-size", "3")
    spec = ct.source_spec(args, 8, 2, 3, 256, "torch")
    cache = ct.SourceCache(tmp_path)
    cache.folder(spec).mkdir(parents=True)
    FilterCovariance([np.full(9, 5.0)] * 2, [1e-6 * np.eye(9)] * 2, 3, patch_size=2).save(
        cache.folder(spec) / "bank.npz"
    )
    model = convmixer(8, 2, kernel_size=3, input_shape=(8, 8, 3))
    ct.initialize(model, "transfer-same", 0, cache, [spec], ct.target_of(args, ("transfer-same", True, 0)))
    kernel = np.asarray(model.get_layer("block_1_depthwise_conv").kernel.numpy())
    np.testing.assert_allclose(kernel, 5.0, atol=0.01)
    # A patch-kernel target of another kernel size gets the resized bank (mean padded with itself).
    model = convmixer(8, 2, kernel_size=5, input_shape=(8, 8, 3))
    ct.initialize(model, "transfer:p2-k3", 0, cache, [spec], {"patch_size": 1, "kernel_size": 5})
    np.testing.assert_allclose(model.get_layer("block_2_depthwise_conv").kernel.numpy(), 5.0, atol=0.01)


def test_resize_methods_name_and_apply_the_bank_resize(tmp_path):
    from keras_structinit.covariance import FilterCovariance
    from keras_structinit.covariance.bank import RESIZE_METHODS
    from keras_structinit.models import convmixer

    assert ct.RESIZE_METHODS == RESIZE_METHODS
    for resize in RESIZE_METHODS:
        assert ct.parse_transfer_init(ct.transfer_init(2, 9, resize)) == (2, 9, resize)
    assert ct.transfer_init(2, 9) == "transfer:p2-k9"  # the recorded runs' names
    args = args_for(
        "patch-kernel",
        "--dim",
        "8",
        "--depth",
        "2",
        "--resize",
        "crop",
        "--frozen",
        "frozen",
        "--target-kernel-sizes",
        "5",
        "--target-patch-sizes",
        "2",
        "--seeds",
        "0",
    )
    assert [item[0] for item in ct.plan(args)] == ["default", "conv-cov", "transfer:p2-k9+crop"]
    spec = ct.source_spec(args, 8, 2, 9, 256, "torch")
    assert ct.sources_of(args, ct.plan(args)[2], 256, "torch") == [spec]
    cache = ct.SourceCache(tmp_path)
    cache.folder(spec).mkdir(parents=True)
    mean = np.arange(81.0) / 81
    bank = FilterCovariance([mean] * 2, [1e-12 * np.eye(81)] * 2, 9, patch_size=2)
    bank.save(cache.folder(spec) / "bank.npz")
    model = convmixer(8, 2, kernel_size=5, input_shape=(8, 8, 3))
    target = {"patch_size": 2, "kernel_size": 5}
    extras = ct.initialize(model, "transfer:p2-k9+crop", 0, cache, [spec], target)
    assert extras == {"resize": "crop"}
    kernel = np.asarray(model.get_layer("block_1_depthwise_conv").kernel.numpy())
    np.testing.assert_allclose(kernel[..., 0, 0], mean.reshape(9, 9)[2:7, 2:7], atol=1e-4)


# ----------------------------------------------------------------------------
# Summaries, Markdown, headline
# ----------------------------------------------------------------------------
def group_runs():
    offset = {
        "default": 0.0,
        "transfer-same": 0.03,
        "transfer-narrow": 0.02,
        "filters": 0.04,
        "conv-cov": 0.05,
    }
    source = {
        "dim": 16,
        "depth": 6,
        "patch_size": 2,
        "kernel_size": 9,
        "epochs": 8,
        "key": "abc",
        "val_accuracy": 0.5,
        "centre_ratio": 1.7,
    }
    return [
        {
            "experiment": "groups",
            "group": g,
            "frozen": f,
            "seed": s,
            "epochs": 2,
            "target": {"dim": 128, "depth": 6, "patch_size": 2, "kernel_size": 9},
            "source": source if g in ("transfer-same", "transfer-narrow", "filters") else None,
            "val_accuracy": 0.4 + offset[g] * (1 if f else 0.5) + s / 100,
            "train_accuracy": 0.5,
            "train_time_s": 60.0,
            "date": "2026-01-01",
        }
        for s in (0, 1, 2)
        for f in (True, False)
        for g in ct.GROUPS
    ]


def results(runs, experiment, **config):
    base = {
        "experiment": experiment,
        "dim": 128,
        "depth": 6,
        "train_size": 4000,
        "held_out_size": 2000,
        "batch_size": 128,
        "rand_augment": False,
        "source_epochs": 8,
        "source_seed": 0,
        "data": "d",
        "held_out": "h",
    }
    return {
        "benchmark": f"covariance_transfer_{experiment}",
        **RECORDED,
        "backend": "torch",
        "config": {**base, **config},
        "runs": runs,
    }


def test_groups_summaries_markdown_and_headline():
    runs = group_runs()
    means = ct.group_means(runs)
    assert means["conv-cov", True] == pytest.approx(46.0)
    assert ct.group_gains(runs, "transfer-narrow")[True] == pytest.approx([2.0, 2.0, 2.0])
    assert ct.group_gains(runs, "transfer-narrow")[False] == pytest.approx([1.0, 1.0, 1.0])
    data = results(runs, "groups", kernel_size=9, patch_size=2, narrow_dim=16)
    text = ct.render_markdown(data)
    assert "| B transfer-same | 44.00 ± 1.00 | 3.00 ± 0.00 | 42.50 ± 1.00 | 1.50 ± 0.00 |" in text
    assert "84.97" in text and "ConvMixer-16/6" in text
    headline, pairs = ct.headline_comparisons(data)
    assert "C transfer-narrow frozen 2.00 ± 0.00" in headline
    assert len(pairs) == 4 and all(np.mean(h) > np.mean(low) for h, low in pairs)
    # The runner's merge keeps one run per key.
    assert len(merge_runs([data, data], ct.RUN_KEYS["groups"])["runs"]) == len(runs)


def test_each_budget_is_summarized_apart_and_the_largest_leads():
    short = group_runs()
    longer = [
        {**r, "epochs": 4, "val_accuracy": r["val_accuracy"] + (0.1 if r["group"] == "default" else 0)}
        for r in short
    ]
    data = results(short + longer, "groups", kernel_size=9, patch_size=2, narrow_dim=16)
    headline, pairs = ct.headline_comparisons(data)
    # At 4 epochs every group is 10 points below A once the budgets are apart (mixed, it would be 5).
    assert headline.startswith("4 epochs, ") and "C transfer-narrow frozen -8.00 ± 0.00" in headline
    assert all(np.mean(h) < np.mean(low) for h, low in pairs)
    text = ct.render_markdown(data)
    assert text.index("4 epoch(s) per target (124 steps)") < text.index("2 epoch(s) per target (62 steps)")
    assert "| B transfer-same | 44.00 ± 1.00 | 3.00 ± 0.00 | 42.50 ± 1.00 | 1.50 ± 0.00 |" in text
    assert "| B transfer-same | 44.00 ± 1.00 | -7.00 ± 0.00 |" in text


def test_patch_kernel_summaries_use_the_bank_patch_size():
    runs = []
    for p, k in ((1, 5), (2, 9)):
        for init, gain in (("default", 0.0), ("conv-cov", 0.04), ("transfer:p2-k9", 0.02)):
            for s in (0, 1):
                source = (
                    None
                    if init == "default" or init == "conv-cov"
                    else {
                        "dim": 128,
                        "depth": 6,
                        "patch_size": 2,
                        "kernel_size": 9,
                        "epochs": 8,
                        "key": "k2",
                        "val_accuracy": 0.6,
                        "centre_ratio": 2.0,
                    }
                )
                runs.append(
                    {
                        "experiment": "patch-kernel",
                        "init": init,
                        "frozen": True,
                        "seed": s,
                        "epochs": 2,
                        "target": {"dim": 128, "depth": 6, "patch_size": p, "kernel_size": k},
                        "source": source,
                        "val_accuracy": 0.3 + gain + s / 100,
                        "train_accuracy": 0.4,
                        "train_time_s": 30.0,
                        "date": "2026-01-02",
                    }
                )
    gains = ct.target_gains(runs)
    assert gains[1, 5, True, "transfer:p2-k9"] == pytest.approx([2.0, 2.0])
    data = results(runs, "patch-kernel", source_dim=128)
    text = ct.render_markdown(data)
    assert "transfer from p_s=2, k_s=9 acc. %" in text
    assert "| 1 | 5 | frozen | 30.50 ± 0.71 | 34.50 ± 0.71 | 32.50 ± 0.71 | 2.00 ± 0.00 |" in text
    assert "| ConvMixer-128/6 | 2 | 9 | 8 | 60.00 | 2.00 | k2 |" in text
    headline, pairs = ct.headline_comparisons(data)
    assert "p=1 k=5 frozen transfer from p_s=2, k_s=9: 2.00 ± 0.00" in headline and len(pairs) == 2
    keys = {ct.run_key(r, "patch-kernel") for r in runs}
    assert len(keys) == len(runs)
