"""The evidence table that ``--init auto`` reads (issue 80), built from the results JSON alone.

Each :class:`Evidence` row names one init form, the kind of structure it acts on and the condition
under which it was measured (``keras_structinit.core.auto`` finds the same features in a model),
the report entry and the sub-claims of that entry that bear on the condition (the entry's declared
ones, :data:`benchmarks.report_rows.ROWS`, or :data:`MORE_CLAIMS`), and the sub-claim whose difference
is shown as the effect. Its verdict is :func:`benchmarks.report_claims.verdict_of` over those
sub-claims; ``left_out`` says which of the entry's other sub-claims do not apply, and why. A row with
``together`` is a combination: the verdict of those forms applied together.

``python -m benchmarks.report`` writes the table to :data:`TABLE` (package data); a test checks the
shipped table equals :func:`build_table` of the results on file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks import RESULTS_DIR
from benchmarks.report_claims import Above, images_by_epochs, steps_by_batch, verdict_of
from benchmarks.report_rows import ROWS
from benchmarks.report_stats import t_test

#: The table the package ships (``keras_structinit/core/evidence.json``).
TABLE = Path(__file__).resolve().parents[1] / "keras_structinit" / "core" / "evidence.json"
#: The papers' baseline: what ``auto`` applies where no row supports a method.
BASELINE = {"form": "torch-default", "why": "the papers' baseline, PyTorch's default uniform init"}
CONVMIXER = "ConvMixer-128/6, CIFAR-10"
CONVNEXT = "ConvNeXt-iso-64/8 k = 7, CIFAR-10"
VIT = "ViT-96/8, CIFAR-10"


def _cov(k, frozen, state):
    return Above(
        f"ConvCovariance > default, k = {k} {state}",
        "Table 10: -0.05 (no direction)",
        higher={"init": "conv-cov", "kernel_size": k, "frozen": frozen},
        lower={"init": "default", "kernel_size": k, "frozen": frozen},
    )


#: Sub-claims the report rows do not count (the paper states no direction) that a condition needs.
MORE_CLAIMS = {"covariance_kernel_size": (_cov(3, True, "frozen"), _cov(3, False, "thawed"))}


@dataclass(frozen=True)
class Evidence:
    """One row of the table (the module docstring says what each field is)."""

    form: str
    structure: str
    condition: dict
    entry: str
    claims: tuple
    effect: str
    model: str
    left_out: str = ""
    together: tuple = ()
    budget: object = images_by_epochs


STATES = ((True, "frozen"), (False, "thawed"))


def _depthwise(k, entry, claims, effect, left_out):
    """The two rows of ConvCovariance on a ConvMixer's ``k x k`` depthwise filters, frozen and
    trained: the papers measure the two apart (Table 10, Fig. 8), and a model's filters are one or
    the other, so each row counts the sub-claims of its own state (``claims``, ``effect``: formats
    of ``state``)."""
    return tuple(
        Evidence(
            "conv-cov",
            "depthwise",
            {"kernel_size": f"{k}x{k}", "mlp_blocks": False, "frozen": frozen},
            entry,
            tuple(c.format(state=state) for c in claims),
            effect.format(state=state),
            CONVMIXER,
            left_out.format(other=dict(STATES)[not frozen]),
        )
        for frozen, state in STATES
    )


EVIDENCE = (
    *_depthwise(
        3,
        "covariance_kernel_size",
        ("ConvCovariance > default, k = 3 {state}",),
        "ConvCovariance > default, k = 3 {state}",
        "the {other} filters' cell and the row's other kernel sizes",
    ),
    *(
        row
        for k in (7, 15)
        for row in _depthwise(
            k,
            "covariance_kernel_size",
            (f"ConvCovariance > default, k = {k} {{state}}",),
            f"ConvCovariance > default, k = {k} {{state}}",
            "the {other} filters' cell, the row's other kernel sizes and its trends along k",
        )
    ),
    *_depthwise(
        9,
        "covariance_convergence",
        ("ConvCovariance > default, 4 ep. {state}", "ConvCovariance > default, 8 ep. {state}"),
        "ConvCovariance > default, 4 ep. {state}",
        "the {other} filters' cells, 1 and 2 ep. (at most 64 steps; the gain appears from 4 ep.) and "
        "the claims that the gain shrinks with the budget (how fast, not whether)",
    ),
    Evidence(
        "conv-cov",
        "depthwise",
        {"kernel_size": "7x7", "mlp_blocks": True, "frozen": False},
        "mimetic_sweep",
        ("ConvCovariance alone > b = 0, 2 ep.", "ConvCovariance alone > b = 0, 4 ep."),
        "ConvCovariance alone > b = 0, 2 ep.",
        CONVNEXT,
        "the mean shift's sub-claims",
    ),
    Evidence(
        "mean-shift:0.2",
        "mlp",
        {"attention": False},
        "mimetic_sweep",
        ("b = 0.2 > b = 0, ConvNeXt 2 ep.",),
        "b = 0.2 > b = 0, ConvNeXt 2 ep.",
        CONVNEXT,
        "4 ep. (3 seeds: the paper's effect tapers off with training), the other b (picked after "
        "the fact), the ViT and ConvCovariance",
    ),
    Evidence(
        "mean-shift:0.2",
        "mlp",
        {"attention": True},
        "mimetic_sweep",
        ("b = 0.2 > b = 0, ViT 2 ep.",),
        "b = 0.2 > b = 0, ViT 2 ep.",
        VIT,
        "b = 0.05 (picked after the fact) and the ConvNeXt cells",
    ),
    Evidence(
        "mimetic-attention",
        "attention",
        {},
        "mimetic_vit",
        ("attention init alone > b = 0",),
        "attention init alone > b = 0",
        VIT,
        "the sub-claims of the MLP init",
    ),
    Evidence(
        "data-aligned:2",
        "first_convs",
        {"plain": True},
        "alignment_accuracy",
        ("2 aligned layers > default @100", "2 aligned layers > default @1000"),
        "2 aligned layers > default @100",
        "simple-cnn-e3 (three 3x3 convs), CIFAR-10; baseline: He-normal",
        "1 and 3 aligned layers (auto applies the measured 2)",
        budget=steps_by_batch,
    ),
    Evidence(
        "select",
        "teacher",
        {"family": "vit", "same_family": True},
        "selection_five_seeds",
        ("selection > random init", "linear probe at init: selection > random init"),
        "selection > random init",
        "ViT-192/3 from a ViT-384/6 teacher, CIFAR-10",
        "",
    ),
    Evidence(
        "conv-cov+mean-shift:0.05",
        "together",
        {},
        "mimetic_sweep",
        tuple(
            f"ConvCovariance + b = 0.05 > {what}, {e} ep."
            for e in (2, 4)
            for what in ("ConvCovariance alone", "b = 0.05 alone")
        ),
        "ConvCovariance + b = 0.05 > b = 0.05 alone, 2 ep.",
        CONVNEXT,
        "the sub-claims of each alone",
        together=("conv-cov", "mean-shift"),
    ),
)


def _claim(entry, name):
    found = [c for c in (*ROWS[entry].claims, *MORE_CLAIMS.get(entry, ())) if c.name == name]
    if len(found) != 1:
        raise ValueError(f"evidence: entry {entry!r} has no sub-claim {name!r}")
    return found[0]


def _effect(evidence, data, outcome):
    """``{"effect", "error", "seeds", "scale"}`` of the effect sub-claim's outcome."""
    c = outcome.comparison
    if c is None:
        return {"effect": None, "error": None, "seeds": 0, "scale": evidence.model}
    test = t_test(c)
    raw = c.paired_figure if test.kind == "paired" else c.unpaired
    runs = [r for side in (c.higher, c.lower) for s in c.seeds for r in side[s][1]]
    return {
        "effect": round(float(raw[0]), 2) + 0.0,
        "error": round(float(test.se), 2),
        "seeds": int(min(test.n)),
        "scale": f"{evidence.model}, {evidence.budget(data, runs)}",
    }


