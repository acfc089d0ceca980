"""The baseline's record: PyTorch's default uniform init, the papers' baseline."""

from keras_structinit.methods import InitForm, Method


def _torch_default(model, value, *, data, seed):
    from keras_structinit.baseline.torch_default import apply_torch_default

    return apply_torch_default(model, seed=seed)


def _torch_default_depthwise(model, value, *, data, seed):
    from keras_structinit.baseline.torch_default import apply_torch_uniform

    return apply_torch_uniform(model, seed=seed)


METHOD = Method(
    name="baseline",
    title="PyTorch's default uniform init of conv and Dense layers (the papers' baseline)",
    paper="PyTorch's default init of conv and Linear layers, U[-1/sqrt(fan_in), 1/sqrt(fan_in)]",
    package=__package__,
    docs="docs/initialize.md",
    forms=(
        InitForm("torch-default", "PyTorch's default U[-1/sqrt(fan_in), 1/sqrt(fan_in)] on every conv and "
                 "Dense kernel and bias (the papers' baseline)", _torch_default, "weights"),
        InitForm("torch-default-depthwise", "PyTorch's default U[-1/sqrt(fan_in), 1/sqrt(fan_in)] on the "
                 "depthwise kernels only", _torch_default_depthwise, "spatial", targets=("depthwise",)),
    ),
    exports={
        "TorchDefaultUniform": ".torch_default",
        "apply_torch_default": ".torch_default",
        "apply_torch_uniform": ".torch_default",
    },
    public={
        "": ("apply_torch_default", "apply_torch_uniform"),
        "initializers": ("TorchDefaultUniform", "apply_torch_default"),
    },
    model_functions=("apply_torch_default", "apply_torch_uniform"),
    serializable=(".torch_default",),
    pure=(".",),
    order=0,  # the other methods start from it: its forms come first in --help
)
