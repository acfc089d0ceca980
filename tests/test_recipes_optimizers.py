"""TorchSGD against PyTorch's own SGD (torch is installed with the test extras)."""

import keras
import numpy as np
import pytest

from keras_structinit.recipes import TorchSGD, fit_cifar
from keras_structinit.recipes.optimizers import make_optimizer

from conftest import to_numpy

torch = pytest.importorskip("torch")


def run_keras(optimizer, w0, targets):
    w = keras.Variable(w0)
    for target in targets:  # loss 0.5 * ||w - target||^2, gradient w - target
        optimizer.apply_gradients([(keras.ops.convert_to_tensor(to_numpy(w) - target), w)])
    return to_numpy(w)


def run_torch(w0, targets, **options):
    w = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    optimizer = torch.optim.SGD([w], **options)
    for target in targets:
        optimizer.zero_grad()
        (0.5 * ((w - torch.tensor(target)) ** 2).sum()).backward()
        optimizer.step()
    return w.detach().numpy()


@pytest.mark.parametrize("nesterov", [True, False])
def test_matches_torch_sgd_with_coupled_weight_decay(nesterov):
    rng = np.random.default_rng(0)
    w0, targets = rng.standard_normal(5), rng.standard_normal((6, 5))
    ours = run_keras(TorchSGD(0.1, momentum=0.9, nesterov=nesterov, l2=0.05), w0.astype("float32"), targets)
    ref = run_torch(w0, targets, lr=0.1, momentum=0.9, nesterov=nesterov, weight_decay=0.05)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    keras_decoupled = run_keras(
        keras.optimizers.SGD(0.1, momentum=0.9, nesterov=nesterov, weight_decay=0.05),
        w0.astype("float32"),
        targets,
    )
    assert np.abs(keras_decoupled - ref).max() > 1e-3  # Keras' own weight_decay is another rule


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="`l2` must be a finite number >= 0"):
        TorchSGD(l2=-1.0)
    with pytest.raises(ValueError, match="TorchSGD's decay is `l2`"):
        TorchSGD(weight_decay=0.1)
    with pytest.raises(ValueError, match="`optimizer` must be one of"):
        make_optimizer("adam", 0.1, 0.0)
    opt = make_optimizer("sgd", 0.01, 0.01)
    assert isinstance(opt, TorchSGD) and opt.nesterov and opt.momentum == 0.9 and opt.l2 == 0.01


def test_fit_cifar_trains_with_the_sgd_recipe():
    x = np.random.default_rng(0).integers(0, 256, (16, 8, 8, 3), dtype=np.uint8)
    y = np.arange(16) % 2
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    fit_cifar(
        model, (x, y), 1, batch_size=8, optimizer="sgd", schedule="cosine", rand_augment=None, verbose=0
    )
    assert isinstance(model.optimizer, TorchSGD) and model.optimizer.l2 == 0.01
    with pytest.raises(ValueError, match="`optimizer` must be one of"):
        fit_cifar(model, (x, y), 1, optimizer="lamb")


def test_sgd_momentum_is_plain_momentum_sgd():
    opt = make_optimizer("sgd_momentum", 0.1, 0.0)
    assert isinstance(opt, TorchSGD) and not opt.nesterov and opt.momentum == 0.9 and opt.l2 == 0.0
    rng = np.random.default_rng(1)
    w0, targets = rng.standard_normal(4), rng.standard_normal((5, 4))
    ref = run_torch(w0, targets, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(run_keras(opt, w0.astype("float32"), targets), ref, rtol=1e-5, atol=1e-6)