def evaluate_row(evidence, results_dir):
    """The table's row (a dict) of ``evidence`` on the results under ``results_dir``."""
    path = Path(results_dir) / "cpu" / f"{evidence.entry}.json"
    data = json.loads(path.read_text()) if path.exists() else {"runs": []}
    claims = [_claim(evidence.entry, name) for name in evidence.claims]
    outcomes = [(c, c.measure(data, ())) for c in claims]
    effect = next(o for c, o in outcomes if c.name == evidence.effect)
    return {
        "form": evidence.form,
        "structure": evidence.structure,
        "condition": dict(evidence.condition),
        "together": list(evidence.together),
        "verdict": verdict_of(outcomes) or "not measured",
        "claim": evidence.effect,
        "unit": "points",
        **_effect(evidence, data, effect),
        "counted": list(evidence.claims),
        "left_out": evidence.left_out,
        "entry": evidence.entry,
        "anchor": f"benchmarks/REPORT.md#cpu-{evidence.entry.replace('_', '-')}",
    }


def build_table(results_dir=RESULTS_DIR):
    """The table (a JSON-ready dict) from the results under ``results_dir``."""
    return {
        "format_version": 1,
        "baseline": dict(BASELINE),
        "rows": [evaluate_row(e, results_dir) for e in EVIDENCE],
    }


def table_text(table):
    """The file's text of ``table``."""
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def write_table(results_dir=RESULTS_DIR, path=TABLE):
    """Writes :func:`build_table` to ``path`` (atomically) and returns ``path``."""
    from keras_structinit.utils.io_utils import write_text

    write_text(path, table_text(build_table(results_dir)))
    return path
