"""``structinit inspect``: :func:`keras_structinit.inspect` on a model file (or any ``structinit
init`` MODEL), writing ``report.md``, ``report.json`` and the report's PNGs (with matplotlib) to
``--out`` and printing the summary.

A ``.keras`` file's records are read as :func:`~keras_structinit.engine.freezing.load_frozen_model` and
``structinit init`` write them: the kernels frozen when it was saved are reported frozen, and the
variables an init wrote name it."""

from __future__ import annotations

import importlib.util
import os

from keras_structinit import methods
from keras_structinit.methods.inspection import initializers_in_file, inspect, recorded_spec
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
from keras_structinit.utils.io_utils import OutputLock, check_output, check_unlocked, write_text

__all__ = ["NO_FIGURES", "inspect_model", "run"]

#: The line ``structinit inspect`` prints without matplotlib.
NO_FIGURES = "Skipped the figures: they need matplotlib (pip install 'keras-structinit[viz]')"


def _file_records(net, model):
    """Marks the variables the ``.keras`` file ``model`` records as frozen non-trainable, as
    :func:`~keras_structinit.engine.freezing.load_frozen_model` does; returns the file's ``{path: init}``
    and its recorded init spec (``{}, None`` for another MODEL form)."""
    if not (str(model).endswith(".keras") and os.path.isfile(model)):
        return {}, None
    from keras_structinit.engine.freezing import _recorded_variables  # load_frozen_model's own reading

    for variable in _recorded_variables(net, model):
        variable.trainable = False
    return initializers_in_file(model, net), recorded_spec(model)


def _has_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


def inspect_model(
    model, out, *, data=None, data_scaling="channel", seed=0, overwrite=False, input_shape=None, classes=None
):
    """Inspects ``model`` (see ``structinit init`` for its forms) and writes ``out``/report.md,
    report.json and the figures; returns the :class:`~keras_structinit.methods.inspection.InspectionReport`
    and the paths written (no figures without matplotlib)."""
    validation.text(model, "MODEL")
    validation.one_of(data_scaling, "--data-scaling", DATA_SCALINGS)
    check_exists(data, "--data")
    names = ("report.md", "report.json", *(methods.figure_names() if _has_matplotlib() else ()))
    check_unlocked(folders=[(out, "--out")])  # another inspect writing --out: before "exists"
    for name in names:
        check_output(
            os.path.join(out, name), "--out", overwrite=overwrite, inputs=[model, data], hint=OVERWRITE_HINT
        )
    with OutputLock(out, "--out"):
        return _inspect(model, out, names, data, data_scaling, seed, overwrite, input_shape, classes)


def _inspect(model, out, names, data, data_scaling, seed, overwrite, input_shape, classes):
    from keras_structinit.models.spec import model_from
    from keras_structinit.recipes.training_data import scaled_labeled_images

    net = model_from(model, input_shape=input_shape, classes=classes)
    # The labelled images: the specialization section splits the neurons' activations by class.
    labeled = None if data is None else scaled_labeled_images(data, data_scaling, seed, "--data")
    initializers, init_spec = _file_records(net, model)
    report = inspect(net, data=labeled, initializers=initializers)
    report.init_spec = init_spec
    if not (report.spatial or report.mlp or report.first_layer):
        raise ValueError(f"MODEL {model!r} has no spatial convolution and no MLP block to inspect")
    os.makedirs(out, exist_ok=True)
    figures = report.figures(out, overwrite=overwrite) if len(names) > 2 else []
    write_text(
        os.path.join(out, "report.md"), report.to_markdown(figures=[os.path.basename(f) for f in figures])
    )
    report.to_json(os.path.join(out, "report.json"))
    return report, [os.path.join(out, "report.md"), os.path.join(out, "report.json"), *figures]


def run(args):
    """Runs ``structinit inspect``; one-line errors (exit 2) for bad input."""
    try:
        report, written = inspect_model(
            args.model,
            args.out,
            data=args.data,
            data_scaling=args.data_scaling,
            seed=args.seed,
            overwrite=args.overwrite,
            input_shape=args.input_shape,
            classes=args.classes,
        )
    except INPUT_ERRORS as err:
        return usage_error("inspect", spelled(str(err), SIZE_FLAGS))
    text = report.to_markdown()
    print(text.split("## Every layer")[0].rstrip(), flush=True)
    print(f"\nWrote {', '.join(written)}", flush=True)
    if not _has_matplotlib():
        print(NO_FIGURES, flush=True)
    return 0
