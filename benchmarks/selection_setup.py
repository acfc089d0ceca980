"""Weight selection's students with and without the settings taken from the authors' code
(issue 59, point 7), on one cell.

Where the weight-selection paper (004) is silent, ``selection_accuracy.py`` follows the authors'
training code: no weight decay on biases, normalization parameters, the position table and the
class token (``no_weight_decay="timm"``), and ImageNet mean/std inputs (``normalization="imagenet"``).
This script runs the same study with both undone (every trainable variable decayed, per-channel
statistics of the training images), on the ``selection_table7`` entry's configuration: its own
teachers trained the same way (one per seed, on images disjoint from the students'; issue 79), then
random-init and uniformly selected students on seeds 0-2, their accuracy reported on the fixed
split's test part (``bench_utils.load_split``). The
seeds pair with ``selection_table7``'s runs of the same variants (same data order, augmentation
draws and initial weights; only the two settings differ), which this script copies into its results
(``authors_setup``) when that file is beside them, so the report's comparison reads one file.

    python -m benchmarks.selection_setup --name selection_setup --backend torch ...
    (selection_accuracy.py's arguments; see its docstring)
"""

from __future__ import annotations

import json
import sys

from benchmarks import selection_accuracy as base
from benchmarks.bench_utils import TRAIN_SEEDS, Benchmark, Comparison, accuracy_of, by_seed, ms, verdict_of

#: The two settings as this run has them (the authors' code: ``"timm"`` and ``"imagenet"``).
PLAIN = {"no_weight_decay": None, "normalization": "channel"}
#: The results of the same cell with the authors' settings, and the variants compared with them.
AUTHORS = "selection_table7"
COMPARED = ("random_init", "uniform")
#: How the two setups' runs of one seed pair (the report's pairing sentence).
PAIRING = (
    "paired by seed: the two setups' students of one seed share the data order, the augmentation "
    "and mixing draws and the initial weights; the uniform students' teachers differ (each trained "
    "with its own setup), the random-init students have none"
)


#: The arguments are selection_accuracy.py's.
parse_args = base.parse_args


def main(argv=None):
    args = parse_args(argv)
    authors = base.RECIPE
    base.RECIPE = {**authors, **PLAIN}  # base.main reads it when it builds the run's recipe
    try:
        base.main(argv)
    finally:
        base.RECIPE = authors
    attach_authors_setup(args.out / f"{args.name}.json", args.out / f"{AUTHORS}.json")


def attach_authors_setup(path, authors_path):
    """Copies ``authors_path``'s runs of :data:`COMPARED` (and its code record and settings) into the
    results at ``path`` as ``authors_setup`` when that file exists and its runs report on the same
    images (the same ``split`` in both configs: issue 79's test part, or both the held-out images
    recorded before it); writes their Markdown either way."""
    from keras_structinit.utils.io_utils import write_json, write_text

    data = json.loads(path.read_text())
    authors = json.loads(authors_path.read_text()) if authors_path.exists() else None
    if authors is not None and authors["config"].get("split") != data["config"].get("split"):
        print(
            f"{authors_path.name} reports on other images (another split) than these results: the setups "
            "are not compared until both are run on one split",
            flush=True,
        )
        if data.pop("authors_setup", None) is not None:  # attached from an earlier run of that file
            write_json(path, data)
        authors = None
    if authors is not None:
        data["authors_setup"] = {
            "file": authors_path.name,
            "code": authors.get("code"),
            "recipe": {k: authors["config"]["recipe"].get(k) for k in PLAIN},
            "runs": [r for r in authors["runs"] if r["variant"] in COMPARED],
        }
        write_json(path, data)
    elif not authors_path.exists():
        print(f"No {authors_path.name} beside the results: the setups are not compared yet", flush=True)
    write_text(path.with_suffix(".md"), render_markdown(data))


def render_markdown(data):
    lines = [base.render_markdown(data).rstrip(), "", "## Against the authors' settings", ""]
    found = comparisons("selection_setup", data)
    if "authors_setup" not in data:
        return "\n".join([*lines, f"Not compared yet: no `{AUTHORS}.json` when this ran.", ""])
    lines.append(
        f"Recipe here: {PLAIN}; in `{data['authors_setup']['file']}`: {data['authors_setup']['recipe']}. "
        f"Differences in points, {PAIRING}:"
    )
    lines += ["", *(f"- {said(c)}" for c in found), ""]
    return "\n".join(lines)


def said(comparison):
    """``"label +d ± se (paired; unpaired +d ± se)"``: a comparison as the results say it."""
    c = comparison
    figure = c.paired_figure if c.why_unpaired is None else c.unpaired
    return f"{c.label} {c.text(figure)} points ({c.judged}; unpaired {c.text(c.unpaired)})"


def comparisons(name, data):
    """Uniform selection over random init in this setup (the paper's direction, counted), then the
    authors' setup minus this one for each variant (context: the paper states no direction)."""
    out = [c for c in base.comparisons(name, data) if c.label == "uniform − random_init"]
    theirs = data.get("authors_setup", {}).get("runs", [])
    for variant in COMPARED:
        ours = by_seed([r for r in data["runs"] if r["variant"] == variant])
        other = by_seed([r for r in theirs if r["variant"] == variant])
        if ours and other:
            out.append(Comparison(f"{variant}: authors' setup − plain", other, ours, data, counts=False))
    return out


def headline(name, data):
    """The suite report's line: ``(our numbers, verdict)`` (see :func:`comparisons`)."""
    accs = {}
    for r in data["runs"]:
        accs.setdefault(r["variant"], []).append(accuracy_of(r))
    text = "plain setup: " + "; ".join(f"{v} {ms(a, 100)} %" for v, a in accs.items())
    found = comparisons(name, data)
    text += "".join(f"; {said(c)}" for c in found if not c.counts)
    return text, verdict_of(found)


FIGURES = {}


def _cell(name, options=("--backend", "--teacher-train-size", "--teacher-epochs", "--student-train-size")):
    """The ``options`` (with their values) of ``selection_accuracy.py``'s CPU entry ``name``."""
    args = next(b for b in base.SUITE["cpu"] if b.name == name).args
    return tuple(a for o in options for a in (o, args[args.index(o) + 1]))


SUITE = {
    "cpu": (
        Benchmark(
            name="selection_setup",
            script="selection_setup.py",
            # selection_table7's cell (its teacher's and students' sizes, seeds 0-2), the two
            # settings undone; run after it so that its runs are attached.
            args=("--name", "selection_setup", *_cell(AUTHORS), "--variants", *COMPARED, *TRAIN_SEEDS),
            title="Weight selection's setup where the paper is silent: students without the authors' "
            "no-weight-decay groups and ImageNet input statistics, paired with selection_table7's",
            paper="the paper states neither; the authors' code excludes biases, normalization "
            "parameters, the position table and the class token from weight decay and feeds ImageNet "
            "mean/std-normalized inputs; Table 1's direction (selection > random init) is what counts",
            # Estimate (issue 79): 10.4 min on 2026-11-29 with one teacher of 4.5 min; three teachers of
            # ~4.5 min make it ~20 min, one evaluation of each student on the test part instead of one
            # after each epoch (selection_accuracy's note) ~19.
            minutes=19,
            estimated=True,
            depends=("benchmarks/selection_accuracy.py",),
            artifacts=base.teacher_files("selection_setup", TRAIN_SEEDS[1:]),
        ),
    ),
}


if __name__ == "__main__":
    sys.exit(main())
