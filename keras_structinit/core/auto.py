"""``--init auto``: the inits the evidence supports for a model, chosen from its structure (issue 80).

The evidence is a table shipped with the package (:data:`EVIDENCE`, ``evidence.json``, written by
``python -m benchmarks.report`` from the benchmark results; :func:`load_evidence`): per row, an init
form, the kind of structure it acts on and the condition it was measured under, its verdict, its
effect ± error, seeds, scale and REPORT anchor. :func:`choose` finds the model's structures
(depthwise convs by kernel size, frozen or trained, MLP blocks, self-attention layers, the first
convs, a teacher's family), picks for each the form whose row for that condition says *yes* (the
row counts only the sub-claims that apply to it; ``left_out`` says which do not), the table's
baseline elsewhere, and says why in one line per structure group. Two chosen forms go together
when a combination row says *yes*, or, never measured together, when they act on different
variables. The result is a concrete spec: what a run records and a rerun applies. No method is
named here; the table names the forms.

Example:
    >>> choice = choose(model)
    >>> choice.spec, choice.lines
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

#: The shipped evidence table.
EVIDENCE = Path(__file__).with_name("evidence.json")


@dataclass(frozen=True, eq=False)
class Structure:
    """A group of one kind of structure: ``count`` found, ``features`` (what a row's condition
    reads), ``label`` (its words in a line)."""

    kind: str
    count: int
    features: dict
    label: str


@dataclass
class Choice:
    """What :func:`choose` decided: the concrete ``spec``, one line per structure group and per
    composition (``lines``), and the rows behind the chosen forms."""

    spec: str
    lines: list = field(default_factory=list)
    rows: list = field(default_factory=list)


def load_evidence(path=None):
    """The evidence table (a dict) at ``path`` (default :data:`EVIDENCE`); ``ValueError`` (one line)
    for a file that is not one."""
    path = EVIDENCE if path is None else path
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`evidence` must be a path or an evidence table. Received: {type(path).__name__}")
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"`evidence` {os.fspath(path)!r} is not an evidence table: {err}") from None
    if not isinstance(table, dict) or table.get("format_version") != 1 or "rows" not in table:
        raise ValueError(f"`evidence` {os.fspath(path)!r} is not an evidence table (format_version 1)")
    return table


def _found(model, which):
    from keras_structinit.engine import walker

    try:
        return walker.find(model, which)
    except ValueError:  # none of them
        return []


def _size(kernel):
    return "x".join(str(n) for n in tuple(kernel.shape)[:-2])


def _depthwise(model, mlp):
    """The depthwise groups by kernel size and state: frozen (no gradient reaches the kernel, as
    :func:`~keras_structinit.engine.freezing.freeze_spatial` or ``layer.trainable = False`` leave it)
    or trained, read when ``auto`` runs."""
    trained = {id(v) for v in model.trainable_weights}
    groups = {}
    for _, kernel in _found(model, "depthwise"):
        key = (_size(kernel), id(kernel) not in trained)
        groups[key] = groups.get(key, 0) + 1
    return [
        Structure(
            "depthwise",
            n,
            {"kernel_size": k, "mlp_blocks": mlp, "frozen": frozen},
            f"{n} depthwise {k} ({'frozen' if frozen else 'trained'})",
        )
        for (k, frozen), n in groups.items()
    ]


def _first_convs(model):
    from keras_structinit.engine import walker

    first = _found(model, "all_spatial")[:2]
    if len(first) < 2:
        return []
    plain = all(walker.depthwise_kernel(layer) is None for layer, _ in first)
    sizes = ", ".join(
        _size(k) + ("" if walker.depthwise_kernel(layer) is None else " depthwise") for layer, k in first
    )
    return [Structure("first_convs", 2, {"plain": plain}, f"first 2 spatial convs ({sizes})")]


def family(model):
    """``"vit"`` (self-attention layers), ``"convnext"`` (depthwise convs and MLP blocks),
    ``"convmixer"`` (depthwise convs), ``"cnn"`` (other spatial convs) or ``"other"``."""
    if _found(model, "attention"):
        return "vit"
    if _found(model, "depthwise"):
        return "convnext" if _found(model, "mlp_first") else "convmixer"
    return "cnn" if _found(model, "all_spatial") else "other"


def structures(model, teacher=None):
    """The :class:`Structure` groups of ``model`` (and of a loaded ``teacher``), in model order."""
    mlp, attention = len(_found(model, "mlp_first")), len(_found(model, "attention"))
    found = _depthwise(model, bool(mlp))
    if mlp:
        found.append(Structure("mlp", mlp, {"attention": bool(attention)}, f"{mlp} MLP blocks"))
    if attention:
        found.append(Structure("attention", attention, {}, f"{attention} self-attention layers"))
    found += _first_convs(model)
    if teacher is not None:
        mine, theirs = family(model), family(teacher)
        found.append(
            Structure(
                "teacher",
                1,
                {"family": mine, "same_family": mine == theirs},
                f"teacher {teacher.name} (family {theirs}; the model's {mine})",
            )
        )
    return found


def _matches(row, structure):
    return row["structure"] == structure.kind and all(
        structure.features.get(k) == v for k, v in row["condition"].items()
    )


def _measured(row):
    """``"+5.54 ± 0.82 points (5 seeds), <claim>, <scale> (<entry>)"``."""
    if row["effect"] is None:
        return f"not measured ({row['entry']})"
    return (
        f"{row['effect']:+.2f} ± {row['error']:.2f} {row['unit']} ({row['seeds']} seeds; {row['claim']}), "
        f"{row['scale']} ({row['entry']})"
    )


def _form(text):
    from keras_structinit.methods import init_forms

    return init_forms()[text.partition(":")[0]]


#: How a structure feature reads in a line or the decision table (``frozen: True`` -> ``frozen``).
_FEATURE_WORDS = {
    "kernel_size": lambda v: f"k {v}",
    "mlp_blocks": lambda v: "with MLP blocks" if v else "no MLP blocks",
    "frozen": lambda v: "frozen" if v else "trained",
    "attention": lambda v: "with self-attention" if v else "no self-attention",
    "plain": lambda v: "plain convs" if v else "a depthwise conv among them",
    "family": lambda v: f"family {v}",
    "same_family": lambda v: "same family as the model" if v else "another family",
}


def _condition(row):
    """``"k 9x9, no MLP blocks, frozen"``: a row's structure condition in words."""
    words = (_FEATURE_WORDS.get(k, lambda v, k=k: f"{k} {v}")(v) for k, v in row["condition"].items())
    return ", ".join(words) or "any"


