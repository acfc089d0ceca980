"""The weight-selection method's record: the ``select`` form, its exports and ``structinit select``."""

from keras_structinit.methods import HELD_OUT_NOTE, Command, InitForm, Method, PaperSetup, existing_file
from keras_structinit.selection.indices import ELEMENT_METHODS, LAYER_METHODS
from keras_structinit.selection.planning import HEAD_MODES
from keras_structinit.utils.arguments import MODEL_TEXT, add_max_model_bytes_argument, add_overwrite_argument


def _select(model, value, *, data, seed):
    from keras_structinit.selection.select import select_weights

    return select_weights(model, teacher=value, seed=seed)


def _load_teacher(value):
    from keras_structinit.selection.teachers import load_teacher

    return load_teacher(value)


def _select_arguments(parser):
    parser.add_argument(
        "--teacher",
        required=True,
        help=f"the larger trained model: {MODEL_TEXT}",
    )
    parser.add_argument(
        "--student",
        required=True,
        help="a zoo model name (vit-tiny, convnext-femto, ...) or keras.applications:NAME (e.g. "
        "keras.applications:ConvNeXtTiny), built without weights, or a .keras file or preset folder "
        "whose architecture to use",
    )
    add_max_model_bytes_argument(parser)
    parser.add_argument(
        "--student-kwargs",
        default=None,
        help='JSON of builder arguments, e.g. \'{"num_classes": 100, "patch_size": 4}\' '
        "(default: the teacher's classes and input shape; keras.applications students also take "
        "their own '{\"classes\": 10}'; with a teacher that has no classifier, a keras.applications "
        "student is built without one unless given classes; not for a .keras student)",
    )
    parser.add_argument(
        "--out", default=None, help="where to save the student (.keras; required unless --plan)"
    )
    parser.add_argument("--layer-selection", choices=LAYER_METHODS, default="first_n")
    parser.add_argument("--element-selection", choices=ELEMENT_METHODS, default="uniform")
    parser.add_argument(
        "--heads",
        choices=HEAD_MODES,
        default="flatten",
        help="attention: one index set over heads x head_dim (flatten), the authors' "
        "selection of fused qkv rows (fused), or whole heads (select)",
    )
    parser.add_argument(
        "--skip",
        nargs="+",
        default=None,
        metavar="PREFIX",
        help="variable path prefixes (such as layer names) also left at the student's init, "
        "besides the classifier (the authors' script also skips ConvNeXt's head_norm: --skip "
        "head_norm); a prefix that matches no layer is an error naming the closest",
    )
    parser.add_argument(
        "--copy-head",
        action="store_true",
        help="also select the classifier (the layer that makes the class logits, whatever its "
        "name: head, predictions, dense_1...) from the teacher's; by default it keeps the "
        "student's init, as in the paper",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--resize-position-embeddings",
        action="store_true",
        help="allow another image size: resize the teacher's position grid bilinearly "
        "(an extension of the paper)",
    )
    parser.add_argument("--report", default=None, help="write the selection report (JSON) here")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the plan (per student variable: its teacher variable and the index "
        "rule per axis; what keeps its initialization and why; the teacher blocks "
        "left out) and exit without writing",
    )
    parser.add_argument(
        "--head-classes",
        default=None,
        metavar="I,J,...",
        help="a classifier for other classes: the teacher's output rows (class indices, "
        "comma-separated, one per student class) for a plan derived from the two "
        "models",
    )
    add_overwrite_argument(parser, "an existing --out or --report")


