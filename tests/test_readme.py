"""Every code block of the README, docs/ and CONTRIBUTING.md runs: Python blocks (tiny sizes) in fresh
globals of an interpreter that has imported only Keras and the package, commands parse."""

import re
import shlex
import zipfile
from pathlib import Path

import numpy as np
import pytest

from keras_structinit import cli

from conftest import README_RUNNER, once_per_suite

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The user-facing texts whose code must run: the README, the guides in docs/ and CONTRIBUTING.md.
DOCUMENTS = [
    REPO_ROOT / "README.md",
    *sorted((REPO_ROOT / "docs").glob("*.md")),
    REPO_ROOT / "CONTRIBUTING.md",
]
README = "\n".join(path.read_text() for path in DOCUMENTS)
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
PYTHON_BLOCKS = [code for lang, code in BLOCKS if lang == "python"]
SHELL_BLOCKS = [code for lang, code in BLOCKS if lang == "bash"]

# Sizes cut so that each block runs in seconds; each pair must occur in its block,
# so a README edit that drops one fails here rather than silently running big.
TINY = {
    "procedural_images(2000)": "procedural_images(64)",
    "procedural_images(512)": "procedural_images(64)",
    "convmixer(256, 8, kernel_size=9, patch_size=2)": "convmixer(32, 2, kernel_size=9, patch_size=2)",
    "epochs=10": "epochs=1",
    "epochs=200": "epochs=1",
    "convmixer(256, 16, kernel_size=9)": "convmixer(32, 16, kernel_size=9)",
    "convmixer(256, 8)": "convmixer(16, 2)",
    "num_layers=12": "num_layers=2",
    "lcresnet(20, 16, expansion=8)": "lcresnet(8, 4, expansion=2)",
}


def _tiny(code):
    used = {old: new for old, new in TINY.items() if old in code}
    for old, new in used.items():
        code = code.replace(old, new)
    return code, set(used)


def _write_cifar_files(directory):
    """The files the README's recipe block reads: an ImageFolder zip and an .npz."""
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    with zipfile.ZipFile(directory / "cifar10-train.zip", "w") as archive:
        for label in range(10):
            for i in range(10):  # 1 per class held out at validation_split=0.1
                buffer = io.BytesIO()
                Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(buffer, "PNG")
                archive.writestr(f"train/class_{label}/{i}.png", buffer.getvalue())
    np.savez(
        directory / "cifar10-test.npz",
        x=rng.integers(0, 256, (20, 32, 32, 3), dtype=np.uint8),
        y=np.arange(20) % 10,
    )


def test_readme_has_its_code_blocks():
    assert len(PYTHON_BLOCKS) >= 4 and len(SHELL_BLOCKS) >= 3
    used = set().union(*(_tiny(code)[1] for code in PYTHON_BLOCKS))
    assert used == set(TINY), f"TINY replacements no longer in the README: {set(TINY) - used}"


@pytest.mark.slow
@once_per_suite("the README's Python")
@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_block_runs(index, tmp_path):
    pytest.importorskip("PIL")
    _write_cifar_files(tmp_path)
    code, _ = _tiny(PYTHON_BLOCKS[index])
    script = tmp_path / f"readme_block_{index}.py"
    script.write_text(code + '\nprint("README_BLOCK_OK")\n')
    ok, output = README_RUNNER.run(script, cwd=tmp_path)
    assert ok and "README_BLOCK_OK" in output, f"README block {index} failed:\n{output}"


def _commands(block):
    """The shell commands of a block, continuation lines joined and comments dropped."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def _benchmarks_run():

    from benchmarks import run

    return run


def test_readme_commands_are_valid():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    parser = cli.build_parser()
    seen = set()
    for block in SHELL_BLOCKS:
        for command in _commands(block):
            for part in command.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:2] == ["pip", "install"]:
                    assert words[2] == "-e", f"not installable from a checkout: {part}"
                    named = re.fullmatch(r"\.\[([\w,]+)\]", words[3]).group(1).split(",")
                    assert set(named) <= extras, part
                    seen.add("pip")
                elif words[0] == "structinit":
                    parser.parse_args(words[1:])  # exits 2 on an invalid command line
                    seen.add("structinit")
                elif words[0] == "bash":
                    assert (REPO_ROOT / words[1]).is_file(), part
                    seen.add("bash")
                elif words[:3] == ["python", "-m", "benchmarks.run"]:
                    _benchmarks_run().parse_args(words[3:])  # exits 2 on an invalid command line
                    seen.add("benchmarks")
    assert seen == {"pip", "structinit", "bash", "benchmarks"}
    for quoted in re.findall(r'`pip install -e "(\.\[[\w,]+\])"`', README):
        assert set(quoted[2:-1].split(",")) <= extras, quoted


def test_the_readme_stays_short_and_links_every_guide():
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for guide in sorted((REPO_ROOT / "docs").glob("*.md")):
        assert f"docs/{guide.name}" in readme, f"the README does not link {guide.name}"
    assert "../shared" not in README, "user-facing text must use paths that work from a fresh clone"


def test_pyproject_backend_extras_read_image_folders():
    """``pip install -e ".[jax]"`` / ``".[torch]"`` train on ImageFolder data: Pillow comes with them."""
    import tomllib

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in ("jax", "torch", "recipes", "viz"):
        assert any(re.match(r"pillow\b", d, flags=re.I) for d in extras[extra]), extra


def test_readme_says_what_mean_shift_rewrites_and_it_is_so():
    """The README's ``conv-cov+mean-shift`` comment: mean-shift implies torch-default, which
    re-initializes every conv and Dense kernel and bias (checked on a zoo ConvNeXt)."""
    import keras_structinit as ks
    from keras_structinit.models import build_model

    block = next(code for _, code in BLOCKS if '"conv-cov+mean-shift"' in code)
    comment = " ".join(line.strip("# ") for line in block.splitlines() if line.lstrip().startswith("#"))
    for claim in ("mean-shift implies torch-default", "re-initializes every conv and Dense kernel and bias"):
        assert claim in comment, comment
    model = build_model("convnext-iso-16/2")
    written = set(ks.initialize(model, "conv-cov+mean-shift", seed=0))
    expected = {
        v.path
        for layer in model._flatten_layers()
        for v in layer.weights
        if type(layer).__name__ in ("Conv2D", "DepthwiseConv2D", "Dense", "ScalarBiasDense")
        and v.name in ("kernel", "bias")
    }
    assert expected and expected <= written, sorted(expected - written)
