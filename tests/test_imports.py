"""Import structure: the package's layers and no cycles (:mod:`architecture`), Keras-free math, lazy
namespaces, registration with Keras (no import hook). The public face: ``tests/test_public_api.py``."""

import importlib.util
import json
import os
import pkgutil
import subprocess
import sys

import keras
import pytest

import keras_structinit
from keras_structinit import _registry, methods

import architecture
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
# itself, so that each child imports Keras through the module it tests (and the package imported
# after Keras registers its classes, importing more of its modules): every child starts with no
# module of Keras or of the package loaded, as a new interpreter does, without paying seconds of
# library imports each.
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
    result = subprocess.run(
        [sys.executable, "-c", _FORK_IMPORTS, *all_modules()],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {}


@once_per_suite("the forking script is the same on every backend")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child per module")
def test_forked_imports_report_a_broken_module(tmp_path):
    (tmp_path / "broken_module_for_test.py").write_text("import keras_structinit.no_such_module\n")
    env = dict(
        os.environ,
        FORK_PRELOAD="0",
        PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    )
    result = subprocess.run(
        [sys.executable, "-c", _FORK_IMPORTS, "broken_module_for_test", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    assert list(failed) == ["broken_module_for_test"]
    assert "No module named 'keras_structinit.no_such_module'" in failed["broken_module_for_test"]


#: Every module that imports neither Keras nor a backend, as the records declare (``Method.pure``).
PURE_MODULES = sorted({module for record in methods.records() for module in record.pure})


def test_every_method_package_is_pure_and_lists_its_math():
    for record in methods.records():
        assert record.package in record.pure, record.name  # importing a method loads no backend
        assert record.name == "core" or record.name == architecture.BASELINE or len(record.pure) > 1
    assert {"keras_structinit.selection.indices", "keras_structinit.selection.resample"} <= set(PURE_MODULES)


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_import_no_backend(module):
    code = f"import sys, {module}; print(sorted(m for m in {BACKEND_MODULES!r} if m in sys.modules))"
    result = fresh(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ------------------------------------------------------------------ layers and cycles (see architecture.py)


def test_no_import_from_a_lower_layer_to_a_higher_one():
    """core < methods < models < recipes < cli < facade, imports inside functions and relative imports
    included; methods stay apart (but for the baseline) and drivers import no method."""
    assert architecture.wrong_imports() == []


def test_every_layer_holds_modules():
    """The layer map sees the method folders (the baseline's included) and every layer."""
    layers = {architecture.layer(architecture.module_name(p)) for p in architecture.source_files()}
    assert {name for name, _ in layers} == set(architecture.LAYERS)
    assert {method for _, method in layers if method} == architecture.method_packages()
    assert architecture.BASELINE in architecture.method_packages()
    assert architecture.layer("keras_structinit.baseline.torch_default") == ("methods", "baseline")
    assert architecture.layer("keras_structinit.methods.inspection") == ("methods", None)


@pytest.mark.parametrize(
    "module, source, wrong",
    [
        (
            "keras_structinit.engine.walker",
            "def f():\n    from keras_structinit.methods import records\n",
            True,
        ),
        ("keras_structinit.engine.walker", "from . import validation\n", False),
        ("keras_structinit.utils.io_utils", "from ..recipes import config\n", True),
        ("keras_structinit.covariance.fit", "def f():\n    from ..lc import folding\n", True),
        ("keras_structinit.covariance.fit", "from ..baseline import torch_default\n", False),
        ("keras_structinit.covariance.fit", "from keras_structinit import initializers\n", True),
        (
            "keras_structinit.covariance.fit",
            "from keras_structinit.methods.inspection import values\n",
            False,
        ),
        ("keras_structinit.methods.inspection", "import keras_structinit.mimetic.inspect\n", True),
        ("keras_structinit.models.vit_model", "X = 'keras_structinit.recipes.cifar'\n", True),
        ("keras_structinit.recipes.cifar", "from keras_structinit.models import vit\n", False),
        ("keras_structinit.recipes.cifar", "from ..cli import train\n", True),
    ],
)
def test_the_layer_check_sees_an_upward_import(tmp_path, module, source, wrong):
    path = tmp_path / "module.py"
    path.write_text(source)
    assert bool(architecture.wrong_imports([(path, module)])) is wrong


@pytest.mark.parametrize("module_level", [True, False], ids=["module-level", "with-function-imports"])
def test_no_import_cycle(module_level):
    """The modules' imports form no cycle: those run at import, and with the imports inside functions
    and the modules named in strings (issue 50: three circles had grown back through those)."""
    edges = architecture.graph(module_level)
    assert "keras_structinit.baseline.torch_default" in edges
    assert architecture.cycle(edges) is None


#: The modules allowed 600 lines or more, each with the most lines it may have: the size it had when
#: listed. This list may only shrink: a module split under 600 lines leaves it, and no module joins it
#: (split a module that grows that long instead; issue 61, point 3).
LONG_MODULES = {}


@once_per_suite("line counts do not depend on the backend")
def test_no_module_grows_to_600_lines():
    lines = {
        path.relative_to(architecture.PACKAGE.parent).as_posix(): len(path.read_text().splitlines())
        for path in architecture.source_files()
    }
    too_long = {path: n for path, n in lines.items() if n >= 600 and path not in LONG_MODULES}
    grown = {path: n for path, n in lines.items() if path in LONG_MODULES and n > LONG_MODULES[path]}
    assert too_long == {}, f"{too_long}: split them (no module of the package reaches 600 lines)"
    assert grown == {}, f"{grown}: longer than LONG_MODULES allows (they may only shrink)"
    done = [path for path in LONG_MODULES if lines.get(path, 0) < 600]
    assert done == [], f"{done}: under 600 lines now; take them out of LONG_MODULES"


def test_the_cycle_check_finds_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert architecture.cycle(edges) == ["a", "b", "c", "a"]
    assert architecture.cycle({"a": {"b"}, "b": set()}) is None


#: Ways to get the package's classes registered with Keras in a fresh interpreter (``_registry``):
#: importing the package after Keras; or, imported before Keras (which ``import keras_structinit``
#: does not import, so that ``--backend`` can still choose it), looking up a public name of the
#: package or of a namespace once Keras is loaded, or reading a model file through the package. Plain
#: ``import keras_structinit; import keras`` registers nothing: no import hook (issue 75).
REGISTERING = {
    "keras first": "import keras; import keras_structinit",
    "a public name after keras": "import keras_structinit; import keras; keras_structinit.models",
    "a namespace's name after keras": "import keras_structinit.selection as s; import keras; s.load_teacher",
    "a model file read": (
        "import keras_structinit.engine.freezing as f, keras, os\n"
        "m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]); m.save('tiny.keras')\n"
        "f.load_frozen_model('tiny.keras')"
    ),
}


@once_per_suite("registration does not depend on the backend")
@pytest.mark.parametrize("how", list(REGISTERING))
def test_serializable_objects_registered_after_import(how, tmp_path):
    # Once per suite, in JAX interpreters when installed (the fastest Keras import); the
    # round-trip tests load the package's objects on every backend.
    env = dict(os.environ, **({"KERAS_BACKEND": "jax"} if importlib.util.find_spec("jax") else {}))
    code = (
        f"{REGISTERING[how]}\n"
        "print(sorted(n for n in keras.saving.get_custom_objects() if n.startswith('keras_structinit>')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
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
