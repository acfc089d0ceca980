"""``RecipeConfig``: the options of one recipe run, shared by ``fit_cifar``, ``fit_imagenet`` and
``structinit train``.

Every field left at :data:`DEFAULT` takes the recipe's default
(:data:`~keras_structinit.recipes.CIFAR_DEFAULTS`,
:data:`~keras_structinit.recipes.IMAGENET_DEFAULTS`); :meth:`RecipeConfig.resolved`
fills them in, and :meth:`RecipeConfig.to_dict` is what a run records in ``results.json``.

Example:
    >>> config = RecipeConfig("cifar10", epochs=10, optimizer="sgd", schedule="cosine", warmup_epochs=0)
    >>> fit_cifar(model, (x, y), config=config)
    >>> fit_cifar(model, (x, y), 10, optimizer="sgd")     # the same options as keywords
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from keras_structinit.utils import validation
from keras_structinit.utils.arguments import (  # also the parser's
    CIFAR_ONLY,
    DISTRIBUTIONS,
    IMAGENET_ONLY,
    LOSSES,
    NORMALIZATIONS,
    OPTIMIZERS,
    PIPELINES,
    PRECISIONS,
    RECIPES,
    SCHEDULES,
)

__all__ = [
    "CIFAR_ONLY",
    "DEFAULT",
    "IMAGENET_ONLY",
    "PIPELINES",
    "RECIPES",
    "TIMM_NO_WEIGHT_DECAY",
    "RecipeConfig",
    "exclude_from_weight_decay",
]

#: The CIFAR recipes' defaults (:func:`~keras_structinit.recipes.fit_cifar`; ConvMixer's CIFAR
#: script: batch 512, AdamW .01/.01, triangular schedule, torchvision's RandAugment n2 m12).
CIFAR_DEFAULTS = {
    "batch_size": 512,
    "learning_rate": 0.01,
    "weight_decay": 0.01,
    "label_smoothing": 0.0,
    "rand_augment": "torchvision:n2-m12",
    "pad": 4,
    "schedule": "triangular",
    "optimizer": "adamw",
    "normalization": "channel",
    "flip": True,
    "mixup_alpha": 0.0,
    "cutmix_alpha": 0.0,
    "random_erasing": 0.0,
    "random_labels": 0.0,
    "random_classes": None,
    "no_weight_decay": None,
}
#: The ImageNet recipe's defaults, close to "ResNet strikes back" A1
#: (:func:`~keras_structinit.recipes.fit_imagenet` lists the differences).
IMAGENET_DEFAULTS = {
    "image_size": 224,
    "batch_size": 1024,
    "base_learning_rate": 5e-3,  # at batch 2048
    "weight_decay": 0.01,
    "warmup_epochs": 5,
    "rand_augment": "timm:m7-n2-mstd0.5-inc1",
    "mixup_alpha": 0.2,
    "cutmix_alpha": 1.0,
    "random_erasing": 0.0,
    "loss": "bce",
    "label_smoothing": 0.0,
    "no_weight_decay": None,
}

#: The variable names ``no_weight_decay="timm"`` leaves undecayed beside every variable of rank <= 1
#: (regular expressions, searched in a Keras variable's ``name``): the package's biases of any rank
#: (attention's are 2-D), normalization scales and shifts, the ViT's position table
#: (``PositionEmbedding``) and class token (``ClassToken``).
TIMM_NO_WEIGHT_DECAY = ("^bias$", "^gamma$", "^beta$", "^embedding$", "^token$")


class _Default:
    """The recipe's own value (a singleton)."""

    def __repr__(self):
        return "DEFAULT"

    def __reduce__(self):
        return "DEFAULT"


#: A field left at this takes the recipe's default.
DEFAULT = _Default()