#: Xu et al. (ICLR 2024), CIFAR-10: ViT-T with the ConvNeXt recipe (Tables 13 and 15).
SELECTION = PaperSetup(
    name="selection",
    paper="Xu, Liu, Darrell & Liu, Initializing Models with Larger Ones, ICLR 2024",
    settings={
        "model": ("vit-tiny", "Sec. 4: ViT-T (the student of ViT-S)"),
        "model_kwargs": ({"patch_size": 4}, "the package's choice for 32x32 inputs (see the notes)"),
        "init": ("default", "Sec. 4: the baseline; weight selection is --init select:TEACHER.keras"),
        "epochs": (300, "Table 15 (ViT-T, C-10): 300 epochs"),
        "batch_size": (512, "Table 15: batch 512"),
        "optimizer": ("adamw", "Table 13: AdamW"),
        "learning_rate": (0.002, "App. A: base learning rate 2e-3 for ViT-T"),
        "weight_decay": (0.05, "Table 13: weight decay 0.05"),
        "schedule": ("cosine", "Table 13: cosine decay"),
        "warmup_epochs": (50.0, "Table 15: 50 warmup epochs, linear (Table 13)"),
        "rand_augment": (
            "timm:m9-n2-mstd0.5-inc1",
            "Table 13: RandAugment (9, 0.5); the ConvNeXt main.py "
            "the code builds on: --aa rand-m9-mstd0.5-inc1",
        ),
        "mixup_alpha": (0.8, "Table 13: mixup 0.8"),
        "cutmix_alpha": (1.0, "Table 13: cutmix 1.0"),
        "random_erasing": (0.25, "Table 13: random erasing 0.25"),
        "label_smoothing": (0.1, "Table 13: label smoothing 0.1"),
        # Where the text is silent, the authors' code (github.com/OscarXZQ/weight-selection).
        "no_weight_decay": (
            "timm",
            "the authors' optim_factory.py (the paper is silent): no decay on "
            "rank <= 1 parameters (biases, normalization), biases, the position table "
            "and the class token",
        ),
        "normalization": (
            "imagenet",
            "the authors' datasets.py (the paper is silent): ImageNet mean "
            "(0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225)",
        ),
    },
    notes=(
        "the paper's ConvNeXt pipeline trains on images resized to 224 with ViT-T's 16x16 "
        "patches; the CIFAR recipe trains at 32x32, with 4x4 patches",
        "the ConvNeXt pipeline crops at random scale and aspect (timm's RandomResizedCrop, scale "
        "0.08-1, ratio 3/4-4/3); here a pad-4 random crop and flips",
        "timm's RandAugment draws bilinear or bicubic resampling per op; here always bilinear",
        "where the paper is silent the setup follows the authors' code: no weight decay on biases, "
        "normalization parameters, the position table and the class token (no_weight_decay='timm'), "
        "ImageNet mean/std input normalization (normalization='imagenet')",
        "the baseline is ViT-T as timm's code builds it: truncated normal 0.02 on Dense layers, "
        "PyTorch's default on the patch-embedding conv. Sec. 4 says truncated normal 0.02 for linear "
        "and convolution layers: that reading is --init trunc-normal",
        HELD_OUT_NOTE,
    ),
)

METHOD = Method(
    name="selection",
    title="Weight selection: a small model initialized with selected weights of a larger one",
    paper="Xu, Liu, Darrell & Liu, Initializing Models with Larger Ones, ICLR 2024",
    package=__package__,
    docs="docs/weight-selection.md",
    forms=(
        InitForm(
            "select",
            "weight selection from a larger teacher (Xu et al. 2024)",
            _select,
            "weights",
            arg="TEACHER.keras",
            parse=existing_file("a teacher .keras file", ".keras"),
            reads_file=True,
            load=_load_teacher,
        ),
    ),
    exports={
        "SelectWeightsFrom": ".callbacks",
        "SelectionPlan": ".select",
        "SelectionReport": ".select",
        "plan": ".select",
        "load_teacher": ".teachers",
        "smaller_config": ".teachers",
        "select_weights": ".select",
        "selection_report": ".select",
    },
    public={"": ("select_weights",), "callbacks": ("SelectWeightsFrom",)},
    model_functions=("select_weights",),
    serializable=(".distill",),
    commands=(
        Command(
            "select",
            "initialize a small model with selected weights of a larger one (weight selection)",
            "Loads a teacher .keras file, builds the student by model name (as in `train`), copies the "
            "teacher's selected weights into it (Xu et al., ICLR 2024) and saves it as .keras. The "
            "classifier (the layer that makes the class logits, whatever its name) keeps the student's "
            "own initialization, as in the paper, unless --copy-head. Two backbones (no classifier) "
            "select with no classes asked.",
            _select_arguments,
            ".cli",
        ),
    ),
    setups=(SELECTION,),
    pure=(".", ".indices", ".families", ".planning", ".resample"),
)
