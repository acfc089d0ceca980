"""LC blocks: an LCResNet with frozen random spatial filters, L1 on its 1x1 weights, pruning, folding.

Trains a small LCResNet (every spatial conv an ``LCConv2D``: frozen random k x k filters
linearly combined by a trained 1x1 conv; Gavrikov & Keuper) with ``model.fit`` on
procedural textures, prunes 70% of its 1x1 weights after training (``PrunePointwise``),
then folds every LC block into one plain ``Conv2D`` (Definition 3.1) and checks that the
folded network computes the same outputs.

Runs offline on a CPU in about a minute (``--images 64 --epochs 1`` for a smoke run):
    python examples/lc_blocks.py
"""

import argparse

import keras
import numpy as np

import keras_structinit as ks
from keras_structinit import lc
from keras_structinit.callbacks import PrunePointwise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--expansion", type=int, default=4, help="LC expansion E (default 4)")
    args = parser.parse_args(argv)

    model = ks.models.lcresnet(8, 8, expansion=args.expansion, num_classes=10)
    counts = lc.parameter_counts(model)
    print(f"LCResNet-8-8x{args.expansion}: {counts['total']:,} parameters, {counts['learnable']:,} learnable")
    lc.apply_pointwise_l1(model, l1=5e-5)  # Eq. 5
    x, y = ks.datasets.procedural_images(args.images)
    x = x.astype("float32") / 255.0
    model.compile(
        keras.optimizers.AdamW(2e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    pruning = PrunePointwise(0.7)
    model.fit(x, y, epochs=args.epochs, batch_size=64, callbacks=[pruning], verbose=2)
    print(
        f"after training: {pruning.result['sparsity']:.0%} of the 1x1 weights pruned, "
        f"{lc.parameter_counts(model)['nonzero']:,} non-zero parameters"
    )

    folded = lc.fold_model(model)
    gap = np.abs(keras.ops.convert_to_numpy(model(x[:8])) - keras.ops.convert_to_numpy(folded(x[:8]))).max()
    print(f"folded into plain convs: max output difference {gap:.2e}")
    return gap


if __name__ == "__main__":
    main()
