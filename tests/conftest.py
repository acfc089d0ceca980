import atexit
import gc
import json
import math
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import zlib
from pathlib import Path

# XLA's CPU compiler without LLVM optimizations: tests compile hundreds of small
# programs (JAX compiles every initializer shape) and run each once or twice, so
# compile time dominates; optimization does not change results (no fast-math on
# CPU). The JAX suite takes about a third less time. Set before Keras imports a
# backend; subprocesses inherit it. Speed is measured in benchmarks/, not here.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    _flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = f"{_flags} --xla_backend_optimization_level=0".strip()


def _xla_knows_fusion_emitter_flag():
    """Whether every installed XLA (jaxlib, TensorFlow) parses ``--xla_cpu_use_fusion_emitters``:
    an XLA that does not know a flag of XLA_FLAGS aborts the process."""
    from importlib import metadata

    minimum = {"jaxlib": (0, 6), "tensorflow": (2, 20), "tensorflow-cpu": (2, 20)}
    for name, version in minimum.items():
        try:
            installed = tuple(int(part) for part in metadata.version(name).split(".")[:2])
        except metadata.PackageNotFoundError:
            continue
        except ValueError:
            return False
        if installed < version:
            return False
    return True


# XLA's CPU compiler with its older elemental emitters instead of the fusion emitters: compiling
# a random-number program (one per weight shape when JAX builds a model) takes ~0.12 s instead
# of ~0.21 s; JAX model and layer tests ran 146 s instead of 201 s, TensorFlow's depthwise tests
# 82 s instead of 89 s. Both emitters compute the same operations (no fast-math on CPU).
if "xla_cpu_use_fusion_emitters" not in os.environ["XLA_FLAGS"] and _xla_knows_fusion_emitter_flag():
    os.environ["XLA_FLAGS"] += " --xla_cpu_use_fusion_emitters=false"

