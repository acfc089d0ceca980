"""A method is one record (:mod:`keras_structinit.methods.method_records`): what derives from the records, the
contract every model function keeps, and a sixth method added as one folder (a plug-in) with nothing
else edited. The package's layering and import cycles: ``tests/test_imports.py``."""

import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import _registry
from keras_structinit.engine import walker
from keras_structinit.methods import method_records

import architecture

PACKAGE = Path(ks.__file__).parent
METHODS = [r for r in method_records.records() if r.name != "core"]


def test_every_method_folder_has_its_record_and_its_guide():
    """The core's record too (``core/method.py``), first of all."""
    folders = sorted(p.parent.name for p in PACKAGE.glob("*/method.py"))
    assert folders == sorted(r.package.rsplit(".", 1)[-1] for r in method_records.records())
    assert method_records.records()[0].package == "keras_structinit.core"
    for record in method_records.records():
        assert record.docs and (PACKAGE.parent / record.docs).is_file(), record.name
        for name, module in record.exports.items():
            assert hasattr(__import__(module, fromlist=["_"]), name), (record.name, name)


def test_each_guide_names_what_its_record_declares():
    """A method's page in docs/ names its init forms, public functions and classes, commands and
    paper setups (``--paper NAME``, with each setting's value and each note of a departure)."""
    for record in method_records.records():
        text = (PACKAGE.parent / record.docs).read_text()
        names = [name for names in record.public.values() for name in names]
        names += [f"structinit {command.name}" for command in record.commands]
        names += [f"--paper {setup.name}" for setup in record.setups]
        names += [
            f"| `{k}` | `{v if isinstance(v, str) else repr(v)}` |"  # the setup's table
            for setup in record.setups
            for k, (v, _) in setup.settings.items()
        ]
        names += [f"- {note}" for setup in record.setups for note in setup.notes]  # every departure
        missing = [n for n in names if n not in text]
        missing += [
            f.name for f in record.forms if not re.search(rf"(?<![\w-]){re.escape(f.name)}(?![\w-])", text)
        ]
        assert missing == [], record.docs


def test_namespaces_registry_selectors_and_commands_derive_from_the_records():
    for record in method_records.records():
        for namespace, names in record.public.items():
            target = ks if namespace == "" else getattr(ks, namespace)
            for name in names:
                assert name in target.__all__ and getattr(target, name) is getattr(
                    __import__(record.exports[name], fromlist=["_"]), name
                )
        assert set(record.serializable) <= set(_registry.serializable_modules())
        for selector in record.selectors:
            assert walker.selector(selector.name)[0] is selector.find
    assert set(method_records.commands()) == {"select"}  # `demo` is the command line's own (cli/demo.py)
    assert [f.name for r in method_records.records() for f in r.forms] == list(method_records.init_forms())


def _method_tokens():
    """What would name a method: its package's module path and its init forms' names."""
    tokens = []
    for record in METHODS:
        short = record.package.rsplit(".", 1)[-1]
        tokens += [re.escape(record.package), rf"from keras_structinit import [^\n]*\b{short}\b"]
        tokens += [rf"[\"']{re.escape(form.name)}[\"':]" for form in record.forms]
    return re.compile("|".join(tokens))


#: The drivers: they run the methods (init specs, paper setups, ``structinit inspect``) through the
#: records alone.
DRIVERS = (
    "methods/__init__.py",
    "methods/method_records.py",
    "methods/init_spec.py",
    "methods/setup_records.py",
    "methods/inspection.py",
)
#: ``structinit demo`` shows one method by design (the product's demo: default init vs ConvCovariance);
#: it is a command of the command line itself (issue 75, point 6), the one CLI module that names a method.
DEMO = ("demo.py", "demo_flags.py")


def _method_words():
    """Each method's name, package and forms as whole words (the drivers do not even mention one)."""
    words = {w for r in METHODS for w in (r.name, r.package.rsplit(".", 1)[-1], *(f.name for f in r.forms))}
    return re.compile("|".join(rf"(?<![\w-]){re.escape(w)}(?![\w-])" for w in sorted(words)))


