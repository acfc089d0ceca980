"""Import structure: no cycles, Keras-free math, lazy namespaces, registration on Keras import."""

import concurrent.futures
import importlib.util
import os
import pkgutil
import subprocess
import sys

import keras
import pytest

import keras_structinit
from keras_structinit import _registry

BACKEND_MODULES = ("keras", "tensorflow", "jax", "torch")


def all_modules():
    names = ["keras_structinit"]
    for info in pkgutil.walk_packages(keras_structinit.__path__, "keras_structinit."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return sorted(names)


def fresh(code, backend=None):
    env = dict(os.environ, **({"KERAS_BACKEND": backend} if backend else {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "torch", reason="import order does not depend on the backend")
def test_every_module_imports_alone_in_a_fresh_interpreter():
    # Run once per suite; the interpreters use JAX when installed, whose Keras
    # imports in ~2.7 s against torch's ~7 s (80 interpreters).
    backend = "jax" if importlib.util.find_spec("jax") else None
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(
            all_modules(), pool.map(lambda m: fresh(f"import {m}", backend), all_modules()), strict=True
        ))
    failed = {name: r.stderr.strip().splitlines()[-1] for name, r in results.items() if r.returncode}
    assert not failed


@pytest.mark.parametrize(
    "module",
    [
        "keras_structinit",
        "keras_structinit.alignment",
        "keras_structinit.alignment.patches",
        "keras_structinit.covariance",
        "keras_structinit.covariance.closed_form",
        "keras_structinit.covariance.bank",
        "keras_structinit.lc",
        "keras_structinit.lc.counting",
        "keras_structinit.mimetic",
        "keras_structinit.mimetic.shift",
        "keras_structinit.validation",
        "keras_structinit.datasets",
    ],
)
def test_pure_modules_import_no_backend(module):
    code = f"import sys, {module}; print(sorted(m for m in {BACKEND_MODULES!r} if m in sys.modules))"
    result = fresh(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("order", ["keras first", "keras_structinit first"])
def test_serializable_objects_registered_after_import_in_either_order(order):
    imports = (
        "import keras; import keras_structinit"
        if order == "keras first"
        else ("import keras_structinit; import keras")
    )
    result = fresh(
        f"{imports}\n"
        "print(sorted(n for n in keras.saving.get_custom_objects() if n.startswith('keras_structinit>')))"
    )
    assert result.returncode == 0, result.stderr
    expected = sorted(n for n in keras.saving.get_custom_objects() if n.startswith("keras_structinit>"))
    assert result.stdout.strip().splitlines()[-1] == repr(expected)


def test_registry_lists_every_module_that_registers_objects():
    defining = set()
    for name in all_modules():
        if name.startswith("keras_structinit.cli"):
            continue
        module = __import__(name, fromlist=["_"])
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == name
                and keras.saving.get_registered_name(value).startswith("keras_structinit>")
            ):
                defining.add(name)
    registered_by = set()
    for name in _registry.SERIALIZABLE_MODULES:
        registered_by.add(name)
        module = __import__(name, fromlist=["_"])
        for value in vars(module).values():
            if isinstance(value, type) and keras.saving.get_registered_name(value).startswith(
                "keras_structinit>"
            ):
                registered_by.add(value.__module__)
    assert defining <= registered_by


def test_lazy_namespaces_expose_their_names():
    assert "ConvCovariance" in dir(keras_structinit.initializers)
    assert keras_structinit.initializers.ConvCovariance is keras_structinit.covariance.ConvCovariance
    assert "apply_conv_covariance" in keras_structinit.__all__
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = keras_structinit.nope
