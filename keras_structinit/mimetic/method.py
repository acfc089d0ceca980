"""The mimetic method's record: the ``mean-shift`` and ``mimetic-attention`` forms, their exports and the
``"mlp_first"`` and ``"attention"`` selectors."""

from keras_structinit.methods import (
    CONVMIXER_PIPELINE_NOTES,
    HELD_OUT_NOTE,
    InitForm,
    Inspector,
    Method,
    PaperSetup,
    Selector,
    finite_number,
)
from keras_structinit.mimetic.blocks import ATTENTION_DESCRIPTION, MLP_DESCRIPTION


def _default_b():
    from keras_structinit.mimetic.shift import DEFAULT_B

    return DEFAULT_B


def _mean_shift(model, value, *, data, seed):
    from keras_structinit.mimetic.apply import apply_mean_shift

    return apply_mean_shift(model, b=value, redraw=False, seed=seed)


#: What ``mimetic-attention:WHICH`` takes: ``self`` (the default: self-attention layers only, the
#: paper's) or ``all`` (cross-attention layers too).
ATTENTION_WHICH = ("self", "all")


def _which(text):
    if text not in ATTENTION_WHICH:
        raise ValueError(
            f"takes one of {', '.join(ATTENTION_WHICH)} (all: cross-attention too); got {text!r}"
        )
    return text


def _mimetic_attention(model, value, *, data, seed):
    from keras_structinit.mimetic.apply import apply_mimetic_attention

    return apply_mimetic_attention(model, seed=seed, cross_attention=value == "all")


def _check_mimetic_attention(model, value):
    """Refuses what :func:`_mimetic_attention` would refuse, writing nothing."""
    from keras_structinit.mimetic.apply import self_attention_layers

    self_attention_layers(model, cross_attention=value == "all")


def _check_mean_shift(model, value):
    """Refuses a model without MLP blocks, writing nothing."""
    from keras_structinit.mimetic.apply import find_mlp_blocks

    find_mlp_blocks(model)


def _attention(layer):
    from keras_structinit.mimetic.apply import attention_query_kernel

    return attention_query_kernel(layer)


def _mlp_first(layer):
    from keras_structinit.mimetic.apply import mlp_first_kernel

    return mlp_first_kernel(layer)


#: Trockman & Kolter, mimetic MLP init, CIFAR-10: the isotropic ConvNeXt-256/8 (Sec. 3, Fig. 2).
MIMETIC = PaperSetup(
    name="mimetic",
    paper="Trockman & Kolter, Mimetic Initialization of MLPs",
    settings={
        "model": ("convnext-iso-256/8", "Sec. 3: isotropic ConvNeXt-256/8, 2x2 patches"),
        "model_kwargs": ({"kernel_size": 7, "patch_size": 2}, "Sec. 3: 7x7 filters, 2x2 patches"),
        "init": (
            "mean-shift",
            "Sec. 3: PyTorch's default init of every layer, then the MLP shift "
            "(b: the package's default, chosen by its sweep; the paper gives none)",
        ),
        "frozen": (False, "Sec. 3: filters trained"),
        "epochs": (20, "Fig. 2: 10-50 epochs; the gain is largest at 10-20"),
        "batch_size": (512, "Sec. 3: the pipeline of Trockman et al. (2022): batch 512"),
        "optimizer": ("adamw", "Sec. 3 (Trockman et al. 2022): AdamW"),
        "learning_rate": (0.01, "Sec. 3 (Trockman et al. 2022): learning rate .01"),
        "weight_decay": (0.01, "Sec. 3 (Trockman et al. 2022): weight decay .01"),
        "schedule": ("triangular", "Sec. 3 (Trockman et al. 2022): triangular schedule"),
        "rand_augment": (
            "torchvision:n2-m12",
            "Sec. 3 names RandAugment (the pipeline of Trockman et al. "
            "2022), not its N or M; the 92.5% command of the README of ConvMixer's CIFAR script "
            "(locuslab/convmixer-cifar10: --ra-n=2 --ra-m=12), not train.py's default (--ra-n 1 "
            "--ra-m 8)",
        ),
    },
    notes=(*CONVMIXER_PIPELINE_NOTES, HELD_OUT_NOTE),
)

