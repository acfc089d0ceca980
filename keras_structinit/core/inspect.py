"""The core's section of ``structinit inspect``: what ``--init auto`` would choose for the model and
why (issue 80), the lines ``structinit init`` and ``train`` print for it, from the shipped evidence
table (:mod:`keras_structinit.core.auto`)."""

from __future__ import annotations

from keras_structinit.core.auto import choose
from keras_structinit.methods.inspection import Section, images_and_labels

__all__ = ["AutoSection", "auto"]


class AutoSection(Section):
    """``report.auto``: ``{"spec": the concrete spec auto resolves to, "lines": one per structure
    group (and per composition), what was found and the evidence row behind the choice}``."""

    def markdown(self):
        return [
            "## What `--init auto` would choose",
            "",
            f"`{self.value['spec']}`, from the evidence table the package ships (the decision table of "
            "docs/initialize.md), per structure group:",
            "",
            *(f"- {line}" for line in self.value["lines"]),
            "",
        ]


def auto(model, *, data, parts):
    """:class:`AutoSection` of ``model``: ``auto``'s choice with ``data``'s images where given (the
    forms that measure data become eligible) and no teacher."""
    images, _ = images_and_labels(data)
    choice = choose(model, data=images)
    return AutoSection({"spec": choice.spec, "lines": list(choice.lines)})
