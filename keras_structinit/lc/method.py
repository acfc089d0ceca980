"""The LC-block method's record: its layers, callback, model functions and the ``"lc_pointwise"`` selector."""

from keras_structinit.methods import HELD_OUT_NOTE, Inspector, Method, PaperSetup, Selector


def _lc_pointwise(layer):
    from keras_structinit.lc.apply import lc_pointwise_kernel

    return lc_pointwise_kernel(layer)


#: Gavrikov & Keuper, CIFAR-10: LCResNet-20-16x8 with frozen random filters (App. C).
LC = PaperSetup(
    name="lc",
    paper="Gavrikov & Keuper, Rethinking 1x1 Convolutions: Can we train CNNs with Frozen Random Filters?",
    settings={
        "model": ("lcresnet-20-16x8", "Sec. 4, Fig. 1: LCResNet-20-16xE; the gap closes near E = 8"),
        "init": ("default", "App. D: PyTorch's default init of every conv (the builder's)"),
        "frozen": (True, "Sec. 4: frozen random spatial filters"),
        "epochs": (75, "App. C: 75 epochs"),
        "batch_size": (256, "App. C: batch 256"),
        "optimizer": ("sgd", "App. C: SGD with Nesterov momentum 0.9"),
        "learning_rate": (0.01, "App. C: initial learning rate 1e-2"),
        "weight_decay": (0.01, "App. C: weight decay 1e-2"),
        "schedule": ("cosine", "App. C: cosine annealing"),
        "warmup_epochs": (0.0, "App. C: cosine annealing, no warmup"),
        "label_smoothing": (0.1, "App. C: label smoothing 1e-1"),
        "rand_augment": (None, "App. C: pad 4, flip, crop; nothing else"),
        "pad": (4, "App. C: zero-padded by 4 px, 32 px random crops"),
        "flip": (True, "App. C: random horizontal flips"),
        "normalization": ("channel", "App. C: channel mean and standard deviation"),
    },
    notes=(HELD_OUT_NOTE,),
)

METHOD = Method(
    name="lc",
    title="LC blocks: frozen random spatial filters that a 1x1 conv linearly combines",
    paper="Gavrikov & Keuper, Rethinking 1x1 Convolutions: Can we train CNNs with Frozen Random Filters?",
    package=__package__,
    docs="docs/lc-blocks.md",
    exports={
        "LCConv2D": ".layers",
        "SharedKernelBank": ".layers",
        "PrunePointwise": ".callbacks",
        "apply_pointwise_l1": ".apply",
        "find_pointwise_kernels": ".apply",
        "fold_model": ".apply",
        "parameter_counts": ".apply",
        "pointwise_sparsity": ".apply",
        "prune_pointwise": ".apply",
    },
    public={"layers": ("LCConv2D", "SharedKernelBank"), "callbacks": ("PrunePointwise",)},
    model_functions=("apply_pointwise_l1", "prune_pointwise"),
    serializable=(".layers",),
    selectors=(
        Selector("lc_pointwise", _lc_pointwise, "LC block", "LC blocks (keras_structinit.layers.LCConv2D)"),
    ),
    setups=(LC,),
    inspectors=(
        Inspector("spatial", ".inspect:spatial_part", part=True),
        Inspector(
            "position_variance",
            ".inspect:position_variance_section",
            order=15,
            figures=("position_variance.png",),
        ),
    ),
    pure=(".", ".folding", ".sharing", ".pruning", ".counting", ".diversity", ".position"),
)
