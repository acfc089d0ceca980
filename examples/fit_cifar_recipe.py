"""The CIFAR recipe from Python: a ConvMixer with ConvCovariance-initialized, frozen filters.

The same run as ``structinit train --model convmixer-128/8 --init conv-cov --frozen``,
written out with the package's building blocks, for users who want to change
one of them (the model, the initializer, the pipeline or the schedule).

    python examples/fit_cifar_recipe.py --data cifar10-train.zip \\
        --epochs 3 --train-size 10000

On several devices add ``--distribution data_parallel`` (JAX) or
``--distribution mirrored`` (TensorFlow), and ``--precision auto``.
"""

import argparse

import keras_structinit as ks
from keras_structinit import datasets, models, recipes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=None, help="CIFAR-10 zip/folder/npz (default keras.datasets)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train-size", type=int, default=0, help="0 = all training images")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--precision", default=None)
    p.add_argument("--distribution", default=None)
    args = p.parse_args(argv)

    (x, y), (x_val, y_val) = datasets.load_cifar(
        args.data, validation_split=0.1, seed=0, train_size=args.train_size or None
    )

    def build():
        model = models.convmixer(128, 8, kernel_size=9, patch_size=2, num_classes=10)
        ks.apply_conv_covariance(model, preset="cifar-p2", seed=0)
        ks.freeze_spatial(model)  # before compile: the frozen kernels get no gradient
        return model

    history = recipes.fit_cifar(
        build,
        (x, y),
        args.epochs,
        batch_size=args.batch_size,
        rand_augment=None,
        validation_data=(x_val, y_val),
        precision=args.precision,
        distribution=args.distribution,
        verbose=2,
    )
    print(f"final validation accuracy: {history.history['val_accuracy'][-1]:.4f}")


if __name__ == "__main__":
    main()
