"""Bad inputs to the public API: each must raise a clear one-line error of the right type.

The table ``ROWS`` holds ``(callable, bad input, exception type, phrase)``: calling
``callable(bad input)`` must raise exactly that type (``TypeError`` for a value of
the wrong type, ``ValueError`` for a value out of range, as in
:mod:`keras_structinit.utils.validation`), with a one-line message containing ``phrase``
(usually the argument's name in backticks). Inputs that need building (models,
files) are :class:`Make` objects, built when their row runs, so collecting the
file builds nothing. Models are tiny: the whole table runs in seconds per backend.

A second test scans the package's sources (``ast``) for calls that would run
code from a data file or a string (``pickle.load``, ``np.load(allow_pickle=True)``,
``eval``, ``exec``, ``safe_mode=False``) outside :data:`UNSAFE_CALLS_ALLOWED`.
"""

import ast
import hashlib
import json
import math

import keras
import numpy as np
import pytest

import keras_structinit as ks
from keras_structinit import recipes
from keras_structinit.engine import initializer_base, walker
from keras_structinit.recipes.devices import jax_cpu_only
from keras_structinit.utils import io_utils, validation

from conftest import REPO_ROOT, once_per_suite

NAN, INF = math.nan, math.inf


class Make:
    """A bad input built when its row runs: ``build(tmp_path)``; ``label`` is how the table shows it."""

    def __init__(self, label, build):
        self.label, self.build = label, build

    def __repr__(self):
        return self.label


# --- tiny models and other inputs ------------------------------------------------------------------


def dense_model(_=None):
    """Dense layers only: nothing for the conv functions to act on."""
    inputs = keras.Input((4,))
    x = keras.layers.Dense(3, name="dense")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(x), name="dense_only")


def conv_model(_=None):
    """A depthwise conv, a 3x3 conv and a head."""
    inputs = keras.Input((6, 6, 2))
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(inputs)
    x = keras.layers.Conv2D(2, 3, padding="same", name="conv")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(x), name="tiny_conv")


def mlp_model(_=None):
    """Images in, but only Dense layers."""
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Flatten()(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(x), name="mlp")


def attention_model(_=None):
    """One self-attention layer over 3 tokens of width 4."""
    inputs = keras.Input((3, 4))
    return keras.Model(inputs, keras.layers.MultiHeadAttention(2, 2, name="mha")(inputs, inputs))


def cross_attention_model(_=None):
    """Queries of width 4 attending to keys/values of width 6."""
    query, other = keras.Input((3, 4)), keras.Input((5, 6))
    return keras.Model([query, other], keras.layers.MultiHeadAttention(2, 2, name="mha")(query, other))


def convmixer(dim):
    return ks.models.convmixer(dim, 1, kernel_size=3, num_classes=3, input_shape=(8, 8, 3))


def lc_model(_=None):
    inputs = keras.Input((6, 6, 2))
    x = ks.layers.LCConv2D(2, 3, expansion=2, name="lc")(inputs)
    return keras.Model(inputs, x, name="tiny_lc")


def bank(_=None):
    """A 2-layer bank of 3x3 filter statistics."""
    return ks.covariance.FilterCovariance([np.zeros(9)] * 2, [np.eye(9)] * 2, 3)


DENSE = Make("<Dense-only model>", dense_model)
CONV = Make("<tiny conv model>", conv_model)
EMPTY = Make("keras.Sequential()", lambda _: keras.Sequential())
UNBUILT = Make("<unbuilt Sequential>", lambda _: keras.Sequential([keras.layers.Dense(2)]))
IDENTITY = Make("<model without layers>", lambda _: (lambda i: keras.Model(i, i))(keras.Input((4, 4, 2))))

# 16 principal directions of 3x3x3 patches (d = 27), descending variances.
EIGVECS = np.eye(27)[:, :16]
EIGVALS = np.linspace(2.0, 0.1, 16)


def missing(name):
    return Make(f"<missing {name}>", lambda tmp_path: str(tmp_path / "missing" / name))


def empty_dir(tmp_path):
    (tmp_path / "not_a_preset").mkdir()
    return str(tmp_path / "not_a_preset")


def images(n, size=8, channels=3):
    return np.zeros((n, size, size, channels), "float32")


CIFAR = (np.random.default_rng(0).integers(0, 256, (8, 8, 8, 3), dtype=np.uint8), np.arange(8) % 3)


def tiny_classifier():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(2, 3, name="conv")(inputs))
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))


def fit_cifar_with(**options):
    """``fit_cifar`` on tiny data with ``options`` (every bad option is refused before training)."""
    return lambda bad: recipes.fit_cifar(tiny_classifier, CIFAR, 1, verbose=0, **{**options, **bad})


def nan_images(_):
    x = np.random.default_rng(0).normal(size=(3, 6, 6, 3))
    x[1, 2, 2, 0] = np.nan
    return x


def nan_images_6x2(_):
    x = images(2, 6, 2)
    x[0, 0, 0, 0] = np.nan
    return x


def nan_teacher(_):
    teacher = convmixer(8)
    kernel = teacher.get_layer("block_1_pointwise_conv").kernel
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))
    return teacher


def truncated_keras(tmp_path):
    path = tmp_path / "truncated.keras"
    path.write_bytes(b"PK\x03\x04 cut short")
    return str(path)


def existing_file(tmp_path):
    path = tmp_path / "exists.npz"
    path.write_bytes(b"keep me")
    return str(path)


BIG = np.random.default_rng(0).normal(size=(2, 6, 6, 3)) * 1e200


def row(call, bad, error, phrase, id, marks=()):
    return pytest.param(call, bad, error, phrase, id=id, marks=marks)


only_jax_cpu = pytest.mark.skipif(not jax_cpu_only(), reason="the rule concerns JAX with CPU devices only")
TDU = ks.initializers.TorchDefaultUniform
CC = ks.initializers.ConvCovariance

