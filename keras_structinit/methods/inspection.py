"""What an init did, or what training made of it: the papers' views of a model's weights.

``keras_structinit.inspect(model, *, data=None, initializers=None)`` measures, on any built Keras
model, every layer: each variable's shape, trainable flag, norm, mean and std, the init that wrote
it where that is known (``initializers``; ``structinit init`` records it in its file,
:func:`record_initializers`) and the initializer its layer's config names. The method records add
their sections (:class:`~keras_structinit.methods.Inspector`, listed in ``docs/command-line.md``):
views of the spatial convs, of the MLP blocks, of the first layer against ``data``. A model
without what a section measures has it empty. The report is :class:`InspectionReport`
(``to_dict``, ``to_json``, ``to_markdown``, ``figures``).

A section's function returns a :class:`Section`; the helpers here (:func:`values`,
:data:`FIGURE_FILTERS`) are shared by the methods' sections. This module names no method.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np

from keras_structinit import methods
from keras_structinit.engine import walker
from keras_structinit.engine.contract import check_model
from keras_structinit.utils.io_utils import write_text
from keras_structinit.utils.reporting import MISSING, format_table

__all__ = [
    "FIGURE_FILTERS",
    "INIT_RECORD",
    "InspectionReport",
    "Section",
    "images_and_labels",
    "initializers_in_file",
    "inspect",
    "record_initializers",
    "recorded_spec",
    "values",
]

#: Filters (and data eigenvectors) that a section's figure draws at most.
FIGURE_FILTERS = 16


def values(variable):
    """A variable's values as a float64 NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32")), dtype=np.float64)


def images_and_labels(data):
    """``(images, labels)`` of ``inspect``'s ``data``: images ``(N, H, W, C)`` alone (labels
    ``None``) or a pair ``(images, labels)``, labels integers ``(N,)`` (a NumPy array)."""
    if data is None:
        return None, None
    if hasattr(data, "shape"):
        return data, None
    if isinstance(data, (tuple, list)) and len(data) == 2 and hasattr(data[0], "shape"):
        images, labels = data
        labels = np.asarray(keras.ops.convert_to_numpy(labels) if hasattr(labels, "shape") else labels)
        if labels.ndim == 2 and labels.shape[1] > 1:  # one-hot
            labels = labels.argmax(axis=1)
        labels = labels.reshape(-1) if labels.ndim == 2 and labels.shape[1] == 1 else labels
        if labels.shape != (images.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"`data` as (images, labels) needs integer labels (N,) or one-hot (N, "
                f"classes) for the N = {images.shape[0]} images. Received labels of dtype "
                f"{labels.dtype}, shape {labels.shape}"
            )
        return images, labels
    raise TypeError(
        f"`data` must be an image array (N, H, W, C) or a pair (images, labels). "
        f"Received: {type(data).__name__}"
    )


@dataclass
class Section:
    """One section of an :class:`InspectionReport`, as an :class:`~keras_structinit.methods.Inspector`'s
    function returns it; a method's section overrides what it shows.

    Attributes:
        value: the section in the report (``report.<section>``, ``to_dict()[section]``): rows, a
            dict, or empty (``[]``, ``None``) for a model without what it measures.
        arrays: ``{name: array}`` its figures draw (not in ``to_dict()``), also in
            :attr:`InspectionReport.arrays`.

    Any other public attribute of a subclass is read through the report (``report.<attribute>``).
    """

    value: Any = None
    arrays: dict = field(default_factory=dict, repr=False)

    def summary(self):
        """``{key: value}`` that follows the section in ``to_dict()``."""
        return {}

    def markdown(self):
        """Its lines of :meth:`InspectionReport.to_markdown` (none when it is empty)."""
        return []

    def figures(self, directory, *, overwrite=False):
        """Writes its PNGs to ``directory``; returns their paths."""
        return []


#: What every section has: the report answers these itself.
_SECTION_API = frozenset(("value", "arrays", "summary", "markdown", "figures"))


def _configured_initializer(config, name):
    """The class of the initializer ``config`` (a layer's) names for its variable ``name``:
    ``<name>_initializer``, a kernel's ``kernel_``/``depthwise_initializer`` (``x_kernel``:
    ``x_initializer``), or a one-variable layer's ``initializer``; ``None`` where none is named."""
    keys = [f"{name}_initializer"]
    if name == "kernel":
        keys.append("depthwise_initializer")
    elif name.endswith("_kernel"):
        keys.append(f"{name[: -len('_kernel')]}_initializer")
    keys.append("initializer")
    for key in keys:
        named = config.get(key)
        if isinstance(named, dict):
            return named.get("class_name")
        if isinstance(named, str):
            return named
    return None


