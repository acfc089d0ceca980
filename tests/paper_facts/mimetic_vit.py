"""The facts of the ``mimetic-vit`` setup, from its paper's text (see ``tests/test_paper_setups.py``)."""

SETUP = "mimetic-vit"
#: ``{field: (the paper's value, where the paper says it)}``
FACTS = {
    "model": ("vit-tiny-8/2", "Sec. 3, ViT results: tiny ViTs of dimension 192, depth 8, 3 heads"),
    "batch_size": (512, "Sec. 3: the same pipeline as the ConvNeXt runs"),
    "optimizer": ("adamw", "Trockman et al. (2022), Sec. 4: AdamW"),
    "learning_rate": (0.01, "Trockman et al. (2022), Sec. 4: learning rate .01"),
    "weight_decay": (0.01, "Trockman et al. (2022), Sec. 4: weight decay .01"),
    "schedule": ("triangular", "Trockman et al. (2022), Sec. 4: triangular schedule"),
}