# JAX's persistent compilation cache, every program cached: a test that builds a model compiles
# the programs that an earlier test compiled before JAX's in-memory caches were emptied (see
# _release_models), and the loader compiles what the test compiled. A JAX subset took 158 s
# instead of 219 s with a cold cache. One folder per pytest process (the loader process and
# other subprocesses inherit it) unless JAX_COMPILATION_CACHE_DIR names one (CI shares one
# between its JAX processes). Set before JAX is imported; JAX's default thresholds (programs
# that compiled in >= 1 s) would cache almost nothing here.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _jax_cache = tempfile.mkdtemp(prefix="structinit-jax-cache-")
    atexit.register(shutil.rmtree, _jax_cache, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _jax_cache
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# No test downloads: the demo's data loader does not probe the network (its tests monkeypatch it).
os.environ.setdefault("STRUCTINIT_OFFLINE", "1")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

import keras  # noqa: E402 - after XLA_FLAGS and the JAX cache
import numpy as np  # noqa: E402
import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
# What a recorded result holds under "machine" and "versions" (reporting.machine_info, versions),
# for tests that render results they make up: ``{**RECORDED, ...}``.
RECORDED = {
    "machine": {"cpu": "AMD EPYC", "cores": 2, "ram_gib": 23.5, "os": "Linux", "thread_env": {}, "gpus": []},
    "versions": {
        "python": "3.11.7",
        "numpy": "2.4.6",
        "keras": "3.15.1",
        "backend": "torch",
        "backend_version": "2.13.0+cpu",
    },
}
SHARED_CIFAR10_ZIP = REPO_ROOT.parent / "shared" / "datasets" / "cifar10-train-jpeg.zip"


def once_per_suite(why):
    """Marks a test whose outcome does not depend on the Keras backend (``why``): it runs in
    the torch process only, not once per backend."""
    return pytest.mark.skipif(keras.backend.backend() != "torch", reason=f"{why}: runs once, on torch")


@pytest.fixture(scope="session")
def shared_cifar10():
    """``(((x, y), (x_val, y_val)), seconds)``: the shared CIFAR-10 training split as
    ``datasets.load_cifar10(zip, validation_split=0.1, seed=0)`` returns it, decoded once per
    session (~10 s) for every test that reads it; skips when the zip is absent."""
    if not SHARED_CIFAR10_ZIP.is_file():
        pytest.skip(f"shared CIFAR-10 zip not found at {SHARED_CIFAR10_ZIP}")
    import time

    from keras_structinit import datasets

    start = time.perf_counter()
    data = datasets.load_cifar10(SHARED_CIFAR10_ZIP, validation_split=0.1, seed=0)
    return data, time.perf_counter() - start


def run_fresh_python(code, cwd):
    """Runs ``code`` in a new interpreter on the same Keras backend; returns stdout."""
    env = dict(os.environ)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        pytest.fail(f"fresh process failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


#: Seconds a ``run_cli_in_child`` process may take.
CHILD_TIMEOUT = 300


def run_cli_in_child(tmp_path, code, argv):
    """Runs ``structinit`` with ``argv`` in a child process on this Keras backend, after ``code``
    (SIGINT as a terminal gives it, even when the suite runs where SIGINT is ignored); returns
    the completed process."""
    import keras

    script = tmp_path / "child.py"
    script.write_text(
        "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
        # A child that hangs prints every thread's stack and exits before the timeout below, so
        # that the failure says where it waited.
        f"import faulthandler\nfaulthandler.dump_traceback_later({CHILD_TIMEOUT - 30}, exit=True)\n"
        + textwrap.dedent(code)
        + f"\nimport sys\nfrom keras_structinit import cli\nsys.exit(cli.main({argv!r}))\n"
    )
    env = dict(os.environ, KERAS_BACKEND=keras.backend.backend())
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT
    )


class InterruptAtEpoch(keras.callbacks.Callback):
    """Ctrl-C (``KeyboardInterrupt``) at the start of ``epoch`` (0-based), in this process."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


def kill_at_epoch(hook, epoch):
    """``run_cli_in_child`` code that SIGKILLs the run in the Keras callback ``hook``
    (``"on_epoch_begin"``, ``"on_epoch_end"``) of epoch ``epoch`` (0-based)."""
    return f"""
        import os, signal
        import keras
        import keras_structinit.recipes.run as run

        class Kill(keras.callbacks.Callback):
            def {hook}(self, epoch, logs=None):
                if epoch == {epoch}:
                    os.kill(os.getpid(), signal.SIGKILL)

        progress = run.progress_callbacks
        run.progress_callbacks = lambda *a, **k: (progress(*a, **k)[0], [*progress(*a, **k)[1], Kill()])
        """


# The loader process: it imports Keras and keras_structinit (nothing of the tests), then runs each
# script it is sent in fresh globals and in the folder the request names, answering one JSON
# line per script.
_LOADER_CODE = """
import contextlib, io, json, os, sys, traceback
import keras
import keras_structinit
home = os.getcwd()
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    out, ok = io.StringIO(), True
    try:
        os.chdir(request["cwd"] or home)
        with contextlib.redirect_stdout(out):
            exec(compile(open(request["script"]).read(), request["script"], "exec"), {"__name__": "__main__"})
    except BaseException:
        ok, out = False, io.StringIO(out.getvalue() + traceback.format_exc())
    os.chdir(home)
    keras.backend.clear_session()
    print(json.dumps({"ok": ok, "output": out.getvalue()}), flush=True)
"""


class _Loader:
    """A second interpreter, started at its first use and kept for the test session, that runs
    scripts: it has imported only ``keras`` and ``keras_structinit``, never the tests' modules or
    objects. ``_LOADER`` loads the ``.keras`` files of every round-trip test there, so a file
    loads only through what the package registers; ``README_RUNNER`` runs the README's blocks.
    One interpreter instead of one per script saves its start-up (5-20 s each on JAX and
    TensorFlow); ``tests/test_imports.py`` checks registration in truly new interpreters."""

    def __init__(self):
        self.process = None

    def run(self, script, timeout=600, cwd=None):
        """Runs the file ``script`` there, in the folder ``cwd`` (default: the repository's
        parent); returns ``(ok, output)``."""
        if self.process is None or self.process.poll() is not None:
            self.stderr = tempfile.TemporaryFile("w+")  # a file: a full pipe would block the loader
            self.process = subprocess.Popen(
                [sys.executable, "-c", _LOADER_CODE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                text=True,
                cwd=REPO_ROOT.parent,
            )
            self._answer(timeout)  # the ready line
        self.process.stdin.write(json.dumps({"script": str(script), "cwd": cwd and str(cwd)}) + "\n")
        self.process.stdin.flush()
        answer = self._answer(timeout)
        return answer["ok"], answer["output"]

    def _answer(self, timeout):
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stderr.seek(0)
            errors = self.stderr.read()[-5000:]
            self.close()
            pytest.fail(f"the loader process died or hung:\n{errors}")
        return json.loads(line)

    def close(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.stderr):
            stream.close()


_LOADER = _Loader()
# The README's Python blocks run in an interpreter of their own (never the loader, which must
# not see what they import): one start-up instead of one per block (~8 s each on torch).
README_RUNNER = _Loader()


def pytest_sessionfinish(session, exitstatus):
    _LOADER.close()
    README_RUNNER.close()


def assert_round_trip_in_process(model, x, tmp_path, atol=1e-6):
    """Saves ``model`` to .keras, reloads it here, asserts equal inference outputs on
    ``x`` (rtol 1e-5, ``atol``) and returns the reloaded model for further checks."""
    path = tmp_path / f"{model.name}.keras"
    expected = to_numpy(model(x, training=False))
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded(x, training=False)), expected, rtol=1e-5, atol=atol)
    return loaded


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_shape,
    *,
    expected_output_shape=None,
    expected_trainable=None,
    expected_non_trainable=None,
    frozen=(),
    training=True,
    mixed_precision=True,
    tmp_path=None,
):
    """The checks Keras' ``run_layer_test`` makes (``keras.src.testing.TestCase``), for the package's
    layers, as one helper every layer test calls.

    ``layer_cls(**init_kwargs)`` on a float32 batch of ``input_shape``: the output's shape (and the
    symbolic one, on ``keras.Input``); the number of trainable and non-trainable weights; the config
    round trip (``from_config`` gives the same config, and the same outputs with the same weights);
    Keras' serialization by registered name; with ``training``, one ``fit`` step changes the
    trainable weights and leaves the non-trainable ones (``frozen``: names of weights expected
    frozen) bit-identical; with ``mixed_precision``, a ``mixed_float16`` layer keeps float32
    variables and computes in float16; with ``tmp_path``, a ``.keras`` round trip reproduces outputs.
    Returns the layer.
    """
    x = np.random.default_rng(0).normal(size=input_shape).astype("float32")
    layer = layer_cls(**init_kwargs)
    y = to_numpy(layer(x))
    if expected_output_shape is not None:
        assert y.shape == tuple(expected_output_shape), (y.shape, expected_output_shape)
    symbolic = layer_cls(**init_kwargs)(keras.Input(input_shape[1:], batch_size=input_shape[0]))
    assert tuple(symbolic.shape) == y.shape, (symbolic.shape, y.shape)
    if expected_trainable is not None:
        assert len(layer.trainable_weights) == expected_trainable, [w.path for w in layer.trainable_weights]
    if expected_non_trainable is not None:
        assert len(layer.non_trainable_weights) == expected_non_trainable, [
            w.path for w in layer.non_trainable_weights
        ]
    for name in frozen:
        assert any(w.name == name for w in layer.non_trainable_weights), (name, layer.non_trainable_weights)
    config = layer.get_config()
    clone = layer_cls.from_config(config)
    clone(x)
    assert clone.get_config() == config
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(to_numpy(clone(x)), y, rtol=1e-5, atol=1e-5)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is layer_cls and restored.get_config() == config
    if training:
        _one_fit_step(layer_cls, init_kwargs, x)
    if mixed_precision:
        half = layer_cls(**{**init_kwargs, "dtype": "mixed_float16"})
        out = half(x)
        assert keras.backend.standardize_dtype(out.dtype) == "float16", out.dtype
        assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in half.weights)
    if tmp_path is not None:
        model = keras.Sequential([keras.Input(input_shape[1:]), layer_cls(**init_kwargs)])
        assert_round_trip_in_process(model, x, tmp_path)
    return layer


def _one_fit_step(layer_cls, init_kwargs, x):
    """One SGD step through the layer: trainable weights move, non-trainable ones do not."""
    layer = layer_cls(**init_kwargs)
    model = keras.Sequential([keras.Input(x.shape[1:]), layer, keras.layers.Flatten(), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    before = {w.path: to_numpy(w).copy() for w in layer.weights}
    logs = model.fit(x, np.ones((len(x), 1), "float32"), epochs=1, batch_size=len(x), verbose=0).history
    assert np.isfinite(logs["loss"][0])
    moved = {w.path: not np.array_equal(to_numpy(w), before[w.path]) for w in layer.weights}
    assert not any(moved[w.path] for w in layer.non_trainable_weights), moved
    assert all(moved[w.path] for w in layer.trainable_weights), moved


def run_in_fresh_process(code, tmp_path):
    """Runs ``code`` in the loader process (an interpreter that has imported only ``keras`` and
    ``keras_structinit``) in ``tmp_path``; fails the test with its output unless it completes."""
    script = tmp_path / "fresh_process_check.py"
    script.write_text(textwrap.dedent(code) + '\nprint("FRESH_PROCESS_OK")\n')
    ok, output = _LOADER.run(script, cwd=tmp_path)
    assert ok and "FRESH_PROCESS_OK" in output, f"the fresh process failed:\n{output}"
    return output


def assert_round_trip_in_fresh_process(model, x, tmp_path, checks=""):
    """Saves ``model`` to .keras, reloads it in the loader process (an interpreter that has
    imported only ``keras`` and ``keras_structinit``), and asserts the reloaded outputs on ``x``
    equal the original's. ``checks``: extra code run there with ``model`` bound to the
    reloaded model."""
    path = tmp_path / "model.keras"
    model.save(path)
    np.savez(tmp_path / "io.npz", x=x, y=to_numpy(model(x, training=False)))
    code = (
        textwrap.dedent(
            f"""
        import numpy as np, keras
        import keras_structinit
        model = keras.saving.load_model({str(path)!r})
        io = np.load({str(tmp_path / "io.npz")!r})
        got = keras.ops.convert_to_numpy(keras.ops.cast(model(io["x"], training=False), "float32"))
        np.testing.assert_allclose(got, io["y"], rtol=1e-5, atol=1e-6)
        """
        )
        + textwrap.dedent(checks)
        + '\nprint("ROUND_TRIP_OK")\n'
    )
    script = tmp_path / "round_trip_check.py"
    script.write_text(code)
    ok, output = _LOADER.run(script)
    assert ok and "ROUND_TRIP_OK" in output, f"round trip failed in the loader process:\n{output}"


def png_header(width, height):
    """A PNG that declares ``width x height`` pixels in its header and holds none."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(x, "float32")), dtype=np.float64)