#: The same paper's ViT comparison (Sec. 3, Fig. 2): a tiny ViT with the MLP and self-attention inits.
MIMETIC_VIT = PaperSetup(
    name="mimetic-vit",
    paper="Trockman & Kolter, Mimetic Initialization of MLPs",
    settings={
        "model": (
            "vit-tiny-8/2",
            "Sec. 3, ViT results: dimension 192, depth 8, 3 heads; 2x2 patches for 32x32 inputs",
        ),
        "init": (
            "mean-shift+mimetic-attention",
            "Sec. 3 and Fig. 2: the MLP init with the self-attention "
            "mimetic init (Trockman & Kolter 2023) on PyTorch's default",
        ),
        **{k: v for k, v in MIMETIC.settings.items() if k not in ("model", "model_kwargs", "init")},
    },
    notes=(
        "the self-attention init's alpha and beta (0.7, 0.4) come from that paper's public code; this "
        "paper gives none",
        *CONVMIXER_PIPELINE_NOTES,
        HELD_OUT_NOTE,
    ),
)

METHOD = Method(
    name="mimetic",
    title="Mimetic init: the first Dense layer of each MLP block gets a small nonzero mean; "
    "self-attention's W_q W_k^T ~ +I, W_v W_proj ~ -I",
    paper="Trockman & Kolter, Mimetic Initialization of MLPs",
    package=__package__,
    docs="docs/mimetic.md",
    forms=(
        InitForm(
            "mean-shift",
            "mimetic mean shift b of each MLP block's first layer, on torch-default "
            "unless another form sets the weights (Trockman & Kolter, Sec. 3)",
            _mean_shift,
            "mlp",
            arg="B",
            default=_default_b,
            parse=finite_number,
            targets=("mlp_first",),
            base="torch-default",
            check=_check_mean_shift,
        ),
        InitForm(
            "mimetic-attention",
            "mimetic self-attention init: per head W_q W_k^T ~ 0.7 Z + 0.7 I, "
            "W_v W_proj ~ 0.4 Z - 0.4 I, sinusoidal position embeddings (Trockman & Kolter, ICML "
            "2023, Sec. 3); the rest of the model as built; WHICH: self (default: cross-attention "
            "skipped) or all",
            _mimetic_attention,
            "attention",
            arg="WHICH",
            default="self",
            parse=_which,
            targets=("attention",),
            check=_check_mimetic_attention,
        ),
    ),
    exports={
        "MeanShift": ".initializers",
        "ScalarBiasDense": ".layers",
        "apply_mimetic_attention": ".apply",
        "find_attention_layers": ".apply",
        "MLP_FIRST_LAYERS": ".blocks",
        "apply_mean_shift": ".apply",
        "find_mlp_kernels": ".apply",
        "find_mlp_blocks": ".apply",
    },
    public={
        "": ("apply_mean_shift", "apply_mimetic_attention"),
        "initializers": ("MeanShift",),
        "layers": ("ScalarBiasDense",),
    },
    model_functions=("apply_mean_shift", "apply_mimetic_attention"),
    serializable=(".initializers", ".layers"),
    selectors=(
        Selector("mlp_first", _mlp_first, "first layer of an MLP block", MLP_DESCRIPTION),
        Selector("attention", _attention, "self-attention layer", ATTENTION_DESCRIPTION),
    ),
    setups=(MIMETIC, MIMETIC_VIT),
    inspectors=(
        Inspector("mlp", ".inspect:mlp", order=20, figures=("mlp_covariance.png",)),
        Inspector("attention", ".inspect:attention", order=21),
    ),
    pure=(".", ".shift", ".blocks", ".attention", ".joint"),
)
