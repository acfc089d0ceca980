"""The package's models train under ``jit_compile=True`` on the torch backend (issue 62).

Keras' torch trainer wraps each step in ``torch.compile``. Every model of the issue (ConvMixer
with the package's depthwise layer, LCResNet with frozen LC blocks, the isotropic ConvNeXt with
``ScalarBiasDense`` and the mean shift, the ViT with the mimetic attention init) trains one epoch
thawed and frozen, with a partial last batch (a second input shape), and must end with the
weights and predictions of the same epoch run eagerly.

What our code can break under ``torch.compile`` is Dynamo's trace and AOT autograd's symbolic
shapes (the issue's ``cannot determine truth value of Relational``): both run with the
``aot_eager`` backend. Inductor's C++ code generation, torch's own, costs minutes per model on
two cores, so one model (the ConvMixer of the issue, thawed and frozen: inductor could not order
the symbolic strides of the channels-last view its depthwise layer convolves) runs through
inductor, Keras' default, and the others through ``aot_eager``.
"""

import functools

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import models

from conftest import to_numpy

BACKEND = keras.backend.backend()
pytestmark = pytest.mark.skipif(BACKEND != "torch", reason="torch.compile is the torch backend's jit_compile")

SHAPE = (8, 8, 3)
CLASSES = 3


def _convmixer(frozen):
    model = models.convmixer(16, 1, kernel_size=5, patch_size=2, input_shape=SHAPE, num_classes=CLASSES)
    return ks.freeze_spatial(model) if frozen else [], model


def _lcresnet(frozen):
    model = models.lcresnet(8, 4, expansion=2, input_shape=SHAPE, num_classes=CLASSES, frozen=frozen)
    return [w.path for w in model.weights if frozen and not w.trainable and "moving" not in w.path], model


def _convnext(frozen):
    model = models.convnext_isotropic(
        16, 1, kernel_size=3, input_shape=SHAPE, num_classes=CLASSES, mlp_scalar_bias=True
    )
    ks.mimetic.apply_mean_shift(model, seed=0)
    return ks.freeze_spatial(model) if frozen else [], model


def _vit(frozen):
    model = models.vit(4, 16, 1, 2, input_shape=SHAPE, num_classes=CLASSES)
    ks.mimetic.apply_mimetic_attention(model, seed=0)
    return ks.freeze_spatial(model, which="all_spatial") if frozen else [], model


BUILDERS = {"convmixer": _convmixer, "lcresnet": _lcresnet, "convnext": _convnext, "vit": _vit}


def _epoch(name, frozen, jit_compile):
    """``(frozen paths, initial weights, weights after one epoch, predictions)`` of a fresh model."""
    keras.utils.set_random_seed(0)
    frozen_paths, model = BUILDERS[name](frozen)
    initial = [to_numpy(w) for w in model.weights]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, *SHAPE)).astype("float32")
    y = rng.integers(0, CLASSES, 10)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)  # batches of 4, 4 and 2
    trained = {w.path: to_numpy(w) for w in model.weights}
    return (
        frozen_paths,
        dict(zip(trained, initial, strict=True)),
        trained,
        to_numpy(model.predict(x, batch_size=4, verbose=0)),
    )


@pytest.fixture
def dynamo_backend(monkeypatch):
    """Sets the backend Keras' ``torch.compile`` calls use, starting from empty Dynamo caches."""
    import torch

    def use(backend):
        torch._dynamo.reset()
        if backend != "inductor":
            monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend=backend))

    yield use
    torch._dynamo.reset()


CASES = [
    pytest.param("convmixer", True, "inductor", id="convmixer-frozen-inductor"),
    pytest.param("convmixer", False, "inductor", id="convmixer-thawed-inductor"),
    *(
        pytest.param(name, frozen, "aot_eager", id=f"{name}-{'frozen' if frozen else 'thawed'}")
        for name in ("lcresnet", "convnext", "vit")
        for frozen in (False, True)
    ),
]


@pytest.mark.parametrize("name, frozen, backend", CASES)
def test_one_compiled_epoch_equals_eager(dynamo_backend, name, frozen, backend):
    frozen_paths, initial, eager, eager_predictions = _epoch(name, frozen, jit_compile=False)
    assert bool(frozen_paths) == frozen
    dynamo_backend(backend)
    _, _, compiled, compiled_predictions = _epoch(name, frozen, jit_compile=True)

    assert compiled.keys() == eager.keys()
    moved = [path for path in eager if not np.array_equal(eager[path], initial[path])]
    assert len(moved) > len(eager) // 3  # the epoch trained
    for path in frozen_paths:
        np.testing.assert_array_equal(compiled[path], initial[path], err_msg=path)
    for path, want in eager.items():
        np.testing.assert_allclose(compiled[path], want, rtol=1e-4, atol=1e-5, err_msg=path)
    np.testing.assert_allclose(compiled_predictions, eager_predictions, rtol=1e-4, atol=1e-5)
