"""The core's record: the ``default`` form (no init: what the command line runs without ``--init``)
and the functions that act on any model, exported into ``keras_structinit``."""

from keras_structinit.methods import InitForm, Inspector, Method, existing_file


def _default(model, value, *, data, seed):
    return []


def _auto(model, value, *, data, seed):
    from keras_structinit.core.auto import apply

    return apply(model, value, data=data, seed=seed)


def _no_teacher():
    return None  # ``auto`` alone: no teacher to weigh weight selection from


def _expand_auto(model, value, *, data, teacher):
    from keras_structinit.core.auto import expand

    return expand(model, value, data=data, teacher=teacher)


METHOD = Method(
    name="core",
    title="the builders' own initialization; initializing any model by spec, freezing, redrawing",
    paper="none: the package's own functions",
    package=__package__,
    docs="docs/initialize.md",
    forms=(
        InitForm("default", "the model builder's own initialization", _default, "weights", alone=True),
        InitForm(
            "auto",
            "the inits the shipped evidence supports for the model's structures, the papers' baseline "
            "elsewhere (one line each says why), weight selection from TEACHER where given and "
            "supported; resolves to a concrete spec",
            _auto,
            "weights",
            arg="TEACHER.keras",
            default=_no_teacher,
            parse=existing_file("a teacher .keras file", ".keras"),
            reads_file=True,
            alone=True,
            expand=_expand_auto,
        ),
    ),
    exports={
        "freeze_spatial": "keras_structinit.engine.freezing",
        "reinitialize": "keras_structinit.engine.reinit",
        "load_frozen_model": "keras_structinit.engine.freezing",
        "initialize": "keras_structinit.methods",
        "parse_init_spec": "keras_structinit.methods",
        "fgsm_accuracy": "keras_structinit.engine.evaluation",
    },
    public={
        "": (
            "fgsm_accuracy",
            "freeze_spatial",
            "load_frozen_model",
            "initialize",
            "parse_init_spec",
            "reinitialize",
        )
    },
    model_functions=("freeze_spatial", "reinitialize"),
    inspectors=(Inspector("auto", ".inspect:auto", order=38),),  # after the methods' sections (10-35)
    pure=(
        ".",
        "keras_structinit",
        "keras_structinit.methods",
        "keras_structinit.utils.validation",
        "keras_structinit.datasets",
        "keras_structinit.utils.arguments",
    ),
    order=-1,  # before every method: ``default`` comes first in --help
)