def test_no_method_is_named_outside_the_records():
    """The CLI, the walker, the registry, the lazy namespaces and the drivers reach methods through the
    records: no line names a method's package or form, no import reaches a method's package (relative
    imports included), and the drivers name no method even in prose."""
    files = [
        *sorted(p for p in (PACKAGE / "cli").glob("*.py") if p.name not in DEMO),
        *(
            PACKAGE / name
            for name in (
                "engine/walker.py",
                "_registry.py",
                "__init__.py",
                "callbacks.py",
                "initializers/__init__.py",
                "layers/__init__.py",
                *DRIVERS,
            )
        ),
    ]
    pattern, words = _method_tokens(), _method_words()
    found = [
        f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line) or (str(path.relative_to(PACKAGE)) in DRIVERS and words.search(line))
    ]
    packages = {r.package for r in METHODS}
    found += [
        f"{path.relative_to(PACKAGE)} imports {target}"
        for path in files
        for target in architecture.imports(path)
        if any(target == p or target.startswith(p + ".") for p in packages)
    ]
    assert found == []


def test_the_grep_sees_a_method_named_in_a_driver(tmp_path):
    """The patterns above catch a driver that names a method's form or imports its package."""
    form = next(f.name for r in METHODS for f in r.forms)
    short = METHODS[0].package.rsplit(".", 1)[-1]
    assert _method_words().search(f"applies {form} first") and _method_words().search(f"the {short} paper")
    driver = tmp_path / "driver.py"
    driver.write_text(f"def f():\n    from .{short} import method\n")
    assert list(architecture.imports(driver, "keras_structinit.driver")) == [f"{METHODS[0].package}.method"]


# ------------------------------------------------------------------ the model-function contract

MODEL_FUNCTIONS = [(r.name, name) for r in method_records.records() for name in r.model_functions]


@pytest.mark.parametrize("method, name", MODEL_FUNCTIONS, ids=[f"{m}.{n}" for m, n in MODEL_FUNCTIONS])
def test_model_functions_keep_the_contract(method, name):
    """``f(model, *, layers=None, [seed=...,] ...) -> list[str]``; a non-model is a TypeError naming it."""
    record = next(r for r in method_records.records() if r.name == method)
    function = getattr(__import__(record.exports[name], fromlist=["_"]), name)
    params = list(inspect.signature(function).parameters.values())
    assert params[0].name == "model" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), name
    assert {p.name: p.default for p in params}.get("layers", "missing") is None
    assert "-> list" in function.__doc__.replace("\n", " ") or "Returns:" in function.__doc__
    with pytest.raises(TypeError, match="`model` must be a keras.Model"):
        function("not a model", **_required_keywords(params))


def _required_keywords(params):
    return {p.name: None for p in params[1:] if p.default is inspect.Parameter.empty}


# ------------------------------------------------------------------ a sixth method, as a plug-in

TOY_METHOD = '''
    """A toy method: every Dense kernel becomes a constant, recorded as its initializer."""

    from keras_structinit.methods import InitForm, Inspector, Method, finite_number


    def _toy(model, value, *, data, seed):
        from toy_method.apply import apply_toy

        return apply_toy(model, value=value)


    METHOD = Method(
        name="toy",
        title="Dense kernels set to a constant",
        paper="none",
        package="toy_method",
        docs=None,
        forms=(InitForm("toy", "sets every Dense kernel to VALUE", _toy, "mlp", arg="VALUE", default=0.25,
                        parse=finite_number, targets=("dense",)),),
        exports={"ToyConstant": ".apply", "apply_toy": ".apply"},
        public={"": ("apply_toy",), "initializers": ("ToyConstant",)},
        model_functions=("apply_toy",),
        serializable=(".apply",),
        inspectors=(Inspector("toy", ".apply:toy_section", order=40),),
    )
'''
TOY_APPLY = '''
    import keras

    from keras_structinit.engine.contract import model_function
    from keras_structinit.methods.inspection import Section
    from keras_structinit.engine.walker import find


    @keras.saving.register_keras_serializable(package="toy_method")
    class ToyConstant(keras.initializers.Constant):
        pass


    @model_function
    def apply_toy(model, *, value=0.25, layers=None):
        """Every Dense kernel set to ``value``; returns their paths."""
        paths = []
        for layer, kernel in find(model, "dense", layers):
            layer.kernel_initializer = ToyConstant(value)
            kernel.assign(ToyConstant(value)(kernel.shape, kernel.dtype))
            paths.append(kernel.path)
        return paths


    class ToySection(Section):
        def markdown(self):
            return ["## Dense kernels", "", f"{len(self.value)} of them", ""]


    def toy_section(model, *, data, parts):
        return ToySection([kernel.path for _, kernel in find(model, "dense")])
'''


