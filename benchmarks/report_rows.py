"""The report rows' declared sub-claims and effects (issue 79, points 3 and 4): :data:`ROWS`.

Per suite entry, every claim of the paper's figure or table the row reproduces, including those
that fail here, each with the paper's numbers and where they are, and the effect the summary shows
beside the paper's (:mod:`benchmarks.report_claims` evaluates them from the result JSON). The
paper's numbers are from the texts in the shared papers folder (its README's index): covariance
Table 10 (ConvMixer-256/8, patch 2; k = 3, 7, 9, 15; 20 epochs unless said), data-aligned init
Tables 2 and 5 (test accuracy), LC blocks Sec. 4 and Table 1, mimetic init Sec. 4 (its Figs. 2 and 4
are plots: no numbers in the text), weight selection Tables 3, 4, 7, 9 and 12 (ViT-T on CIFAR-100).
An entry without a row here keeps its script's verdict (timings, thresholds, no paper direction).
"""

from __future__ import annotations

from benchmarks.covariance_accuracy import PAPER_RAND_AUGMENT
from benchmarks.report_claims import (
    LARGEST,
    Above,
    Effect,
    GainAbove,
    Row,
    Scripted,
    Trend,
    accuracy,
    entropy,
    fgsm,
    probe,
    steps_by_batch,
    test_accuracy,
)


def _aligned(variant, iterations):
    return {"variant": variant, "iterations": iterations}


def _alignment_claims():
    # Table 2 (f_2 = 1, test accuracy) and Table 5 (smallest eigenvectors), 100 / 1000 iterations.
    table2 = {
        "default": (".31", ".53"),
        "aligned_1": (".29", ".55"),
        "aligned_2": (".37", ".56"),
        "aligned_3": (".43", ".59"),
    }
    out = []
    for higher, lower, what in (
        ("aligned_2", "default", "2 aligned layers > default"),
        ("aligned_3", "default", "3 aligned layers > default"),
        ("aligned_3", "aligned_2", "3 aligned layers > 2"),
    ):
        for k, it in enumerate((100, 1000)):
            largest = " (the largest gain)" if (higher, lower, it) == ("aligned_3", "aligned_2", 100) else ""
            out.append(
                Above(
                    f"{what} @{it}",
                    f"Table 2: {table2[higher][k]} vs {table2[lower][k]}{largest}",
                    higher=_aligned(higher, it),
                    lower=_aligned(lower, it),
                    value=test_accuracy,
                )
            )
    out.append(
        Above(
            "1 aligned layer > default @1000",
            "Table 2: .55 vs .53",
            higher=_aligned("aligned_1", 1000),
            lower=_aligned("default", 1000),
            value=test_accuracy,
        )
    )
    for it, paper in ((100, ".31 vs .15"), (1000, ".53 vs .46")):
        out.append(
            Above(
                f"default > 16 smallest eigenvectors @{it}",
                f"Table 5: {paper}",
                higher=_aligned("default", it),
                lower=_aligned("smallest_1", it),
                value=test_accuracy,
            )
        )
    return tuple(out)


def _cov(init, k, frozen, **more):
    return {"init": init, "kernel_size": k, "frozen": frozen, **more}


STATES = ((True, "frozen"), (False, "thawed"))
#: Table 10, k = 3, 7, 9, 15 at 20 epochs: ConvCovariance's gain over uniform, (frozen, thawed).
TABLE10_GAINS = {3: (-0.05, -0.05), 7: (3.49, 1.13), 9: (5.59, 1.59), 15: (8.39, 3.69)}


