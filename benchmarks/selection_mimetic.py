"""Weight selection against mimetic initialization on the same student (004, Table 12; issue 59,
point 4).

Table 12 of the weight-selection paper puts ViT-T students initialized at random, by mimetic
initialization of their self-attention layers (Trockman & Kolter, ICML 2023: ``W_q W_k^T`` near
``+I`` and ``W_v W_proj`` near ``-I``) and by weight selection from a ViT-S side by side (CIFAR-100:
72.3, 74.7, 81.4 %). This script runs ``selection_accuracy.py``'s study with one more variant,
``mimetic_init``: the student's own init with ``initialize(student, "mimetic-attention")``, which
writes every attention layer's four kernels and sets the position table to 2-D sine-cosine
embeddings, the mimetic paper's choice (patch embedding, biases, MLPs and head as ``random_init``
has them), on that entry's configuration, with teachers of its own for the selected students,
seeds 0-2: one per seed, trained on images disjoint from the students' (issue 79; see
``selection_accuracy.py``'s docstring), the students' accuracy reported on the fixed split's test
part (``bench_utils.load_split``). The paper names only the self-attention init for this
table, so the MLPs keep their init (the mean shift of the MLP paper is ``mimetic_vit``'s subject).

    python -m benchmarks.selection_mimetic --name selection_mimetic --backend torch ...
    (selection_accuracy.py's arguments; see its docstring)
"""

from __future__ import annotations

import contextlib
import sys

from benchmarks import selection_accuracy as base
from benchmarks.bench_utils import TRAIN_SEEDS, Benchmark, Comparison, accuracy_of, by_seed, ms, verdict_of

#: The variant this script adds, and the init spec that draws it.
VARIANT = "mimetic_init"
SPEC = "mimetic-attention"
#: Table 12 (ViT-T, CIFAR-100): random init 72.3, mimetic init 74.7, weight selection 81.4 %.
PAPER = "74.7 (Table 12, CIFAR-100)"
#: The differences the verdict counts: selection above mimetic init above random init.
PAIRS = (("uniform", VARIANT), (VARIANT, "random_init"))
#: How the three students of one seed pair (the report's pairing sentence).
PAIRING = (
    base.PAIRING + "; the mimetic student differs from the random-init one only in its attention "
    "layers' kernels and its position table, drawn after the same seed"
)


@contextlib.contextmanager
def with_mimetic_variant():
    """``selection_accuracy``'s tables, for the duration, with :data:`VARIANT` among its variants."""
    describe = base._describe

    def _describe(variant, model="vit"):
        if variant == VARIANT:
            return f"--init {SPEC} on the student's own init (Table 12)"
        return describe(variant, model)

    base.VARIANTS[VARIANT] = None
    base.INIT_SPECS[VARIANT] = SPEC
    base.PAPER[VARIANT] = PAPER
    base._describe = _describe
    try:
        yield
    finally:
        for table in (base.VARIANTS, base.INIT_SPECS, base.PAPER):
            table.pop(VARIANT, None)
        base._describe = describe


def parse_args(argv=None):
    """``selection_accuracy.py``'s arguments, :data:`VARIANT` among ``--variants``' choices."""
    with with_mimetic_variant():
        return base.parse_args(argv)


def main(argv=None):
    parse_args(argv)  # its errors before anything runs
    with with_mimetic_variant():
        base.main(argv)


def render_markdown(data):
    with with_mimetic_variant():
        return base.render_markdown(data)


def comparisons(name, data):
    """The reported accuracy (:func:`~benchmarks.bench_utils.accuracy_of`: the test part's, held-out
    before issue 79) of :data:`PAIRS` (selection > mimetic init > random init), as Comparisons in
    points."""
    accs = {}
    for run in data["runs"]:
        accs.setdefault(run["variant"], []).append(run)
    accs = {variant: by_seed(runs) for variant, runs in accs.items()}
    return [Comparison(f"{a} − {b}", accs[a], accs[b], data) for a, b in PAIRS if a in accs and b in accs]


def headline(name, data):
    """The suite report's line: ``(our numbers, verdict)`` (see :func:`comparisons`)."""
    accs = {}
    for run in data["runs"]:
        accs.setdefault(run["variant"], []).append(accuracy_of(run))
    words = base.accuracy_words(data["runs"])
    text = f"{words}: " + "; ".join(f"{v} {ms(a, 100)} %" for v, a in accs.items())
    return text, verdict_of(comparisons(name, data))


FIGURES = {}


SUITE = {
    "cpu": (
        Benchmark(
            name="selection_mimetic",
            script="selection_mimetic.py",
            # selection_accuracy's cell (its teachers' and students' sizes, seeds 0-2) with teachers of
            # its own, one per seed on images disjoint from the students' (issue 79): random init, mimetic
            # init of the attention layers, uniform selection.
            args=(
                "--name",
                "selection_mimetic",
                "--backend",
                "torch",
                "--teacher-train-size",
                "20000",
                "--teacher-epochs",
                "2",
                "--student-train-size",
                "3000",
                "--variants",
                "random_init",
                VARIANT,
                "uniform",
                *TRAIN_SEEDS,
            ),
            title="Weight selection against mimetic initialization of the attention layers on the same "
            "ViT student (Table 12), with teachers of its own",
            paper="ViT-T on CIFAR-100: random init 72.3, mimetic init 74.7, weight selection 81.4 % "
            "(Table 12; CIFAR-10: 92.4, 93.3, 97.0)",
            # Estimate (issue 79): 14.2 min on 2026-12-01 (2-core Intel Xeon) with one teacher of 3.9 min;
            # three teachers of ~4.4 min make it ~24 min, one evaluation of each student on the test part
            # instead of one after each epoch (selection_accuracy's note) ~22.
            minutes=22,
            estimated=True,
            eval_data=True,
            depends=(
                "benchmarks/selection_accuracy.py",
                "keras_structinit/mimetic",
                "keras_structinit/baseline",
            ),
            artifacts=base.teacher_files("selection_mimetic", TRAIN_SEEDS[1:]),
            repeats="selection_accuracy",
        ),
    ),
}


if __name__ == "__main__":
    sys.exit(main())