def _decide(structure, rows, data, baseline):
    """``(row or None, line)`` for one structure group."""
    kind = [r for r in rows if not r["together"] and r["structure"] == structure.kind]
    found = [r for r in kind if _matches(r, structure)]
    if not found:
        measured = "; ".join(f"{r['form']} on {_condition(r)}" for r in kind)
        return None, f"{structure.label}: {baseline}; no row measured an init on such a group" + (
            f" (measured: {measured})" if measured else ""
        )
    supported = [r for r in found if r["verdict"] == "yes"]
    if not supported:
        row = found[0]
        if row["effect"] is None:
            return None, f"{structure.label}: {baseline}; {row['form']} not measured ({row['entry']})"
        said = f"{row['form']} measured {_measured(row)}: {row['verdict']}"
        return None, f"{structure.label}: {baseline}; {said}"
    row = supported[0]
    if _form(row["form"]).needs_data and data is None:
        return None, f"{structure.label}: {baseline}; {row['form']} ({_measured(row)}) needs data: pass data"
    return row, f"{structure.label}: {row['form']}, {_measured(row)}"


def _same_kind_refusals(chosen, decided):
    """Drops a form chosen for one group of a kind when another group of that kind has no support
    (the form acts on every one of them); the lines saying so."""
    lines = []
    for structure, row in list(chosen.items()):
        others = [s for s, r in decided if s.kind == structure.kind and s is not structure and r is None]
        if others:
            del chosen[structure]
            lines.append(
                f"{row['form']}: not applied; it acts on every {structure.kind} group and "
                f"{others[0].label} has no support"
            )
    return lines


def _variables(model, form):
    """The variable paths ``form`` acts on (every variable for a form without targets)."""
    targets = _form(form).targets
    if not targets:
        return {v.path for v in model.variables}
    return {v.path for which in targets for _, v in _found(model, which)}


def _compose(model, chosen, rows):
    """Keeps the chosen forms that may go together; the lines saying what composition decided."""
    lines = []
    kept = list(chosen.values())
    for a, b in [(a, b) for i, a in enumerate(kept) for b in kept[i + 1 :]]:
        if a not in kept or b not in kept:
            continue
        names = {_form(a["form"]).name, _form(b["form"]).name}
        together = [r for r in rows if r["together"] and set(r["together"]) == names]
        larger, smaller = sorted((a, b), key=lambda r: -(r["effect"] or 0))
        if together and together[0]["verdict"] == "yes":
            lines.append(f"{a['form']} + {b['form']}: together, {_measured(together[0])}")
            continue
        if together:
            kept.remove(smaller)
            lines.append(
                f"{a['form']} + {b['form']}: measured together, {_measured(together[0])}: "
                f"{together[0]['verdict']}; only {larger['form']} (the larger effect) applied"
            )
        elif _variables(model, a["form"]) & _variables(model, b["form"]):
            kept.remove(smaller)
            lines.append(
                f"{a['form']} + {b['form']}: never measured together and both act on the same "
                f"variables; only {larger['form']} (the larger effect) applied"
            )
        else:
            lines.append(
                f"{a['form']} + {b['form']}: never measured together; they act on different "
                "variables: both applied"
            )
    return kept, lines


