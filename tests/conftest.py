import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_CIFAR10_ZIP = REPO_ROOT.parent / "shared" / "datasets" / "cifar10-train-jpeg.zip"


def run_fresh_python(code, cwd):
    """Runs ``code`` in a new interpreter on the same Keras backend; returns stdout."""
    env = dict(os.environ)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        pytest.fail(f"fresh process failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout
