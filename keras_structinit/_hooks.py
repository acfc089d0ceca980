"""Slots that :mod:`keras_structinit.methods` fills for lower modules, which may not import it.

The walker resolves selector names that method records add (``"lc_pointwise"``,
``"mlp_first"``); the records live above it, so the registry hands its lookup down here when it
is imported (``keras_structinit`` imports it), instead of the walker importing the registry.
"""

#: ``() -> {name: Selector}``: the selectors the method records add (set by the registry).
record_selectors = None
