"""The CPU suite's ``selection_setup`` entry (issue 59, point 7): ``selection_accuracy.py``'s study with
the two settings taken from the authors' code undone, paired with ``selection_table7``'s runs.

The entry runs ``selection_table7``'s configuration; a tiny run (synthetic images, one seed) records
the plain recipe, leaves ``selection_accuracy``'s own recipe as it was, starts each random-init
student from the same weights as the authors'-setup run of its seed, and attaches those runs so
that the report pairs the two setups by seed.
"""

import json

import pytest
from test_cli import write_tiny_cifar

from benchmarks import selection_accuracy as sa
from benchmarks import selection_setup as ss
from benchmarks.suite import CPU

from conftest import once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entry on torch")


def _entry(name):
    return next(b for b in CPU if b.name == name)


def _options(args):
    """``{option: [values]}`` of an entry's argument list."""
    found, key = {}, None
    for arg in args:
        if arg.startswith("--"):
            key, found[arg] = arg, []
        else:
            found[key].append(arg)
    return found


def test_entry_runs_selection_table7s_cell_with_the_two_settings_undone():
    ours, theirs = _options(_entry("selection_setup").args), _options(_entry(ss.AUTHORS).args)
    for option in ("--backend", "--teacher-train-size", "--teacher-epochs", "--student-train-size"):
        assert ours[option] == theirs[option], option
    assert ours["--variants"] == list(ss.COMPARED) and set(ss.COMPARED) <= set(theirs["--variants"])
    assert ours["--seeds"] == ["0", "1", "2"] and ours["--name"] == ["selection_setup"]
    assert sa.RECIPE["no_weight_decay"] == "timm" and sa.RECIPE["normalization"] == "imagenet"
    assert set(ss.PLAIN) < set(sa.RECIPE) and all(sa.RECIPE[k] != v for k, v in ss.PLAIN.items())
    assert "benchmarks/selection_accuracy.py" in _entry("selection_setup").dependencies


def test_tiny_run_records_the_plain_recipe_and_pairs_with_the_authors_setup(tmp_path):
    out = tmp_path / "out"
    argv = ["--data", write_tiny_cifar(tmp_path / "tiny.npz", 100, 0), "--out", str(out)]
    argv += ["--student-dim", "16", "--student-heads", "2", "--student-depth", "1", "--teacher-depth", "1"]
    argv += ["--teacher-epochs", "1", "--student-train-size", "32", "--student-epochs", "1"]
    argv += ["--probe-epochs", "1", "--batch-size", "32", "--variants", *ss.COMPARED, "--seeds", "0"]
    authors_recipe = dict(sa.RECIPE)

    ss.main([*argv, "--name", "selection_setup"])  # before the authors' file: nothing to attach
    first = json.loads((out / "selection_setup.json").read_text())
    assert "authors_setup" not in first
    assert "Not compared yet" in (out / "selection_setup.md").read_text()
    sa.main([*argv, "--name", ss.AUTHORS])
    assert sa.RECIPE == authors_recipe  # the plain run left the authors' recipe as it was
    ss.main([*argv, "--name", "selection_setup"])  # resumed: no run to do, the comparison attached

    data = json.loads((out / "selection_setup.json").read_text())
    authors = json.loads((out / f"{ss.AUTHORS}.json").read_text())
    for key, value in ss.PLAIN.items():
        assert data["config"]["recipe"][key] == value
        assert authors["config"]["recipe"][key] == authors_recipe[key] != value
    attached = data["authors_setup"]
    assert attached["file"] == f"{ss.AUTHORS}.json" and attached["runs"] == authors["runs"]
    assert attached["recipe"] == {k: authors_recipe[k] for k in ss.PLAIN}
    ours = {r["variant"]: r for r in data["runs"]}
    theirs = {r["variant"]: r for r in authors["runs"]}
    # A seed's random-init students start from the same weights in both setups.
    assert ours["random_init"]["init_fingerprint"] == theirs["random_init"]["init_fingerprint"]

    found = {c.label: c for c in ss.comparisons("selection_setup", data)}
    assert list(found) == [
        "uniform − random_init",
        "random_init: authors' setup − plain",
        "uniform: authors' setup − plain",
    ]
    setup = found["random_init: authors' setup − plain"]
    assert not setup.counts and setup.seeds == [0]
    # Both files' runs record one commit: judged on the same code (a single seed cannot be paired).
    assert not setup.mixed_code and setup.why_unpaired == "fewer than 2 seeds with both"
    expected = 100 * (theirs["random_init"]["test_accuracy"] - ours["random_init"]["test_accuracy"])
    assert setup.differences.tolist() == pytest.approx([expected])
    headline, verdict = ss.headline("selection_setup", data)
    assert headline.startswith("plain setup: random_init") and "authors' setup − plain" in headline
    assert verdict in (None, "yes", "no", "within noise")
    text = (out / "selection_setup.md").read_text()
    assert "## Against the authors' settings" in text and "random_init: authors' setup − plain" in text


def test_the_authors_runs_are_attached_only_when_both_report_on_one_split(tmp_path, monkeypatch):
    """selection_table7 re-run on issue 79's split and selection_setup not (or the other way): their
    accuracies come from other images, so the setups are not compared."""
    monkeypatch.setattr(ss, "render_markdown", lambda data: "")
    run = {"variant": "random_init", "seed": 0, "test_accuracy": 0.3}
    ours = {"config": {"recipe": {}, "split": {"test": {"sha256": "a"}}}, "runs": [run]}
    theirs = {"config": {"recipe": dict(sa.RECIPE)}, "runs": [dict(run, val_accuracy=0.3)]}
    path, authors_path = tmp_path / "selection_setup.json", tmp_path / f"{ss.AUTHORS}.json"
    path.write_text(json.dumps({**ours, "authors_setup": {"runs": []}}))  # attached by an earlier run
    authors_path.write_text(json.dumps(theirs))
    ss.attach_authors_setup(path, authors_path)
    assert "authors_setup" not in json.loads(path.read_text())
    theirs["config"]["split"] = ours["config"]["split"]
    authors_path.write_text(json.dumps(theirs))
    ss.attach_authors_setup(path, authors_path)
    assert json.loads(path.read_text())["authors_setup"]["runs"] == theirs["runs"]