def _config(layer):
    try:
        return layer.get_config()
    except (NotImplementedError, TypeError, AttributeError):  # a subclassed model without one
        return {}


def _layers(model, initializers):
    rows = []
    for layer in [*walker.iter_layers(model), model]:
        config = {} if layer is model else _config(layer)
        for variable in walker.own_variables(layer):
            array = values(variable)
            name = variable.path.rsplit("/", 1)[-1]
            rows.append(
                {
                    "path": variable.path,
                    "layer": layer.name,
                    "kind": type(layer).__name__,
                    "shape": list(variable.shape),
                    "trainable": bool(variable.trainable),
                    "norm": float(np.linalg.norm(array)),
                    "mean": float(array.mean()),
                    "std": float(array.std()),
                    "initializer": initializers.get(variable.path),
                    "configured_initializer": _configured_initializer(config, name),
                }
            )
    return rows


#: The asset, in a ``.keras`` archive ``structinit init`` wrote, naming the init that wrote each variable.
INIT_RECORD = "keras_structinit_init.json"


def record_initializers(filepath, model, written, *, spec=None):
    """Adds to ``filepath``, the ``.keras`` file ``model`` was just saved to, ``written`` (``{variable
    path: the init that wrote it}``) as the asset :data:`INIT_RECORD`, which ``structinit inspect``
    shows, with ``spec`` (``{"spec": as given, "resolved": the concrete spec it stood for, "seed"}``;
    ``auto`` resolves per model) where given. Saving the model again drops it: the values may have
    changed since."""
    variables = model.variables
    position = {v.path: i for i, v in enumerate(variables)}
    record = {
        "format_version": 1,
        "variables": len(variables),
        "written": [[position[p], p, form] for p, form in written.items() if p in position],
        **({"spec": dict(spec)} if spec is not None else {}),
    }
    with zipfile.ZipFile(filepath, "a") as archive:
        archive.writestr(f"assets/{INIT_RECORD}", json.dumps(record, indent=1))


def _init_record(filepath):
    """The :data:`INIT_RECORD` of the ``.keras`` file ``filepath``, checked (``None`` without one); a
    record that is not one is a one-line ``ValueError`` naming the file."""
    from keras_structinit.engine.freezing import MAX_RECORD_BYTES

    where = f"The init record in {os.fspath(filepath)!r}"
    with zipfile.ZipFile(filepath) as archive:
        if f"assets/{INIT_RECORD}" not in archive.namelist():
            return None
        with archive.open(f"assets/{INIT_RECORD}") as f:
            text = f.read(MAX_RECORD_BYTES + 1)
    try:
        record = json.loads(text) if len(text) <= MAX_RECORD_BYTES else None
    except ValueError:
        record = None
    ours = isinstance(record, dict) and record.get("format_version") == 1
    written = record.get("written") if ours else None
    spec = record.get("spec", {}) if ours else None
    if not (
        isinstance(written, list)
        and type(record.get("variables")) is int
        and all(
            isinstance(e, list)
            and len(e) == 3
            and type(e[0]) is int
            and isinstance(e[1], str)
            and isinstance(e[2], str)
            for e in written
        )
        and isinstance(spec, dict)
        and all(isinstance(spec.get(k, ""), str) for k in ("spec", "resolved"))
        and type(spec.get("seed", 0)) in (int, type(None))
    ):
        raise ValueError(
            f"{where} is not one this package writes (format_version 1: `variables` and "
            "`written`, [index, path, init] each; optionally `spec`: {spec, resolved, seed})"
        )
    return record


def recorded_spec(filepath):
    """``{"spec", "resolved", "seed"}``: the init spec ``structinit init`` applied to the ``.keras``
    file ``filepath``, as given and as resolved on its model (``auto``: the concrete spec, which a rerun
    applies); ``None`` for a file without that record."""
    record = _init_record(filepath)
    return None if record is None or "spec" not in record else record["spec"]


def initializers_in_file(filepath, model):
    """``{variable path in model: the init that wrote it}`` from the :data:`INIT_RECORD` of the
    ``.keras`` file ``model`` was loaded from (``{}`` without one): by place in ``model.variables``
    (a nested model reloads under shorter paths) where the counts agree, else by path. A record that
    is not one is a one-line ``ValueError`` naming the file."""
    record = _init_record(filepath)
    if record is None:
        return {}
    written = record["written"]
    variables = model.variables
    by_path = {v.path: v for v in variables}
    found = {}
    for index, path, form in written:
        if record["variables"] == len(variables) and 0 <= index < len(variables):
            variable = variables[index]
            if variable.path.rsplit("/", 1)[-1] == path.rsplit("/", 1)[-1]:
                found[variable.path] = form
                continue
        if path in by_path:
            found[path] = form
    return found


