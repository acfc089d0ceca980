"""``structinit init``: any init spec applied to your own model, written as a new ``.keras`` file.

``MODEL`` is any form of a model argument (:class:`keras_structinit.models.spec.ModelSpec`: a zoo
name, ``keras.applications:NAME[:WEIGHTS]``, a ``.keras`` file, a KerasHub preset folder,
``keras_hub:PRESET``, ``keras_cv:PRESET``); zoo and keras.applications models are built with
``--input-shape`` and ``--classes``. The spec is any ``--init`` form, joined by ``+``
(:func:`keras_structinit.initialize`). The command prints, and writes to ``--report``, what
changed: per layer kind the layers and variables, and per variable its initializer and its
mean and std before and after. Nothing is written before every input has been checked and the
init has run; the model is saved atomically and never over ``MODEL`` or a file the spec reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import keras
import numpy as np

from keras_structinit import methods
from keras_structinit.engine.freezing import freeze_spatial
from keras_structinit.engine.walker import iter_layers, own_variables
from keras_structinit.methods import apply_parts, expand_parts, load_parts, parse_init_spec
from keras_structinit.methods.inspection import record_initializers
from keras_structinit.models.spec import model_from
from keras_structinit.recipes.training_data import scaled_images
from keras_structinit.utils import validation
from keras_structinit.utils.arguments import (
    DATA_SCALINGS,
    INPUT_ERRORS,
    OVERWRITE_HINT,
    SIZE_FLAGS,
    check_exists,
    spelled,
    usage_error,
)
from keras_structinit.utils.io_utils import (
    atomic_path,
    check_output,
    check_unlocked,
    locked_outputs,
    write_text,
)
from keras_structinit.utils.reporting import format_table

__all__ = ["InitReport", "init_model", "run"]


@dataclass
class InitReport:
    """What ``structinit init`` changed: one row per variable written, in model order."""

    model: str
    out: str
    spec: str
    seed: int
    rows: list = field(default_factory=list)
    frozen: list = field(default_factory=list)
    found: list = field(default_factory=list)  # markdown lines: what the forms' own selectors found
    resolved: str | None = None  # the concrete spec a form choosing per model (auto) stood for
    choices: list = field(default_factory=list)  # its lines: per structure group, what and why

    def kinds(self):
        """``[{"kind", "layers", "variables"}]``: per layer class, how many layers and variables changed
        (layers told apart by their variables' paths: the ``query`` sub-layers of two
        ``MultiHeadAttention`` layers share a name, not a path)."""
        kinds = {}
        for row in self.rows:
            entry = kinds.setdefault(row["kind"], {"kind": row["kind"], "layers": set(), "variables": 0})
            entry["layers"].add(_layer_key(row))
            entry["variables"] += 1
        return [{**k, "layers": len(k["layers"])} for k in kinds.values()]

    def to_markdown(self):
        resolved = f" -> `{self.resolved}`" if self.resolved not in (None, self.spec) else ""
        lines = [
            f"# structinit init: {self.model} -> {self.out}",
            "",
            *(
                [f"Init `{self.spec}` chose, per structure group:", *(f"- {c}" for c in self.choices), ""]
                if self.choices
                else []
            ),
            f"Init `{self.spec}`{resolved} (seed {self.seed}): {len(self.rows)} variables of "
            f"{len({_layer_key(r) for r in self.rows})} layers written"
            + (f"; {len(self.frozen)} kernels frozen." if self.frozen else "."),
            "",
            format_table(
                self.kinds(), (("layer kind", "kind"), ("layers", "layers"), ("variables", "variables"))
            ),
            "",
            format_table(
                self.rows,
                (
                    ("variable", "path"),
                    ("layer kind", "kind"),
                    ("initializer", "initializer"),
                    ("mean before", "mean_before", ".4g"),
                    ("std before", "std_before", ".4g"),
                    ("mean after", "mean_after", ".4g"),
                    ("std after", "std_after", ".4g"),
                ),
            ),
        ]
        if self.found:
            lines += ["", *self.found]
        return "\n".join(lines) + "\n"


def _layer_key(row):
    """What tells a row's layer apart from another of the same name: its variable's path less the
    variable's own name."""
    return row["path"].rsplit("/", 1)[0] if "/" in row["path"] else row["layer"]


def _stats(variable):
    values = np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32")), dtype=np.float64)
    return float(values.mean()), float(values.std())


def init_model(
    model,
    spec,
    out,
    *,
    data=None,
    data_scaling="channel",
    seed=0,
    freeze=None,
    report=None,
    overwrite=False,
    input_shape=None,
    classes=None,
    teacher=None,
):
    """Applies ``spec`` to ``model`` (see the module docstring) and saves it to ``out``; returns
    ``(model, InitReport)``. ``teacher``: a ``.keras`` file a form choosing per model (``auto``) may
    select weights from, recorded as that form's argument (``--teacher T`` is ``--init auto:T``).
    Every input is checked first; ``ValueError`` when nothing matched."""
    validation.text(model, "MODEL")
    parts = parse_init_spec(spec)
    seed = validation.random_seed(seed, "--seed")
    validation.one_of(data_scaling, "--data-scaling", DATA_SCALINGS)
    if freeze is not None:
        validation.one_of(freeze, "--freeze", ("depthwise", "all_spatial"))
    if not str(out).endswith(".keras"):
        raise ValueError(f"--out must be a .keras path. Received: {out!r}")
    needs = _needs(parts, data)
    if teacher is not None:
        spec = _with_teacher(spec, parts, teacher)
        parts = parse_init_spec(spec)  # the teacher is the spec's argument from here on
    inputs = [model, data, *(p.value for p in parts if p.form.reads_file)]
    check_unlocked(files=[(out, "--out"), (report, "--report")])  # before "exists: pass --overwrite"
    out = check_output(out, "--out", overwrite=overwrite, inputs=inputs, hint=OVERWRITE_HINT)
    if report is not None:
        report = check_output(
            report, "--report", overwrite=overwrite, inputs=[*inputs, out], hint=OVERWRITE_HINT
        )
    with locked_outputs(files=[(out, "--out"), (report, "--report")]):  # another init writing them: refused
        return _init(
            model,
            spec,
            parts,
            out,
            data=data,
            data_scaling=data_scaling,
            seed=seed,
            freeze=freeze,
            report=report,
            sizes={"input_shape": input_shape, "classes": classes},
            needs=needs,
        )


