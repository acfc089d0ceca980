"""The covariance method's record: its init forms, exports, paper setup and inspect section (``structinit
demo``, the product's demo of this method, is a command of :mod:`keras_structinit.cli`)."""

from keras_structinit.methods import (
    CONVMIXER_PIPELINE_NOTES,
    HELD_OUT_NOTE,
    InitForm,
    Inspector,
    Method,
    PaperSetup,
    existing_file,
)

#: The argument of ``conv-cov``: a preset (sampled at the paper's own scale; ``cifar-p2`` when the
#: spec omits it), ``matched`` (``cifar-p2``'s schedule, each layer scaled to its kernel's own
#: variance) or ``auto`` (the preset on an isotropic ConvMixer; elsewhere the scale measured best,
#: :data:`~keras_structinit.covariance.apply.OTHER_MODELS_SCALE`: today the preset's own, so ``auto``
#: is ``cifar-p2`` everywhere).
MATCHED, AUTO = "matched", "auto"


def _preset(text):
    from keras_structinit.covariance.schedule import PRESETS

    if text not in (*PRESETS, MATCHED, AUTO):
        raise ValueError(f"takes a preset ({', '.join(sorted(PRESETS))}), {MATCHED} or {AUTO}; got {text!r}")
    return text


def _resolve(model, value):
    """``auto`` -> ``cifar-p2`` on an isotropic ConvMixer-like model; elsewhere ``cifar-p2`` or
    ``matched``, as :data:`~keras_structinit.covariance.apply.OTHER_MODELS_SCALE` says."""
    if value != AUTO:
        return value
    from keras_structinit.covariance.apply import OTHER_MODELS_SCALE, presets_fit
    from keras_structinit.engine.walker import find_kernels

    if presets_fit(find_kernels(model)) or OTHER_MODELS_SCALE == "preset":
        return "cifar-p2"
    return MATCHED


def _conv_cov(model, value, *, data, seed):
    from keras_structinit.covariance.apply import apply_conv_covariance

    if value in (MATCHED, AUTO):
        return apply_conv_covariance(model, scale=value, seed=seed)
    return apply_conv_covariance(model, preset=value, scale="preset", seed=seed)


def _cov_transfer(model, value, *, data, seed):
    from keras_structinit.covariance.apply import apply_covariance_transfer

    return apply_covariance_transfer(model, bank=value, seed=seed)


#: Trockman, Willmott & Kolter (ICLR 2023), CIFAR-10: the frozen-filter ConvMixer of the grid search.
CONVCOV = PaperSetup(
    name="convcov",
    paper="Trockman, Willmott & Kolter, Understanding the Covariance Structure of Convolutional Filters, "
    "ICLR 2023",
    settings={
        "model": ("convmixer-256/8", "App. B (grid search): ConvMixer-256/8, 2x2 patches"),
        "model_kwargs": ({"kernel_size": 9, "patch_size": 2}, "App. B: 9x9 filters, 2x2 patches"),
        "init": (
            "torch-default+conv-cov:cifar-p2",
            "Sec. 4.2 and App. B: sigma_0 .08, v_sigma .37, "
            "a_sigma 2.9 for 2x2 patches, on PyTorch's default init ('uniform')",
        ),
        "frozen": (True, "Fig. 3 and App. B: frozen filters"),
        "epochs": (20, "App. B: 20 epochs (Sec. 4: 20, 50 or 200)"),
        "batch_size": (512, "Sec. 4, experiment design: batch 512"),
        "optimizer": ("adamw", "Sec. 4: AdamW"),
        "learning_rate": (0.01, "Sec. 4: learning rate .01"),
        "weight_decay": (0.01, "Sec. 4: weight decay .01"),
        "schedule": ("triangular", "Sec. 4: a simple triangular schedule (Trockman & Kolter 2022)"),
        "rand_augment": (
            "torchvision:n2-m12",
            "Sec. 4 names RandAugment, not its N or M; the 92.5% command "
            "of the README of ConvMixer's CIFAR script (locuslab/convmixer-cifar10: --ra-n=2 "
            "--ra-m=12), not train.py's default (--ra-n 1 --ra-m 8)",
        ),
    },
    notes=(
        "the paper loads data with FFCV and its own RandAugment; here torchvision's RandAugment "
        "tables (recipes.rand_augment) in the native or tf.data input stream",
        *CONVMIXER_PIPELINE_NOTES,
        HELD_OUT_NOTE,
    ),
)

METHOD = Method(
    name="covariance",
    title="Covariance init of conv filters: closed-form covariances, transfer from trained models",
    paper="Trockman, Willmott & Kolter, Understanding the Covariance Structure of Convolutional "
    "Filters, ICLR 2023",
    package=__package__,
    docs="docs/covariance.md",
    forms=(
        InitForm(
            "conv-cov",
            "ConvCovariance on depthwise kernels (Trockman et al. 2023, Eq. 10-11); PRESET or matched "
            "(the kernel's own variance) or auto (per model); default cifar-p2",
            _conv_cov,
            "spatial",
            arg="PRESET",
            default="cifar-p2",
            parse=_preset,
            resolve=_resolve,
            targets=("depthwise",),
        ),
        InitForm(
            "cov-transfer",
            "covariance transfer from a FilterCovariance bank (.npz)",
            _cov_transfer,
            "spatial",
            arg="PATH",
            parse=existing_file("a covariance bank saved by FilterCovariance.save"),
            reads_file=True,
            targets=("depthwise",),
        ),
    ),
    exports={
        "ConvCovariance": ".initializers",
        "CovarianceTransfer": ".initializers",
        "RecordFilterCovariance": ".callbacks",
        "apply_conv_covariance": ".apply",
        "apply_covariance_transfer": ".apply",
        "apply_filter_transfer": ".filter_transfer",
    },
    public={
        "": ("apply_conv_covariance", "apply_covariance_transfer", "apply_filter_transfer"),
        "initializers": ("ConvCovariance", "CovarianceTransfer"),
        "callbacks": ("RecordFilterCovariance",),
    },
    model_functions=("apply_conv_covariance", "apply_covariance_transfer", "apply_filter_transfer"),
    serializable=(".initializers",),
    setups=(CONVCOV,),
    inspectors=(
        Inspector(
            "spatial", ".inspect:spatial", order=10, figures=("spatial_depth.png", "covariance_blocks.png")
        ),
    ),
    pure=(".", ".closed_form", ".schedule", ".psd", ".bank", ".bank_io", ".fit"),
)
