"""The LC-block method's record: its layers, callback, model functions and the ``"lc_pointwise"`` selector."""

from keras_structinit.methods import Method, Selector


def _lc_pointwise(layer):
    from keras_structinit.lc.apply import lc_pointwise_kernel

    return lc_pointwise_kernel(layer)


METHOD = Method(
    name="lc",
    title="LC blocks: frozen random spatial filters that a 1x1 conv linearly combines",
    paper="Gavrikov & Keuper, Rethinking 1x1 Convolutions: Can we train CNNs with Frozen Random "
          "Filters?",
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
    selectors=(Selector("lc_pointwise", _lc_pointwise, "LC block",
                        "LC blocks (keras_structinit.layers.LCConv2D)"),),
)