ROWS = [
    # --- initializers: shapes, seeds, dtypes, numbers ------------------------------------------------
    row(lambda s: TDU()(s), (0, 3), ValueError, "`shape`", "TorchDefaultUniform-zero-fan-in-axis"),
    row(lambda s: TDU()(s), (3, 3, 4, 0), ValueError, "`shape`", "TorchDefaultUniform-zero-filters"),
    row(lambda s: TDU()(s), (3.5, 2), TypeError, "`shape`", "TorchDefaultUniform-float-shape"),
    row(lambda s: TDU()(s), "abc", TypeError, "`shape`", "TorchDefaultUniform-str-shape"),
    row(lambda s: TDU()(s), (10,), ValueError, "pass `fan_in`", "TorchDefaultUniform-bias-without-fan-in"),
    row(lambda v: TDU(fan_in=v), -2, ValueError, "`fan_in`", "TorchDefaultUniform-negative-fan-in"),
    row(lambda v: TDU(depthwise=v), 1, TypeError, "`depthwise`", "TorchDefaultUniform-int-depthwise"),
    row(
        lambda d: TDU()((3, 3, 2, 1), dtype=d),
        "int32",
        ValueError,
        "`dtype`",
        "TorchDefaultUniform-int-dtype",
    ),
    row(lambda s: TDU(seed=s), -1, ValueError, "`seed`", "TorchDefaultUniform-negative-seed"),
    row(lambda s: CC(seed=s), -1, ValueError, "`seed`", "ConvCovariance-negative-seed"),
    row(lambda s: CC(seed=s), 2**32, ValueError, "`seed`", "ConvCovariance-seed-past-uint32"),
    row(lambda s: CC(seed=s), 1.5, TypeError, "`seed`", "ConvCovariance-float-seed"),
    row(lambda v: CC(sigma0=v), NAN, ValueError, "`sigma0`", "ConvCovariance-nan-sigma0"),
    row(lambda v: CC(scale=v), INF, ValueError, "`scale`", "ConvCovariance-inf-scale"),
    row(lambda v: CC(psd=v), 3, TypeError, "`psd`", "ConvCovariance-int-psd"),
    row(lambda v: CC(preset=v), "cifar10", ValueError, "`preset`", "ConvCovariance-unknown-preset"),
    row(lambda v: CC(depth_fraction=v), "0.5", TypeError, "`depth_fraction`", "ConvCovariance-str-depth"),
    row(lambda s: CC()(s), (3, 3, 0, 1), ValueError, "`shape`", "ConvCovariance-zero-channels"),
    row(lambda s: CC()(s), (9, 9), ValueError, "`shape`", "ConvCovariance-rank-2-shape"),
    row(
        lambda b: ks.initializers.CovarianceTransfer(b),
        42,
        TypeError,
        "`bank`",
        "CovarianceTransfer-int-bank",
    ),
    row(
        lambda b: ks.initializers.CovarianceTransfer(b),
        missing("bank.npz"),
        FileNotFoundError,
        "bank.npz",
        "CovarianceTransfer-missing-bank-file",
    ),
    row(
        lambda e: ks.initializers.DataAligned(e, EIGVECS, f=0.5),
        -EIGVALS,
        ValueError,
        "`eigvals`",
        "DataAligned-negative-eigvals",
    ),
    row(
        lambda e: ks.initializers.DataAligned(e, EIGVECS, f=0.5),
        np.zeros(16),
        ValueError,
        "`eigvals`",
        "DataAligned-all-zero-eigvals-with-power",
    ),
    row(
        lambda e: ks.initializers.DataAligned(e, EIGVECS),
        np.full(16, NAN),
        ValueError,
        "`eigvals`",
        "DataAligned-nan-eigvals",
    ),
    row(
        lambda e: ks.initializers.DataAligned(e, EIGVECS),
        ["a"] * 16,
        TypeError,
        "`eigvals`",
        "DataAligned-str-eigvals",
    ),
    row(
        lambda v: ks.initializers.DataAligned(EIGVALS, v),
        np.ones((27, 16)),
        ValueError,
        "`eigvecs`",
        "DataAligned-non-orthonormal-eigvecs",
    ),
    row(
        lambda n: ks.initializers.DataAligned(EIGVALS, EIGVECS, n_components=n),
        0,
        ValueError,
        "`n_components`",
        "DataAligned-zero-components",
    ),
    row(
        lambda f: ks.initializers.DataAligned(EIGVALS, EIGVECS, f=f),
        "sqrt",
        TypeError,
        "`f`",
        "DataAligned-str-f",
    ),
    row(
        lambda s: ks.initializers.DataAligned(EIGVALS, EIGVECS)(s),
        (5, 5, 3, 16),
        ValueError,
        "`shape`",
        "DataAligned-kernel-of-another-size",
    ),
    row(lambda b: ks.initializers.MeanShift(b=b), NAN, ValueError, "`b`", "MeanShift-nan-b"),
    row(
        lambda v: ks.initializers.MeanShift(variance=v),
        1.0,
        ValueError,
        "`variance`",
        "MeanShift-variance-in-constant-mode",
    ),
    row(
        lambda v: ks.initializers.MeanShift(mode="per_input", variance=v),
        -1.0,
        ValueError,
        "`variance`",
        "MeanShift-negative-variance",
    ),
    row(lambda b: ks.initializers.MeanShift(base=b), 3, TypeError, "`base`", "MeanShift-int-base"),
    row(
        lambda b: ks.initializers.MeanShift(base=b),
        "no_such_init",
        ValueError,
        "`base`",
        "MeanShift-unknown-base",
    ),
    row(lambda s: ks.initializers.MeanShift()(s), (5,), ValueError, "`shape`", "MeanShift-bias-shape"),
    row(lambda s: ks.initializers.MeanShift(seed=s), -7, ValueError, "`seed`", "MeanShift-negative-seed"),
    # --- layers ---------------------------------------------------------------------------------------
    row(
        lambda x: ks.layers.PositionEmbedding()(x),
        np.ones((2, 4), "float32"),
        ValueError,
        "`input_shape`",
        "PositionEmbedding-rank-2-input",
    ),
    row(
        lambda x: ks.layers.PositionEmbedding()(x),
        np.ones((2, 4, 4, 3), "float32"),
        ValueError,
        "`input_shape`",
        "PositionEmbedding-rank-4-input",
    ),
    row(
        lambda s: ks.layers.PositionEmbedding().build(s),
        (None, None, 8),
        ValueError,
        "fixed number of tokens",
        "PositionEmbedding-unknown-token-count",
    ),
    row(
        lambda i: ks.layers.PositionEmbedding(initializer=i),
        3,
        TypeError,
        "`initializer`",
        "PositionEmbedding-int-initializer",
    ),
    row(
        lambda x: ks.layers.ClassToken()(x),
        np.ones((2, 4), "float32"),
        ValueError,
        "`input_shape`",
        "ClassToken-rank-2-input",
    ),
    row(
        lambda i: ks.layers.ClassToken(initializer=i),
        "no_such_init",
        ValueError,
        "`initializer`",
        "ClassToken-unknown-initializer",
    ),
    row(lambda v: ks.layers.LayerScale(v), NAN, ValueError, "`init_value`", "LayerScale-nan"),
    row(lambda v: ks.layers.LayerScale(v), "1e-6", TypeError, "`init_value`", "LayerScale-str"),
    row(lambda r: ks.layers.StochasticDepth(r), 1.0, ValueError, "`rate`", "StochasticDepth-rate-1"),
    row(
        lambda s: ks.layers.StochasticDepth(0.1, seed=s),
        -1,
        ValueError,
        "`seed`",
        "StochasticDepth-negative-seed",
    ),
    row(lambda f: ks.layers.ZeroPadShortcut(f), 0, ValueError, "`filters`", "ZeroPadShortcut-zero-filters"),
    row(
        lambda x: ks.layers.ZeroPadShortcut(4)(x),
        np.ones((1, 4, 4, 8), "float32"),
        ValueError,
        "`filters`",
        "ZeroPadShortcut-fewer-filters-than-channels",
    ),
    row(
        lambda x: ks.layers.ZeroPadShortcut(8)(x),
        np.ones((2, 4), "float32"),
        ValueError,
        "`input_shape`",
        "ZeroPadShortcut-rank-2-input",
    ),
    row(
        lambda i: ks.layers.Conv2D(4, 3, implementation=i),
        "fast",
        ValueError,
        "`implementation`",
        "Conv2D-unknown-implementation",
    ),
    row(
        lambda k: ks.layers.Conv2D(4, k, implementation="matmul"),
        3,
        ValueError,
        "implementation='matmul'",
        "Conv2D-matmul-on-a-3x3-stride-1-conv",
    ),
    row(
        lambda k: ks.layers.patch_conv2d(np.ones((1, 4, 4, 3), "float32"), k),
        np.ones((2, 2, 3), "float32"),
        ValueError,
        "`kernel.shape`",
        "patch_conv2d-rank-3-kernel",
    ),
    row(
        lambda i: ks.layers.DepthwiseConv2D(3, implementation=i),
        "x",
        ValueError,
        "`implementation`",
        "DepthwiseConv2D-unknown-implementation",
    ),
    row(
        lambda t: ks.layers.DepthwiseConv2D(3, kernel_trainable=t),
        "no",
        TypeError,
        "`kernel_trainable`",
        "DepthwiseConv2D-str-kernel-trainable",
    ),
    row(
        lambda x: ks.layers.DepthwiseConv2D(3)(x),
        np.ones((1, 3, 2), "float32"),
        ValueError,
        "expected min_ndim=4",
        "DepthwiseConv2D-rank-3-input",
    ),
    row(
        lambda i: ks.layers.depthwise_conv2d(images(1), np.ones((3, 3, 3, 1), "float32"), implementation=i),
        "x",
        ValueError,
        "`implementation`",
        "depthwise_conv2d-unknown-implementation",
    ),
    row(lambda f: ks.layers.LCConv2D(f, 3), 0, ValueError, "`filters`", "LCConv2D-zero-filters"),
    row(
        lambda k: ks.layers.LCConv2D(4, k), (3, 3, 3), ValueError, "`kernel_size`", "LCConv2D-3d-kernel-size"
    ),
    row(
        lambda p: ks.layers.LCConv2D(4, 3, padding=p),
        "full",
        ValueError,
        "`padding`",
        "LCConv2D-unknown-padding",
    ),
    row(lambda b: ks.layers.LCConv2D(4, 3, bank=b), 3, TypeError, "`bank`", "LCConv2D-int-bank"),
    row(
        lambda x: ks.layers.LCConv2D(4, 3)(x),
        np.ones((1, 3, 2), "float32"),
        ValueError,
        "`input_shape`",
        "LCConv2D-rank-3-input",
    ),
    row(
        lambda x: ks.layers.LCConv2D(4, 5, padding="valid")(x),
        np.ones((1, 3, 3, 2), "float32"),
        ValueError,
        "`padding`",
        "LCConv2D-valid-kernel-larger-than-input",
    ),
    row(
        lambda layer: layer.fold(),
        Make("<unbuilt LCConv2D>", lambda _: ks.layers.LCConv2D(4, 3)),
        ValueError,
        "must be built",
        "LCConv2D-fold-unbuilt",
    ),
    row(lambda n: ks.layers.SharedKernelBank(n), 0, ValueError, "`size`", "SharedKernelBank-zero-size"),
    row(
        lambda s: ks.layers.SharedKernelBank(10, seed=s),
        -1,
        ValueError,
        "`seed`",
        "SharedKernelBank-negative-seed",
    ),
    row(
        lambda b: ks.layers.LCConv2D(4, 3, bank=b)(np.ones((1, 4, 4, 2), "float32")),
        Make("SharedKernelBank(10)", lambda _: ks.layers.SharedKernelBank(10)),
        ValueError,
        "holds 10 values",
        "LCConv2D-bank-too-small",
    ),
    # --- model builders -------------------------------------------------------------------------------
    row(lambda d: ks.models.convmixer(d, 2), 0, ValueError, "`dim`", "convmixer-zero-dim"),
    row(lambda d: ks.models.convmixer(d, 2), 8.0, TypeError, "`dim`", "convmixer-float-dim"),
    row(
        lambda s: ks.models.convmixer(8, 1, input_shape=s),
        (32, 32),
        ValueError,
        "`input_shape`",
        "convmixer-2d-input-shape",
    ),
    row(
        lambda i: ks.models.convmixer(8, 1, depthwise_initializer=i),
        3,
        TypeError,
        "`depthwise_initializer`",
        "convmixer-int-initializer",
    ),
    row(
        lambda m: ks.models.convmixer(8, 1, bn_momentum=m),
        2,
        ValueError,
        "`bn_momentum`",
        "convmixer-momentum-above-1",
    ),
    row(lambda h: ks.models.vit(4, 10, 1, h), 3, ValueError, "`heads`", "vit-heads-not-dividing-dim"),
    row(lambda p: ks.models.vit(p, 12, 1, 3), 3, ValueError, "`patch_size`", "vit-patch-not-dividing-image"),
    row(lambda r: ks.models.vit(4, 12, 1, 3, dropout=r), 1.0, ValueError, "`dropout`", "vit-dropout-1"),
    row(lambda d: ks.models.convnext(d, d), [], ValueError, "`depths`", "convnext-no-stages"),
    row(lambda d: ks.models.convnext((1, 1), d), (8,), ValueError, "`dims`", "convnext-dims-per-stage"),
    row(
        lambda v: ks.models.convnext_isotropic(8, 1, layer_scale_init=v),
        -1.0,
        ValueError,
        "`layer_scale_init`",
        "convnext_isotropic-negative-layer-scale",
    ),
    row(
        lambda r: ks.models.convnext_isotropic(8, 1, drop_path=r),
        NAN,
        ValueError,
        "`drop_path`",
        "convnext_isotropic-nan-drop-path",
    ),
    row(lambda d: ks.models.lcresnet(d), 10, ValueError, "`depth`", "lcresnet-depth-not-6n-plus-2"),
    row(
        lambda k: ks.models.lcresnet(8, 4, kernel_size=k),
        4,
        ValueError,
        "`kernel_size`",
        "lcresnet-even-kernel",
    ),
    row(
        lambda s: ks.models.lcresnet(8, 4, frozen=False, sharing=s),
        "global",
        ValueError,
        "frozen=True",
        "lcresnet-thawed-shared-kernels",
    ),
    row(
        lambda n: ks.models.simple_cnn(n, 4, 4),
        6,
        ValueError,
        "`input_shape`",
        "simple_cnn-more-poolings-than-pixels",
    ),
    row(
        lambda p: ks.models.simple_cnn(2, 4, 4, pooling=p),
        "avg",
        ValueError,
        "`pooling`",
        "simple_cnn-unknown-pooling",
    ),
    row(lambda s: ks.models.vgg16(input_shape=s), (8, 8, 3), ValueError, "`input_shape`", "vgg16-too-small"),
    row(lambda g: ks.models.resnet18_gn(groups=g), 0, ValueError, "`groups`", "resnet18_gn-zero-groups"),
    row(lambda n: ks.models.build_model(n), "resnet50", ValueError, "`model`", "build_model-unknown-name"),
    row(lambda n: ks.models.build_model(n), "convmixer-0/8", ValueError, "`model`", "build_model-zero-width"),
    row(
        lambda d: ks.models.build_model("convmixer-8/2", dim=d),
        16,
        ValueError,
        "`dim`",
        "build_model-argument-fixed-by-name",
    ),
    # --- model functions: wrong types, empty models, models without a matching layer -----------------
    row(
        lambda m: ks.apply_conv_covariance(m), np.ones(3), TypeError, "`model`", "apply_conv_covariance-array"
    ),
    row(
        lambda m: ks.apply_conv_covariance(m),
        EMPTY,
        ValueError,
        "must be built",
        "apply_conv_covariance-empty-sequential",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m),
        UNBUILT,
        ValueError,
        "must be built",
        "apply_conv_covariance-unbuilt-model",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m),
        DENSE,
        ValueError,
        "has no spatial depthwise",
        "apply_conv_covariance-dense-only-model",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m),
        IDENTITY,
        ValueError,
        "has no spatial depthwise",
        "apply_conv_covariance-model-without-layers",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m, seed=-1),
        CONV,
        ValueError,
        "`seed`",
        "apply_conv_covariance-negative-seed",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m, which="pointwise"),
        CONV,
        ValueError,
        "`which`",
        "apply_conv_covariance-unknown-which",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m, layers="dw"),
        CONV,
        TypeError,
        "`layers`",
        "apply_conv_covariance-layers-as-str",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m, layers=["nope"]),
        CONV,
        ValueError,
        "`layers`",
        "apply_conv_covariance-unknown-layer",
    ),
    row(
        lambda m: ks.apply_conv_covariance(m, layers=["head"]),
        CONV,
        ValueError,
        "`layers`",
        "apply_conv_covariance-dense-layer-named",
    ),
    row(
        lambda m: ks.apply_torch_uniform(m, which="all_spatial"),
        DENSE,
        ValueError,
        "has no spatial",
        "apply_torch_uniform-dense-only-model",
    ),
    row(
        lambda m: ks.apply_covariance_transfer(m, bank=3),
        CONV,
        TypeError,
        "`bank`",
        "apply_covariance_transfer-int-bank",
    ),
    row(
        lambda m: ks.apply_filter_transfer(m, source=3),
        CONV,
        TypeError,
        "`source`",
        "apply_filter_transfer-int-source",
    ),
    row(
        lambda m: ks.apply_filter_transfer(conv_model(), source=m),
        DENSE,
        ValueError,
        "`source`",
        "apply_filter_transfer-dense-only-source",
    ),
    row(
        lambda m: ks.apply_filter_transfer(m, source=m, seed=-1),
        CONV,
        ValueError,
        "`seed`",
        "apply_filter_transfer-negative-seed",
    ),
    row(
        lambda m: ks.apply_mean_shift(m), CONV, ValueError, "MLP blocks", "apply_mean_shift-model-without-mlp"
    ),
    row(
        lambda m: ks.apply_mean_shift(m, mode="linear"),
        DENSE,
        ValueError,
        "`mode`",
        "apply_mean_shift-unknown-mode",
    ),
    row(
        lambda b: ks.apply_mean_shift(dense_model(), b=b, layers=["dense"]),
        "x",
        TypeError,
        "`b`",
        "apply_mean_shift-str-b",
    ),
    row(
        lambda m: ks.apply_mean_shift(m, layers=["dw"]),
        CONV,
        ValueError,
        "`layers`",
        "apply_mean_shift-depthwise-layer-named",
    ),
    row(
        lambda m: ks.mimetic.find_mlp_kernels(m),
        DENSE,
        ValueError,
        "has no MLP blocks",
        "find_mlp_kernels-unknown-model",
    ),
    row(
        lambda w: ks.freeze_spatial(conv_model(), which=w),
        "x",
        ValueError,
        "`which`",
        "freeze_spatial-unknown-which",
    ),
    row(
        lambda f: ks.load_frozen_model("missing.keras", f),
        3,
        TypeError,
        "`frozen`",
        "load_frozen_model-int-frozen",
    ),
    row(
        lambda m: ks.freeze_spatial(m),
        DENSE,
        ValueError,
        "has no spatial depthwise",
        "freeze_spatial-dense-only-model",
    ),
    row(
        lambda m: ks.freeze_spatial(m, include_bias="yes"),
        CONV,
        TypeError,
        "`include_bias`",
        "freeze_spatial-str-include-bias",
    ),
    row(lambda m: walker.find_kernels(m, which="x"), CONV, ValueError, "`which`", "find_kernels-unknown"),
    row(
        lambda m: ks.lc.find_pointwise_kernels(m),
        CONV,
        ValueError,
        "has no LC blocks",
        "find_pointwise_kernels-model-without-lc",
    ),
    row(lambda s: initializer_base.check_seed(s), "1", TypeError, "`seed`", "check_seed-str"),
    # --- LC blocks ------------------------------------------------------------------------------------
    row(lambda m: ks.lc.fold_model(m), 3, TypeError, "`model`", "fold_model-int"),
    row(
        lambda m: ks.lc.apply_pointwise_l1(m),
        DENSE,
        ValueError,
        "has no LC blocks",
        "apply_pointwise_l1-dense-only-model",
    ),
    row(
        lambda v: ks.lc.apply_pointwise_l1(lc_model(), l1=v),
        0.0,
        ValueError,
        "`l1`",
        "apply_pointwise_l1-zero-l1",
    ),
    row(
        lambda r: ks.lc.prune_pointwise(lc_model(), ratio=r),
        1.0,
        ValueError,
        "`ratio`",
        "prune_pointwise-ratio-1",
    ),
    row(
        lambda m: ks.lc.prune_pointwise(m, ratio=0.5),
        CONV,
        ValueError,
        "has no LC blocks",
        "prune_pointwise-model-without-lc",
    ),
    row(lambda m: ks.lc.parameter_counts(m), "model", TypeError, "`model`", "parameter_counts-str"),
    row(
        lambda m: ks.lc.parameter_counts(m), UNBUILT, ValueError, "must be built", "parameter_counts-unbuilt"
    ),
    row(lambda m: ks.lc.fold_model(m), EMPTY, ValueError, "must be built", "fold_model-empty-sequential"),
    row(
        lambda r: ks.lc.magnitude_masks([np.ones(3)], r),
        1.0,
        ValueError,
        "`ratio`",
        "magnitude_masks-ratio-1",
    ),
    row(lambda r: ks.callbacks.PrunePointwise(r), 1.5, ValueError, "`ratio`", "PrunePointwise-ratio-above-1"),
    row(lambda a: ks.lc.magnitude_masks(a, 0.5), [], TypeError, "`arrays`", "magnitude_masks-empty"),
    row(lambda s: ks.lc.bank_size(s), [(3, 3, 0, 1)], ValueError, "`shape`", "bank_size-zero-channels"),
    row(
        lambda b: ks.lc.bank_kernel(b, (3, 3, 1, 1), recycle=True),
        np.ones(0),
        ValueError,
        "`bank`",
        "bank_kernel-empty-bank",
    ),
    row(
        lambda p: ks.lc.fold_kernels(np.ones((3, 3, 2, 4)), p),
        np.ones((5, 2)),
        ValueError,
        "`pointwise`",
        "fold_kernels-mismatched-widths",
    ),
    row(
        lambda d: ks.lc.lcresnet_parameter_counts(depth=d),
        9,
        ValueError,
        "`depth`",
        "lcresnet_parameter_counts-bad-depth",
    ),
    row(lambda s: ks.lc.kernel_scale(s), (3, 3, 1), ValueError, "`shape`", "kernel_scale-rank-3"),
    # --- mimetic --------------------------------------------------------------------------------------
    row(
        lambda k: ks.mimetic.row_mean_statistics(k),
        np.ones((1, 5)),
        ValueError,
        "`kernel`",
        "row_mean_statistics-one-input",
    ),
    row(
        lambda n: ks.mimetic.torch_default_variance(n),
        0,
        ValueError,
        "`fan_in`",
        "torch_default_variance-zero-fan-in",
    ),
    row(
        lambda v: ks.mimetic.expected_statistics(v, 0.1, "constant", None, 4),
        -1.0,
        ValueError,
        "`base_variance`",
        "expected_statistics-negative-variance",
    ),
    row(lambda s: validation.derive_seed(s), "a", TypeError, "`seed`", "derive_seed-str"),
    row(lambda s: ks.mimetic.shift_shape(s, "constant"), (4,), ValueError, "`shape`", "shift_shape-bias"),
    # --- mimetic attention and the scalar-bias baseline (issue 52) ----------------------------------------
    row(
        lambda m: ks.apply_mimetic_attention(m),
        DENSE,
        ValueError,
        "self-attention layers",
        "apply_mimetic_attention-model-without-attention",
    ),
    row(
        lambda m: ks.apply_mimetic_attention(m),
        Make("<cross-attention 4 -> 6 wide>", cross_attention_model),
        ValueError,
        "has no self-attention layer",
        "apply_mimetic_attention-cross-attention-widths",
    ),
    row(
        lambda a: ks.apply_mimetic_attention(attention_model(), alpha=a),
        "x",
        TypeError,
        "`alpha`",
        "apply_mimetic_attention-str-alpha",
    ),
    row(
        lambda a: ks.apply_mimetic_attention(attention_model(), alpha=a),
        (0.1, 0.2, 0.3),
        ValueError,
        "`alpha`",
        "apply_mimetic_attention-alpha-triple",
    ),
    row(
        lambda b: ks.apply_mimetic_attention(attention_model(), beta=b),
        -0.4,
        ValueError,
        "`beta`",
        "apply_mimetic_attention-negative-beta",
    ),
    row(
        lambda p: ks.apply_mimetic_attention(attention_model(), position_embedding=p),
        "learned",
        ValueError,
        "`position_embedding`",
        "apply_mimetic_attention-unknown-position-embedding",
    ),
    row(
        lambda m: ks.apply_mimetic_attention(m, layers=["dense"]),
        DENSE,
        ValueError,
        "`layers`",
        "apply_mimetic_attention-dense-layer-named",
    ),
    row(
        lambda n: ks.mimetic.query_key_factors(n, 2),
        np.ones((4, 4)),
        ValueError,
        "`noise`",
        "query_key_factors-one-matrix",
    ),
    row(
        lambda n: ks.mimetic.value_projection_factors(n, 2, 2),
        np.ones((4, 3)),
        ValueError,
        "`noise`",
        "value_projection_factors-non-square",
    ),
    row(
        lambda d: ks.mimetic.sincos_position_embedding(2, 2, d),
        0,
        ValueError,
        "`dim`",
        "sincos_position_embedding-zero-dim",
    ),
    row(
        lambda s: ks.layers.ScalarBiasDense(4, scalar=s),
        NAN,
        ValueError,
        "`scalar`",
        "ScalarBiasDense-nan-scalar",
    ),
    row(
        lambda s: ks.layers.ScalarBiasDense(4, scalar=s),
        "0.1",
        TypeError,
        "`scalar`",
        "ScalarBiasDense-str-scalar",
    ),
    row(
        lambda f: ks.models.vit(4, 8, 1, 2, input_shape=(8, 8, 3), mlp_scalar_bias=f),
        "yes",
        TypeError,
        "`mlp_scalar_bias`",
        "vit-str-mlp-scalar-bias",
    ),
    # --- covariance math ------------------------------------------------------------------------------
    row(
        lambda s: ks.covariance.conv_covariance(3, s), 0, ValueError, "`sigma`", "conv_covariance-zero-sigma"
    ),
    row(
        lambda s: ks.covariance.conv_covariance(3, s), NAN, ValueError, "`sigma`", "conv_covariance-nan-sigma"
    ),
    row(
        lambda k: ks.covariance.conv_covariance(k, 1.0),
        0,
        ValueError,
        "`kernel_size`",
        "conv_covariance-zero-kernel",
    ),
    row(lambda c: ks.covariance.psd_factor(c), np.ones((2, 3)), ValueError, "`cov`", "psd_factor-non-square"),
    row(
        lambda c: ks.covariance.psd_factor(c),
        np.full((2, 2), INF),
        ValueError,
        "`cov`",
        "psd_factor-infinite",
    ),
    row(
        lambda m: ks.covariance.FilterCovariance(m, [np.eye(9)], 3),
        [np.full(9, NAN)],
        ValueError,
        "NaN",
        "FilterCovariance-nan-mean",
    ),
    row(
        lambda m: ks.covariance.FilterCovariance(m, m, 3),
        [],
        ValueError,
        "`means`",
        "FilterCovariance-no-layers",
    ),
    row(
        lambda m: ks.covariance.FilterCovariance.from_model(m),
        DENSE,
        ValueError,
        "has no spatial depthwise",
        "FilterCovariance.from_model-dense-only-model",
    ),
    row(
        lambda m: ks.covariance.FilterCovariance.from_model(m),
        3,
        TypeError,
        "`model`",
        "FilterCovariance.from_model-int",
    ),
    row(lambda p: bank().save(p), 3, TypeError, "`path`", "FilterCovariance.save-int-path"),
    row(
        lambda p: ks.covariance.FilterCovariance.load(p),
        3,
        TypeError,
        "`path`",
        "FilterCovariance.load-int-path",
    ),
    row(lambda d: bank().at_depth(d), NAN, ValueError, "`depth_fraction`", "FilterCovariance.at_depth-nan"),
    row(
        lambda k: ks.covariance.FilterCovariance([np.zeros(9)], [np.eye(9)], k),
        5,
        ValueError,
        "kernel_size (5, 5)",
        "FilterCovariance-means-of-another-kernel-size",
    ),
    row(
        lambda s: ks.initializers.CovarianceTransfer(bank())(s),
        (5, 5, 2, 1),
        ValueError,
        "bank.resized",
        "CovarianceTransfer-kernel-of-another-size",
    ),
    row(
        lambda d: ks.initializers.CovarianceTransfer(bank(), depth_fraction=d),
        2,
        ValueError,
        "`depth_fraction`",
        "CovarianceTransfer-depth-above-1",
    ),
    row(
        lambda r: ks.apply_covariance_transfer(conv_model(), bank=bank(), resize=r),
        "x",
        ValueError,
        "`resize`",
        "apply_covariance_transfer-unknown-resize",
    ),
    row(lambda n: ks.covariance.depth_fractions(n), 0, ValueError, "`num_layers`", "depth_fractions-zero"),
    row(
        lambda d: ks.covariance.variance_schedule(d, 0.1, 0.1, 0.1),
        1.5,
        ValueError,
        "`depth_fraction`",
        "variance_schedule-depth-above-1",
    ),
    row(
        lambda p: ks.covariance.resolve_schedule(p),
        None,
        ValueError,
        "`sigma0`",
        "resolve_schedule-no-preset-no-values",
    ),
    row(
        lambda p: ks.callbacks.RecordFilterCovariance(p),
        3,
        TypeError,
        "`path`",
        "RecordFilterCovariance-int-path",
    ),
    row(
        lambda n: ks.callbacks.RecordFilterCovariance("bank.npz", every_n_epochs=n),
        0,
        ValueError,
        "`every_n_epochs`",
        "RecordFilterCovariance-zero-period",
    ),
    # --- alignment ------------------------------------------------------------------------------------
    row(
        lambda x: ks.alignment.align_conv_layers(conv_model(), images=x),
        [1, 2],
        TypeError,
        "`images`",
        "align_conv_layers-list-images",
    ),
    row(
        lambda x: ks.alignment.align_conv_layers(conv_model(), images=x),
        images(0, 6, 2),
        ValueError,
        "`images`",
        "align_conv_layers-no-images",
    ),
    row(
        lambda m: ks.alignment.align_conv_layers(m, images=images(2)),
        Make("<images to Dense>", mlp_model),
        ValueError,
        "has no spatial",
        "align_conv_layers-model-without-convs",
    ),
    row(
        lambda n: ks.alignment.align_conv_layers(conv_model(), images=images(2, 6, 2), num_layers=n),
        2,
        ValueError,
        "`num_layers`",
        "align_conv_layers-more-layers-than-convs",
    ),
    row(
        lambda n: ks.alignment.rescale_to_initial_norms(conv_model(), n),
        [1.0],
        TypeError,
        "`norms`",
        "rescale_to_initial_norms-list",
    ),
    row(
        lambda n: ks.alignment.rescale_to_initial_norms(conv_model(), n),
        {"nope": 1.0},
        ValueError,
        "`norms`",
        "rescale_to_initial_norms-unknown-path",
    ),
    row(lambda m: ks.alignment.weight_norms(m), 3, TypeError, "`model`", "weight_norms-int"),
    row(
        lambda k: ks.alignment.patch_covariance(images(2, 4), k),
        5,
        ValueError,
        "`kernel_size`",
        "patch_covariance-kernel-larger-than-images",
    ),
    row(
        lambda n: ks.alignment.patch_covariance(images(2, 4), 3, max_patches=n),
        "5",
        TypeError,
        "`max_patches`",
        "patch_covariance-str-max-patches",
    ),
    row(
        lambda x: ks.alignment.extract_patches(x, 3),
        np.ones((4, 4, 3)),
        ValueError,
        "`images`",
        "extract_patches-single-image",
    ),
    row(lambda n: ks.alignment.random_basis(n), 0, ValueError, "`dim`", "random_basis-zero-dim"),
    row(
        lambda s: ks.alignment.misalignment(s, np.eye(2)),
        np.ones((2, 3)),
        ValueError,
        "`sigma_x`",
        "misalignment-non-square",
    ),
    # --- selection ------------------------------------------------------------------------------------
    row(lambda t: ks.callbacks.SelectWeightsFrom(t), 42, TypeError, "`teacher`", "SelectWeightsFrom-int"),
    row(
        lambda t: ks.callbacks.SelectWeightsFrom(t),
        "missing.keras",
        FileNotFoundError,
        "`teacher`",
        "SelectWeightsFrom-missing-keras-file",
    ),
    row(
        lambda t: ks.callbacks.SelectWeightsFrom(t),
        missing("teacher_dir"),
        FileNotFoundError,
        "`teacher`",
        "SelectWeightsFrom-missing-path",
    ),
    row(
        lambda t: ks.callbacks.SelectWeightsFrom(t),
        Make("<dir without config.json>", empty_dir),
        ValueError,
        "config.json",
        "SelectWeightsFrom-directory-not-a-preset",
    ),
    row(
        lambda t: ks.callbacks.SelectWeightsFrom(t),
        "keras.applications:ConvNeXtTiny:/missing/weights.h5",
        FileNotFoundError,
        "weights file",
        "SelectWeightsFrom-missing-application-weights",
    ),
    row(
        lambda t: ks.callbacks.SelectWeightsFrom(t),
        "ConvNeXtTiny:weights.h5",
        ValueError,
        "write keras.applications:ConvNeXtTiny:weights.h5",
        "SelectWeightsFrom-teacher-form-without-its-prefix",
    ),
    row(
        lambda t: ks.callbacks.SelectWeightsFrom(t),
        "",
        ValueError,
        "`teacher`",
        "SelectWeightsFrom-empty-str",
    ),
    row(
        lambda h: ks.callbacks.SelectWeightsFrom(conv_model(), heads=h),
        "x",
        ValueError,
        "`heads`",
        "SelectWeightsFrom-unknown-heads",
    ),
    row(
        lambda t: ks.selection.select_weights(conv_model(), teacher=t),
        42,
        TypeError,
        "`teacher`",
        "select_weights-int-teacher",
    ),
    row(
        lambda s: ks.selection.select_weights(s, teacher=conv_model()),
        3,
        TypeError,
        "`model`",
        "select_weights-int-student",
    ),
    row(
        lambda s: ks.selection.select_weights(s, teacher=conv_model()),
        DENSE,
        ValueError,
        "student layer 'dense' cannot map",
        "select_weights-student-of-no-family",
    ),
    row(
        lambda f: ks.selection.select_weights(conv_model(), teacher=conv_model(), family=f),
        "x",
        ValueError,
        "`family`",
        "select_weights-unknown-family",
    ),
    row(
        lambda d: ks.selection.select_weights(convmixer(d), teacher=convmixer(8)),
        16,
        ValueError,
        "selection only shrinks",
        "select_weights-student-wider-than-teacher",
    ),
    row(
        lambda t: ks.selection.load_teacher(t),
        "missing.keras",
        FileNotFoundError,
        "`teacher`",
        "load_teacher-missing-keras-file",
    ),
    row(lambda t: ks.selection.smaller_config(t), 3, TypeError, "`teacher`", "smaller_config-int"),
    row(
        lambda s: ks.selection.element_indices(3, s),
        5,
        ValueError,
        "student_size=5",
        "element_indices-student-larger",
    ),
    row(
        lambda m: ks.selection.element_indices(5, 3, method=m),
        "x",
        ValueError,
        "`method`",
        "element_indices-unknown-method",
    ),
    row(lambda n: ks.selection.layer_indices(n, 1), 0, ValueError, "`teacher_size`", "layer_indices-zero"),
    # --- recipes --------------------------------------------------------------------------------------
    row(
        lambda p: recipes.resolve_precision(p), "fp8", ValueError, "`precision`", "resolve_precision-unknown"
    ),
    row(lambda p: recipes.resolve_precision(p), 16, TypeError, "`precision`", "resolve_precision-int"),
    row(
        lambda p: recipes.resolve_precision(p),
        "mixed_float16",
        ValueError,
        "mixed_bfloat16",
        "resolve_precision-float16-on-jax-cpu",
        marks=only_jax_cpu,
    ),
    row(
        lambda d: recipes.resolve_distribution(d),
        "ring",
        ValueError,
        "`distribution`",
        "resolve_distribution-unknown",
    ),
    row(
        lambda d: recipes.resolve_distribution(d), 3, TypeError, "`distribution`", "resolve_distribution-int"
    ),
    row(
        lambda p: recipes.device_setup(p).__enter__(),
        "fp8",
        ValueError,
        "`precision`",
        "device_setup-unknown-precision",
    ),
    row(
        lambda e: recipes.fit_cifar(tiny_classifier, CIFAR, e),
        0,
        ValueError,
        "`epochs`",
        "fit_cifar-0-epochs",
    ),
    row(
        lambda d: recipes.fit_cifar(tiny_classifier, d, 1),
        list(CIFAR),
        TypeError,
        "`data`",
        "fit_cifar-data-as-list",
    ),
    row(lambda m: recipes.fit_cifar(m, CIFAR, 1), 3, TypeError, "`model`", "fit_cifar-int-model"),
    row(
        lambda d: recipes.fit_cifar(tiny_classifier, d, 1),
        (CIFAR[0][:0], CIFAR[1][:0]),
        ValueError,
        "`data`",
        "fit_cifar-no-images",
    ),
    row(
        lambda x: recipes.fit_cifar(tiny_classifier, (x, CIFAR[1]), 1),
        CIFAR[0] / 255.0,
        ValueError,
        "`data`",
        "fit_cifar-float-images",
    ),
    row(fit_cifar_with(), {"batch_size": 0}, ValueError, "`batch_size`", "fit_cifar-zero-batch"),
    row(fit_cifar_with(), {"learning_rate": -1.0}, ValueError, "`learning_rate`", "fit_cifar-negative-lr"),
    row(fit_cifar_with(), {"weight_decay": NAN}, ValueError, "`weight_decay`", "fit_cifar-nan-weight-decay"),
    row(
        fit_cifar_with(),
        {"label_smoothing": 2.0},
        ValueError,
        "`label_smoothing`",
        "fit_cifar-label-smoothing-above-1",
    ),
    row(fit_cifar_with(), {"pad": -1}, ValueError, "`pad`", "fit_cifar-negative-pad"),
    row(fit_cifar_with(), {"pad": 1.5}, TypeError, "`pad`", "fit_cifar-float-pad"),
    row(fit_cifar_with(), {"steps_per_epoch": 0}, ValueError, "`steps_per_epoch`", "fit_cifar-zero-steps"),
    row(fit_cifar_with(), {"callbacks": 3}, TypeError, "`callbacks`", "fit_cifar-int-callbacks"),
    row(fit_cifar_with(), {"ema": 2.0}, ValueError, "`ema`", "fit_cifar-ema-above-1"),
    row(
        fit_cifar_with(),
        {"rand_augment": (0, 0.5)},
        ValueError,
        "`rand_augment[0]`",
        "fit_cifar-zero-augment-ops",
    ),
    row(fit_cifar_with(), {"num_classes": 1}, ValueError, "`num_classes`", "fit_cifar-one-class"),
    row(fit_cifar_with(), {"schedule": "linear"}, ValueError, "`schedule`", "fit_cifar-unknown-schedule"),
    row(
        fit_cifar_with(),
        {"warmup_epochs": 1},
        ValueError,
        "`warmup_epochs`",
        "fit_cifar-warmup-without-cosine",
    ),
    row(
        fit_cifar_with(),
        {"distribution": "ring"},
        ValueError,
        "`distribution`",
        "fit_cifar-unknown-distribution",
    ),
    row(
        lambda d: recipes.fit_imagenet(tiny_classifier, d, 1),
        missing("train_dir"),
        FileNotFoundError,
        "`data`",
        "fit_imagenet-missing-folder",
    ),
    row(
        lambda w: recipes.fit_imagenet(tiny_classifier, "unused", 1, warmup_epochs=w),
        0.5,
        TypeError,
        "`warmup_epochs`",
        "fit_imagenet-fractional-warmup",
    ),
    row(
        lambda t: recipes.fit_distill(tiny_classifier(), t, CIFAR, 1),
        42,
        TypeError,
        "`teacher`",
        "fit_distill-int-teacher",
    ),
    row(
        lambda a: recipes.fit_distill(tiny_classifier(), tiny_classifier(), CIFAR, 1, alpha=a),
        0,
        ValueError,
        "`alpha`",
        "fit_distill-zero-alpha",
    ),
    row(lambda v: recipes.TorchSGD(l2=v), -1.0, ValueError, "`l2`", "TorchSGD-negative-l2"),
    row(
        lambda v: recipes.TorchSGD(learning_rate=v),
        -0.1,
        ValueError,
        "`learning_rate`",
        "TorchSGD-negative-lr",
    ),
    row(
        lambda v: recipes.TorchSGD(weight_decay=v),
        0.1,
        ValueError,
        "`weight_decay`",
        "TorchSGD-decoupled-weight-decay",
    ),
    row(
        lambda n: recipes.PiecewiseLinearSchedule(n, [0, 1], [1, 0]),
        0,
        ValueError,
        "`total_steps`",
        "PiecewiseLinearSchedule-zero-steps",
    ),
    row(
        lambda f: recipes.PiecewiseLinearSchedule(10, f, [1, 0]),
        [0, 0.5],
        ValueError,
        "`fractions`",
        "PiecewiseLinearSchedule-not-ending-at-1",
    ),
    row(
        lambda f: recipes.PiecewiseLinearSchedule(10, f, [1, 0]),
        "01",
        TypeError,
        "`fractions`",
        "PiecewiseLinearSchedule-str-fractions",
    ),
    row(
        lambda p: recipes.TriangularSchedule(0.1, 10, peak_fraction=p, end_fraction=0.5),
        0.9,
        ValueError,
        "peak_fraction",
        "TriangularSchedule-peak-after-end",
    ),
    row(
        lambda lr: recipes.warmup_cosine(lr, 10, 2),
        NAN,
        ValueError,
        "`peak_learning_rate`",
        "warmup_cosine-nan-lr",
    ),
    row(
        lambda n: recipes.warmup_cosine(0.1, n, 2),
        "10",
        TypeError,
        "`total_steps`",
        "warmup_cosine-str-total-steps",
    ),
    row(
        lambda w: recipes.warmup_cosine(0.1, 10, w),
        10,
        ValueError,
        "`warmup_steps`",
        "warmup_cosine-warmup-as-long-as-run",
    ),
    row(
        lambda s: recipes.random_resized_crop(np.ones((8, 8, 3), "float32"), s),
        0,
        ValueError,
        "`size`",
        "random_resized_crop-zero-size",
    ),
    row(
        lambda b: recipes.cifar_dataset(*CIFAR, b, (0.5,) * 3, (0.5,) * 3, True),
        0,
        ValueError,
        "`batch_size`",
        "cifar_dataset-zero-batch",
    ),
    # --- issue 32's bugs: silent NaN, non-finite teachers, outputs over inputs, corrupt files ------------
    row(
        lambda x: ks.alignment.patch_covariance(x, 3),
        Make("<images with one NaN pixel>", nan_images),
        ValueError,
        "`images` must be finite: image 1",
        "patch_covariance-one-nan-pixel",
    ),
    row(
        lambda x: ks.alignment.patch_covariance(x, 3),
        np.full((2, 6, 6, 3), INF),
        ValueError,
        "`images` must be finite",
        "patch_covariance-inf",
    ),
    row(
        lambda x: ks.alignment.patch_covariance(x, 3),
        BIG,
        ValueError,
        "exceeds float64's range",
        "patch_covariance-overflowing-values",
    ),
    row(
        lambda x: ks.alignment.align_conv_layers(conv_model(), images=x),
        Make("<images with NaN>", nan_images_6x2),
        ValueError,
        "`images` must be finite",
        "align_conv_layers-nan-images",
    ),
    row(
        lambda x: ks.alignment.align_conv_layers(conv_model(), images=x),
        images(2, 6, 1),
        ValueError,
        "`images` have 1 channel(s), but 'tiny_conv' takes 2",
        "align_conv_layers-wrong-channels",
    ),
    row(
        lambda x: ks.alignment.align_conv_layers(conv_model(), images=x),
        np.full((2, 6, 6, 2), 1e200),
        ValueError,
        "`images` must fit float32",
        "align_conv_layers-beyond-float32",
    ),
    row(
        lambda t: ks.selection.select_weights(convmixer(4), teacher=t),
        Make("<teacher with a NaN weight>", nan_teacher),
        ValueError,
        "non-finite (NaN or inf) value(s)",
        "select_weights-nan-teacher",
    ),
    row(
        lambda t: ks.selection.select_weights(convmixer(4), teacher=t),
        Make("<truncated .keras>", truncated_keras),
        ValueError,
        "is not a .keras archive (not a zip file)",
        "select_weights-truncated-teacher",
    ),
    row(
        lambda p: bank().save(p),
        Make("<existing file>", existing_file),
        ValueError,
        "already exists",
        "FilterCovariance.save-existing-file",
    ),
    row(
        lambda p: io_utils.check_output(p, "--out", inputs=[p]),
        Make("<teacher>", existing_file),
        ValueError,
        "is an input of this run",
        "check_output-over-an-input",
    ),
    row(
        lambda c: ks.alignment.sorted_eigh(c),
        np.ones((2, 3)),
        ValueError,
        "`cov` must be a non-empty square",
        "sorted_eigh-non-square",
    ),
    row(
        lambda s: ks.alignment.random_basis(2, seed=s), -1, ValueError, "`seed`", "random_basis-negative-seed"
    ),
    row(
        lambda s: ks.alignment.patch_covariance(images(2, 4), 3, max_patches=4, seed=s),
        -1,
        ValueError,
        "`seed`",
        "patch_covariance-negative-seed",
    ),
    row(
        lambda t: ks.selection.plan_selection(t, {}),
        3,
        TypeError,
        "`teacher_shapes`",
        "plan_selection-int-shapes",
    ),
    row(
        lambda k: ks.selection.select_weights(convmixer(4), teacher=convmixer(8), skip=k),
        3,
        TypeError,
        "`skip`",
        "select_weights-int-skip",
    ),
    row(
        lambda s: ks.selection.select_weights(
            convmixer(4), teacher=convmixer(8), seed=s, element_selection="random"
        ),
        -1,
        ValueError,
        "`seed`",
        "select_weights-negative-seed",
    ),
    # issue 52: the pruning element selections; fgsm_accuracy (uint8 or [0, 1] images, pixel-unit epsilon)
    row(
        lambda m: ks.selection.select_weights(
            convmixer(4), teacher=convmixer(8), element_selection=m, heads="fused"
        ),
        "l1",
        ValueError,
        "element_selection='uniform'",
        "select_weights-fused-l1",
    ),
    row(
        lambda v: ks.selection.plan_selection({}, {}, element_selection="magnitude", teacher_values=v),
        None,
        TypeError,
        "`teacher_values`",
        "plan_selection-magnitude-without-values",
    ),
    row(lambda m: ks.fgsm_accuracy(m, CIFAR), "model", TypeError, "`model`", "fgsm_accuracy-str-model"),
    row(
        lambda d: ks.fgsm_accuracy(tiny_classifier(), d),
        CIFAR[0],
        TypeError,
        "`data` must be an (images, labels) pair",
        "fgsm_accuracy-images-only",
    ),
    row(
        lambda x: ks.fgsm_accuracy(tiny_classifier(), (x, CIFAR[1])),
        CIFAR[0].astype("float32"),
        ValueError,
        "Float images must lie in [0, 1]",
        "fgsm_accuracy-float-0-255-images",
    ),
    row(
        lambda x: ks.fgsm_accuracy(tiny_classifier(), (x, CIFAR[1])),
        CIFAR[0].astype(str),
        TypeError,
        "must be uint8",
        "fgsm_accuracy-str-images",
    ),
    row(
        lambda y: ks.fgsm_accuracy(tiny_classifier(), (CIFAR[0], y)),
        np.arange(5),
        ValueError,
        "8 non-negative integer classes",
        "fgsm_accuracy-too-few-labels",
    ),
    row(
        lambda y: ks.fgsm_accuracy(tiny_classifier(), (CIFAR[0], y)),
        np.arange(8),
        ValueError,
        "scores 3 classes",
        "fgsm_accuracy-labels-beyond-the-classes",
    ),
    row(
        lambda e: ks.fgsm_accuracy(tiny_classifier(), CIFAR, e),
        -1 / 255,
        ValueError,
        "`epsilon`",
        "fgsm_accuracy-negative-epsilon",
    ),
    row(
        lambda e: ks.fgsm_accuracy(tiny_classifier(), CIFAR, e),
        "1/255",
        TypeError,
        "`epsilon`",
        "fgsm_accuracy-str-epsilon",
    ),
    row(
        lambda b: ks.fgsm_accuracy(tiny_classifier(), CIFAR, batch_size=b),
        0,
        ValueError,
        "`batch_size`",
        "fgsm_accuracy-zero-batch",
    ),
    row(
        lambda n: ks.fgsm_accuracy(tiny_classifier(), CIFAR, normalization=n),
        {"mean": 0.5},
        ValueError,
        "keys 'mean' and 'std'",
        "fgsm_accuracy-normalization-without-std",
    ),
    row(
        lambda n: ks.fgsm_accuracy(tiny_classifier(), CIFAR, normalization=n),
        (0.5, 0.0),
        ValueError,
        "stds > 0",
        "fgsm_accuracy-zero-std",
    ),
    row(
        lambda n: ks.fgsm_accuracy(tiny_classifier(), CIFAR, normalization=n),
        0.5,
        TypeError,
        "`normalization` must be None",
        "fgsm_accuracy-float-normalization",
    ),
    row(
        lambda n: ks.fgsm_accuracy(tiny_classifier(), CIFAR, normalization=n),
        ([0.5] * 2, 0.2),
        ValueError,
        "per-channel values",
        "fgsm_accuracy-two-means-for-three-channels",
    ),
    row(
        lambda x: ks.fgsm_accuracy(tiny_classifier(), (x, np.arange(2))),
        np.zeros((2, 6, 6, 3), "uint8"),
        ValueError,
        "cannot run on images of shape (6, 6, 3)",
        "fgsm_accuracy-wrong-image-size",
    ),
    row(
        lambda n: ks.models.parse_model_name(n),
        42,
        TypeError,
        "`model` must be a model name",
        "parse_model_name-int",
    ),
    # issue 49, point 11: the docstring's spec forms only (an InitPart list, not a list of strings)
    row(
        lambda s: ks.initialize(conv_model(), s),
        None,
        TypeError,
        "`spec` must be an init spec",
        "initialize-None",
    ),
    row(
        lambda s: ks.initialize(conv_model(), s),
        5,
        TypeError,
        "`spec` must be an init spec",
        "initialize-int",
    ),
    row(
        lambda s: ks.initialize(conv_model(), s),
        ["conv-cov"],
        TypeError,
        "join forms with '+'",
        "initialize-list-of-str",
    ),
]


