"""The facts of the ``convcov`` setup, from its paper's text (see ``tests/test_paper_setups.py``)."""

SETUP = "convcov"
#: ``{field: (the paper's value, where the paper says it)}``
FACTS = {
    "model": ("convmixer-256/8", "App. B: the grid search used ConvMixer-256/8"),
    "patch_size": (2, "App. B: values chosen for 2x2-patch models"),
    "kernel_size": (9, "App. B: frozen 9x9 filters"),
    "frozen": (True, "App. B: frozen 9x9 filters"),
    "epochs": (20, "App. B: trained for 20 epochs"),
    "batch_size": (512, "Sec. 4: batch size of 512"),
    "optimizer": ("adamw", "Sec. 4: the AdamW optimizer"),
    "learning_rate": (0.01, "Sec. 4: a learning rate of .01"),
    "weight_decay": (0.01, "Sec. 4: weight decay of .01"),
    "schedule": ("triangular", "Sec. 4: a simple triangular learning rate schedule"),
}
