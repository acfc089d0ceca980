"""Mimetic initialization of MLP blocks, on a keras.applications ConvNeXt and on the package's ViT.

1. ``keras_structinit.initialize(model, "conv-cov+mean-shift")`` on ``ConvNeXtTiny`` (no
   download): ConvCovariance on its depthwise convs, then a mean shift ``b`` on the first
   Dense of every MLP block (Trockman & Kolter, Eq. 2). The shifted kernels' row means are
   measured with ``mimetic.row_mean_statistics``: each is ``b`` plus the base init's noise.
2. The package's ViT with ``apply_mean_shift`` trained briefly with ``model.fit`` on
   procedural textures.

Runs offline on a CPU in about a minute (``--images 64 --epochs 1`` for a smoke run):
    python examples/mimetic_init.py
"""

import argparse

import keras
import numpy as np

import keras_structinit as ks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--b", type=float, default=0.2, help="the mean shift (default 0.2)")
    parser.add_argument("--images", type=int, default=512, help="training images for part 2")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args(argv)

    convnext = keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=10)
    paths = ks.initialize(convnext, f"conv-cov+mean-shift:{args.b}", seed=0)
    first = [p for p in paths if p.endswith("pointwise_conv_1/kernel")]
    print(f"{len(paths)} kernels re-initialized, {len(first)} of them first MLP layers")
    kernel = keras.ops.convert_to_numpy(convnext.get_layer(first[0].split("/")[0]).kernel)
    stats = ks.mimetic.row_mean_statistics(kernel)
    print(f"first MLP kernel {kernel.shape}: mean {stats['mean']:.4f} (b = {args.b})")

    x, y = ks.datasets.procedural_images(args.images)
    vit = ks.models.vit(4, 64, 4, 2, num_classes=10, input_shape=(32, 32, 3))
    ks.apply_mean_shift(vit, b=args.b, seed=0)
    vit.compile(
        keras.optimizers.AdamW(1e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    history = vit.fit(x.astype("float32") / 255.0, y, epochs=args.epochs, batch_size=64, verbose=2)
    print(f"ViT with mean-shifted MLPs: training accuracy {history.history['accuracy'][-1]:.3f}")
    return float(np.mean(kernel))


if __name__ == "__main__":
    main()