def _kernel_size_claims():
    out = []
    for frozen, state in STATES:
        col = 0 if frozen else 1
        for k in (7, 9, 15):
            out.append(
                Above(
                    f"ConvCovariance > default, k = {k} {state}",
                    f"Table 10: {TABLE10_GAINS[k][col]:+.2f}",
                    higher=_cov("conv-cov", k, frozen),
                    lower=_cov("default", k, frozen),
                )
            )
        ks = (3, 7, 9, 15)
        out.append(
            Trend(
                f"gain grows with k, {state}",
                "Table 10: " + ", ".join(f"{TABLE10_GAINS[k][col]:+.2f}" for k in ks) + " at k = 3, 7, 9, 15",
                cells=tuple((_cov("conv-cov", k, frozen), _cov("default", k, frozen)) for k in ks),
                steps=tuple(f"k={k}" for k in ks),
            )
        )
    return tuple(out)


def _convergence_claims():
    out = []
    for frozen, state in STATES:
        for epochs in (1, 2, 4, 8):
            out.append(
                Above(
                    f"ConvCovariance > default, {epochs} ep. {state}",
                    "Fig. 8 / Sec. 4: converges faster",
                    higher=_cov("conv-cov", 9, frozen, epochs=epochs),
                    lower=_cov("default", 9, frozen, epochs=epochs),
                )
            )
    for frozen, state in STATES:
        paper = "+5.59 / +3.71 / +2.96" if frozen else "+1.59 / +0.80 / +0.56"
        out.append(
            GainAbove(
                f"gain at 1 ep. > gain at 8 ep., {state}",
                f"Sec. 4: 'more prominent for shorter training times'; Table 10, k = 9, 20 / 50 / 200 "
                f"epochs: {paper}",
                first=(_cov("conv-cov", 9, frozen, epochs=1), _cov("default", 9, frozen, epochs=1)),
                second=(_cov("conv-cov", 9, frozen, epochs=8), _cov("default", 9, frozen, epochs=8)),
            )
        )
    return tuple(out)


def _augmentation_claims():
    # Issue 79 (point 6): Fig. 8's claim in each arm; the paper trains with RandAugment only.
    return tuple(
        Above(
            f"ConvCovariance > default, {epochs} ep. frozen, RandAugment {'on' if arm else 'off'}",
            "Fig. 8 / Sec. 4: converges faster" + (" (trained with RandAugment)" if arm else ""),
            higher=_cov("conv-cov", 9, True, epochs=epochs, rand_augment=arm),
            lower=_cov("default", 9, True, epochs=epochs, rand_augment=arm),
        )
        for arm in (None, PAPER_RAND_AUGMENT)
        for epochs in (2, 8)
    )


#: Table 10, k = 9, 20 epochs, per group letter: (frozen, thawed) accuracy.
TABLE10_GROUPS = {
    "A": (84.97, 89.26),
    "B": (88.18, 89.70),
    "C": (89.67, 90.22),
    "D": (89.50, 90.14),
    "E": (90.56, 90.85),
}
GROUP_NAMES = {"A": "default", "B": "transfer-same", "C": "transfer-narrow", "D": "filters", "E": "conv-cov"}


def _group(letter, frozen):
    # The script's verdict reads the largest budget recorded (``covariance_transfer.largest_budget``).
    return {"group": GROUP_NAMES[letter], "frozen": frozen, "epochs": LARGEST}


def _group_claims():
    out = []
    pairs = (
        ("B", "A", "Sec. 2.1: B above A"),
        ("C", "A", "Sec. 2.1: C above A"),
        ("C", "B", "Sec. 2.1: C 'almost uniformly exceeds' B"),
        ("D", "B", "Sec. 2.1: covariance transfer falls between D and A"),
        ("E", "A", "Sec. 4: E outperforms A-D"),
        ("E", "B", "Sec. 4: E outperforms A-D"),
        ("E", "C", "Sec. 4: E outperforms A-D"),
        ("E", "D", "Sec. 4: E outperforms A-D"),
    )
    for frozen, state in STATES:
        col = 0 if frozen else 1
        for high, low, said in pairs:
            out.append(
                Above(
                    f"{high} > {low} {state}",
                    f"{said}; Table 10: {TABLE10_GROUPS[high][col]} vs {TABLE10_GROUPS[low][col]}",
                    higher=_group(high, frozen),
                    lower=_group(low, frozen),
                )
            )
    out.append(
        Above(
            "E frozen > A thawed",
            "Sec. 4: frozen E exceeds thawed uniform by 0.6-5.0 at 20 epochs; Table 10: 90.56 vs 89.26",
            higher=_group("E", True),
            lower=_group("A", False),
        )
    )
    return tuple(out)


