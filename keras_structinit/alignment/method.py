"""The data-aligned method's record: the ``data-aligned`` form and its exports."""

from keras_structinit.methods import InitForm, Method, count


def _data_aligned(model, value, *, data, seed):
    from keras_structinit.alignment.apply import align_conv_layers

    return align_conv_layers(model, images=data, num_layers=value, seed=seed)


def _check_layers(model, value):
    from keras_structinit.alignment.apply import conv_targets

    conv_targets(model, value)


METHOD = Method(
    name="alignment",
    title="Data-aligned init: first-layer filters from the eigenvectors of the data's patch covariance",
    paper="Maennel, Alabdulmohsin, Tolstikhin, Baldock, Bousquet, Gelly & Keysers, What Do Neural "
          "Networks Learn When Trained With Random Labels?, NeurIPS 2020",
    package=__package__,
    docs="docs/data-aligned.md",
    forms=(
        InitForm("data-aligned", "the first L Conv2D layers from the images' patch covariance "
                 "(Maennel et al. 2020)", _data_aligned, "data", arg="L", default=1,
                 parse=count("conv layers"), check=_check_layers, targets=("all_spatial",),
                 needs_data=True),
    ),
    exports={
        "COMPONENTS": ".apply",
        "DataAligned": ".initializers",
        "RecordInitialNorms": ".callbacks",
        "align_conv_layers": ".apply",
        "conv_targets": ".apply",
        "rescale_to_initial_norms": ".apply",
        "weight_covariance": ".apply",
        "weight_norms": ".apply",
    },
    public={"": ("align_conv_layers",), "initializers": ("DataAligned",),
            "callbacks": ("RecordInitialNorms",)},
    model_functions=("align_conv_layers",),
    serializable=(".initializers",),
)