@dataclass(frozen=True)
class RecipeConfig:
    """What a recipe run takes besides the model, the data and the callbacks.

    Every recipe:
        recipe: ``"cifar10"``, ``"cifar100"`` or ``"imagenet"``.
        epochs: passes over the training data.
        batch_size: global batch size.
        learning_rate: peak learning rate (ImageNet: default ``5e-3 * batch_size / 2048``).
        weight_decay: AdamW's decoupled weight decay (``optimizer="sgd"``: PyTorch's L2).
        label_smoothing: of the categorical cross-entropy.
        no_weight_decay: variables the optimizer does not decay (default ``None``: every trainable
            variable decays). ``"timm"``: timm's parameter groups, as the weight-selection
            authors' ``optim_factory.py`` builds them (``ndim <= 1``, ``.bias``, and the model's
            ``no_weight_decay()``: position table, class token): every variable of rank <= 1 and
            :data:`TIMM_NO_WEIGHT_DECAY` by name. Or a sequence of regular expressions, each
            searched in a variable's ``name`` (``"bias"``, not its path). Applies
            to Keras' decoupled decay (``optimizer="adamw"``, the ImageNet recipe); the SGD
            optimizers' PyTorch-style L2 decays every variable, and refuses it.
        rand_augment: a RandAugment form (:mod:`~keras_structinit.recipes.rand_augment`):
            ``"torchvision:n2-m12"`` (CIFAR default: the ConvMixer CIFAR README's command),
            ``"timm:m9-n2-mstd0.5-inc1"``, ``"keras:n2-f0.4"`` (a legacy ``(num_ops, factor)``
            pair is the Keras form), or ``None``.
        pipeline: the input stream: ``"auto"`` (default), ``"native"`` (batches augmented on the
            device in Keras ops, no TensorFlow) or ``"tf"`` (``tf.data``).
        mixup_alpha, cutmix_alpha: ``keras.layers.MixUp`` / ``CutMix`` per batch, one of the two
            with probability 1/2 when both are on (0 or ``None``: off; CIFAR default off,
            ImageNet 0.2 and 1.0; weight selection's CIFAR recipe, Table 13: 0.8 and 1.0).
        random_erasing: probability that ``keras.layers.RandomErasing`` erases a box of an image
            (default 0; Table 13: 0.25).
        warmup_epochs: linear warmup of the cosine schedule, in epochs (CIFAR: may be fractional,
            default 5% of the run; ImageNet: an int, default 5, clipped to ``epochs - 1``).
        precision: ``None``/``"float32"``, ``"mixed_bfloat16"``, ``"mixed_float16"`` or ``"auto"``.
        distribution: ``None``, ``"data_parallel"`` (JAX), ``"mirrored"``/``"tpu"`` (TensorFlow),
            ``"auto"``, or an instance.
        ema: ``False``, ``True`` (momentum 0.9999) or the EMA momentum of the weights.
        seed: seed of the shuffling and augmentation.
        steps_per_epoch: default: the data's size over the batch size.
        jit_compile: passed to ``model.compile`` (``None``: Keras' choice).

    CIFAR recipes (:data:`CIFAR_ONLY`):
        optimizer: ``"adamw"``, ``"sgd"`` (Nesterov 0.9, PyTorch-style L2) or ``"sgd_momentum"``.
        schedule: ``"triangular"``, ``"cosine"`` (warmup then cosine decay to 0) or ``"step"``
            (divided by 3 at 1/3 and 2/3 of the run).
        normalization: ``"channel"`` (the data's per-channel mean/std) or ``"symmetric"`` ([-1, 1]).
        pad: zero padding before the random crop (0: no crop).
        flip: random horizontal flips.
        random_labels: the fraction of training labels replaced by random ones, fixed per
            example by ``seed`` (Maennel et al., App. A.1; default 0).
        random_classes: with ``random_labels=1``, how many classes the random labels are drawn
            from, and the model's outputs (App. A.1 step 3, ``num_classes_upstream``; default: the
            data's classes). The held-out labels are then random too (seeds ``seed + 1``,
            ``seed + 2``): the true classes do not fit such a head.

    ImageNet recipe (:data:`IMAGENET_ONLY`):
        image_size: the crop size.
        loss: ``"bce"`` (sigmoid cross-entropy on the mixed targets) or ``"ce"``.
    """

    recipe: str = "cifar10"
    epochs: Any = DEFAULT
    batch_size: Any = DEFAULT
    learning_rate: Any = DEFAULT
    weight_decay: Any = DEFAULT
    label_smoothing: Any = DEFAULT
    rand_augment: Any = DEFAULT
    warmup_epochs: Any = DEFAULT
    precision: Any = None
    distribution: Any = None
    ema: Any = False
    seed: Any = 0
    steps_per_epoch: Any = None
    jit_compile: Any = None
    pipeline: Any = "auto"
    optimizer: Any = DEFAULT
    schedule: Any = DEFAULT
    normalization: Any = DEFAULT
    pad: Any = DEFAULT
    flip: Any = DEFAULT
    random_labels: Any = DEFAULT
    random_classes: Any = DEFAULT
    mixup_alpha: Any = DEFAULT
    cutmix_alpha: Any = DEFAULT
    random_erasing: Any = DEFAULT
    image_size: Any = DEFAULT
    loss: Any = DEFAULT
    no_weight_decay: Any = DEFAULT

    def __post_init__(self):
        validation.one_of(self.recipe, "recipe", RECIPES)
        validation.one_of(self.pipeline, "pipeline", PIPELINES)
        for name, check in _FIELD_CHECKS.items():  # every given field, when the config is built
            value = getattr(self, name)
            if value is not DEFAULT:
                check(value, name)
        if self.no_weight_decay is not DEFAULT:
            object.__setattr__(self, "no_weight_decay", check_no_weight_decay(self.no_weight_decay))
        if self.no_weight_decay not in (DEFAULT, None):
            optimizer = CIFAR_DEFAULTS["optimizer"] if self.optimizer is DEFAULT else self.optimizer
            if self.is_cifar and optimizer != "adamw":
                raise ValueError(
                    "`no_weight_decay` applies to the decoupled decay of optimizer='adamw'; "
                    "the SGD optimizers' L2 decays every variable. "
                    f"Received: optimizer={optimizer!r}"
                )
        if self.rand_augment is not DEFAULT:
            from keras_structinit.recipes.native import tensorflow_available
            from keras_structinit.recipes.rand_augment import check_stream

            check_stream(self.rand_augment, self.pipeline, tensorflow_available())
        given, kind = _other_recipes_fields(
            self.recipe, [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not DEFAULT]
        )
        if given:
            raise ValueError(f"`{'`, `'.join(given)}` apply to the {kind}, not to recipe={self.recipe!r}")
        if self.random_classes not in (DEFAULT, None):
            validation.int_value(self.random_classes, "random_classes", minimum=2)
            labels = CIFAR_DEFAULTS["random_labels"] if self.random_labels is DEFAULT else self.random_labels
            if labels != 1:
                raise ValueError(
                    "`random_classes` sets the classes of random labels: it needs "
                    f"random_labels=1 (every label random). Received: random_labels={labels!r}"
                )
        if self.warmup_epochs is not DEFAULT and (self.warmup_epochs is not None or not self.is_cifar):
            schedule = CIFAR_DEFAULTS["schedule"] if self.schedule is DEFAULT else self.schedule
            if self.is_cifar and schedule != "cosine":
                raise ValueError(
                    f"`warmup_epochs` applies to schedule='cosine'. Received: schedule={schedule!r}"
                )
            if self.is_cifar and self.epochs is not DEFAULT and not self.warmup_epochs < self.epochs:
                raise ValueError(
                    f"`warmup_epochs` must be in [0, epochs={self.epochs}): the cosine decay needs an "
                    f"epoch after the warmup. Received: warmup_epochs={self.warmup_epochs!r}"
                )
            if not self.is_cifar:  # whole epochs (5.0 from a flag: 5)
                whole = isinstance(self.warmup_epochs, float) and self.warmup_epochs.is_integer()
                object.__setattr__(
                    self,
                    "warmup_epochs",
                    validation.int_value(
                        int(self.warmup_epochs) if whole else self.warmup_epochs, "warmup_epochs", minimum=0
                    ),
                )

    @property
    def is_cifar(self):
        return self.recipe != "imagenet"

    @classmethod
    def build(cls, kind, config=None, **options):
        """``config`` (or a new config of ``kind``: ``"cifar"`` or ``"imagenet"``) with ``options``
        replacing its fields; ``TypeError`` naming an option that is not a field, ``ValueError``
        for a config of the other kind."""
        names = {f.name for f in dataclasses.fields(cls)} - {"recipe"}
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(f"unexpected recipe option(s) {unknown}; the options are {sorted(names)}")
        if config is None:
            return cls("imagenet" if kind == "imagenet" else "cifar10", **options)
        if not isinstance(config, cls):
            raise TypeError(
                f"`config` must be a RecipeConfig. Received: config of type {type(config).__name__}"
            )
        if config.is_cifar != (kind == "cifar"):
            raise ValueError(
                f"`config` is for recipe={config.recipe!r}; this function trains the {kind} recipe"
            )
        return dataclasses.replace(config, **options)

    def resolved(self):
        """Every field as a dict, with the recipe's defaults filled in (``learning_rate`` may stay
        ``None`` for ImageNet: scaled with the batch size when the run starts)."""
        defaults = (
            dict(CIFAR_DEFAULTS, warmup_epochs=None)
            if self.is_cifar
            else dict(IMAGENET_DEFAULTS, learning_rate=None)
        )
        skip = IMAGENET_ONLY if self.is_cifar else CIFAR_ONLY
        out = {}
        for field in dataclasses.fields(self):
            if field.name in skip:
                continue
            value = getattr(self, field.name)
            if value is DEFAULT:
                if field.name == "epochs":
                    raise ValueError("`epochs` is needed: the number of passes over the training data")
                value = defaults[field.name]
            out[field.name] = value
        return out

    def filled(self):
        """This config with the recipe's default in every field left at :data:`DEFAULT` (the typed
        form of :meth:`resolved`; the other recipe's fields stay unset)."""
        return dataclasses.replace(self, **self.resolved())

    def to_dict(self):
        """:meth:`resolved`, JSON-ready (a distribution instance as its text)."""
        out = self.resolved()
        if out["distribution"] is not None and not isinstance(out["distribution"], str):
            out["distribution"] = str(out["distribution"])
        from keras_structinit.recipes.rand_augment import parse_rand_augment, to_record

        out["rand_augment"] = to_record(parse_rand_augment(out["rand_augment"]))
        return out