def _transfer(init_label):
    return f"{init_label} − default"


PATCH_KERNEL = (
    "p=1 k=9 frozen: transfer from p_s=2, k_s=9",
    "p=2 k=5 frozen: transfer from p_s=2, k_s=9",
    "p=2 k=5 frozen: transfer from p_s=2, k_s=9, resize crop",
    "p=2 k=5 frozen: transfer from p_s=2, k_s=9, resize interpolate",
    "p=2 k=9 frozen: transfer from p_s=2, k_s=9",
    "p=4 k=9 frozen: transfer from p_s=2, k_s=9",
)


def _lc(e, frozen):
    return {"model": f"lcresnet-20-16x{e}", "frozen": frozen}


EXPANSIONS = (1, 4, 8, 16)
ACROSS = "two networks: only the data order and draws are shared"


def _mimetic(model, epochs, variant):
    return {"model": model, "epochs": epochs, "variant": variant}


def _mimetic_claims():
    out = []
    for model, epochs, shifts in (
        ("convnext", 2, ("0.05", "0.1", "0.2")),
        ("convnext", 4, ("0.2",)),
        ("vit", 2, ("0.05", "0.2")),
    ):
        name = "ConvNeXt" if model == "convnext" else "ViT"
        for b in shifts:
            out.append(
                Above(
                    f"b = {b} > b = 0, {name} {epochs} ep.",
                    "Sec. 4 / Fig. 4: a wide range of b > 0 beats b = 0 at short training",
                    higher=_mimetic(model, epochs, f"mean-shift:{b}"),
                    lower=_mimetic(model, epochs, "mean-shift:0"),
                )
            )
    for epochs in (2, 4):
        both = _mimetic("convnext", epochs, "conv-cov+mean-shift:0.05")
        for other, what in (
            ("torch-default+conv-cov", "ConvCovariance alone"),
            ("mean-shift:0.05", "b = 0.05 alone"),
        ):
            out.append(
                Above(
                    f"ConvCovariance + b = 0.05 > {what}, {epochs} ep.",
                    "Sec. 4 / Fig. 2: together outperforming either alone",
                    higher=both,
                    lower=_mimetic("convnext", epochs, other),
                )
            )
        out.append(
            Above(
                f"ConvCovariance alone > b = 0, {epochs} ep.",
                "Sec. 4 / Fig. 2: the convolution init keeps an advantage over uniform",
                higher=_mimetic("convnext", epochs, "torch-default+conv-cov"),
                lower=_mimetic("convnext", epochs, "mean-shift:0"),
            )
        )
    out.append(
        GainAbove(
            "b = 0.2's gain larger at 2 ep. than at 4 (tapers off)",
            "Sec. 4: the MLP init's effect tapers off with longer training (10-20 vs 50 epochs)",
            first=(_mimetic("convnext", 2, "mean-shift:0.2"), _mimetic("convnext", 2, "mean-shift:0")),
            second=(_mimetic("convnext", 4, "mean-shift:0.2"), _mimetic("convnext", 4, "mean-shift:0")),
        )
    )
    return tuple(out)


def _vit(variant):
    return _mimetic("vit", 2, variant)


def _variant(name):
    return {"variant": name}


def _selection(name, paper, higher, lower, value=accuracy):
    return Above(name, paper, higher=_variant(higher), lower=_variant(lower), value=value)


SELECTION_PROBE = _selection(
    "linear probe at init: selection > random init", "Table 9: 28.2 vs 13.5", "uniform", "random_init", probe
)
SELECTION_EFFECT = Effect("selection > random init", (72.3, 81.4), "Table 3, ViT-T on CIFAR-100")

