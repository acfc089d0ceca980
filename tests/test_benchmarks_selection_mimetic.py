"""The CPU suite's ``selection_mimetic`` entry (004, Table 12; issue 59, point 4): weight selection
against mimetic initialization of the attention layers on ``selection_accuracy``'s student.

A tiny run (synthetic images, one seed) records the three students; the mimetic one starts from the
random-init student's weights but its attention kernels (which carry the mimetic structure) and its
position table; the variant is ``selection_accuracy``'s only while this script runs.
"""

import json

import keras
import numpy as np
from test_benchmarks_selection_setup import _options
from test_cli import write_tiny_cifar

from benchmarks import selection_accuracy as sa
from benchmarks import selection_mimetic as sm
from benchmarks.suite import CPU

from conftest import once_per_suite

pytestmark = once_per_suite("the script's bookkeeping; the suite runs the entry on torch")


def test_the_entry_runs_selection_accuracys_cell_with_the_mimetic_student():
    entry = next(b for b in CPU if b.name == "selection_mimetic")
    ours = _options(entry.args)
    theirs = _options(next(b for b in CPU if b.name == "selection_accuracy").args)
    for option in ("--backend", "--teacher-train-size", "--teacher-epochs", "--student-train-size"):
        assert ours[option] == theirs[option], option
    assert ours["--variants"] == ["random_init", sm.VARIANT, "uniform"] and ours["--seeds"] == ["0", "1", "2"]
    assert entry.repeats == "selection_accuracy" and "keras_structinit/mimetic" in entry.dependencies
    assert sm.parse_args([*entry.args, "--out", "x"]).variants == ours["--variants"]
    assert sm.VARIANT not in sa.VARIANTS and sm.VARIANT not in sa.INIT_SPECS  # only while it runs


def _attention(model):
    """``{path: value}`` of the variables of ``model``'s attention layers."""
    return {
        v.path: keras.ops.convert_to_numpy(v)
        for layer in model._flatten_layers()
        if isinstance(layer, keras.layers.MultiHeadAttention)
        for v in layer.weights
    }


def test_tiny_run_records_the_three_students_paired_by_seed(tmp_path):
    out = tmp_path / "out"
    argv = ["--data", write_tiny_cifar(tmp_path / "tiny.npz", 100, 0), "--out", str(out)]
    argv += ["--student-dim", "16", "--student-heads", "2", "--student-depth", "1", "--teacher-depth", "1"]
    argv += ["--teacher-epochs", "1", "--student-train-size", "32", "--student-epochs", "1"]
    argv += ["--probe-epochs", "1", "--batch-size", "32", "--seeds", "0", "--name", "selection_mimetic"]
    sm.main([*argv, "--variants", "random_init", sm.VARIANT, "uniform"])
    data = json.loads((out / "selection_mimetic.json").read_text())
    runs = {r["variant"]: r for r in data["runs"]}
    assert set(runs) == {"random_init", sm.VARIANT, "uniform"} and "teacher_id" not in runs[sm.VARIANT]
    assert len({r["init_fingerprint"] for r in runs.values()}) == 3
    text = (out / "selection_mimetic.md").read_text()
    assert "--init mimetic-attention on the student's own init (Table 12)" in text and sm.PAPER in text
    labels = [c.label for c in sm.comparisons("selection_mimetic", data)]
    assert labels == [f"uniform − {sm.VARIANT}", f"{sm.VARIANT} − random_init"]
    line, verdict = sm.headline("selection_mimetic", data)
    assert line.startswith("test accuracy: random_init ") and verdict in ("yes", "no", "within noise")
    assert all("test_accuracy" in r for r in data["runs"]) and "split" in data["config"]
    assert sm.VARIANT not in sa.VARIANTS


def test_the_mimetic_student_differs_from_random_init_in_its_attention_kernels_and_positions():
    args = sm.parse_args(["--data", __file__, "--out", "x", "--student-dim", "64", "--student-heads", "2"])
    config = sa.architecture(args)
    with sm.with_mimetic_variant():
        random_init, _ = sa.init_student(config, "random_init", 3, None)
        mimetic, _ = sa.init_student(config, sm.VARIANT, 3, None)
    before, after = _attention(random_init), _attention(mimetic)
    assert before and before.keys() == after.keys()
    changed = {
        new.path
        for old, new in zip(random_init.weights, mimetic.weights, strict=True)
        if not np.array_equal(*map(keras.ops.convert_to_numpy, (old, new)))
    }
    # The four kernels of each attention layer and the position table (sine-cosine, the paper's choice).
    kernels = {p for p in after if p.endswith("kernel")}
    assert len(kernels) == 4 * int(args.student_depth)
    assert changed == kernels | {"position_embedding/embedding"}

    def lean(weights):
        """Per head, W_q W_k^T's diagonal mean above its off-diagonal one, in standard errors of the
        off-diagonal entries (about N(0, 1) where the two kernels are independent draws)."""
        query = next(v for p, v in weights.items() if "/query/" in p and p.endswith("kernel"))
        key = next(v for p, v in weights.items() if "/key/" in p and p.endswith("kernel"))
        found = []
        for head in np.einsum("dhk,ehk->hde", query.astype(np.float64), key.astype(np.float64)):
            off = head[~np.eye(len(head), dtype=bool)]
            found.append((np.diag(head).mean() - off.mean()) / (off.std() / np.sqrt(len(head))))
        return np.array(found)

    # The mimetic structure: each head's W_q W_k^T leans to +I, the random init's does not.
    assert (lean(after) > 5).all() and (np.abs(lean(before)) < 5).all()
