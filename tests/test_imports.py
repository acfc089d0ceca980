"""Import structure: no cycles, Keras-free math, lazy namespaces, registration on Keras import."""

import importlib.util
import json
import os
import pkgutil
import subprocess
import sys

import keras
import pytest

import keras_structinit
from keras_structinit import _registry

from conftest import once_per_suite

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


# Imports each module given on the command line in a child forked from this interpreter,
# two at a time, and prints {module: last line of its error} for those that failed. Before
# forking it imports the third-party modules that importing Keras loads (a first child
# imports Keras and reports them) and a few more that the package's modules use, never Keras
# itself, whose import triggers the package's registration and so changes the order in which
# the package's modules load: every child starts with no module of Keras or of the package
# loaded, as a new interpreter does, without paying seconds of library imports each.
_FORK_IMPORTS = """
import importlib, json, os, sys, tempfile, traceback

def own(name):
    return name.split(".")[0] in ("keras", "keras_structinit")

def loaded_with_keras():  # the modules other than Keras' own that importing Keras loads
    if os.environ.get("FORK_PRELOAD") == "0":  # the script's own test: nothing to preload
        return []
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        before = set(sys.modules)
        try:
            import keras
        finally:
            os.write(writer, json.dumps([m for m in sys.modules if m not in before]).encode())
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        names = json.loads(pipe.read() or "[]")
    os.waitpid(pid, 0)
    return [m for m in names if not own(m) and not m.startswith("__")]

for lib in (*loaded_with_keras(), "scipy", "h5py", "IPython", "matplotlib.pyplot", "PIL.Image"):
    try:
        importlib.import_module(lib)
    except Exception:  # not installed, or an internal module: the children import it if they need it
        pass
assert not any(own(m) for m in sys.modules)
failed, running = {}, {}

def reap():
    pid, status = os.wait()
    name, log = running.pop(pid)
    log.seek(0)
    if status:
        failed[name] = (log.read().strip().splitlines() or [f"exit status {status}"])[-1]
    log.close()

for name in sys.argv[1:]:
    while len(running) >= 2:
        reap()
    log = tempfile.TemporaryFile("w+")
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            log.write(traceback.format_exc())
            log.flush()
            os._exit(1)
        os._exit(0)
    running[pid] = (name, log)
while running:
    reap()
print(json.dumps(failed))
"""


@pytest.mark.slow
@once_per_suite("import order does not depend on the backend")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child per module")
def test_every_module_imports_alone_in_a_fresh_interpreter():
    # Run once per suite; the children use JAX when installed, whose Keras imports fastest.
    backend = "jax" if importlib.util.find_spec("jax") else None
    env = dict(os.environ, **({"KERAS_BACKEND": backend} if backend else {}))
    result = subprocess.run([sys.executable, "-c", _FORK_IMPORTS, *all_modules()],
                            capture_output=True, text=True, env=env, timeout=1200)
    assert result.returncode == 0, result.stderr[-5000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {}


@once_per_suite("the forking script is the same on every backend")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child per module")
def test_forked_imports_report_a_broken_module(tmp_path):
    (tmp_path / "broken_module_for_test.py").write_text("import keras_structinit.no_such_module\n")
    env = dict(os.environ, FORK_PRELOAD="0",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", _FORK_IMPORTS, "broken_module_for_test", "json"],
                            capture_output=True, text=True, env=env, timeout=600)
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    assert list(failed) == ["broken_module_for_test"]
    assert "No module named 'keras_structinit.no_such_module'" in failed["broken_module_for_test"]


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


@once_per_suite("registration does not depend on the backend")
@pytest.mark.parametrize("order", ["keras first", "keras_structinit first"])
def test_serializable_objects_registered_after_import_in_either_order(order):
    # Once per suite, in JAX interpreters when installed (the fastest Keras import); the
    # round-trip tests load the package's objects on every backend.
    imports = (
        "import keras; import keras_structinit"
        if order == "keras first"
        else ("import keras_structinit; import keras")
    )
    result = fresh(
        f"{imports}\n"
        "print(sorted(n for n in keras.saving.get_custom_objects() if n.startswith('keras_structinit>')))",
        "jax" if importlib.util.find_spec("jax") else None,
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
    for name in _registry.serializable_modules():
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
