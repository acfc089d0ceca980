"""Method records, init specs and paper setups: the one place to import them from.

A method is one folder: ``keras_structinit/<name>/method.py`` holding ``METHOD = Method(...)``
(a third-party package declares the module holding its record under the entry-point
group ``keras_structinit.methods``); the CLI, the namespaces, the registry, ``structinit inspect``
and the walker read the records, and nothing else names a method (this module and those below
included). What is imported from here lives in its own module:

* :mod:`.method_records`: the records' types (:class:`Method`, :class:`InitForm`, :class:`Selector`,
  :class:`Command`, :class:`Inspector`), the ``parse`` helpers of a form's argument, and the
  discovery of the records (:func:`records` and what derives from them);
* :mod:`.init_spec`: the init-spec grammar (:func:`parse_init_spec`, :class:`InitPart`) and applying
  a spec (:func:`initialize`, :func:`apply_parts`, :func:`expand_parts`: a form choosing a spec per
  model replaced by the spec it chooses);
* :mod:`.paper_setups`: :class:`PaperSetup`, :data:`RUN_SETTINGS` and the departures setups share
  (:data:`HELD_OUT_NOTE`, :data:`CONVMIXER_PIPELINE_NOTES`);
* ``core/method.py``: the core's own record (the ``default`` form and the functions that act on any
  model), found as the methods' records are.

Importing this module imports no Keras and no method; it hands the records' selectors to the walker
(through :mod:`._hooks`).
"""

from keras_structinit.methods.init_spec import (
    InitPart,
    apply_parts,
    check_parts,
    expand_parts,
    form_usage,
    initialize,
    load_parts,
    parse_init_spec,
    part_seeds,
)
from keras_structinit.methods.method_records import (
    ENTRY_POINT_GROUP,
    NAMESPACES,
    STAGES,
    Command,
    InitForm,
    Inspector,
    Method,
    Selector,
    commands,
    count,
    existing_file,
    figure_names,
    finite_number,
    init_forms,
    inspectors,
    namespace_exports,
    paper_setups,
    records,
    selectors,
    serializable_modules,
)
from keras_structinit.methods.setup_records import (
    CONVMIXER_PIPELINE_NOTES,
    HELD_OUT_NOTE,
    RUN_SETTINGS,
    PaperSetup,
)

__all__ = [
    "CONVMIXER_PIPELINE_NOTES",
    "ENTRY_POINT_GROUP",
    "HELD_OUT_NOTE",
    "NAMESPACES",
    "RUN_SETTINGS",
    "STAGES",
    "Command",
    "InitForm",
    "InitPart",
    "Inspector",
    "Method",
    "PaperSetup",
    "Selector",
    "apply_parts",
    "check_parts",
    "commands",
    "count",
    "existing_file",
    "expand_parts",
    "figure_names",
    "finite_number",
    "form_usage",
    "init_forms",
    "initialize",
    "inspectors",
    "load_parts",
    "namespace_exports",
    "paper_setups",
    "parse_init_spec",
    "part_seeds",
    "records",
    "selectors",
    "serializable_modules",
]


def __getattr__(name):
    if name == "INIT_FORMS":  # ``{name: InitForm}`` as of now (plug-ins included)
        return init_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