@pytest.mark.parametrize("call, bad, error, phrase", ROWS)
def test_bad_input_raises_a_clear_one_line_error(call, bad, error, phrase, tmp_path):
    value = bad.build(tmp_path) if isinstance(bad, Make) else bad
    with pytest.raises(Exception) as info:
        call(value)
    message = str(info.value)
    assert type(info.value) is error, f"expected {error.__name__}, got {type(info.value).__name__}: {message}"
    assert phrase in message, f"{phrase!r} not in the message: {message}"
    assert "\n" not in message.strip(), f"the message spans several lines: {message}"


def test_the_table_covers_every_kind_of_bad_input():
    ids = [param.id for param in ROWS]
    assert len(ids) == len(set(ids)), "row ids must be unique"
    assert len(ROWS) >= 60


# --- the command line: one line, exit 2, nothing on disk changed -----------------------------------


def _train(tmp_path, *extra, model="simple-cnn"):
    from test_cli import write_tiny_cifar

    data = write_tiny_cifar(tmp_path / "train.npz", 16, 0)
    return ["train", "--model", model, "--epochs", "2", "--batch-size", "8", "--data", data, *extra]


def _unfinished_run(tmp_path, backup=None, config=None):
    """An ``--out`` whose run stopped: ``results.json`` says running, ``log.csv`` has an epoch."""
    out = tmp_path / "out"
    out.mkdir()
    results = {"status": "running", **({"config": config} if config else {})}
    (out / "results.json").write_text(json.dumps(results))
    (out / "log.csv").write_text("epoch,loss\n1,2.0\n")
    for rel, content in (backup or {}).items():
        (out / "backup" / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / "backup" / rel).write_bytes(content)
    return str(out)


