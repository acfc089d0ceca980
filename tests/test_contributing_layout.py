"""CONTRIBUTING.md's Layout section stays true about where each method's math is tested.

Every math module of a method (its record's ``pure``, the package itself aside) is mirrored by
``tests/test_<method>_<module>.py``, or is listed in the paragraph "Tests of the math modules"
with the combined test file that tests it.
"""

import ast
import re
from pathlib import Path

from keras_structinit import methods

from conftest import once_per_suite

pytestmark = once_per_suite("reads the repository's files")

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
HEADING = "**Tests of the math modules.**"


def math_modules():
    """``{"<method>/<module>.py": mirror path}`` of every method's math module (not the core's)."""
    found = {}
    for record in methods.records():
        if record.name == "core" or not record.package.startswith("keras_structinit."):
            continue
        method = record.package.rpartition(".")[2]
        for module in record.pure:
            if module.startswith(record.package + "."):
                name = module[len(record.package) + 1 :]
                found[f"{method}/{name}.py"] = TESTS / f"test_{method}_{name}.py"
    return found


def combined():
    """``{"<method>/<module>.py": [combined test files]}``: the exceptions that CONTRIBUTING.md lists,
    in entries separated by ``;``, each naming modules (`` `lc/folding.py` ``) and test files."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert text.count(HEADING) == 1, f"CONTRIBUTING.md has no single paragraph {HEADING}"
    paragraph = text[text.index(HEADING) :].split("\n\n")[0]
    listed = {}
    for entry in paragraph.split(":", 1)[1].split(";"):
        modules = re.findall(r"`(?!tests/)(\w+/\w+\.py)`", entry)
        files = re.findall(r"`tests/(test_\w+\.py)`", entry)
        if modules:
            assert files, f"CONTRIBUTING.md names no test file for {modules}"
            for module in modules:
                assert module not in listed, f"{module} listed twice"
                listed[module] = [TESTS / name for name in files]
    return listed


def test_the_layout_finds_the_math_modules():
    modules = math_modules()
    assert {
        "covariance/closed_form.py",
        "covariance/bank.py",
        "covariance/bank_io.py",
        "lc/folding.py",
        "selection/planning.py",
    } <= set(modules)
    assert all((ROOT / "keras_structinit" / module).is_file() for module in modules)


def test_every_math_module_has_its_mirror_or_is_listed_with_its_combined_file():
    listed = combined()
    missing = [m for m, mirror in math_modules().items() if not mirror.is_file() and m not in listed]
    assert not missing, (
        f"{missing}: add tests/test_<method>_<module>.py, or name the combined test file "
        f"in CONTRIBUTING.md's paragraph {HEADING}"
    )


def test_every_listed_module_is_a_math_module_without_a_mirror_tested_in_the_file_named():
    modules = math_modules()
    for module, files in combined().items():
        assert module in modules, f"CONTRIBUTING.md lists {module}, which is no method's math module"
        assert not modules[module].is_file(), (
            f"{module} now has its mirror {modules[module].name}: drop it from CONTRIBUTING.md's list"
        )
        method = module.split("/")[0]
        for path in files:
            assert path.is_file(), f"CONTRIBUTING.md names {path.name}, which does not exist"
            imports = (f"keras_structinit.{method}", f"from keras_structinit import {method}")
            assert any(text in path.read_text() for text in imports), (
                f"{path.name} does not import keras_structinit.{method}"
            )


def test_the_covariance_math_is_all_mirrored():
    modules = {m: mirror for m, mirror in math_modules().items() if m.startswith("covariance/")}
    assert len(modules) >= 6 and all(mirror.is_file() for mirror in modules.values())
    assert not set(modules) & set(combined())


# ---------------------------------------------------------- every module to its tests (issue 75, point 7)

MAP_HEADING = "## Where each module is tested"
PACKAGE = ROOT / "keras_structinit"


def module_map():
    """``{"<folder>/<module>.py": cell}`` of CONTRIBUTING.md's table under :data:`MAP_HEADING`."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert text.count(MAP_HEADING) == 1, f"CONTRIBUTING.md has no single section {MAP_HEADING!r}"
    section = text[text.index(MAP_HEADING) :].split("\n## ")[0]
    rows = (re.match(r"\| `([\w/]+\.py)` \| (.+) \|$", line) for line in section.splitlines())
    found = {}
    for row in filter(None, rows):
        assert row.group(1) not in found, f"{row.group(1)} listed twice"
        found[row.group(1)] = row.group(2).strip()
    return found


def _mentions(test_text, module):
    """Whether a test file reaches ``module`` (``folder/name.py``): its dotted path, a ``from ...
    import name``, or one of the public functions and classes it defines."""
    path = module.removesuffix(".py").removesuffix("__init__").rstrip("/")
    dotted = "keras_structinit" + ("." + path.replace("/", ".") if path else "")
    package, _, name = dotted.rpartition(".")
    if dotted in test_text or re.search(rf"from {re.escape(package)} import \(?[^)]*?\b{name}\b", test_text):
        return True
    tree = ast.parse((PACKAGE / module).read_text())
    own = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name[0] != "_"]
    return any(re.search(rf"\b{re.escape(n)}\b", test_text) for n in own)


def test_every_module_is_mapped_to_the_tests_that_reach_it_or_says_why_none():
    """Each module of the package has its row: the test files that exercise it (each one reaching the
    module by name or by what it defines), ``through <what>: <test files>`` for a module only reached
    through another, or ``none: <why>``."""
    table = module_map()
    modules = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    assert set(table) == modules, (
        f"not mapped: {sorted(modules - set(table))}; mapped but gone: {sorted(set(table) - modules)}"
    )
    for module, cell in table.items():
        if cell.startswith("through"):  # reached only through another module: say which and where
            files = re.findall(r"`(tests/[\w/]+\.py)`", cell)
            assert files and all((ROOT / name).is_file() for name in files), f"{module}: {cell}"
            continue
        if cell.startswith("none:"):
            assert len(cell) > len("none: ") + 10, f"{module}: say why no test reaches it"
            continue
        files = re.findall(r"`(tests/[\w/]+\.py)`", cell)
        assert files, f"{module}: name its test files, or write none: <why>"
        for name in files:
            path = ROOT / name
            assert path.is_file(), f"{module}: {name} does not exist"
            assert _mentions(path.read_text(), module), f"{name} does not reach {module}"