@pytest.fixture(scope="module")
def toy_path(tmp_path_factory):
    """A folder on ``PYTHONPATH`` holding the toy method's package and its entry point."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "toy_method").mkdir()
    (root / "toy_method" / "__init__.py").write_text("")
    (root / "toy_method" / "method.py").write_text(textwrap.dedent(TOY_METHOD))
    (root / "toy_method" / "apply.py").write_text(textwrap.dedent(TOY_APPLY))
    info = root / "toy_method-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-method\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[keras_structinit.methods]\ntoy = toy_method.method\n")
    return root


def _run(toy_path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(toy_path), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, cwd=toy_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_a_sixth_method_is_one_folder_and_one_record(toy_path):
    script = textwrap.dedent("""
        import contextlib, io, keras, numpy as np, keras_structinit as ks
        from keras_structinit import cli
        with contextlib.redirect_stdout(io.StringIO()) as help_text:
            assert cli.main(["train", "--help-all"]) == 0
        help_text = " ".join(help_text.getvalue().split())
        assert "toy[:VALUE]" in help_text and "toy: sets every Dense kernel to VALUE" in help_text, help_text
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2)])
        paths = ks.initialize(model, "toy:0.5")
        assert paths == [layer.kernel.path for layer in model.layers], paths
        assert all((np.asarray(layer.kernel) == 0.5).all() for layer in model.layers)
        import toy_method.apply
        assert ks.initializers.ToyConstant is toy_method.apply.ToyConstant
        report = ks.inspect(model)  # its section comes after the built-in ones
        assert report.toy == paths and list(report.to_dict())[-1] == "toy", report.to_dict()
        assert "## Dense kernels\\n\\n2 of them" in report.to_markdown()
        model.save("toy.keras")
        x = np.ones((2, 4), "float32")
        np.save("want.npy", keras.ops.convert_to_numpy(model(x)))
    """)
    _run(toy_path, "-c", script)
    reload = textwrap.dedent("""
        import keras, numpy as np, keras_structinit
        model = keras.saving.load_model("toy.keras")
        assert type(model.layers[0].kernel_initializer).__name__ == "ToyConstant"
        got = keras.ops.convert_to_numpy(model(np.ones((2, 4), "float32")))
        np.testing.assert_allclose(got, np.load("want.npy"), rtol=1e-6)
        print("reloaded")
    """)
    assert "reloaded" in _run(toy_path, "-c", reload)


def test_records_are_checked_when_declared():
    with pytest.raises(ValueError, match=r"public names \['missing'\] are not exports"):
        method_records.Method("x", "t", "p", "keras_structinit", exports={}, public={"": ("missing",)})
    with pytest.raises(ValueError, match="namespaces"):
        method_records.Method("x", "t", "p", "keras_structinit", public={"models": ()})


def test_inspect_sections_come_from_the_records_in_their_order(monkeypatch):
    sections = method_records.inspectors()
    assert list(sections) == [
        "spatial",
        "position_variance",
        "mlp",
        "attention",
        "first_layer",
        "specialization",
        "auto",  # the core's: what --init auto would choose (issue 80)
    ]
    assert [p.function for p in sections["spatial"][1]] == ["keras_structinit.lc.inspect:spatial_part"]
    records = method_records.records()
    orphan = method_records.Method(
        "x",
        "t",
        "p",
        "keras_structinit",
        inspectors=(method_records.Inspector("nope", ".inspection:values", part=True),),
    )
    monkeypatch.setattr(method_records, "records", lambda: (*records, orphan))
    with pytest.raises(ValueError, match="adds to section 'nope', which no record declares"):
        method_records.inspectors()


def test_walker_errors_use_the_selector_a_record_adds():
    dense = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="has no LC blocks"):
        walker.find(dense, "lc_pointwise")
    with pytest.raises(ValueError, match="`which` must be one of"):
        walker.find(dense, "nope")
    assert np.asarray(walker.find(dense, "dense")[0][1]).shape == (4, 2)


def test_inspect_figures_come_from_the_records_and_cli_names_none():
    """Issue 61, point 4: the figure files are declared by the inspectors' records; a sixth
    method's figure needs no edit in cli/."""
    names = method_records.figure_names()
    assert len(names) == len(set(names)) and all(n.endswith(".png") for n in names)
    assert {"spatial_depth.png", "mlp_covariance.png", "specialization.png"} <= set(names)
    cli_dir = Path(ks.__file__).parent / "cli"
    for path in cli_dir.glob("*.py"):
        assert path.name in DEMO or ".png" not in path.read_text(), path.name
