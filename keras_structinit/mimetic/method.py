"""The mimetic method's record: the ``mean-shift`` form, its exports and the ``"mlp_first"`` selector."""

from keras_structinit.methods import InitForm, Method, Selector, finite_number
from keras_structinit.mimetic.blocks import MLP_DESCRIPTION


def _default_b():
    from keras_structinit.mimetic.shift import DEFAULT_B

    return DEFAULT_B


def _mean_shift(model, value, *, data, seed):
    from keras_structinit.mimetic.apply import apply_mean_shift

    return apply_mean_shift(model, b=value, redraw=False, seed=seed)


def _mlp_first(layer):
    from keras_structinit.mimetic.apply import mlp_first_kernel

    return mlp_first_kernel(layer)


METHOD = Method(
    name="mimetic",
    title="Mimetic MLP init: the first Dense layer of each MLP block gets a small nonzero mean",
    paper="Trockman & Kolter, Mimetic Initialization of MLPs",
    package=__package__,
    docs="docs/mimetic.md",
    forms=(
        InitForm("mean-shift", "mimetic mean shift b of each MLP block's first layer, on torch-default "
                 "unless another form sets the weights (Trockman & Kolter, Sec. 3)",
                 _mean_shift, "mlp", arg="B", default=_default_b, parse=finite_number,
                 targets=("mlp_first",), base="torch-default"),
    ),
    exports={
        "MeanShift": ".initializers",
        "MLP_FIRST_LAYERS": ".blocks",
        "apply_mean_shift": ".apply",
        "find_mlp_kernels": ".apply",
    },
    public={"": ("apply_mean_shift",), "initializers": ("MeanShift",)},
    model_functions=("apply_mean_shift",),
    serializable=(".initializers",),
    selectors=(Selector("mlp_first", _mlp_first, "first layer of an MLP block", MLP_DESCRIPTION),),
)
