"""The baseline's record: PyTorch's default uniform init, the papers' baseline."""

from keras_structinit.methods import InitForm, Method, finite_number


def _torch_default(model, value, *, data, seed):
    from keras_structinit.baseline.torch_default import apply_torch_default

    return apply_torch_default(model, seed=seed)


def _trunc_normal(model, value, *, data, seed):
    from keras_structinit.baseline.trunc_normal import apply_trunc_normal

    return apply_trunc_normal(model, std=value, seed=seed)


def _positive(text):
    value = finite_number(text)
    if value <= 0:
        raise ValueError(f"takes a standard deviation > 0, e.g. 0.02; got {text!r}")
    return value


def _torch_default_depthwise(model, value, *, data, seed):
    from keras_structinit.baseline.torch_default import apply_torch_uniform

    return apply_torch_uniform(model, seed=seed)


METHOD = Method(
    name="baseline",
    title="The papers' baselines: PyTorch's default uniform init, timm's truncated normal",
    paper="PyTorch's default init of conv and Linear layers, U[-1/sqrt(fan_in), 1/sqrt(fan_in)]",
    package=__package__,
    docs="docs/initialize.md",
    forms=(
        InitForm(
            "torch-default",
            "PyTorch's default U[-1/sqrt(fan_in), 1/sqrt(fan_in)] on every conv and "
            "Dense kernel and bias (the papers' baseline)",
            _torch_default,
            "weights",
        ),
        InitForm(
            "torch-default-depthwise",
            "PyTorch's default U[-1/sqrt(fan_in), 1/sqrt(fan_in)] on the depthwise kernels only",
            _torch_default_depthwise,
            "spatial",
            targets=("depthwise",),
        ),
        InitForm(
            "trunc-normal",
            "timm's default N(0, STD^2) (truncated at +-2) on every conv and Dense "
            "kernel, zero biases (Xu et al. 2024, Sec. 4: the weight-selection baseline as its text "
            "reads)",
            _trunc_normal,
            "weights",
            arg="STD",
            default=0.02,
            parse=_positive,
        ),
    ),
    exports={
        "TorchDefaultUniform": ".torch_default",
        "apply_torch_default": ".torch_default",
        "apply_torch_uniform": ".torch_default",
        "apply_trunc_normal": ".trunc_normal",
    },
    public={
        "": ("apply_torch_default", "apply_torch_uniform", "apply_trunc_normal"),
        "initializers": ("TorchDefaultUniform", "apply_torch_default"),
    },
    model_functions=("apply_torch_default", "apply_torch_uniform", "apply_trunc_normal"),
    serializable=(".torch_default",),
    pure=(".",),
    order=0,  # the other methods start from it: its forms come first in --help
)