def filters_of(kernel):
    """(num_filters, num_pixels): each kernel[..., a, b] flattened row-major."""
    kernel = to_numpy(kernel)
    n_pix = math.prod(kernel.shape[:-2])
    return kernel.reshape(n_pix, -1).T


def assert_covariance_within_sampling_error(samples, target, z_max=6.0):
    """Entry-wise check of the empirical covariance against ``target``.

    For zero-mean Gaussian samples the estimator S_ij = mean(x_i x_j) has
    standard error sqrt((T_ii T_jj + T_ij^2) / n) (Isserlis' theorem). With
    n(n+1)/2 <= ~3.3k distinct entries, |z| > 6 has probability ~2e-9 per
    entry, so a failure is a real mismatch, not bad luck. A float32 round-off
    allowance of 1e-5 * sqrt(T_ii T_jj) is added.
    """
    n = samples.shape[0]
    emp = samples.T @ samples / n  # known zero mean
    diag = np.diag(target)
    scale = np.outer(diag, diag)
    stderr = np.sqrt((scale + target**2) / n)
    excess = np.abs(emp - target) - (z_max * stderr + 1e-5 * np.sqrt(scale))
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess.max() <= 0, (
        f"empirical covariance off at {worst}: {emp[worst]:.5f} vs {target[worst]:.5f} "
        f"(stderr {stderr[worst]:.5f})"
    )
    # The sample mean must be zero within its own standard error.
    mean_z = np.abs(samples.mean(axis=0)) / np.sqrt(diag / n + 1e-30)
    assert mean_z.max() < z_max


