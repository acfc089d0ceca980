"""The facts of the ``alignment`` setup, from its paper's text (see ``tests/test_paper_setups.py``)."""

SETUP = "alignment"
#: ``{field: (the paper's value, where the paper says it)}``
FACTS = {
    "model": ("vgg16", "App. A.5: VGG16 (App. A.2: configuration D without the FC-4096 layers)"),
    "init_scale": (0.526, "App. A.5, experiments 1-2: init_scale = 0.526"),
    "learning_rate": (0.01, "App. A.5, experiments 1-2: learning_rate = 0.01"),
    "random_classes": (5, "App. A.5, experiments 1-2: num_classes_upstream = 5"),
    "train_size": (20000, "App. A.5, experiments 1-2: num_examples_upstream = 20000"),
    "epochs": (120, "App. A.5, experiments 1-2: epochs_upstream = 120"),
    "random_labels": (1.0, "App. A.1 step 3: upstream examples labelled randomly and uniformly"),
    "train_offset": (0, "App. A.1 step 1: the upstream set is the first draw"),
    "optimizer": ("sgd_momentum", "App. A.3: SGD with momentum 0.9"),
    "batch_size": (256, "App. A.3: batch size 256"),
    "schedule": ("step", "App. A.3: divided by 3 after 1/3 and after 2/3 of the steps"),
    "weight_decay": (0.0, "App. A.3: no weight decay"),
    "label_smoothing": (0.0, "App. A.3: cross-entropy, no other regularization"),
    "rand_augment": (None, "App. A.3: no data augmentation"),
    "pad": (0, "App. A.3: no data augmentation"),
    "flip": (False, "App. A.3: no data augmentation"),
    "normalization": ("symmetric", "App. A.3: CIFAR10 inputs scaled to [-1, 1]"),
}