def _optional(check):
    return lambda value, name: validation.optional(check, value, name)


def _ema(value, name):
    """``False``, ``True`` or an EMA momentum in (0, 1), a ``float`` (the optimizer reads another
    type as ``True``)."""
    if isinstance(value, bool):
        return value
    if validation.rate(value, name) == 0 or not isinstance(value, float):
        raise ValueError(
            f"{validation.quoted(name)} must be False, True or a momentum in (0, 1). "
            f"Received: {name}={value!r}"
        )
    return value


def _distribution(value, name):
    """``None``, a name of :data:`DISTRIBUTIONS` or a ``keras.distribution`` instance (left as given)."""
    if value is None or not isinstance(value, str):
        return value
    return validation.one_of(value, name, DISTRIBUTIONS)


def _jit_compile(value, name):
    if value is None or value == "auto" or isinstance(value, bool):
        return value
    raise ValueError(
        f"{validation.quoted(name)} must be None, True, False or 'auto'. Received: {name}={value!r}"
    )


def _choice(choices):
    return lambda value, name: validation.one_of(value, name, choices)


#: The check of each field (``value, name -> value``), run on the fields a config is given.
_FIELD_CHECKS = {
    "epochs": validation.positive_int,
    "batch_size": validation.positive_int,
    "learning_rate": _optional(validation.positive_float),
    "weight_decay": validation.non_negative_float,
    "label_smoothing": validation.rate,
    "warmup_epochs": _optional(validation.non_negative_float),
    "precision": _optional(_choice(PRECISIONS)),
    "distribution": _distribution,
    "ema": _ema,
    "seed": validation.random_seed,
    "steps_per_epoch": _optional(validation.positive_int),
    "jit_compile": _jit_compile,
    "optimizer": _choice(OPTIMIZERS),
    "schedule": _choice(SCHEDULES),
    "normalization": _choice(NORMALIZATIONS),
    "pad": lambda value, name: validation.int_value(value, name, minimum=0),
    "flip": validation.boolean,
    "random_labels": lambda value, name: validation.fraction(value, name),
    "mixup_alpha": _optional(validation.non_negative_float),
    "cutmix_alpha": _optional(validation.non_negative_float),
    "random_erasing": _optional(lambda value, name: validation.fraction(value, name)),
    "image_size": validation.positive_int,
    "loss": _choice(LOSSES),
}


