"""Mixed precision and multi-device set-up shared by the recipes.

Both must be in place *before* a model is built: the dtype policy decides the
variables' and computations' dtypes at layer construction, and a distribution
decides where variables live. :func:`device_setup` is the one context for
both; the recipes accept a model *builder* (a zero-argument callable) so that
they can build the model inside it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading

import keras

from keras_structinit.utils import validation
from keras_structinit.utils.arguments import DISTRIBUTIONS, PRECISIONS  # also imported from here
from keras_structinit.utils.backend import accelerator  # also imported from here by the recipes

#: Keras 3's ``fit`` fails under a plain ``tf.distribute.MultiWorkerMirroredStrategy``
#: (reproduced here with 2 local workers); :func:`multi_worker_strategy` works around it.
TF_MULTI_WORKER_ISSUE = "keras-team/keras#20585"
# Keras exports its distribution classes but not their common base.
KERAS_DISTRIBUTIONS = (keras.distribution.DataParallel, keras.distribution.ModelParallel)


def jax_cpu_only():
    """Whether Keras runs on JAX with CPU devices only (no GPU or TPU backend)."""
    if keras.backend.backend() != "jax":
        return False
    import jax

    return all(device.platform == "cpu" for device in jax.devices())


def resolve_precision(precision):
    """The Keras dtype-policy name for ``precision``.

    ``None``/"float32": full precision. "mixed_bfloat16" (TPU, recent CPUs and
    GPUs) and "mixed_float16" (GPUs; the recipes then wrap the optimizer in
    ``keras.optimizers.LossScaleOptimizer``) are Keras' mixed policies.
    "auto" picks mixed_float16 on a GPU and mixed_bfloat16 elsewhere, so never
    mixed_float16 on a CPU.

    Raises:
        TypeError: ``precision`` is neither ``None`` nor a str.
        ValueError: an unknown name, or "mixed_float16" on JAX with CPU devices
            only: XLA's CPU ``dot_general`` has no float16 x float16 -> float32
            kernel, so the first matrix product of a step would fail.
    """
    if precision is None:
        return "float32"
    expected = f"None or one of {PRECISIONS}"
    if not isinstance(precision, str):
        raise TypeError(
            f"`precision` must be {expected}. "
            f"Received: precision={precision!r} of type {type(precision).__name__}"
        )
    if precision not in PRECISIONS:
        raise ValueError(f"`precision` must be {expected}. Received: precision={precision!r}")
    if precision == "auto":
        return "mixed_float16" if accelerator() == "gpu" else "mixed_bfloat16"
    if precision == "mixed_float16" and jax_cpu_only():
        raise ValueError(
            "`precision` cannot be 'mixed_float16' on JAX with CPU devices only: XLA's CPU dot_general has "
            "no float16 x float16 -> float32 kernel (F16_F16_F32), so matrix products fail; use "
            "'mixed_bfloat16' or 'float32'. Received: precision='mixed_float16'"
        )
    return precision


def check_distribution(distribution):
    """What :func:`resolve_distribution` would build, checked without building it.

    Returns ``None``, the instance given, or the name it resolves to
    ("data_parallel", "mirrored" or "tpu"; "auto" resolved). Raises as
    :func:`resolve_distribution` does; for "tpu" a TPU must be found.
    """
    if distribution is None:
        return None
    backend = keras.backend.backend()
    if isinstance(distribution, KERAS_DISTRIBUTIONS):
        if backend != "jax":
            raise ValueError(
                f"A keras.distribution `distribution` needs the JAX backend; this is {backend!r}. "
                "On TensorFlow pass distribution='mirrored' or 'tpu' (or a tf.distribute.Strategy)."
            )
        return distribution
    if not isinstance(distribution, str):
        if backend == "tensorflow":
            import tensorflow as tf

            if isinstance(distribution, tf.distribute.Strategy):
                return distribution
        raise TypeError(
            "`distribution` must be None, one of "
            f"{DISTRIBUTIONS}, a keras.distribution.Distribution (JAX) or a "
            f"tf.distribute.Strategy (TensorFlow). Received: {distribution!r}"
        )
    if distribution not in DISTRIBUTIONS:
        raise ValueError(
            f"`distribution` must be one of {DISTRIBUTIONS}. Received: distribution={distribution!r}"
        )
    if backend == "torch":
        raise ValueError(
            "`distribution` is not supported on the torch backend (Keras' torch trainer runs on "
            "one device); use the JAX backend (DataParallel) or TensorFlow (Mirrored/TPUStrategy)."
        )
    if distribution == "auto":
        distribution = (
            "data_parallel" if backend == "jax" else ("tpu" if accelerator() == "tpu" else "mirrored")
        )
    if distribution == "data_parallel" and backend != "jax":
        raise ValueError(
            "distribution='data_parallel' needs the JAX backend; on TensorFlow use 'mirrored' or 'tpu'."
        )
    if distribution not in ("data_parallel", "multi_worker") and backend != "tensorflow":
        raise ValueError(
            f"distribution={distribution!r} needs the TensorFlow backend; on JAX use 'data_parallel'."
        )
    if distribution == "tpu":
        tpu_resolver()
    if distribution == "multi_worker" and backend == "jax":
        process_environment()
    return distribution


#: ``KERAS_DISTRIBUTION_*``: the variables a JAX multi-process run reads (Keras' names).
PROCESS_VARIABLES = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "KERAS_DISTRIBUTION_PROCESS_ID",
)
#: Seconds a JAX multi-process run waits for its peers to join, and for a silent peer before the
#: others stop (``STRUCTINIT_PEER_TIMEOUT`` overrides it; JAX's own defaults: 300 and 100).
PEER_TIMEOUT = 300


def process_environment():
    """``(coordinator address, process count, process index)`` of a JAX multi-process run, from
    :data:`PROCESS_VARIABLES` (``None`` each where unset: JAX detects them itself), checked:
    a one-line ``ValueError`` naming the variable for a count that is not a positive int, an index
    outside ``[0, count)``, or an address that is not ``host:port``."""
    addresses, count, index = (os.environ.get(name) for name in PROCESS_VARIABLES)

    def number(name, text, bound):
        value = int(text) if text is not None and text.strip().isdigit() else None
        if value is None or (bound is not None and not value < bound) or (bound is None and value < 1):
            expected = f"an int in [0, {bound})" if bound is not None else "a positive int"
            raise ValueError(f"`{name}` must be {expected}. Received: {name}={text!r}")
        return value

    if count is not None:
        count = number(PROCESS_VARIABLES[1], count, None)
    if index is not None:
        index = number(PROCESS_VARIABLES[2], index, count)
    if addresses is not None:
        first = addresses.split(",")[0]
        host, _, port = first.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(
                f"`{PROCESS_VARIABLES[0]}` must be host:port[,host:port...] (the first is the "
                f"coordinator). Received: {PROCESS_VARIABLES[0]}={addresses!r}"
            )
        if count is not None and "," in addresses and len(addresses.split(",")) != count:
            raise ValueError(
                f"`{PROCESS_VARIABLES[0]}` lists {len(addresses.split(','))} processes, "
                f"{PROCESS_VARIABLES[1]}={count}"
            )
        addresses = first
    return addresses, count, index


def peer_timeout():
    """:data:`PEER_TIMEOUT`, or the positive int in ``STRUCTINIT_PEER_TIMEOUT``."""
    text = os.environ.get("STRUCTINIT_PEER_TIMEOUT")
    if text is None:
        return PEER_TIMEOUT
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(
            f"`STRUCTINIT_PEER_TIMEOUT` must be a positive int (seconds). "
            f"Received: STRUCTINIT_PEER_TIMEOUT={text!r}"
        )
    return int(text)


def resolve_distribution(distribution):
    """A Keras distribution (JAX) or ``tf.distribute.Strategy`` (TensorFlow), or None.

    Accepts None, an instance (a ``keras.distribution.Distribution`` or a
    ``tf.distribute.Strategy``) or a name:

    * "data_parallel": ``keras.distribution.DataParallel`` over all local
      devices (JAX backend);
    * "multi_worker": one model over the devices of every process of a multi-process
      (multi-host) run, after :func:`initialize_processes`, each process reading its share of
      each global batch: on JAX ``DataParallel`` over all processes' devices (Keras'
      ``auto_shard_dataset``), on TensorFlow :func:`multi_worker_strategy` (``TF_CONFIG``);
    * "mirrored": ``tf.distribute.MirroredStrategy`` (TensorFlow backend,
      all local GPUs, or the CPU);
    * "tpu": ``tf.distribute.TPUStrategy`` on the TPU found by
      ``TPUClusterResolver`` (TensorFlow backend; a one-line ``ValueError``
      when there is none);
    * "auto": the backend's natural choice (DataParallel on JAX, TPUStrategy
      when a TPU is attached or MirroredStrategy otherwise on TensorFlow).
    """
    distribution = check_distribution(distribution)
    if not isinstance(distribution, str):
        return distribution
    if distribution == "data_parallel":
        return keras.distribution.DataParallel(devices=keras.distribution.list_devices())
    if distribution == "multi_worker":
        initialize_processes()
        if keras.backend.backend() == "tensorflow":
            return multi_worker_strategy()
        return keras.distribution.DataParallel(
            devices=keras.distribution.list_devices(), auto_shard_dataset=True
        )
    import tensorflow as tf

    if distribution == "mirrored":
        return tf.distribute.MirroredStrategy()
    resolver = tpu_resolver()
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def initialize_processes():
    """Joins this process to a multi-process run (once; call it before any computation).

    Returns ``(process_count, process_index)``, read from the environment as each engine
    defines it:

    * JAX: ``keras.distribution.initialize()`` with ``KERAS_DISTRIBUTION_JOB_ADDRESSES`` (the
      coordinator's ``host:port``), ``KERAS_DISTRIBUTION_NUM_PROCESSES`` and
      ``KERAS_DISTRIBUTION_PROCESS_ID`` (checked by :func:`process_environment`), or, without
      them, what ``jax.distributed.initialize()`` detects itself (Cloud TPU pod slices, SLURM,
      Open MPI). Peers that do not join within :func:`peer_timeout` seconds end the process with one
      line (exit 1); a peer silent that long ends the others (JAX's heartbeat).
      Collectives between CPU devices go through gloo (``jax_cpu_collectives_implementation``).
    * TensorFlow: ``TF_CONFIG`` (its ``cluster`` and ``task``), through
      :func:`multi_worker_strategy`, which TensorFlow needs created before any other op runs.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        resolver = multi_worker_strategy().cluster_resolver
        tasks = resolver.cluster_spec().as_dict()
        count = sum(len(tasks.get(kind, ())) for kind in ("chief", "worker"))
        index = resolver.task_id + (1 if resolver.task_type == "worker" and "chief" in tasks else 0)
        return max(count, 1), index
    if backend != "jax":
        raise ValueError(f"A multi-process run needs the JAX or TensorFlow backend; this is {backend!r}.")
    import jax

    if not getattr(initialize_processes, "done", False):
        coordinator, count, index = process_environment()
        timeout = peer_timeout()
        # Asking JAX for its devices would start its backends too early: the CPU collectives are
        # set to gloo whatever the accelerator (they serve CPU arrays only).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        where = coordinator or "the detected coordinator"
        who = "" if index is None else f" as process {index}"
        late = (
            f"The multi-process run could not start: {count or 'all'} processes did not join "
            f"{where}{who} within {timeout} s (STRUCTINIT_PEER_TIMEOUT)"
        )
        with _join_deadline(timeout, late):
            try:  # keras.distribution.initialize without its fixed timeouts
                # JAX's own deadline is later than ours: at its deadline its coordination client
                # aborts the process with a stack trace instead of raising.
                jax.distributed.initialize(
                    coordinator_address=coordinator,
                    num_processes=count,
                    process_id=index,
                    initialization_timeout=timeout + JAX_DEADLINE_MARGIN,
                    heartbeat_timeout_seconds=timeout,
                )
            except Exception as err:  # JAX raises its runtime's error types
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                raise RuntimeError(
                    f"The multi-process run could not start at {where}{who}: {validation.clipped(first, 300)}"
                ) from None
        from keras.src.backend.jax.distribution_lib import initialize_rng

        initialize_rng()  # what keras.distribution.initialize does next: one seed on every process
        initialize_processes.done = True
    return jax.process_count(), jax.process_index()


#: Words of the errors a JAX collective raises when a peer of a multi-process run is gone (killed,
#: crashed): gloo's failed transfer ("Connection reset by peer") or the coordination service's.
PEER_LOST_MARKS = ("Gloo", "Connection reset by peer", "heartbeat timeout", "coordination service")


def peer_lost(err):
    """Whether ``err``, raised while this process trains in a multi-process JAX run, says that
    another process of the run is gone (its collectives failed), rather than a fault of its own."""
    if keras.backend.backend() != "jax" or not getattr(initialize_processes, "done", False):
        return False
    import jax

    return jax.process_count() > 1 and any(mark in str(err) for mark in PEER_LOST_MARKS)


def end_process(message, status):
    """Prints ``message`` (one line, stderr) and ends the process with ``status`` at once.

    A process whose peer is gone cannot leave normally: JAX's exit handler waits at the
    coordination service's shutdown barrier for the peer, and the service then aborts the
    process (exit 134) with a C++ stack trace; ``os._exit`` skips it (:func:`_join_deadline` ends a
    join that runs late the same way).
    """
    sys.stdout.flush()
    print(message, file=sys.stderr, flush=True)
    os._exit(status)


JAX_DEADLINE_MARGIN = 60
"""Seconds JAX's own join deadline is given beyond :func:`peer_timeout` (ours ends the run first)."""
JOIN_NOTICE_AFTER = 10
"""Seconds of waiting for the peers before saying, once, what is awaited."""


@contextlib.contextmanager
def _join_deadline(timeout, message):
    """Ends the process with ``message`` (one line, exit 1) if the block runs past ``timeout`` s.

    The join blocks inside JAX's runtime with the GIL released, so a timer thread can end it;
    ``os._exit`` skips JAX's exit hooks, which would print the unjoined service's errors.
    """

    def notice():
        print(
            f"Waiting for the other processes (up to {timeout} s, STRUCTINIT_PEER_TIMEOUT)",
            file=sys.stderr,
            flush=True,
        )

    timers = [threading.Timer(timeout, end_process, (message, 1))]
    if timeout > 2 * JOIN_NOTICE_AFTER:
        timers.append(threading.Timer(JOIN_NOTICE_AFTER, notice))
    for timer in timers:
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        for timer in timers:
            timer.cancel()


@functools.cache
def multi_worker_strategy():
    """This process's ``tf.distribute.MultiWorkerMirroredStrategy`` (one per process, from ``TF_CONFIG``).

    Keras 3's TensorFlow trainer calls ``strategy.reduce`` in two ways a collective strategy
    rejects (:data:`TF_MULTI_WORKER_ISSUE`): on the nest of a whole batch (the symbolic build
    before the first step) and with ``axis=0`` on scalar logs (the loss and metrics of every
    step). The strategy returned reduces a nest leaf by leaf and a scalar over replicas
    (``axis=None``); everything else is TensorFlow's own.

    Raises:
        ValueError: ``TF_CONFIG`` is unset or not JSON with a ``cluster``.
    """
    config = os.environ.get("TF_CONFIG")
    try:
        valid = "cluster" in json.loads(config)
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise ValueError(
            "distribution='multi_worker' on TensorFlow reads its workers from the TF_CONFIG "
            'environment variable, JSON as {"cluster": {"worker": ["host:port", ...]}, "task": '
            f'{{"type": "worker", "index": i}}}}. Received: TF_CONFIG={config!r}'
        )
    import tensorflow as tf

    class KerasMultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
        def reduce(self, reduce_op, value, axis):
            def reduce_one(leaf):
                rank = self.experimental_local_results(leaf)[0].shape.rank
                return super(KerasMultiWorkerMirroredStrategy, self).reduce(
                    reduce_op, leaf, None if rank == 0 else axis
                )

            return tf.nest.map_structure(reduce_one, value)

    return KerasMultiWorkerMirroredStrategy()


def tpu_resolver():
    """``TPUClusterResolver()``, or a one-line ``ValueError`` naming ``distribution`` when no TPU is found."""
    import tensorflow as tf

    try:
        return tf.distribute.cluster_resolver.TPUClusterResolver()
    except (ValueError, RuntimeError, tf.errors.OpError) as err:
        first = (str(err).strip().splitlines() or [""])[0]
        raise ValueError(
            f"distribution='tpu' needs a TPU, and none was found here ({first}); use "
            "'mirrored' or leave `distribution` unset"
        ) from err


def num_replicas(distribution):
    """How many devices share a global batch under a resolved ``distribution``."""
    if distribution is None:
        return 1
    if isinstance(distribution, KERAS_DISTRIBUTIONS):
        return int(distribution.device_mesh.devices.size)
    return int(distribution.num_replicas_in_sync)


@contextlib.contextmanager
def device_setup(precision=None, distribution=None):
    """Context in which to build, compile and fit a model.

    Sets the global dtype policy to :func:`resolve_precision` ``(precision)``
    and activates the resolved ``distribution`` (``keras.distribution`` on
    JAX, ``strategy.scope()`` on TensorFlow); restores both on exit. Yields
    ``(policy_name, distribution)``.

    Example::

        with device_setup("mixed_bfloat16", "data_parallel"):
            model = convmixer(256, 8)
            model.compile(...); model.fit(...)
    """
    policy = resolve_precision(precision)
    resolved = resolve_distribution(distribution)
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        # Both Keras distributions and tf.distribute strategies have `scope()`.
        with resolved.scope() if resolved is not None else contextlib.nullcontext():
            yield policy, resolved
    finally:
        keras.config.set_dtype_policy(previous_policy)
