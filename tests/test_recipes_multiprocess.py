"""distribution="multi_worker": two local processes train as one, on JAX and TensorFlow (issue 37)."""

import json
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
        recipes.devices.initialize_processes()  # before any computation

    def build():
        keras.utils.set_random_seed(0)
        return keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, activation="relu"),
                                 keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3)])

    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, (64, 8, 8, 3), dtype=np.uint8), np.arange(64) % 3
    history = recipes.fit_cifar(build, data, 2, batch_size=16, learning_rate=0.05, rand_augment=(2, 0.5),
                                distribution=None if distribution == "none" else distribution,
                                validation_data=data, verbose=0, pipeline="tf")  # multi_worker's stream
    np.save(out, np.concatenate([np.ravel(w) for w in history.model.get_weights()]))
    """)


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _worker_environments():
    """Each of two processes' environment, as the backend's engine reads it."""
    if keras.backend.backend() == "jax":
        shared = dict(
            KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_JOB_ADDRESSES=f"localhost:{_free_port()}"
        )
        return [dict(shared, KERAS_DISTRIBUTION_PROCESS_ID=str(i)) for i in range(2)]
    workers = [f"localhost:{_free_port()}" for _ in range(2)]
    tasks = [{"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}} for i in range(2)]
    return [dict(TF_CONFIG=json.dumps(task)) for task in tasks]


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() == "torch", reason="Keras' torch trainer runs on one device")
def test_two_processes_end_where_one_process_with_the_same_global_batch_does(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    monkeypatch.setattr(sys, "argv", [str(script), "none", str(tmp_path / "one.npy")])
    script.write_text(TRAIN)
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), "multi_worker", str(tmp_path / f"w{i}.npy")],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i, env in enumerate(_worker_environments())
    ]
    runpy.run_path(str(script), run_name="__main__")  # meanwhile, the one-process run here
    outputs = [w.communicate(timeout=300)[0] for w in workers]
    for worker, output in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, output[-3000:]
    one = np.load(tmp_path / "one.npy")
    for i in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"w{i}.npy"), one, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TF_CONFIG is TensorFlow's")
def test_tensorflow_needs_a_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        devices.multi_worker_strategy()
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG='{not json'"):
        devices.multi_worker_strategy()


def test_multi_worker_is_refused_where_keras_cannot_run_it():
    if keras.backend.backend() == "torch":  # Keras' torch trainer runs on one device
        with pytest.raises(ValueError, match="torch"):
            devices.check_distribution("multi_worker")
    else:
        assert devices.check_distribution("multi_worker") == "multi_worker"


def test_the_command_line_offers_every_distribution_the_recipes_take(tmp_path, capsys):
    from keras_structinit import cli

    parser = cli.build_parser()
    for name in devices.DISTRIBUTIONS:
        assert parser.parse_args(["train", "--distribution", name]).distribution == name
    if keras.backend.backend() == "torch":  # refused before anything is read or written
        np.savez(tmp_path / "data.npz", x=np.zeros((4, 8, 8, 3), np.uint8), y=np.arange(4) % 2)
        argv = [
            "train",
            "--model",
            "simple-cnn",
            "--epochs",
            "1",
            "--data",
            str(tmp_path / "data.npz"),
            "--out",
            str(tmp_path / "out"),
            "--distribution",
            "multi_worker",
        ]
        assert cli.main(argv) == 2
        assert "JAX or TensorFlow" in capsys.readouterr().err and not (tmp_path / "out").exists()


def _train_process(tmp_path, env):
    data = tmp_path / "data.npz"  # a real file: the checks before Keras refuse a missing one first
    np.savez(data, x=np.zeros((4, 8, 8, 3), np.uint8), y=np.arange(4) % 2)
    argv = [
        sys.executable,
        "-m",
        "keras_structinit.cli",
        "train",
        "--model",
        "simple-cnn",
        "--epochs",
        "1",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "out"),
        "--distribution",
        "multi_worker",
    ]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=240, env={**os.environ, "KERAS_BACKEND": "jax", **env}
    )


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="KERAS_DISTRIBUTION_* are JAX's variables")
@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "5"},
            "KERAS_DISTRIBUTION_PROCESS_ID` must be an int in [0, 2)",
        ),
        (
            {"KERAS_DISTRIBUTION_NUM_PROCESSES": "abc", "KERAS_DISTRIBUTION_PROCESS_ID": "0"},
            "KERAS_DISTRIBUTION_NUM_PROCESSES` must be a positive int",
        ),
        (
            {
                "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
                "KERAS_DISTRIBUTION_PROCESS_ID": "0",
                "KERAS_DISTRIBUTION_JOB_ADDRESSES": "nohost",
            },
            "must be host:port",
        ),
        (
            {
                "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
                "KERAS_DISTRIBUTION_PROCESS_ID": "0",
                "STRUCTINIT_PEER_TIMEOUT": "x",
            },
            "STRUCTINIT_PEER_TIMEOUT` must be a positive int",
        ),
    ],
)
def test_a_bad_process_environment_is_one_line(tmp_path, env, message):
    result = _train_process(tmp_path, {"KERAS_DISTRIBUTION_JOB_ADDRESSES": "localhost:1", **env})
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX's coordination service")
@pytest.mark.parametrize("index", ["0", "1"])  # the coordinator waiting for 1; 1 waiting for the coordinator
def test_a_peer_that_never_starts_ends_the_run_within_the_timeout(tmp_path, index):
    """Issue 49: a started process waited silently past 420 s; now one line at STRUCTINIT_PEER_TIMEOUT."""
    import time

    start = time.monotonic()
    result = _train_process(
        tmp_path,
        {
            "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
            "KERAS_DISTRIBUTION_PROCESS_ID": index,
            "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"localhost:{_free_port()}",
            "STRUCTINIT_PEER_TIMEOUT": "6",
        },
    )
    assert result.returncode == 1, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("The multi-process run could not start: 2 processes did not join localhost:")
    assert lines[0].endswith(f"as process {index} within 6 s (STRUCTINIT_PEER_TIMEOUT)")
    assert time.monotonic() - start < 60
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX's coordination service")
@pytest.mark.parametrize("victim", [1, 0])  # a worker; the coordinator
def test_a_killed_peer_ends_the_other_process_within_the_timeout(tmp_path, victim):
    import signal
    import time

    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "train.npz", x=rng.integers(0, 256, (64, 8, 8, 3), dtype=np.uint8), y=np.arange(64) % 4
    )
    shared = {
        "KERAS_BACKEND": "jax",
        "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
        "STRUCTINIT_PEER_TIMEOUT": "8",
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"localhost:{_free_port()}",
    }
    argv = [
        sys.executable,
        "-m",
        "keras_structinit.cli",
        "train",
        "--model",
        "simple-cnn",
        "--epochs",
        "500",
        "--batch-size",
        "16",
        "--val-split",
        "0",
        "--data",
        str(tmp_path / "train.npz"),
        "--out",
        str(tmp_path / "out"),
        "--distribution",
        "multi_worker",
        "--rand-augment",
        "none",
    ]
    logs = [open(tmp_path / f"stderr_{i}.txt", "w") for i in range(2)]  # noqa: SIM115 - closed below
    workers = [
        subprocess.Popen(
            argv,
            env={**os.environ, **shared, "KERAS_DISTRIBUTION_PROCESS_ID": str(i)},
            stdout=subprocess.DEVNULL,
            stderr=logs[i],
        )
        for i in range(2)
    ]
    try:
        log = tmp_path / "out" / "process_1" / "log.csv"
        deadline = time.monotonic() + 240
        while not (log.exists() and log.stat().st_size > 0):  # both train: process 1 logged an epoch
            running = time.monotonic() < deadline and workers[0].poll() is None
            assert running, (tmp_path / "stderr_0.txt").read_text()[-2000:]
            time.sleep(0.5)
        workers[victim].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        other = 1 - victim
        workers[other].wait(timeout=120)
        assert time.monotonic() - killed < 60  # the timeout (8 s) and JAX's detection, not forever
        # Issue 65 point 5: one line and exit 1, not a traceback, JAX's failed shutdown barrier and
        # its abort (exit 134, a C++ stack trace); results.json says the run failed.
        said = (tmp_path / f"stderr_{other}.txt").read_text().strip().splitlines()
        assert workers[other].returncode == 1, said[-40:]
        assert said[-1].startswith("structinit train: another process of this multi-process run stopped ("), (
            said
        )
        assert said[-1].endswith("); this one stops too (results.json records it)")
        assert not any("Traceback" in line or "Check failure" in line for line in said), said
        out = tmp_path / "out" / ("process_1" if other else "")
        assert json.loads((out / "results.json").read_text())["status"] == "failed"
    finally:
        for worker, log_file in zip(workers, logs, strict=True):
            if worker.poll() is None:
                worker.kill()
            log_file.close()


@pytest.mark.skipif(keras.backend.backend() == "torch", reason="Keras' torch trainer runs on one device")
def test_a_set_smaller_than_one_global_batch_is_refused_before_training():
    from keras_structinit import recipes

    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, (32, 8, 8, 3), dtype=np.uint8), np.arange(32) % 3
    small = data[0][:8], data[1][:8]
    with pytest.raises(ValueError, match=r"`validation_data` holds 8 images, less than one global batch"):
        recipes.fit_cifar(
            lambda: None, data, 1, batch_size=16, distribution="multi_worker", validation_data=small
        )
    with pytest.raises(ValueError, match="`data` holds 8 images"):
        recipes.fit_cifar(lambda: None, small, 1, batch_size=16, distribution="multi_worker")
