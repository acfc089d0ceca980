"""``scripts/gpu_quick.sh --smoke``: the GPU tier end to end at tiny sizes, as a lent GPU's image runs it.

Runs in the ``gpu-smoke`` lane of ``scripts/test_all_backends.sh``: a venv with JAX and torch but no
TensorFlow and no Keras of its own, Keras coming from the wheels ``scripts/gpu_bundle.sh`` downloads
(for this Python; the device gets the same list for 3.12), installed by ``gpu_quick.sh`` the way it
installs them on the device (``pip install --no-index --no-deps --target``). Skipped where TensorFlow
is installed (the image has none), where no bundle for this Python is at ``GPU_QUICK_WHEELS``, and
where the CIFAR-10 zip is absent.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SHARED_CIFAR10_ZIP

WHEELS = Path(os.environ.get("GPU_QUICK_WHEELS", REPO_ROOT / ".whl"))
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("tensorflow") is not None,
        reason="TensorFlow is installed: the gpu-smoke lane (a venv like the GPU image, "
        "without TensorFlow) runs this",
    ),
    pytest.mark.skipif(
        not list(WHEELS.glob(f"optree-*-{TAG}-*.whl")),
        reason=f"no bundle for {TAG} in {WHEELS}: bash scripts/gpu_bundle.sh --python-version "
        f"{sys.version_info.major}.{sys.version_info.minor} --wheels DIR, then "
        "GPU_QUICK_WHEELS=DIR",
    ),
    pytest.mark.skipif(
        not SHARED_CIFAR10_ZIP.is_file() and not (REPO_ROOT / ".data").is_dir(),
        reason=f"no CIFAR-10 zip at {SHARED_CIFAR10_ZIP} or in .data/",
    ),
]


def test_gpu_quick_smoke_runs_every_entry_and_packs_the_results(tmp_path):
    from benchmarks.suite import GPU_QUICK

    out, results = tmp_path / "out", tmp_path / "results"
    # Only what the device has: no PYTHONPATH of this lane (the script installs the wheels itself).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        OUT=str(out),
        PYTHON=sys.executable,
        GPU_QUICK_WHEELS=str(WHEELS),
        GPU_QUICK_SITE=str(tmp_path / "site"),
        GPU_QUICK_RESULTS=str(results),
        KERAS_BACKEND="jax",
    )
    done = subprocess.run(
        ["bash", "scripts/gpu_quick.sh", "--smoke"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    assert "keras 3." in log and str(tmp_path / "site") in log  # Keras from the bundle, not the venv
    assert "tensorflow: not installed" in log
    summary = (out / "summary.md").read_text()
    for bench in GPU_QUICK:
        row = summary.split(f"| {bench.name} |")[1].split("\n")[0]
        assert "finished" in row, summary
    with tarfile.open(out / "results.tgz") as tar:
        names = set(tar.getnames())
    assert {f"gpu/{bench.name}.json" for bench in GPU_QUICK} <= names and "REPORT.md" in names
    covariance = json.loads((results / "gpu" / "covariance_convergence.json").read_text())
    assert covariance["config"]["pipeline"] == "native" and covariance["backend"] == "jax"
    assert sorted(r["init"] for r in covariance["runs"]) == ["conv-cov", "default"]
    assert all(r["epochs_done"] == r["epochs"] == 2 for r in covariance["runs"])
