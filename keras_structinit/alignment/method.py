"""The data-aligned method's record: the ``data-aligned`` form and its exports."""

from keras_structinit.methods import HELD_OUT_NOTE, InitForm, Inspector, Method, PaperSetup, count


def _layers_and_components(text):
    """``L`` or ``L:N``: how many convs, and how many eigenvectors each (default: the smaller of 16
    and the patch dimension)."""
    layers, _, components = text.partition(":")
    parse = count("conv layers")
    return (parse(layers), count("components")(components)) if components else parse(layers)


def _data_aligned(model, value, *, data, seed):
    from keras_structinit.alignment.apply import align_conv_layers

    layers, components = value if isinstance(value, tuple) else (value, None)
    return align_conv_layers(model, images=data, num_layers=layers, n_components=components, seed=seed)


def _check_layers(model, value):
    from keras_structinit.alignment.apply import conv_targets

    conv_targets(model, value[0] if isinstance(value, tuple) else value)


#: Maennel et al. (NeurIPS 2020), CIFAR-10: VGG16 pre-trained on random labels (App. A.3, A.5).
ALIGNMENT = PaperSetup(
    name="alignment",
    paper="Maennel et al., What Do Neural Networks Learn When Trained With Random Labels?, NeurIPS 2020",
    settings={
        "model": ("vgg16", "App. A.5, Fig. 1: VGG16 without the two 4096-wide dense layers"),
        "model_kwargs": (
            {"init_scale": 0.526},
            "App. A.3, A.5 (experiments 1-2): He normal times init_scale 0.526, zero biases",
        ),
        "init": ("default", "App. A.3: the builder's He normal init"),
        "train_size": (20000, "App. A.5: 20,000 upstream examples"),
        "random_labels": (1.0, "App. A.1, A.5: pre-training on random labels"),
        "random_classes": (5, "App. A.1 step 3, A.5 (experiments 1-2): num_classes_upstream = 5"),
        "epochs": (120, "App. A.5: 120 upstream epochs"),
        "batch_size": (256, "App. A.3: batch 256"),
        "optimizer": ("sgd_momentum", "App. A.3: SGD with momentum 0.9"),
        "learning_rate": (0.01, "App. A.5: learning rate 0.01"),
        "weight_decay": (0.0, "App. A.3: no weight decay"),
        "schedule": ("step", "App. A.3: divided by 3 after 1/3 and 2/3 of the steps"),
        "label_smoothing": (0.0, "App. A.3: cross-entropy, no regularization"),
        "rand_augment": (None, "App. A.3: no data augmentation"),
        "pad": (0, "App. A.3: no data augmentation"),
        "flip": (False, "App. A.3: no data augmentation"),
        "normalization": ("symmetric", "App. A.3: inputs scaled to [-1, 1]"),
    },
    notes=(
        "the upstream run only: fine-tune downstream (App. A.4) from its saved model with "
        "--new-head (a fresh head), --train-offset 20000 and the same --seed (A.1 step 2: images "
        "the upstream run never saw), the true labels, and the same learning rate and schedule",
        "no rescaling of each layer to its initial L2 norm before fine-tuning (A.4): in Python, "
        "RecordInitialNorms while pre-training, then rescale_to_initial_norms(model, norms)",
        "held-out labels are random too (a 5-way head does not fit the true classes); App. A.3 "
        "reports accuracy on the whole training set, Keras' logs the mean over an epoch's batches",
        HELD_OUT_NOTE,
    ),
)

METHOD = Method(
    name="alignment",
    title="Data-aligned init: first-layer filters from the eigenvectors of the data's patch covariance",
    paper="Maennel, Alabdulmohsin, Tolstikhin, Baldock, Bousquet, Gelly & Keysers, What Do Neural "
    "Networks Learn When Trained With Random Labels?, NeurIPS 2020",
    package=__package__,
    docs="docs/data-aligned.md",
    forms=(
        InitForm(
            "data-aligned",
            "the first L Conv2D layers from the images' patch covariance, N "
            "eigenvectors each (default: 16 or the patch dimension if smaller; Maennel et al. 2020)",
            _data_aligned,
            "data",
            arg="L[:N]",
            default=1,
            parse=_layers_and_components,
            check=_check_layers,
            targets=("all_spatial",),
            needs_data=True,
        ),
    ),
    exports={
        "COMPONENTS": ".apply",
        "DataAligned": ".initializers",
        "RecordInitialNorms": ".callbacks",
        "RecordSpecialization": ".callbacks",
        "layer_activations": ".activations",
        "align_conv_layers": ".apply",
        "conv_targets": ".apply",
        "rescale_to_initial_norms": ".apply",
        "weight_covariance": ".apply",
        "weight_norms": ".apply",
    },
    public={
        "": ("align_conv_layers",),
        "initializers": ("DataAligned",),
        "callbacks": ("RecordInitialNorms", "RecordSpecialization"),
    },
    model_functions=("align_conv_layers",),
    serializable=(".initializers",),
    setups=(ALIGNMENT,),
    inspectors=(
        Inspector(
            "first_layer",
            ".inspect:first_layer",
            order=30,
            figures=("first_layer.png", "transfer_function.png"),
        ),
        Inspector("specialization", ".inspect:specialization", order=35, figures=("specialization.png",)),
    ),
    pure=(".", ".patches", ".measures", ".components", ".specialization"),
)