ROWS = {
    "alignment_accuracy": Row(
        _alignment_claims(),
        Effect(
            "2 aligned layers > default @100",
            (31, 37),
            "Table 2, 100 iterations",
            budget=steps_by_batch,
        ),
        notes=(
            "Not counted: Table 2's one aligned layer at 100 iterations (.29 vs .31: no gain claimed) "
            "and Table 4's sampled filters, 'essentially the same' as the eigenvectors (a test cannot "
            "show two means equal).",
        ),
    ),
    "covariance_kernel_size": Row(
        _kernel_size_claims(),
        Effect("ConvCovariance > default, k = 9 frozen", (84.97, 90.56), "Table 10, k = 9 frozen, 20 ep."),
        notes=("Not counted: k = 3, where the paper's gain is -0.05 (no direction).",),
    ),
    "covariance_convergence": Row(
        _convergence_claims(),
        Effect("ConvCovariance > default, 8 ep. thawed", (89.26, 90.85), "Table 10, k = 9 thawed, 20 ep."),
    ),
    "covariance_augmentation": Row(
        _augmentation_claims(),
        Effect(
            "ConvCovariance > default, 8 ep. frozen, RandAugment on",
            (84.97, 90.56),
            "Table 10, k = 9 frozen, 20 ep.",
        ),
        notes=(
            "Whether the verdict depends on RandAugment: by the t-test it does not (each arm within "
            "noise at 2 epochs, beyond noise at 8). By twice the standard error, the rule before issue "
            "79, the 2-epoch gain with RandAugment was beyond noise and the arms' verdicts differed. "
            "The gain with RandAugment minus the gain without, per budget, is context (Welch t: the "
            "arms draw other augmentations).",
        ),
    ),
    "covariance_transfer_groups": Row(
        _group_claims(),
        Effect("E > A frozen", (84.97, 90.56), "Table 10, k = 9 frozen, 20 ep."),
    ),
    "covariance_transfer_patch_kernel": Row(
        tuple(
            Scripted(
                f"{label} > default",
                "Fig. 9 / Sec. 2.1: transfer across patch and filter sizes beats uniform",
                label=_transfer(label),
                counts="resize" not in label,
                note="the package's alternative resizing; the paper's construction mean-pads or clips "
                "each block (`blocks`, the rows without a resize)",
            )
            for label in PATCH_KERNEL
        ),
        Effect(f"{PATCH_KERNEL[4]} > default", None, "Fig. 9 is a plot"),
    ),
    "inspect_entropy": Row(
        (
            Above(
                "frozen filters more diverse: first-layer H, frozen > learnable",
                "Sec. 4.2 / Fig. 6: frozen random filters stay more diverse",
                higher={"frozen": True},
                lower={"frozen": False},
                value=entropy,
                spread=0.0,
                spec=".3f",
            ),
        ),
    ),
    "lc_accuracy_fig1": Row(
        (
            Trend(
                "frozen − learnable gap shrinks as E grows",
                "Sec. 4.2 / Fig. 1: a steady increase of the frozen networks",
                cells=tuple((_lc(e, True), _lc(e, False)) for e in EXPANSIONS),
                steps=tuple(f"E={e}" for e in EXPANSIONS),
                paired=ACROSS,
            ),
            Above(
                "frozen > learnable at E = 16",
                "Sec. 4.2: break-even at E = 8, frozen ahead beyond; Table 1, E = 128: 91.89 vs 91.39",
                higher=_lc(16, True),
                lower=_lc(16, False),
            ),
        ),
        Effect("frozen > learnable at E = 16", (91.39, 91.89), "Table 1, E = 128"),
    ),
    "lc_accuracy_fig3": Row(
        (
            Above(
                "ResNet-18-GN (no 1x1) loses when frozen",
                "Sec. 4.1 / Fig. 3: drops of at least 16 points",
                higher={"model": "resnet18-gn", "frozen": False},
                lower={"model": "resnet18-gn", "frozen": True},
            ),
            Above(
                "ConvMixer (1x1 after each spatial conv) loses < 2 points: frozen + 2 > learnable",
                "Sec. 4.1 / Fig. 3: 1.6-1.9 points",
                higher={"model": "convmixer-256/8-k3", "frozen": True},
                lower={"model": "convmixer-256/8-k3", "frozen": False},
                shift=2.0,
            ),
            Scripted(
                "ConvMixer's gap > ResNet-18-GN's",
                "Sec. 4.1 / Fig. 3",
                label="gap of convmixer-256/8-k3 − gap of resnet18-gn",
            ),
        ),
        Effect("ResNet-18-GN (no 1x1) loses when frozen", None, "Fig. 3 is a plot", reverse=True),
    ),
    "lc_fgsm": Row(
        (
            Scripted(
                "robust gap shrinks from E = 1 to E = 8",
                "Sec. 4.2 / Fig. 4: 'similar trends in robustness'",
                label="FGSM: gap at E = 8 − gap at E = 1",
            ),
            Above(
                "robust accuracy: frozen vs learnable at E = 8",
                "Fig. 4 (a plot)",
                counts=False,
                note="the effect's arms; the paper's break-even at E = 8 states no direction",
                higher=_lc(8, True),
                lower=_lc(8, False),
                value=fgsm,
            ),
        ),
        Effect("robust accuracy: frozen vs learnable at E = 8", None, "Fig. 4 is a plot"),
    ),
    "mimetic_sweep": Row(
        _mimetic_claims(),
        Effect("b = 0.2 > b = 0, ConvNeXt 2 ep.", None, "Figs. 2 and 4 are plots"),
        notes=(
            "b = 0.2 is the package's default, fixed before these runs; every swept b is a sub-claim "
            "of its own (the best b of a cell, picked after the fact, is not).",
        ),
    ),
    "mimetic_vit": Row(
        (
            Above(
                "MLP init (b = 0.05) > b = 0",
                "Sec. 4 / Fig. 2: the MLP init's benefit persists on the ViT",
                counts=False,
                note="b = 0.05 was picked after the fact, the best of `mimetic_sweep`'s ViT cell on "
                "these seeds (b = 0.2, the default, is within noise there)",
                higher=_vit("mean-shift:0.05"),
                lower=_vit("mean-shift:0"),
            ),
            Above(
                "attention init alone > b = 0",
                "Fig. 2: the attention init's effect remains",
                higher=_vit("torch-default+mimetic-attention"),
                lower=_vit("mean-shift:0"),
            ),
            Above(
                "both > attention init alone",
                "Sec. 4: the MLP init adds to the attention init (a smaller effect)",
                higher=_vit("mimetic-attention+mean-shift:0.05"),
                lower=_vit("torch-default+mimetic-attention"),
            ),
            Above(
                "both > MLP init alone",
                "Fig. 2",
                higher=_vit("mimetic-attention+mean-shift:0.05"),
                lower=_vit("mean-shift:0.05"),
            ),
        ),
        Effect("both > attention init alone", None, "Fig. 2 is a plot"),
    ),
    "mimetic_scalar_bias": Row(
        (
            Above(
                "b = 0.2 > b = 0 with a learnable scalar bias",
                "Sec. 4 / Fig. 4: the scalar bias does not absorb the init's effect",
                higher=_mimetic("convnext", 2, "scalar-bias+mean-shift:0.2"),
                lower=_mimetic("convnext", 2, "scalar-bias+mean-shift:0"),
            ),
            Above(
                "b = 0.2 > b = 0 without it",
                "Fig. 4",
                higher=_mimetic("convnext", 2, "mean-shift:0.2"),
                lower=_mimetic("convnext", 2, "mean-shift:0"),
            ),
        ),
        Effect("b = 0.2 > b = 0 with a learnable scalar bias", None, "Fig. 4 is a plot"),
    ),
    "selection_accuracy": Row(
        (
            _selection("selection > random init", "Table 3: 81.4 vs 72.3", "uniform", "random_init"),
            _selection(
                "consecutive selection > random init", "Table 3: 81.6 vs 72.3", "consecutive", "random_init"
            ),
            _selection(
                "consistent > inconsistent selection",
                "Table 3: 81.4 vs 77.4",
                "uniform",
                "random_inconsistent",
            ),
            _selection(
                "inconsistent selection > random init",
                "Table 3: 77.4 vs 72.3",
                "random_inconsistent",
                "random_init",
            ),
            _selection("distillation > random init", "Table 4: 78.4 vs 72.3", "distill", "random_init"),
            _selection("selection > distillation", "Table 4: 81.4 vs 78.4 (+3.0)", "uniform", "distill"),
            _selection(
                "selection + distillation > selection", "Table 4: 83.9 vs 81.4", "uniform+distill", "uniform"
            ),
            _selection(
                "selection + distillation > distillation",
                "Table 4: 83.9 vs 78.4",
                "uniform+distill",
                "distill",
            ),
            SELECTION_PROBE,
        ),
        SELECTION_EFFECT,
    ),
    "selection_five_seeds": Row(
        (
            _selection("selection > random init", "Table 3: 81.4 vs 72.3", "uniform", "random_init"),
            SELECTION_PROBE,
        ),
        SELECTION_EFFECT,
    ),
    "selection_table7": Row(
        (
            _selection("selection > random init", "Table 7: 81.4 vs 72.3", "uniform", "random_init"),
            _selection("selection > L1 pruning", "Table 7: 81.4 vs 79.5", "uniform", "l1_pruning"),
            _selection(
                "selection > magnitude pruning", "Table 7: 81.4 vs 73.8", "uniform", "magnitude_pruning"
            ),
            _selection(
                "L1 pruning > magnitude pruning",
                "Table 7: 79.5 vs 73.8 (+5.7)",
                "l1_pruning",
                "magnitude_pruning",
            ),
            _selection("L1 pruning > random init", "Table 7: 79.5 vs 72.3", "l1_pruning", "random_init"),
            _selection(
                "magnitude pruning > random init",
                "Table 7: 73.8 vs 72.3 ('marginally')",
                "magnitude_pruning",
                "random_init",
            ),
            _selection(
                "selection > trunc-normal init",
                "Table 3: the paper's random init is timm's trunc normal, 81.4 vs 72.3",
                "uniform",
                "trunc_normal_init",
            ),
            SELECTION_PROBE,
        ),
        Effect("selection > random init", (72.3, 81.4), "Table 7, ViT-T on CIFAR-100"),
    ),
    "selection_derived": Row(
        (
            _selection(
                "selection > random init",
                "Table 2: selection beats random init for every student and dataset (no MobileNet)",
                "uniform",
                "random_init",
            ),
            _selection(
                "linear probe at init: selection > random init",
                "Table 9: 28.2 vs 13.5 (ViT-T), 23.6 vs 7.1 (ConvNeXt-F)",
                "uniform",
                "random_init",
                probe,
            ),
        ),
        Effect("selection > random init", None, "the paper has no MobileNet"),
    ),
    "selection_mimetic": Row(
        (
            _selection("selection > mimetic init", "Table 12: 81.4 vs 74.7", "uniform", "mimetic_init"),
            _selection("mimetic init > random init", "Table 12: 74.7 vs 72.3", "mimetic_init", "random_init"),
            _selection("selection > random init", "Table 12: 81.4 vs 72.3", "uniform", "random_init"),
        ),
        Effect("selection > mimetic init", (74.7, 81.4), "Table 12, ViT-T on CIFAR-100"),
    ),
    "selection_setup": Row(
        (
            _selection(
                "selection > random init (plain setup)", "Table 3: 81.4 vs 72.3", "uniform", "random_init"
            ),
        ),
        Effect("selection > random init (plain setup)", (72.3, 81.4), "Table 3, ViT-T on CIFAR-100"),
    ),
}
