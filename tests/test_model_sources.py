"""Every method on every model source, fresh and after a .keras round trip: the cells of
docs/model-sources.md (issue 33). A method applies, or says in one line why not; it never crashes."""

import importlib.util
from pathlib import Path

import keras
import numpy as np
import pytest
from model_sources import METHODS, SHAPE, SOURCES, cell, outcome, read_table, restore, snapshot

DOCS = Path(__file__).resolve().parents[1] / "docs" / "model-sources.md"
EXPECTED = read_table(DOCS.read_text())


def _finite_outputs(model):
    x = np.random.default_rng(1).uniform(-1, 1, (2, *SHAPE)).astype("float32")
    # On JAX, one compiled program per model (predict's) rather than every op dispatched and
    # compiled alone: the keras.applications models took ~1 s per call.
    out = model.predict(x, verbose=0) if keras.backend.backend() == "jax" else model(x, training=False)
    values = [keras.ops.convert_to_numpy(v) for v in keras.tree.flatten(out)]
    return all(np.isfinite(v).all() for v in values)


@pytest.mark.parametrize("source", list(SOURCES))
def test_every_method_on_the_source_as_documented(source, tmp_path):
    """Fresh on every backend; after a .keras round trip once per suite (the torch process): what a
    reload changes (variable paths, layer classes) is the same on every backend."""
    builder, extra = SOURCES[source]
    if extra and importlib.util.find_spec(extra) is None:
        pytest.skip(f"{extra} is not installed")
    fresh = builder()
    models = [("fresh", fresh)]
    if keras.backend.backend() == "torch":
        fresh.save(tmp_path / "model.keras")
        models.append(("reloaded", keras.saving.load_model(tmp_path / "model.keras")))
    for label, model in models:
        state = snapshot(model)
        for method in METHODS:
            result = outcome(method, model, builder)
            assert cell(result) == EXPECTED[(method, source)], (
                f"{method} on {source} ({label}): {result}; docs/model-sources.md says "
                f"{EXPECTED[(method, source)]} (regenerate it with `python tests/model_sources.py`)"
            )
            if result[0] == "yes":
                assert _finite_outputs(model), f"{method} on {source} ({label}) gave non-finite outputs"
            restore(model, state)


def test_the_documented_table_covers_every_method_and_source():
    assert {m for m, _ in EXPECTED} == set(METHODS) and {s for _, s in EXPECTED} == set(SOURCES)