def check_no_weight_decay(value):
    """``value`` as :class:`RecipeConfig` keeps ``no_weight_decay``: ``None``, ``"timm"`` or a
    tuple of regular expressions (``TypeError`` for another type, ``ValueError`` for another
    string, an empty or invalid pattern)."""
    if value is None or value == "timm":
        return value
    if isinstance(value, str):
        raise ValueError(
            "`no_weight_decay` must be None, 'timm' or a sequence of variable-name patterns. "
            f"Received: no_weight_decay={value!r}"
        )
    if not isinstance(value, (list, tuple)) or not all(isinstance(p, str) for p in value):
        raise TypeError(
            "`no_weight_decay` must be None, 'timm' or a sequence of str (variable-name "
            f"patterns). Received: no_weight_decay={value!r}"
        )
    for pattern in value:
        if not pattern:
            raise ValueError("`no_weight_decay` holds an empty pattern, which would match every variable")
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(
                f"`no_weight_decay`: {pattern!r} is not a regular expression ({error})"
            ) from None
    return tuple(value)


def exclude_from_weight_decay(optimizer, variables, no_weight_decay):
    """Keeps ``optimizer`` (not built yet) from decaying the variables among ``variables`` (the
    built model's trainable ones) that ``no_weight_decay`` (a :class:`RecipeConfig` value) names:
    ``optimizer.exclude_from_weight_decay(var_list=...)``. Matched here, on each Keras variable's
    ``name``, not by Keras' ``var_names``: that searches the backend variable's name, which is the
    whole path (``"dense/bias:0"``) on TensorFlow. Returns the excluded variables' paths."""
    no_weight_decay = check_no_weight_decay(no_weight_decay)
    if no_weight_decay is None:
        return []
    if getattr(optimizer, "l2", 0):  # TorchSGD: coupled L2 on every variable, as in PyTorch
        raise ValueError(
            "`no_weight_decay` applies to Keras' decoupled weight decay (AdamW); "
            f"{type(optimizer).__name__}'s L2 decays every variable"
        )
    variables = list(variables)
    if not variables:
        raise ValueError("`no_weight_decay` needs the model's variables: build the model before training")
    pattern = re.compile("|".join(TIMM_NO_WEIGHT_DECAY if no_weight_decay == "timm" else no_weight_decay))
    excluded = [
        v for v in variables if pattern.search(v.name) or (no_weight_decay == "timm" and len(v.shape) <= 1)
    ]
    optimizer.exclude_from_weight_decay(var_list=excluded)
    return [v.path for v in excluded]