def _whole_backup(epoch=1, steps=2):
    weights = b"weights"
    record = {
        "format_version": 1,
        "epoch": epoch,
        "iterations": epoch * steps,
        "steps_per_epoch": steps,
        "sha256": hashlib.sha256(weights).hexdigest(),
    }
    return {"current/state.weights.h5": weights, "current/backup.json": json.dumps(record).encode()}


def _busy(tmp_path, stack):
    """An ``--out`` another run holds (its ``fcntl`` lock)."""
    import fcntl

    (tmp_path / "out").mkdir()
    held = stack.enter_context(open(tmp_path / "out" / ".structinit.lock", "a+"))  # noqa: SIM115
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return str(tmp_path / "out")


def _text(tmp_path, name, content):
    (tmp_path / name).write_text(content)
    return str(tmp_path / name)


#: ``(build(tmp_path, stack) -> argv, phrase)``: issue 49's point 11 and the folder rules beside it.
CLI_ROWS = [
    pytest.param(
        lambda t, _: _train(t, "--out", _unfinished_run(t, _whole_backup(), {"epochs": 7}), "--resume"),
        "started with other settings",
        id="resume-other-settings",
    ),
    pytest.param(
        lambda t, _: _train(t, "--out", _unfinished_run(t), "--resume"),
        "holds no backup",
        id="resume-backup-gone",
    ),
    pytest.param(
        lambda t, _: _train(t, "--out", _unfinished_run(t, {"current/backup.json": b"{"}), "--resume"),
        "no whole backup",
        id="resume-torn-backup",
    ),
    pytest.param(
        lambda t, _: _train(t, "--out", _unfinished_run(t, _whole_backup())),
        "--resume",
        id="fresh-run-into-used-out",
    ),
    pytest.param(
        lambda t, s: _train(t, "--out", _busy(t, s)), "in use by another run", id="second-run-at-once"
    ),
    pytest.param(
        lambda t, _: _train(
            t,
            "--init",
            f"cov-transfer:{_text(t, 'notes.txt', 'mine')}",
            "--out",
            str(t / "out"),
            model="convmixer-8/1",
        ),
        "is not a FilterCovariance bank",
        id="bank-not-npz",
    ),
    pytest.param(
        lambda t, _: _train(t, "--init", "x" * 100_000, "--out", str(t / "out")),
        "(100002 characters)",
        id="init-of-100000-characters",
    ),
]


