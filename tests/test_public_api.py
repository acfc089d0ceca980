"""The package's public face is only API (issue 75, point 4): ``dir(keras_structinit)`` is its
``__all__`` plus dunders, every listed name resolves, every name the README, the guides and the
examples use is reachable, a submodule imported by name is that module, and no import hook."""

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import keras_structinit as ks

from conftest import once_per_suite

pytestmark = once_per_suite("the package's names do not depend on the backend")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(ks.__file__).parent

#: The public kinds and the functions of the core that the README and the guides use.
KINDS = ("callbacks", "datasets", "initializers", "layers", "models", "recipes")
FUNCTIONS = (
    "freeze_spatial",
    "initialize",
    "inspect",
    "load_frozen_model",
    "parse_init_spec",
    "reinitialize",
)
#: Internal modules: importable by their full name, not listed.
INTERNAL = ("engine", "lazy_exports", "methods", "utils", "_registry", "_lazy")
#: The package root holds the public API, the method folders and these role folders (issue 75, point 6).
ROLE_FOLDERS = {"engine", "methods", "utils", "cli"}


def all_modules():
    return sorted(
        info.name
        for info in pkgutil.walk_packages(ks.__path__, "keras_structinit.")
        if not info.name.endswith("__main__")
    )


def dunders(module):
    return {name for name in vars(module) if name.startswith("__") and name.endswith("__")} | {"__all__"}


def test_dir_is_all_plus_dunders():
    assert dir(ks) == sorted(set(ks.__all__) | dunders(ks))


def test_all_lists_the_kinds_the_methods_and_the_functions():
    methods = {r.package.rsplit(".", 1)[-1] for r in ks.methods.records() if r.name != "core"}
    assert set(KINDS) | methods | set(FUNCTIONS) <= set(ks.__all__)
    assert not set(INTERNAL) & set(ks.__all__)
    assert "core" not in ks.__all__  # the core's record holds no code of its own
    assert ks.__all__ == sorted(ks.__all__)


def test_internal_modules_are_importable_by_their_full_name_but_not_listed():
    for name in (
        "utils.arguments",
        "utils.io_utils",
        "utils.validation",
        "engine.walker",
        "methods.init_spec",
    ):
        module = importlib.import_module(f"keras_structinit.{name}")
        folder, _, short = name.partition(".")
        assert getattr(importlib.import_module(f"keras_structinit.{folder}"), short) is module
        assert folder not in dir(ks) or folder in ks.__all__
    with pytest.raises(AttributeError, match="has no attribute 'io_utils'"):
        _ = ks.io_utils
    with pytest.raises(AttributeError, match="has no attribute 'lazy_exports'"):
        _ = ks.lazy_exports


def test_the_namespaces_show_only_their_public_names():
    """The method packages and the kind namespaces list their ``__all__`` (and dunders) too, and a
    method package's ``__all__`` holds every export of its record."""
    lazy = [r.package for r in ks.methods.records() if r.name != "core"]
    lazy += ["keras_structinit.callbacks", "keras_structinit.initializers", "keras_structinit.layers"]
    for name in lazy:
        module = importlib.import_module(name)
        assert dir(module) == sorted(set(module.__all__) | dunders(module)), name
    for record in ks.methods.records():
        if record.name != "core":
            assert set(record.exports) <= set(importlib.import_module(record.package).__all__), record.name


