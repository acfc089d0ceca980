"""Which device and compiler the current Keras backend computes on.

The backend frameworks are imported inside the functions, only the one Keras
runs on, so importing this module costs no more than importing Keras.
"""

from __future__ import annotations

import keras

__all__ = ["accelerator", "in_tf_xla_context"]


def accelerator():
    """``"tpu"``, ``"gpu"`` or ``"cpu"``: the kind of the first device the backend sees."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.devices()[0].platform.lower().replace("cuda", "gpu").replace("rocm", "gpu")
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.config.list_logical_devices("TPU"):
            return "tpu"
        return "gpu" if tf.config.list_logical_devices("GPU") else "cpu"
    if backend == "torch":
        import torch

        return "gpu" if torch.cuda.is_available() else "cpu"
    return "cpu"


def in_tf_xla_context():
    """Whether TensorFlow is tracing a function that XLA compiles (``jit_compile=True``).

    False on other backends and in eager TensorFlow.
    """
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf
    from tensorflow.python.ops import control_flow_util  # private, stable since TF 1.x

    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())
