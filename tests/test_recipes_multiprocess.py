"""distribution="multi_worker": two JAX processes on this machine train as one (issue 37)."""

import os
import runpy
import socket
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_structinit.recipes import devices

TRAIN = textwrap.dedent("""
    import sys
    import keras
    import numpy as np
    from keras_structinit import recipes

    distribution, out = sys.argv[1], sys.argv[2]
    if distribution == "multi_worker":
        recipes.devices.initialize_processes()  # before any JAX computation

    def build():
        keras.utils.set_random_seed(0)
        return keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, activation="relu"),
                                 keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3)])

    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, (64, 8, 8, 3), dtype=np.uint8), np.arange(64) % 3
    history = recipes.fit_cifar(build, data, 2, batch_size=16, learning_rate=0.05, rand_augment=(2, 0.5),
                                distribution=None if distribution == "none" else distribution,
                                validation_data=data, verbose=0)
    np.save(out, np.concatenate([np.ravel(w) for w in history.model.get_weights()]))
    """)


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "jax",
                    reason="multi-process training is JAX's (keras.distribution)")
def test_two_processes_end_where_one_process_with_the_same_global_batch_does(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    monkeypatch.setattr(sys, "argv", [str(script), "none", str(tmp_path / "one.npy")])
    script.write_text(TRAIN)
    env = dict(os.environ, KERAS_BACKEND="jax", KERAS_DISTRIBUTION_NUM_PROCESSES="2",
               KERAS_DISTRIBUTION_JOB_ADDRESSES=f"localhost:{_free_port()}")
    workers = [subprocess.Popen([sys.executable, str(script), "multi_worker", str(tmp_path / f"w{i}.npy")],
                                env={**env, "KERAS_DISTRIBUTION_PROCESS_ID": str(i)}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for i in range(2)]
    runpy.run_path(str(script), run_name="__main__")  # meanwhile, the one-process run here
    outputs = [w.communicate(timeout=300)[0] for w in workers]
    for worker, output in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, output[-3000:]
    one = np.load(tmp_path / "one.npy")
    for i in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"w{i}.npy"), one, atol=1e-5)


def test_multi_worker_is_refused_where_keras_cannot_run_it():
    if keras.backend.backend() == "jax":
        assert devices.check_distribution("multi_worker") == "multi_worker"
    else:  # TensorFlow: Keras' fit fails under MultiWorkerMirroredStrategy; torch: one device
        with pytest.raises(ValueError, match="20585" if keras.backend.backend() == "tensorflow" else "torch"):
            devices.check_distribution("multi_worker")