def _resident_gb():
    """This process's current resident memory in GB (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e9
    except (OSError, ValueError):
        return 0.0


# JAX keeps every compiled program; emptying its caches frees memory but makes later tests
# compile again (a model build costs ~5 s cold, ~0.4 s warm). The caches are emptied when the
# process holds more than the threshold, which then rises to what the process holds afterwards
# plus JAX_CACHE_HEADROOM_GB (capped at JAX_CACHE_CEILING_GB): a fixed threshold that the
# process stays above after emptying made every later test empty the caches and compile again
# (half the JAX run's time went to that).
JAX_CACHE_LIMIT_GB = 1.5
JAX_CACHE_HEADROOM_GB = 0.5
JAX_CACHE_CEILING_GB = 2.2
_jax_cache_threshold_gb = JAX_CACHE_LIMIT_GB
_MEMORY_LOG = os.environ.get("STRUCTINIT_TEST_MEMORY_LOG")


def _return_freed_memory():
    """Hands freed heap pages back to the OS (glibc's ``malloc_trim``; a no-op elsewhere), so
    that the resident size measures what the process still holds."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@pytest.fixture(autouse=True)
def _release_models(request):
    """Drops each test's models and graphs from Keras' global state once it ends, and empties
    JAX's compilation caches when the process holds more than the current threshold.

    Keeps each backend's pytest process under 3 GB (CI's rule): without it the JAX process
    grew past 5 GB over the suite; emptying the caches after every module instead kept it at
    2.7 GB but cost minutes of recompiling.
    """
    global _jax_cache_threshold_gb
    yield
    keras.backend.clear_session(free_memory=False)  # garbage is collected per module or when large
    if keras.backend.backend() != "jax":
        return
    before = _resident_gb()
    if before > _jax_cache_threshold_gb:
        import jax

        gc.collect()
        jax.clear_caches()
        gc.collect()
        _return_freed_memory()
        after = _resident_gb()
        _jax_cache_threshold_gb = min(
            JAX_CACHE_CEILING_GB, max(JAX_CACHE_LIMIT_GB, after + JAX_CACHE_HEADROOM_GB)
        )
        if _MEMORY_LOG:
            with open(_MEMORY_LOG, "a") as log:
                log.write(
                    f"{request.node.nodeid}: {before:.2f} -> {after:.2f} GB, "
                    f"next at {_jax_cache_threshold_gb:.2f} GB\n"
                )


@pytest.fixture(autouse=True, scope="module")
def _release_memory():
    """Collects garbage after each test module (per test, it doubled the run time)."""
    yield
    gc.collect()


def pytest_collection_finish(session):
    """Moves what exists once the tests are collected (Keras, the backends, KerasHub, the test
    modules: ~500,000 objects) out of the collector's sight (``gc.freeze``): it lives to the end
    anyway, and every full collection, per module (:func:`_release_memory`) or when allocations
    trigger one, walked all of it again (0.3 s each with Keras, TensorFlow and KerasHub loaded).
    Torch, seven model and selection files: module teardowns 3.7 s -> 0.2 s."""
    gc.collect()
    gc.freeze()
