"""No function of the package is longer than :data:`MAX_FUNCTION_LINES` (issue 75, point 3), as no
module reaches 600 lines (``tests/test_imports.py``)."""

import ast

import architecture
from conftest import once_per_suite

#: The most lines a function may have, measured by :func:`function_lengths`.
MAX_FUNCTION_LINES = 80

#: The functions still longer, each with the most lines it may have: the size it had when listed
#: (issue 75). This list may only shrink, to empty: a function shortened to 80 lines or fewer leaves
#: it, and no function joins it (split a function that grows that long into named steps instead).
LONG_FUNCTIONS = {}


def function_lengths(path):
    """``{qualified name: lines}`` of every function and method in the file at ``path``, nested ones
    too (``outer.inner``, ``Class.method``). A function's lines run from its first decorator (its
    ``def`` when it has none) to its last line, docstring, comments and blank lines inside
    included: ``end_lineno - start + 1`` of its ``ast`` node."""
    lengths = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    lengths[name] = child.end_lineno - start + 1
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(), str(path)), "")
    return lengths


def package_function_lengths():
    """``{"keras_structinit/<path>.py:<qualified name>": lines}`` of the package's functions."""
    return {
        f"{path.relative_to(architecture.PACKAGE.parent).as_posix()}:{name}": lines
        for path in architecture.source_files()
        for name, lines in function_lengths(path).items()
    }


@once_per_suite("function lengths do not depend on the backend")
def test_no_function_grows_over_80_lines():
    lengths = package_function_lengths()
    too_long = {
        name: n for name, n in lengths.items() if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS
    }
    grown = {name: n for name, n in lengths.items() if name in LONG_FUNCTIONS and n > LONG_FUNCTIONS[name]}
    assert too_long == {}, f"{too_long}: split them into named steps (no function over 80 lines)"
    assert grown == {}, f"{grown}: longer than LONG_FUNCTIONS allows (they may only shrink)"
    done = [name for name in LONG_FUNCTIONS if lengths.get(name, 0) <= MAX_FUNCTION_LINES]
    assert done == [], f"{done}: 80 lines or fewer now (or gone); take them out of LONG_FUNCTIONS"


def test_function_lengths_count_decorators_and_nested_functions(tmp_path):
    path = tmp_path / "module.py"
    path.write_text(
        "@a\n@b\ndef f():\n    def g():\n        pass\n\n    return g\n\n\n"
        "class C:\n    def m(self):\n        pass\n"
    )
    assert function_lengths(path) == {"f": 7, "f.g": 2, "C.m": 2}