def test_every_name_in_all_resolves():
    """In every module of the package that declares ``__all__``, lazy namespaces included."""
    unresolved = []
    for name in ["keras_structinit", *all_modules()]:
        module = importlib.import_module(name)
        unresolved += [f"{name}.{n}" for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert unresolved == []
    for kind in KINDS:
        assert getattr(ks, kind) is sys.modules[f"keras_structinit.{kind}"]
    assert ks.inspect is importlib.import_module("keras_structinit.methods.inspection").inspect


def test_a_submodule_imported_by_name_is_that_module():
    """``import keras_structinit.a.b as m`` gives the module ``a.b``, never a function or class of
    ``a`` that shares its name (``selection.plan`` is the function; its module is ``planning``)."""
    shadowed = []
    for name in all_modules():
        module = importlib.import_module(name)
        parent, _, leaf = name.rpartition(".")
        if getattr(sys.modules[parent], leaf, None) is not module:
            shadowed.append(name)
    assert shadowed == []
    import keras_structinit.selection.planning as planning

    assert planning is sys.modules["keras_structinit.selection.planning"]
    assert callable(ks.selection.plan) and ks.selection.plan.__module__ == "keras_structinit.selection.select"
    assert callable(ks.models.vit) and ks.models.vit.__module__ == "keras_structinit.models.vit_model"


def test_the_package_installs_no_import_hook():
    found = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "meta_path" in line or "path_hooks" in line
    ]
    assert found == []


#: ``ks.NAME...`` or ``keras_structinit.NAME...`` in the user-facing texts and the examples.
REFERENCE = re.compile(r"(?<![\w.])(ks|keras_structinit)((?:\.[A-Za-z_]\w*)+)")


def resolve(dotted):
    """The object ``keras_structinit.<dotted>`` names: its longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), -1, -1):
        try:
            value = importlib.import_module(".".join(["keras_structinit", *parts[:i]]))
        except ImportError:
            continue
        for part in parts[i:]:
            value = getattr(value, part)
        return value


def test_every_documented_name_is_reachable():
    """``ks.NAME`` (the alias the guides use in code) names something of ``__all__``; a full dotted
    name ``keras_structinit.a.b.c`` resolves, importing its modules."""
    texts = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "examples").glob("*.py")),
    ]
    missing = set()
    for path in texts:
        for match in REFERENCE.finditer(path.read_text()):
            alias, dotted = match.group(1), match.group(2)[1:]
            if alias == "ks" and dotted.split(".")[0] not in ks.__all__:
                missing.add(f"{path.name}: ks.{dotted} (not in __all__)")
                continue
            try:
                resolve(dotted)
            except AttributeError:
                missing.add(f"{path.name}: {alias}.{dotted}")
    assert sorted(missing) == []


def test_a_submodule_asked_for_during_an_import_reads_no_record():
    """``from keras_structinit import x`` in a module of the package that is being imported leaves
    ``x`` to the import system: the records, whose modules may be the ones importing, are not read."""
    code = (
        "import importlib.machinery, sys, types\n"
        "import keras_structinit\n"
        "from keras_structinit.methods import method_records\n"
        "spec = importlib.machinery.ModuleSpec('keras_structinit._probe', None)\n"
        "spec._initializing = True  # what the import system sets while a module runs\n"
        "probe = types.ModuleType('keras_structinit._probe')\n"
        "probe.__spec__ = spec\n"
        "sys.modules['keras_structinit._probe'] = probe\n"
        "from keras_structinit import utils\n"
        "assert utils is sys.modules['keras_structinit.utils']\n"
        "assert method_records.records.cache_info().currsize == 0, 'the records were read'\n"
        "del sys.modules['keras_structinit._probe']\n"
        "assert 'covariance' in keras_structinit.__all__ and method_records.records.cache_info().currsize\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_the_root_holds_the_public_api_the_method_folders_and_the_role_folders():
    """Issue 75, point 6: no loose internal module at the package root; the helpers sit in ``utils/``,
    what acts on any model in ``engine/``, the records' drivers in ``methods/``, commands in ``cli/``."""
    root = Path(ks.__file__).parent
    modules = {p.stem for p in root.glob("*.py")}
    assert modules == {"__init__", "_hooks", "_lazy", "_registry", "callbacks"}
    folders = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    method_folders = {r.package.rsplit(".", 1)[-1] for r in ks.methods.records()}
    assert folders == set(KINDS) - {"callbacks"} | method_folders | ROLE_FOLDERS | {"ops"}