@dataclass
class InspectionReport:
    """What :func:`inspect` measured: every layer's variables and the records' sections, each also
    an attribute (``report.spatial``) with whatever else its section offers."""

    model: str
    layers: list = field(default_factory=list)
    sections: dict = field(default_factory=dict)  # {name: Section}, in the report's order
    arrays: dict = field(default_factory=dict, repr=False)  # for figures(): not in to_dict()
    init_spec: dict | None = None  # a .keras file's recorded_spec: `structinit inspect` sets it

    def __getattr__(self, name):
        sections = self.__dict__.get("sections", {})
        if name in sections:
            return sections[name].value
        for section in sections.values():
            if not name.startswith("_") and name not in _SECTION_API and hasattr(section, name):
                return getattr(section, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self):
        out = {"model": self.model, **({"init_spec": self.init_spec} if self.init_spec else {})}
        out["layers"] = self.layers
        for name, section in self.sections.items():
            out[name] = section.value
            out.update(section.summary())
        return out

    def to_json(self, path=None):
        """The report as JSON text; written (atomically) to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        if path is not None:
            write_text(path, text)
        return text

    def figures(self, directory, *, overwrite=False):
        """Writes the sections' PNGs to ``directory`` (needs the ``viz`` extra); returns their paths
        (``docs/command-line.md`` shows them)."""
        os.makedirs(directory, exist_ok=True)
        return [
            path
            for section in self.sections.values()
            for path in section.figures(directory, overwrite=overwrite)
        ]

    def to_markdown(self, figures=()):
        """The report as Markdown; ``figures``: image paths (relative to the file) shown first."""
        lines = [f"# Inspection of {self.model}", ""]
        if self.init_spec:
            given, resolved = self.init_spec.get("spec"), self.init_spec.get("resolved")
            lines += [
                f"Initialized by `structinit init --init {given}`"
                + (f", resolved on this model to `{resolved}`" if resolved and resolved != given else "")
                + (f" (seed {self.init_spec['seed']})" if self.init_spec.get("seed") is not None else "")
                + ": rerun that spec to get the same weights.",
                "",
            ]
        for figure in figures:
            lines += [f"![{os.path.splitext(os.path.basename(figure))[0]}]({figure})", ""]
        for section in self.sections.values():
            lines += section.markdown()
        columns = (
            ("variable", "path"),
            ("layer kind", "kind"),
            ("trainable", "trainable"),
            ("norm", "norm", ".4g"),
            ("mean", "mean", ".4g"),
            ("std", "std", ".4g"),
            ("initializer", "initializer"),
        )
        lines += [
            "## Every layer",
            "",
            "Initializer: the init that wrote the variable, as `structinit init` recorded it in the "
            f"file (or `inspect(..., initializers=...)` was told); {MISSING} where that is not known. "
            "report.json's `configured_initializer` names the one in the layer's config, which drew "
            "the values only if nothing has written them since.",
            "",
            format_table(self.layers, columns),
        ]
        return "\n".join(lines) + "\n"


def inspect(model, *, data=None, initializers=None):
    """The :class:`InspectionReport` of a built ``model`` (see the module docstring).

    Args:
        model: a built ``keras.Model`` (the package's, keras.applications, KerasHub or your own).
        data: optional images ``(N, H, W, C)``, scaled as the model's input is, for the sections
            that measure the model against its data; or ``(images, labels)`` (integer labels
            ``(N,)`` or one-hot), for the sections that also split by class. Sections read it
            with :func:`images_and_labels`.
        initializers: optional ``{variable path: the init that wrote it}`` (e.g. ``dict.fromkeys(
            keras_structinit.initialize(model, spec), spec)``), each row's ``initializer``.

    Example:
        >>> report = keras_structinit.inspect(model)
        >>> print(report.to_markdown())
    """
    check_model(model)
    images_and_labels(data)  # checked before any section runs
    initializers = {} if initializers is None else initializers
    if not isinstance(initializers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in initializers.items()
    ):
        raise TypeError(
            "`initializers` must be None or a dict {variable path: the init that wrote it}. "
            f"Received: {type(initializers).__name__}"
        )
    sections = {
        name: inspector.load()(model, data=data, parts=[part.load() for part in parts])
        for name, (inspector, parts) in methods.inspectors().items()
    }
    arrays = {key: array for section in sections.values() for key, array in section.arrays.items()}
    return InspectionReport(
        model=model.name, layers=_layers(model, initializers), sections=sections, arrays=arrays
    )
