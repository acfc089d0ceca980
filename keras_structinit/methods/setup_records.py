"""Paper setups: the :class:`PaperSetup` record (a paper's CIFAR experiment, ``structinit train
--paper NAME``), the run settings it may set, and the departures that several setups share.

Each method's record declares its setups (``Method.setups``); :func:`keras_structinit.methods.setup_records`
collects them and :meth:`keras_structinit.recipes.Run.from_paper` runs one. Import these from
:mod:`keras_structinit.methods`, the public place. This module imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: What a :class:`PaperSetup` may set besides the :class:`~keras_structinit.recipes.RecipeConfig`
#: fields of a CIFAR recipe: the fields of :class:`~keras_structinit.recipes.Run` but ``config``
#: (which the other settings fill) and ``paper`` (what ``Run.from_paper`` records), in its order.
#: Written out, not read from ``Run``: the recipes sit above the method records (``tests/architecture.py``),
#: so no module here may import them, not even inside a function. ``tests/test_paper_setups.py``
#: checks that these are exactly ``Run``'s fields.
RUN_SETTINGS = (
    "model",
    "init",
    "frozen",
    "data",
    "eval_data",
    "train_size",
    "train_offset",
    "validation_split",
    "model_kwargs",
    "new_head",
    "distill_from",
    "distill_mode",
    "distill_alpha",
)

#: A departure of every setup: the recipes hold out their own validation split.
HELD_OUT_NOTE = (
    "trains on 90% of the training split and validates on the rest (--val-split); the paper "
    "trains on all of it and reports the test split (--val-split 0 --eval-data TEST)"
)
#: The departures of the setups that follow ConvMixer's CIFAR pipeline (Trockman & Kolter 2022).
CONVMIXER_PIPELINE_NOTES = (
    "the paper states no N (ops per image) or M (magnitude) for RandAugment: torchvision:n2-m12 is the "
    "command of the cited CIFAR script's README for its 92.5% run (--ra-n=2 --ra-m=12); the script's "
    "train.py defaults to 1 op at magnitude 8 (torchvision:n1-m8)",
    "the text names RandAugment only; here also a pad-4 random crop and flips. The cited CIFAR script "
    "(locuslab/convmixer-cifar10 train.py) flips and by default takes a square RandomResizedCrop of "
    "scale 0.75-1, ColorJitter 0.1 and random erasing 0.25; its README's 92.5% command turns those "
    "three off (--scale 1.0 --jitter 0 --reprob 0). Neither has a pad crop; none of the three is here",
    "the script trains in mixed precision (torch.cuda.amp); here float32 unless --precision",
)


@dataclass(frozen=True)
class PaperSetup:
    """A paper's CIFAR experiment, as ``structinit train --paper NAME`` and
    :func:`keras_structinit.recipes.paper_config` run it.

    Attributes:
        name: the ``--paper`` name (``"convcov"``).
        paper: the paper, as cited.
        settings: ``{setting: (value, source)}``: each of :data:`RUN_SETTINGS` or a CIFAR
            ``RecipeConfig`` field the paper fixes, with the section or table saying so.
        notes: where a run of this setup still departs from the paper, and why.
    """

    name: str
    paper: str
    settings: Mapping[str, tuple]
    notes: tuple = ()

    def recipe_fields(self):
        """``{field: value}`` of the ``RecipeConfig`` fields this setup sets."""
        return {k: v for k, (v, _) in self.settings.items() if k not in RUN_SETTINGS}

    def value(self, setting, default=None):
        return self.settings[setting][0] if setting in self.settings else default
