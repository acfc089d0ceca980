"""The facts of the ``selection`` setup, from its paper's text (see ``tests/test_paper_setups.py``)."""

SETUP = "selection"
#: ``{field: (the paper's value, where the paper says it)}``
FACTS = {
    "model": ("vit-tiny", "Sec. 4: ViT-T, the student"),
    "epochs": (300, "Table 15, ViT-T on C-10: 300 training epochs"),
    "batch_size": (512, "Table 15, ViT-T on C-10: batch size 512"),
    "warmup_epochs": (50.0, "Table 15, ViT-T on C-10: 50 warmup epochs"),
    "learning_rate": (0.002, "App. A: base learning rate 2e-3 for ViT-T"),
    "optimizer": ("adamw", "Table 13: AdamW"),
    "weight_decay": (0.05, "Table 13: weight decay 0.05"),
    "schedule": ("cosine", "Table 13: cosine decay, linear warmup"),
    "mixup_alpha": (0.8, "Table 13: mixup 0.8"),
    "cutmix_alpha": (1.0, "Table 13: cutmix 1.0"),
    "random_erasing": (0.25, "Table 13: random erasing 0.25"),
    "label_smoothing": (0.1, "Table 13: label smoothing 0.1"),
    # Table 13: "randaugment (Cubuk et al., 2020) (9, 0.5)": magnitude 9, magnitude std 0.5 (timm's
    # mstd). N and inc1 come from the authors' code (ConvNeXt's --aa rand-m9-mstd0.5-inc1), not
    # the paper: no rows.
    "rand_augment.magnitude": (9.0, "Table 13: randaugment (9, 0.5)"),
    "rand_augment.magnitude_std": (0.5, "Table 13: randaugment (9, 0.5)"),
}
