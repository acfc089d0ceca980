"""Tests of the keras_structinit.datasets package: its public names, where they are defined, and that
importing it loads no Keras (NumPy + Pillow only, any backend). Each module of the package has its
own file: tests/test_datasets_{cifar,folders,splits,procedural}.py."""

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import keras_structinit
from keras_structinit import datasets

MODULES = ("cifar", "folders", "procedural", "splits")
#: Names outside ``__all__`` that other modules import from ``keras_structinit.datasets``.
IMPORTED_ELSEWHERE = ("list_image_folder", "_import_pil", "rgb_image")


def test_datasets_is_a_package_and_every_name_of_its_all_imports_from_it():
    """Issue 61 point 3: ``datasets.py`` became a package; ``from keras_structinit.datasets import X``
    works for every name of ``__all__`` (and the names other modules import), each the very object
    that its module defines."""
    package = Path(keras_structinit.__file__).parent
    assert Path(datasets.__file__) == package / "datasets" / "__init__.py"
    assert not (package / "datasets.py").exists()
    assert sorted(info.name for info in pkgutil.iter_modules(datasets.__path__)) == sorted(MODULES)
    modules = [importlib.import_module(f"keras_structinit.datasets.{name}") for name in MODULES]
    assert len(datasets.__all__) == len(set(datasets.__all__)) == 20
    for name in (*datasets.__all__, *IMPORTED_ELSEWHERE):
        namespace = {}
        exec(f"from keras_structinit.datasets import {name}", namespace)  # the statement users write
        homes = [m.__name__ for m in modules if name in vars(m) and vars(m)[name] is namespace[name]]
        assert homes, f"{name} is defined in none of {MODULES}"
        value = namespace[name]
        if callable(value):
            assert value.__module__ in homes, (name, value.__module__)  # defined there, not copied


def test_recipes_load_cifar_data_is_load_cifar():
    from keras_structinit import recipes

    assert recipes.load_cifar_data is datasets.load_cifar


def test_importing_datasets_imports_no_keras():
    code = "import sys, keras_structinit.datasets; assert 'keras' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
