"""Stochastic depth (Huang et al., "Deep Networks with Stochastic Depth", ECCV 2016)."""

from __future__ import annotations

import keras

from keras_structinit.utils import validation


@keras.saving.register_keras_serializable(package="keras_structinit")
class StochasticDepth(keras.layers.Layer):
    """Drop path: drops a whole residual branch, per sample, in training.

    In training ``y_b = x_b * m_b / (1 - rate)`` with ``m_b ~ Bernoulli(1 - rate)``
    drawn once per sample ``b`` (the sample is kept whole or zeroed); at
    inference ``y = x``. Placed on the residual branch, before the addition.

    Args:
        rate: drop probability in ``[0, 1)``.
        seed: ``None`` or an int in ``[0, 2**32 - 1]`` seeding the layer's
            ``keras.random.SeedGenerator``.
        **kwargs: base layer keyword arguments, such as ``name`` and ``dtype``.

    Example:

    ```python
    branch = keras.layers.Dense(64)(x)
    branch = StochasticDepth(0.1)(branch)
    x = keras.layers.Add()([x, branch])
    ```
    """

    def __init__(self, rate=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = validation.rate(rate, "rate")
        self.seed = validation.optional(validation.random_seed, seed, "seed")
        self.seed_generator = keras.random.SeedGenerator(self.seed)

    def call(self, inputs, training=False):
        if not training or self.rate == 0.0:
            return inputs
        noise_shape = (None,) + (1,) * (len(inputs.shape) - 1)
        return keras.random.dropout(inputs, self.rate, noise_shape=noise_shape, seed=self.seed_generator)

    # Keras saves a layer's own variables only; the SeedGenerator's state is not one of them, so a
    # reloaded (or resumed) model drew the masks of a fresh layer. Saved under its own key, a model
    # continued after a reload draws what the unsaved one would have.
    _SEED_KEY = "seed_generator_state"

    def save_own_variables(self, store):
        super().save_own_variables(store)
        store[self._SEED_KEY] = keras.ops.convert_to_numpy(self.seed_generator.state.value)

    def load_own_variables(self, store):
        keys = list(store.keys())
        if self._SEED_KEY in keys:  # files saved before the state was kept load as they did
            state = self.seed_generator.state
            state.assign(keras.ops.cast(store[self._SEED_KEY], state.dtype))
        super().load_own_variables({k: store[k] for k in keys if k != self._SEED_KEY})

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