def _spec(model, forms, baseline, teacher_path):
    """The concrete spec: the baseline unless a chosen form acts at its stage, then the forms, each
    argument a form resolves per model (:attr:`InitForm.resolve`) spelled out."""
    from keras_structinit.methods import parse_init_spec

    texts = [f"{t}:{os.fspath(teacher_path)}" if _form(t).load is not None else t for t in forms]
    if _form(baseline).stage not in {_form(t).stage for t in texts}:
        texts.insert(0, baseline)
    parts = parse_init_spec("+".join(texts))
    by_name = {t.partition(":")[0]: t for t in texts}
    return "+".join(
        f"{p.name}:{p.form.resolve(model, p.value)}" if p.form.resolve else by_name.get(p.name, p.name)
        for p in parts
    )


def _teacher(teacher, rows):
    """``(loaded teacher or None, its path)``; a path is loaded by the form that reads teachers."""
    if teacher is None:
        return None, None
    if not isinstance(teacher, (str, os.PathLike)):
        raise TypeError(f"`teacher` must be a path to a .keras file. Received: {type(teacher).__name__}")
    loader = next((_form(r["form"]).load for r in rows if r["structure"] == "teacher"), None)
    if loader is None:
        raise ValueError("`teacher`: no row of the evidence measures an init from a teacher")
    return loader(os.fspath(teacher)), teacher


def choose(model, *, data=None, teacher=None, evidence=None):
    """The :class:`Choice` of ``auto`` on a built ``model``: ``data`` (images or ``None``) and
    ``teacher`` (a ``.keras`` path or ``None``) make the forms that need them eligible; ``evidence``
    is a table (:func:`load_evidence`'s dict) or its path, the shipped one by default."""
    table = evidence if isinstance(evidence, dict) else load_evidence(evidence)
    rows, baseline = table["rows"], table["baseline"]["form"]
    loaded, teacher_path = _teacher(teacher, rows)
    groups = structures(model, loaded)
    decided = [(s, *_decide(s, rows, data, baseline)) for s in groups]
    lines = [line for _, _, line in decided]
    chosen = {s: r for s, r, _ in decided if r is not None}
    lines += _same_kind_refusals(chosen, [(s, r) for s, r, _ in decided])
    kept, composed = _compose(model, chosen, rows)
    forms = list(dict.fromkeys(r["form"] for r in kept))
    spec = _spec(model, forms, baseline, teacher_path)
    if not groups:
        lines.append(
            "no depthwise convs, MLP blocks, self-attention layers, first convs or teacher found: "
            f"{baseline} ({table['baseline']['why']}) everywhere"
        )
    elif not forms:
        lines.append(f"nothing the evidence supports: {baseline} ({table['baseline']['why']}) everywhere")
    instead = [f for f in forms if _form(f).stage == _form(baseline).stage]
    if instead:
        lines.append(f"{instead[0]} writes the whole model's weights, in place of {baseline}")
    return Choice(spec, [*lines, *composed], kept)


def _one_teacher(value, teacher):
    """The teacher of ``auto:TEACHER.keras`` (``value``) or of the ``teacher`` keyword; never two."""
    if value is not None and teacher is not None and os.fspath(value) != os.fspath(teacher):
        raise ValueError(
            f"`teacher` {os.fspath(teacher)!r} and the spec's auto:{os.fspath(value)} name two teachers: "
            "give one"
        )
    return teacher if teacher is not None else value


def expand(model, value, *, data=None, teacher=None):
    """``auto``'s :attr:`InitForm.expand`: ``(the concrete spec, its lines)`` on ``model``; ``value``
    is the spec's teacher (``auto:TEACHER.keras``) or ``None``."""
    choice = choose(model, data=data, teacher=_one_teacher(value, teacher))
    return choice.spec, choice.lines


def decision_table(evidence=None):
    """The Markdown decision table of the evidence (``docs/initialize.md`` shows it)."""
    from keras_structinit.utils.reporting import format_table

    table = evidence if isinstance(evidence, dict) else load_evidence(evidence)
    rows = [
        {
            "structure": r["structure"] + (f" ({_condition(r)})" if r["condition"] else ""),
            "form": f"`{r['form']}`",
            "verdict": r["verdict"],
            "effect": "—" if r["effect"] is None else f"{r['effect']:+.2f} ± {r['error']:.2f}",
            "seeds": str(r["seeds"]),
            "scale": r["scale"],
            "anchor": f"[{r['entry']}](../{r['anchor']})",
            "left_out": r["left_out"] or "—",
        }
        for r in table["rows"]
    ]
    columns = (
        ("Structure (condition)", "structure"),
        ("Form", "form"),
        ("Verdict", "verdict"),
        ("Effect ± SE (points)", "effect"),
        ("Seeds", "seeds"),
        ("Scale", "scale"),
        ("REPORT", "anchor"),
        ("Sub-claims left out", "left_out"),
    )
    return format_table(rows, columns)


def apply(model, value, *, data, seed):
    """``auto``'s :attr:`InitForm.apply` (where a caller applies it without expanding it first):
    the chosen spec applied; the variable paths written."""
    from keras_structinit.methods import initialize

    return initialize(model, choose(model, data=data, teacher=value).spec, data=data, seed=seed)
