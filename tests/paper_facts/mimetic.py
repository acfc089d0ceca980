"""The facts of the ``mimetic`` setup, from its paper's text (see ``tests/test_paper_setups.py``)."""

SETUP = "mimetic"
#: ``{field: (the paper's value, where the paper says it)}``
FACTS = {
    "model": ("convnext-iso-256/8", "Sec. 3: an isotropic ConvNeXt-256/8"),
    "kernel_size": (7, "Sec. 3: with 7x7 filters"),
    "patch_size": (2, "Sec. 3: 2x2 patches for 32x32 inputs"),
    "frozen": (False, "Sec. 3: filters trained (no freezing mentioned)"),
    "batch_size": (512, "Sec. 3: the pipeline of Trockman et al. (2022), whose Sec. 4 says batch 512"),
    "optimizer": ("adamw", "Trockman et al. (2022), Sec. 4: AdamW"),
    "learning_rate": (0.01, "Trockman et al. (2022), Sec. 4: learning rate .01"),
    "weight_decay": (0.01, "Trockman et al. (2022), Sec. 4: weight decay .01"),
    "schedule": ("triangular", "Trockman et al. (2022), Sec. 4: triangular schedule"),
}
