"""The package's layers and its import graph, read from the source with ``ast`` (see ``CONTRIBUTING.md``).

Layers, lowest first (:data:`LAYERS`); a module imports only from its own layer and those below:

* ``core``: every module not named below: ``engine/`` (the walker, ``contract``, ``initializer_base``,
  ``freezing``, ``reinit``, ``heads``, ``sources``), ``utils/`` (``validation``, ``arguments``,
  ``io_utils``, ``reporting``, ``backend``, ``viz``, ...), ``datasets``, ``_hooks``, ``_lazy``,
  ``ops/`` and the layer modules of ``layers/`` (the building blocks that methods and models share);
* ``methods``: each method's package (found from the records), except its ``cli.py``, and the
  *drivers* (:data:`DRIVERS`): the modules of ``methods/``: its ``__init__`` (the public place of
  what follows), ``method_records`` (the records' types, their discovery), ``init_spec`` (init
  specs), ``setup_records`` (``PaperSetup``), ``inspection`` (``structinit inspect``), and the lazy
  namespaces ``callbacks``, ``initializers`` and ``layers``. The core's own record, ``core/``, is
  found as the methods' are, so it sits here too (not in the ``core`` layer, whose functions it names).
  A driver reaches the methods only through the records, at run time: it imports no method. A
  method imports no other method but the baseline (every method's starting point, :data:`BASELINE`)
  and no driver but :data:`METHOD_DRIVERS` (its record's types, its inspect sections' base);
* ``models``: ``models/``; ``recipes``: ``recipes/``; ``cli``: ``cli/`` (``structinit demo`` included)
  and each method's ``cli.py``;
* ``facade``: ``keras_structinit/__init__.py`` and ``_registry.py``, which register every layer's
  serializable modules.
"""

import ast
import importlib.util
from pathlib import Path

import keras_structinit
from keras_structinit import methods

PACKAGE = Path(keras_structinit.__file__).parent
LAYERS = ("core", "methods", "models", "recipes", "cli", "facade")
FACADE = ("keras_structinit", "keras_structinit._registry")
DRIVERS = (
    "keras_structinit.methods",
    "keras_structinit.methods.method_records",
    "keras_structinit.methods.init_spec",
    "keras_structinit.methods.setup_records",
    "keras_structinit.methods.inspection",
    "keras_structinit.callbacks",
    "keras_structinit.initializers",
    "keras_structinit.layers",
)
METHOD_DRIVERS = ("keras_structinit.methods", "keras_structinit.methods.inspection")
BASELINE = "baseline"


def method_packages():
    """The short names of this package's method folders, from the records."""
    return {
        r.package.rsplit(".", 1)[-1] for r in methods.records() if r.package.startswith("keras_structinit.")
    }


def module_name(path):
    """``keras_structinit.a.b`` of a source file of the package."""
    parts = Path(path).relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files():
    return sorted(PACKAGE.rglob("*.py"))


def layer(module):
    """``(layer, method)`` of a module; ``method`` is its method package's short name, or ``None``."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if module in FACADE:
        return "facade", None
    if module in DRIVERS:
        return "methods", None
    if top == "cli" or (top in method_packages() and parts[-1] == "cli"):
        return "cli", None
    if top in method_packages():
        return "methods", top
    if top in ("models", "recipes"):
        return top, None
    return "core", None


def _is_module(name):
    relative = Path(*name.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative / "__init__.py").is_file()


def _nodes(tree, module_level):
    """The tree's nodes; with ``module_level``, none inside a function (what runs at import)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack += [
            child
            for child in ast.iter_child_nodes(node)
            if not (module_level and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        ]


def imports(path, module=None, module_level=False):
    """Every ``keras_structinit`` module that the file ``path`` imports: each ``import`` and
    ``from ... import`` anywhere in it (relative ones resolved against ``module``, by default the
    file's own name), and each module path written as a string (a lazy import); with
    ``module_level``, only the statements that run when the module is imported."""
    path = Path(path)
    module = module or module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _nodes(ast.parse(path.read_text()), module_level):
        if isinstance(node, ast.ImportFrom):
            base = (
                importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                if node.level
                else node.module
            )
            if base.split(".")[0] == "keras_structinit":
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    yield full if _is_module(full) else base
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "keras_structinit")
        elif (
            not module_level
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("keras_structinit.")
            and _is_module(node.value)
        ):
            yield node.value


def wrong_imports(sources=None):
    """``["a (layer) imports b (layer)", ...]``: each import that breaks the rules of the module docstring,
    in ``sources`` (``[(path, module name)]``; by default the package's files)."""
    wrong = set()
    for path, module in sources or [(path, module_name(path)) for path in source_files()]:
        (level, method), driver = layer(module), module in DRIVERS
        for target in imports(path, module):
            (t_level, t_method), t_driver = layer(target), target in DRIVERS
            if (
                LAYERS.index(t_level) > LAYERS.index(level)
                or (method and t_method and t_method not in (method, BASELINE))
                or (method and t_driver and target not in METHOD_DRIVERS)
                or (driver and t_method)
            ):
                wrong.add(
                    f"{module} ({level}{', driver' if driver else ''}) imports {target} "
                    f"({t_level}{', driver' if t_driver else ''})"
                )
    return sorted(wrong)


def graph(module_level=False):
    """``{module: {modules it imports}}`` of the whole package."""
    return {
        module_name(path): {t for t in imports(path, module_level=module_level) if t != module_name(path)}
        for path in source_files()
    }


def cycle(edges):
    """One import cycle of ``edges`` (``[a, b, ..., a]``), or ``None``."""
    done, stack = set(), []

    def visit(module):
        if module in stack:
            return stack[stack.index(module) :] + [module]
        if module in done or module not in edges:
            return None
        stack.append(module)
        for target in sorted(edges[module]):
            found = visit(target)
            if found:
                return found
        stack.pop()
        done.add(module)
        return None

    for module in sorted(edges):
        found = visit(module)
        if found:
            return found
    return None