def _needs(parts, data):
    """The forms that read ``--data`` (checked to be given and to exist): those that measure images,
    or every form where one chooses per model (``auto``) and images are given."""
    needs = [p.name for p in parts if p.form.needs_data]
    if any(p.form.expand is not None for p in parts) and data is not None:
        needs = [p.name for p in parts]  # a form choosing per model reads the images given
    if needs and data is None:
        raise ValueError(
            f"--init {', '.join(needs)} measures images: pass --data (an .npz, an ImageFolder "
            "directory or its .zip)"
        )
    check_exists(data, "--data")
    return needs


def _with_teacher(spec, parts, teacher):
    """``--teacher``: a ``.keras`` file that exists, read by a form choosing per model (``auto``)
    only; the spec with it as that form's argument (``auto:TEACHER.keras``, what is recorded)."""
    validation.text(teacher, "--teacher")
    choosing = [p for p in parts if p.form.expand is not None]
    if not choosing:
        raise ValueError(
            f"--teacher is read by --init auto (it chooses weight selection from it where the "
            f"evidence supports it); to select from a teacher yourself pass --init select:{teacher}"
        )
    if not teacher.endswith(".keras"):
        raise ValueError(f"--teacher must be a .keras file. Received: {teacher!r}")
    check_exists(teacher, "--teacher")
    (part,) = choosing  # such a form stands alone
    if part.value is not None and part.value != teacher:
        raise ValueError(f"--teacher {teacher} and --init {spec} name two teachers: give one")
    return f"{part.name}:{teacher}"


def _found(net, parts):
    """Markdown lines of what the forms found where their record brings its own walker selector
    (e.g. MLP blocks found by structure, each first kernel paired with its second): that record's
    ``structinit inspect`` sections, computed without data."""
    ran = {p.form.name for p in parts}
    records = [
        r
        for r in methods.records()
        if any(f.name in ran and set(f.targets) & {s.name for s in r.selectors} for f in r.forms)
    ]
    lines = []
    for inspector, inspector_parts in methods.inspectors().values():
        if any(inspector in r.inspectors for r in records):
            section = inspector.load()(net, data=None, parts=[p.load() for p in inspector_parts])
            lines += section.markdown()
    return lines


def _init(model, spec, parts, out, *, data, data_scaling, seed, freeze, report, sizes, needs):
    net = model_from(model, **sizes)
    images = None if not needs else scaled_images(data, data_scaling, seed, "--data")
    # Frozen before `auto` reads the model: the evidence differs for frozen and trained filters.
    frozen = freeze_spatial(net, which=freeze) if freeze is not None else []
    run_parts, resolved, choices = expand_parts(net, load_parts(parts), data=images)
    layer_of = {id(v): layer for layer in [*iter_layers(net), net] for v in own_variables(layer)}
    by_path = {v.path: v for v in net.weights}
    before = {path: _stats(v) for path, v in by_path.items()}
    written = {}
    for part, paths in apply_parts(net, run_parts, data=images, seed=seed):
        text = part.name if part.value is None or part.form.load is not None else f"{part.name}:{part.value}"
        written.update(dict.fromkeys(paths, text))  # the last form to write a variable is its initializer
    if not written:
        raise ValueError(f"--init {spec} changes nothing in {net.name}: nothing it acts on was found")
    rows = []
    for path in (p for p in by_path if p in written):
        variable = by_path[path]
        layer = layer_of.get(id(variable))
        after = _stats(variable)
        rows.append(
            {
                "path": path,
                "layer": layer.name if layer else path.rsplit("/", 1)[0],
                "kind": type(layer).__name__ if layer else "?",
                "initializer": written[path],
                "mean_before": before[path][0],
                "std_before": before[path][1],
                "mean_after": after[0],
                "std_after": after[1],
            }
        )
    result = InitReport(
        model=model,
        out=out,
        spec=spec,
        seed=seed,
        rows=rows,
        frozen=frozen,
        found=_found(net, run_parts),
        resolved=resolved,
        choices=choices,
    )
    with atomic_path(out) as tmp:
        net.save(tmp)
        # What `structinit inspect` names as each one's init, and the spec a rerun applies.
        record = {"spec": spec, "resolved": resolved or spec, "seed": seed}
        record_initializers(tmp, net, written, spec=record)
    if report is not None:
        write_text(report, result.to_markdown())
    return net, result


def run(args):
    """Runs ``structinit init``; one-line errors (exit 2) for bad input, before anything is written."""
    try:
        _, result = init_model(
            args.model,
            args.init,
            args.out,
            data=args.data,
            data_scaling=args.data_scaling,
            seed=args.seed,
            freeze=args.freeze,
            report=args.report,
            overwrite=args.overwrite,
            input_shape=args.input_shape,
            classes=args.classes,
            teacher=args.teacher,
        )
    except INPUT_ERRORS as err:
        return usage_error("init", spelled(str(err), SIZE_FLAGS))
    print(result.to_markdown(), flush=True)
    print(f"Wrote {result.out}" + (f" and {args.report}" if args.report else ""), flush=True)
    return 0
