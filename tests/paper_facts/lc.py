"""The facts of the ``lc`` setup, from its paper's text (see ``tests/test_paper_setups.py``)."""

SETUP = "lc"
#: ``{field: (the paper's value, where the paper says it)}``
FACTS = {
    "model": ("lcresnet-20-16x8", "Fig. 1: LCResNet-20-16xE; frozen and learned break even at E = 8"),
    "frozen": (True, "Sec. 4: frozen random spatial convolutions"),
    "epochs": (75, "App. C: all CIFAR models for 75 epochs"),
    "optimizer": ("sgd", "App. C: SGD with Nesterov momentum of 0.9"),
    "learning_rate": (0.01, "App. C: initial learning rate of 1e-2"),
    "schedule": ("cosine", "App. C: cosine annealing"),
    "weight_decay": (0.01, "App. C: weight decay of 1e-2"),
    "batch_size": (256, "App. C: batch size of 256"),
    "label_smoothing": (0.1, "App. C: label smoothing of 1e-1"),
    "pad": (4, "App. C: zero-padded by 4 px, then 32 px random crops"),
    "flip": (True, "App. C: random horizontal flips"),
    "rand_augment": (None, "App. C: no augmentation besides pad, crop and flip"),
    "normalization": ("channel", "App. C: normalized by the channel mean and standard deviation"),
}