def _tree(root):
    """Every path under ``root`` and its bytes, less the run's lock file (an empty file that stays:
    removing a ``flock``-ed file lets two runs hold two locks)."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
        if p.name != ".structinit.lock"
    }


@pytest.mark.parametrize("build, phrase", CLI_ROWS)
def test_bad_command_line_is_one_line_exit_2_and_changes_nothing(build, phrase, tmp_path, capsys):
    import contextlib

    from keras_structinit import cli

    with contextlib.ExitStack() as stack:
        argv = build(tmp_path, stack)
        before = _tree(tmp_path)
        assert cli.main(argv) == 2
        after = _tree(tmp_path)
    err = capsys.readouterr().err
    assert phrase in err, err[-2000:]
    assert len(err.strip().splitlines()) == 1, err[-2000:]
    assert len(err) < 3 * validation.SHOWN_CHARS, len(err)  # echoed input is clipped
    assert after == before  # no folder made, no results.json, log.csv or backup touched


def _head_of_10(tmp_path):
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3)(inputs))
    keras.Model(inputs, keras.layers.Dense(10)(x)).save(tmp_path / "ten.keras")
    return str(tmp_path / "ten.keras")


def _three_classes(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (24, 32, 32, 3), dtype=np.uint8)
    np.savez(tmp_path / "three.npz", x=x, y=np.arange(24) % 3)
    return str(tmp_path / "three.npz")


def _one_class(tmp_path):
    np.savez(tmp_path / "one.npz", x=np.zeros((16, 32, 32, 3), np.uint8), y=np.zeros(16, int))
    return str(tmp_path / "one.npz")


def _labels(tmp_path, label):
    y = np.arange(16) % 10
    y[-1] = label
    np.savez(tmp_path / "labels.npz", x=np.zeros((16, 32, 32, 3), np.uint8), y=y)
    return str(tmp_path / "labels.npz")


def _huge_images(tmp_path):
    from PIL import Image

    for label in "ab":
        (tmp_path / "huge" / label).mkdir(parents=True)
        Image.new("RGB", (4000, 4000)).save(tmp_path / "huge" / label / "0.png")  # 47 KB each
    return str(tmp_path / "huge")


#: ``({field: bad value}, phrase)``: runs ``Run.check`` refuses, as fields and as flags.
RUN_ROWS = [
    pytest.param({"model": "resnet-50"}, "must be one of", id="unknown-model"),
    pytest.param(
        {"model": Make("<missing .keras>", lambda t: str(t / "none.keras"))},
        "does not exist",
        id="missing-model-file",
    ),
    pytest.param(
        {"model": Make("<10-output .keras>", _head_of_10), "data": Make("<3 classes>", _three_classes)},
        "ends in 10 outputs; the data has 3 classes",
        id="head-of-another-size",
    ),
    pytest.param({"data": Make("<1 class>", _one_class)}, "2 classes at least", id="one-class"),
    pytest.param(
        {"model": "vit-tiny", "frozen": True}, "has no spatial depthwise", id="frozen-without-depthwise"
    ),
    pytest.param({"model": "convmixer-8/2", "init": "mean-shift"}, "has no MLP blocks", id="mlp-init-no-mlp"),
    pytest.param({"init": "kaiming"}, "is not one of default", id="unknown-init"),
    pytest.param({"image_size": 64}, "apply to the ImageNet recipe", id="imagenet-field-on-cifar"),
    pytest.param({"validation_split": 1.5}, "in [0, 1)", id="hold-out-above-1"),
    pytest.param({"train_size": 10_000}, "10000", id="more-images-than-held"),
    pytest.param(
        {"data": Make("<missing .npz>", lambda t: str(t / "none.npz"))}, "does not exist", id="missing-data"
    ),
    # Issue 65, point 4: each failed after training began (a traceback, a MemoryError, OOM on JAX).
    pytest.param(
        {"data": Make("<a label -1>", lambda t: _labels(t, -1))},
        "must be class indices in [0, 10000)",
        id="label-minus-1",
    ),
    pytest.param(
        {"data": Make("<a label 10**6>", lambda t: _labels(t, 10**6))},
        "Received: labels in [0, 1000000]",
        id="label-of-a-million",
    ),
    pytest.param({"data": Make("<4000x4000 images>", _huge_images)}, "is 4000x4000 pixels", id="huge-images"),
    pytest.param({"seed": 2**32}, "must be an int in [0, 2**32 - 1]", id="seed-of-2**32"),
]


def _argv(values, flags):
    """``structinit train``'s arguments of a run's ``values`` (a flag's dest is its field)."""
    argv = []
    for field, value in values.items():
        argv += [flags[field]] if value is True else [flags[field], str(value)]
    return argv


@pytest.mark.parametrize("bad, phrase", RUN_ROWS)
def test_a_bad_run_is_refused_by_run_check_and_the_command_line_alike(bad, phrase, tmp_path, capsys):
    """Issue 50: ``Run.check`` is the one place a run is checked; the command line shows its message
    with fields spelled as flags."""
    from test_cli import write_tiny_cifar

    from keras_structinit import cli
    from keras_structinit.cli.train import _flags
    from keras_structinit.recipes.run import Run
    from keras_structinit.utils.arguments import CLI_WORDS, spelled

    values = {
        "model": "simple-cnn",
        "epochs": 1,
        "batch_size": 8,
        "data": write_tiny_cifar(tmp_path / "train.npz", 16, 0),
    }
    values.update({k: v.build(tmp_path) if isinstance(v, Make) else v for k, v in bad.items()})
    with pytest.raises(Exception) as info:
        Run.from_values("cifar10", **values).check()
    assert isinstance(info.value, (TypeError, ValueError, FileNotFoundError)), repr(info.value)
    assert phrase in str(info.value) and "\n" not in str(info.value).strip()
    flags = _flags(cli.build_parser().train_parser)
    assert cli.main(["train", *_argv(values, flags), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"structinit train: error: {spelled(spelled(str(info.value), flags), CLI_WORDS)}\n"
    assert not (tmp_path / "out").exists()


# --- no code from data files or strings ------------------------------------------------------------

#: Files allowed to make one of the calls :func:`unsafe_calls` finds, with the reason it is safe.
UNSAFE_CALLS_ALLOWED = {
    "keras_structinit/datasets/cifar.py": (
        "CIFAR-10 batches from the hash-verified archive, through an allow-list Unpickler (numpy arrays only)"
    ),
}
_PICKLE_MODULES = {"pickle", "cPickle", "_pickle"}
_PICKLE_LOADERS = {"load", "loads", "Unpickler"}


def _dotted(node):
    """``"a.b.c"`` for a Name/Attribute chain, ``None`` for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def unsafe_calls(source, filename="<source>"):
    """``[(line, what), ...]``: the places in ``source`` that can run code from data or a string.

    ``pickle.load``/``loads``/``Unpickler`` (used, imported or subclassed), ``eval``,
    ``exec``, a call with ``allow_pickle=`` anything but the constant ``False``, and
    ``safe_mode=False`` (as a call's keyword or a parameter default).
    """
    tree = ast.parse(source, filename)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in _PICKLE_MODULES:
            hits += [
                (node.lineno, f"from {node.module} import {a.name}")
                for a in node.names
                if a.name in _PICKLE_LOADERS or a.name == "*"
            ]
        elif isinstance(node, ast.Attribute) and node.attr in _PICKLE_LOADERS:
            if _dotted(node.value) in _PICKLE_MODULES:
                hits.append((node.lineno, _dotted(node)))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in ("eval", "exec", "builtins.eval", "builtins.exec"):
                hits.append((node.lineno, f"{name}(...)"))
            for keyword in node.keywords:
                constant = isinstance(keyword.value, ast.Constant)
                if keyword.arg == "allow_pickle" and not (constant and keyword.value.value is False):
                    hits.append((node.lineno, f"{name}(..., allow_pickle={ast.unparse(keyword.value)})"))
                if keyword.arg == "safe_mode" and constant and keyword.value.value is False:
                    hits.append((node.lineno, f"{name}(..., safe_mode=False)"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            with_defaults = positional[len(positional) - len(arguments.defaults) :]
            defaults = list(zip(with_defaults, arguments.defaults, strict=True))
            defaults += zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
            for argument, default in defaults:
                false = isinstance(default, ast.Constant) and default.value is False
                if argument.arg == "safe_mode" and false:
                    hits.append((node.lineno, "safe_mode=False default"))
    return sorted(hits)


def package_sources():
    files = sorted((REPO_ROOT / "keras_structinit").rglob("*.py"))
    files += sorted((REPO_ROOT / "benchmarks").glob("*.py"))
    return {path.relative_to(REPO_ROOT).as_posix(): path for path in files}


def test_the_scanner_finds_each_kind_of_unsafe_call():
    source = "\n".join(
        [
            "import pickle, numpy as np, keras",
            "from pickle import loads",
            "a = pickle.load(f)",
            "b = pickle.loads(data)",
            "class U(pickle.Unpickler): pass",
            "c = np.load(path, allow_pickle=True)",
            "d = np.load(path, allow_pickle=flag)",
            "e = np.load(path, allow_pickle=False)",
            "f = eval('1')",
            "exec('x = 1')",
            "g = keras.saving.load_model(path, safe_mode=False)",
            "h = keras.saving.load_model(path, safe_mode=True)",
            "def load(path, safe_mode=False): pass",
            "model.evaluate(x)",
        ]
    )
    assert [line for line, _ in unsafe_calls(source)] == [2, 3, 4, 5, 6, 7, 9, 10, 11, 13]


@once_per_suite("a scan of the source files")
def test_no_code_is_loaded_from_data_outside_the_allow_list():
    sources = package_sources()
    assert "keras_structinit/engine/walker.py" in sources and any(
        p.startswith("benchmarks/") for p in sources
    )
    found = {}
    for relative, path in sources.items():
        hits = unsafe_calls(path.read_text(encoding="utf-8"), relative)
        if hits:
            found[relative] = hits
    unexpected = {path: hits for path, hits in found.items() if path not in UNSAFE_CALLS_ALLOWED}
    assert not unexpected, (
        "calls that can run code from a file or a string (pickle, allow_pickle, eval/exec, safe_mode=False); "
        f"remove them or add the file to UNSAFE_CALLS_ALLOWED with the reason it is safe: {unexpected}"
    )
    stale = sorted(path for path in UNSAFE_CALLS_ALLOWED if path not in found)
    assert not stale, f"allow-listed files without such a call any more; remove them from the list: {stale}"
