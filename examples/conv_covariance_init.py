"""Covariance initialization of depthwise filters, three ways.

1. As a layer initializer (one ConvCovariance per layer, at its depth fraction).
2. On a whole built model with ``apply_conv_covariance`` -- here a
   keras.applications ConvNeXt, whose depthwise layers are ``Conv2D(groups=C)``.
3. Frozen filters: ``freeze_spatial`` before ``compile``, then ``model.fit``.

Runs offline on random data in well under a minute on a CPU:
    python examples/conv_covariance_init.py
"""

import keras
import numpy as np

import keras_structinit as ks
from keras_structinit import covariance
from keras_structinit.initializers import ConvCovariance

# 1. A single layer at depth fraction 0.5 of the "cifar-p2" schedule.
init = ConvCovariance(depth_fraction=0.5, preset="cifar-p2", seed=0)
layer = keras.layers.DepthwiseConv2D(9, padding="same", depthwise_initializer=init)
layer.build((None, 32, 32, 512))
filters = keras.ops.convert_to_numpy(layer.kernel).reshape(81, -1).T
print(f"sigma at d=0.5: {init.sigma:.4f}")
print(
    "centre-pixel variance over 512 filters (closed form: 0.5):",
    f"{filters[:, 40].var():.3f}",
)

# 2. Every depthwise conv of an ImageNet ConvNeXt (random weights, no download).
convnext = keras.applications.ConvNeXtTiny(
    weights=None, include_top=True, input_shape=(64, 64, 3), classes=10
)
paths = ks.apply_conv_covariance(convnext, preset="imagenet-thawed", seed=0)
print(f"re-initialized {len(paths)} ConvNeXt depthwise kernels, first {paths[0]}, last {paths[-1]}")
sigmas = [
    covariance.variance_schedule(d, *covariance.PRESETS["imagenet-thawed"])
    for d in covariance.depth_fractions(len(paths))
]
print(f"sigma grows with depth from {sigmas[0]:.3f} to {sigmas[-1]:.3f}")

# 3. A ConvMixer with frozen covariance-initialized filters, trained with fit.
model = ks.models.convmixer(
    32,
    4,
    kernel_size=7,
    patch_size=2,
    num_classes=10,
    depthwise_initializer=ConvCovariance(seed=0),
)
frozen = ks.freeze_spatial(model)
model.compile(
    optimizer=keras.optimizers.AdamW(1e-3, weight_decay=0.01),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
    jit_compile=keras.backend.backend() == "jax",
)
before = keras.ops.convert_to_numpy(model.get_layer("block_1_depthwise_conv").kernel)
rng = np.random.default_rng(0)
model.fit(
    rng.random((256, 32, 32, 3), "float32"), rng.integers(0, 10, 256), epochs=1, batch_size=64, verbose=2
)
after = keras.ops.convert_to_numpy(model.get_layer("block_1_depthwise_conv").kernel)
print(f"{len(frozen)} frozen kernels; block-1 filters unchanged by fit: {np.array_equal(before, after)}")