def _other_recipes_fields(recipe, fields):
    """``(fields among fields that only the other kind of recipe takes, that kind's name)``."""
    cifar = recipe != "imagenet"
    other = IMAGENET_ONLY if cifar else CIFAR_ONLY
    kind = "ImageNet recipe (imagenet)" if cifar else "CIFAR recipes (cifar10, cifar100)"
    return [field for field in other if field in fields], kind


def paper_config(name, recipe="cifar10"):
    """The :class:`RecipeConfig` of a paper's CIFAR experiment (``structinit train --paper NAME``).

    ``name`` is a :class:`~keras_structinit.methods.PaperSetup` of a method record
    (``"convcov"``, ``"lc"``, ``"alignment"``, ``"mimetic"``, ``"selection"``); the model,
    init and data size of the setup are in ``keras_structinit.methods.setup_records()[name]``.
    Replace fields with ``dataclasses.replace`` or ``fit_cifar(..., config=c, epochs=...)``.

    Example:
        >>> config = paper_config("lc")  # 75 epochs, SGD Nesterov, cosine, batch 256, ...
        >>> fit_cifar(model, data, config=config, epochs=1)
    """
    from keras_structinit import methods

    setups = methods.paper_setups()
    validation.one_of(name, "name", tuple(setups))
    return RecipeConfig(recipe, **setups[name].recipe_fields())
