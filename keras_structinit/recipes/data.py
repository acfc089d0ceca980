"""The recipes' ``tf.data`` input streams (``pipeline="tf"``; they feed ``fit`` on every backend).

Each batch draws on the host (:func:`~keras_structinit.recipes.augment.draw_batch`, in a
``tf.numpy_function``) and runs the pixel ops of :mod:`~keras_structinit.recipes.image_ops` as
TensorFlow ops, the same draws and op definitions as the native stream
(:mod:`keras_structinit.recipes.native`); ``tf.data`` runs batches in parallel on the CPU. The
Keras RandAugment form (``"keras:n2-f0.4"``) runs ``keras.layers.RandAugment`` with each image's
own ops (:func:`rand_augment_batch`). Normalization is the last step.
"""

from __future__ import annotations

import functools

import numpy as np

from keras_structinit.recipes import augment, image_ops
from keras_structinit.utils import validation
from keras_structinit.utils.arguments import NORMALIZATIONS

IMAGENET_MEAN, IMAGENET_STD = augment.IMAGENET_MEAN, augment.IMAGENET_STD


def _tf():
    try:
        import tensorflow as tf
    except ImportError as err:  # pragma: no cover - tensorflow is a dependency of the recipes
        raise ImportError(
            "The recipes' input pipelines use tf.data on every backend: "
            "`pip install tensorflow-cpu` (or `keras_structinit[tensorflow]`)."
        ) from err
    return tf


def channel_stats(x):
    """Per-channel ``(mean, std)`` of uint8 images, in [0, 1] units (float64). A channel that varies
    by less than one grey level gets ``std = 1/255`` (Keras' ``Normalization`` floors it too), so that
    constant images standardize to zeros rather than to NaN."""
    pixels = np.asarray(x).reshape(-1, x.shape[-1])  # reduced in float64 without a float copy of x
    mean, std = pixels.mean(axis=0) / 255.0, np.maximum(pixels.std(axis=0), 1.0) / 255.0
    return tuple(float(m) for m in mean), tuple(float(s) for s in std)


#: Input scalings of the CIFAR recipe (:func:`input_normalization`).
#: ``(mean, std)`` of ImageNet (timm's ``IMAGENET_DEFAULT_MEAN`` / ``_STD``).
IMAGENET_MEAN_STD = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def input_normalization(x, normalization="channel"):
    """``(mean, std)`` per channel, in [0, 1] units, of the recipe's input scaling.

    ``"channel"``: :func:`channel_stats` of uint8 ``x`` (standardized inputs);
    ``"symmetric"``: ``0.5, 0.5``, i.e. ``x / 127.5 - 1`` in [-1, 1]
    (Maennel et al.'s recipe); ``"imagenet"``: :data:`IMAGENET_MEAN_STD` (RGB; the weight-selection
    authors' data code). Images become ``(x / 255 - mean) / std``.
    """
    validation.one_of(normalization, "normalization", NORMALIZATIONS)
    if normalization == "symmetric":
        return (0.5,) * x.shape[-1], (0.5,) * x.shape[-1]
    if normalization == "imagenet":
        return IMAGENET_MEAN_STD
    return channel_stats(x)


def normalize_images(images, mean, std):
    """``(images / 255 - mean) / std`` in float32 (TensorFlow ops, for tf.data)."""
    tf = _tf()
    images = tf.cast(images, tf.float32) / 255.0
    return (images - tf.constant(mean, tf.float32)) / tf.constant(std, tf.float32)


def bincount_histogram(values, value_range, nbins):
    """Counts of ``values`` in ``nbins`` equal bins of ``value_range`` (clipped), in TensorFlow ops.

    bin(v) = clip(int((v - lo) (nbins - 1) / (hi - lo)), 0, nbins - 1): the
    histogram of ``keras.layers.Equalization``, as one ``tf.math.bincount``.
    """
    tf = _tf()
    lo, hi = (float(v) for v in value_range)
    scaled = (tf.cast(values, tf.float32) - lo) * (nbins - 1) / (hi - lo)
    indices = tf.clip_by_value(tf.cast(scaled, tf.int32), 0, nbins - 1)
    return tf.math.bincount(tf.reshape(indices, [-1]), minlength=nbins, maxlength=nbins, dtype=tf.int32)


def _rand_augment_layer(form, seed):
    """``keras.layers.RandAugment`` for a tf.data pipeline.

    Its ``Equalization`` picks a histogram by the global Keras backend: on
    JAX a 256-step loop of ops meant for XLA, which inside ``tf.data`` (always
    TensorFlow) traces ~26k graph ops per image (30 s to build the pipeline,
    and that many ops run per image). The pipeline only runs TensorFlow ops,
    so the histogram is one ``bincount`` here, whatever the backend.
    """
    import keras

    layer = keras.layers.RandAugment(
        value_range=(0, 255), num_ops=form.num_ops, factor=form.magnitude, seed=seed
    )
    layer.equalization._custom_histogram_fixed_width = bincount_histogram
    return layer


class _Draws:
    """The seeds of one element's random draws, fixed by the element alone.

    Keras' augmentation layers draw from a ``SeedGenerator`` whose state every call advances;
    inside ``Dataset.map(..., num_parallel_calls)`` the calls run in any order, so which image
    gets which draw changes from run to run. Tracing a map function with :func:`_seeded` gives
    the ``n``-th draw site of the traced graph the seed ``fold_in(base, n)``: with ``base`` from
    ``(seed, pass, example index)``, an example's augmentation depends on nothing else.
    """

    def __init__(self, base):
        self._base, self._draws = base, 0

    def next(self, ordered=True):
        self._draws += 1
        return _tf().random.experimental.stateless_fold_in(self._base, self._draws)


@functools.cache
def _element_seeds():
    """:class:`_Draws` as a ``SeedGenerator`` (what ``keras.random`` accepts), made once; its state
    is the traced ``base``, not a variable, so it does not call ``SeedGenerator.__init__``."""
    from keras.src.random.seed_generator import SeedGenerator

    return type("ElementSeeds", (_Draws, SeedGenerator), {})


def _seeded(layer, inputs, base, call=None, **kwargs):
    """``layer(inputs, **kwargs)`` (or ``call(layer, inputs)``) with the layer's draws seeded from
    ``base`` (see :class:`_Draws`)."""
    draws = _Draws(base)
    draws.__class__ = _element_seeds()
    layer._get_seed_generator = lambda backend=None: draws
    try:
        return layer(inputs, **kwargs) if call is None else call(layer, inputs)
    finally:
        del layer._get_seed_generator


def rand_augment_batch(layer, images):
    """``keras.layers.RandAugment`` on a batch ``(B, H, W, C)``, each image with its own ops.

    Called on a batch, the layer draws one list of ``num_ops`` op indices for all its images,
    and its ``transform_images`` computes each of its 11 ops on every image, keeping one with
    ``where``; applied image by image (so that each gets its own ops) that is 22 transforms per
    image at ``num_ops=2``: 1.28 ms per CIFAR image on one core, 0.051 ms here on batches of 512
    (``benchmarks/results/cpu/input_pipeline.md``). Here the layer draws each op's
    parameters for every image once, as Keras does (an op drawn twice reuses them), and each
    image draws its own ``num_ops`` indices, uniform over the ops as the layer's ``randint``;
    then each op runs once per step, on the images that drew it (``dynamic_partition``, then
    ``dynamic_stitch`` back in order). Each image comes out as the layer would transform it with
    those draws (tested); the draws come from the layer's seed generator (:func:`_seeded`).
    """
    tf = _tf()
    layer.backend.set_backend("tensorflow")  # in tf.data, as the layer's __call__ does
    try:
        images = tf.cast(images, layer.compute_dtype)
        transforms = layer.get_random_transformation(images, training=True)["transforms"]
        seeds = layer._get_seed_generator(layer.backend._backend)
        op_indices = layer.backend.random.randint(
            (tf.shape(images)[0], layer.num_ops), 0, len(transforms), seed=seeds
        )
        return apply_drawn_ops(layer, images, op_indices, transforms, seeds)
    finally:
        layer.backend.reset()


def apply_drawn_ops(layer, images, op_indices, transforms, seeds=None):
    """``images`` after the ops of ``layer`` (a ``RandAugment``) that ``op_indices`` ``(B, num_ops)``
    names, step after step, with the per-image parameters ``transforms`` (the layer's
    ``get_random_transformation(images)["transforms"]``). Each op runs on its images only."""
    tf = _tf()
    names = list(transforms)
    positions_of_all = tf.range(tf.shape(images)[0])
    for step in range(op_indices.shape[1]):
        positions = tf.dynamic_partition(positions_of_all, tf.cast(op_indices[:, step], tf.int32), len(names))
        parts = []
        for name, rows in zip(names, positions, strict=True):
            op, part = getattr(layer, name), tf.gather(images, rows)
            parts.append(
                tf.cond(  # some ops index their first image: none may have drawn this one
                    tf.size(rows) > 0,
                    lambda op=op, part=part, rows=rows, name=name: _transform(
                        op, part, _rows_of(op, transforms[name], part, rows, seeds)
                    ),
                    lambda part=part: part,
                )
            )
        images = tf.ensure_shape(tf.dynamic_stitch(positions, parts), images.shape)
    return images


def _transform(op, images, transformation):
    """``op.transform_images``, but each image equalized on its own for ``Equalization``: Keras'
    takes one histogram per channel over the whole batch; RandAugment's equalize (and the layer
    on one image) takes each image's own (:func:`equalize_images`)."""
    import keras

    if isinstance(op, keras.layers.Equalization):
        if tuple(op.value_range) == (0, 255) and op.data_format == "channels_last":
            return equalize_images(images, op.bins)
        return _tf().map_fn(lambda image: op.transform_images(image[None], transformation)[0], images)
    return op.transform_images(images, transformation)


def equalize_images(images, bins=256):
    """``keras.layers.Equalization(value_range=(0, 255), bins=bins)`` applied to each image alone, for
    a whole batch ``(N, H, W, C)`` at once.

    Per image and channel, as the layer computes it for one image: the histogram of
    ``int(v (bins - 1) / 255)``, its cumulative sum ``cdf``, the table
    ``clip(round((cdf - cdf_min) 255 / (cdf[-1] - cdf_min)), 0, 255)`` (``cdf_min`` the first
    nonzero count; a zero denominator counts as 1) read at ``int(v / 255 (bins - 1))``; a channel
    with one occupied bin stays as it is. All channels' histograms are one ``bincount``.
    """
    tf = _tf()
    x = tf.cast(images, tf.float32)
    count, channels = tf.shape(x)[0], x.shape[-1]
    bin_of = tf.clip_by_value(tf.cast(x * (bins - 1) / 255.0, tf.int32), 0, bins - 1)
    row = (tf.range(count)[:, None, None, None] * channels + tf.range(channels)) * bins
    size = count * channels * bins
    hist = tf.reshape(
        tf.math.bincount(tf.reshape(bin_of + row, [-1]), minlength=size, maxlength=size, dtype=tf.int32),
        (count, channels, bins),
    )
    cdf = tf.cumsum(hist, axis=-1)
    cdf_min = tf.reduce_min(tf.where(cdf > 0, cdf, tf.int32.max), axis=-1, keepdims=True)
    denominator = cdf[..., -1:] - cdf_min
    denominator = tf.where(denominator == 0, 1, denominator)
    table = tf.clip_by_value(
        tf.round(tf.cast((cdf - cdf_min) * 255, tf.float64) / tf.cast(denominator, tf.float64)), 0, 255
    )
    look = tf.cast(tf.clip_by_value(x / 255.0 * (bins - 1), 0, bins - 1), tf.int32)  # (N, H, W, C)
    shape = tf.shape(look)
    look = tf.reshape(tf.transpose(look, (0, 3, 1, 2)), (count, channels, -1))
    out = tf.gather(tf.cast(table, tf.float32), look, batch_dims=2)
    out = tf.transpose(tf.reshape(out, (count, channels, shape[1], shape[2])), (0, 2, 3, 1))
    flat = tf.math.count_nonzero(hist, axis=-1) <= 1  # (N, C): left as it is
    return tf.cast(tf.where(flat[:, None, None, :], x, out), images.dtype)


def _rows_of(op, transformation, part, rows, seeds):
    """``op``'s ``transformation`` of a batch, cut to the images ``rows`` (``part``): its per-image
    tensors (rank >= 1, batch first) gathered; what describes the batch (its size, its shape) as
    ``op`` draws it for ``part`` (draws that are then dropped)."""
    if transformation is None:
        return None
    tf = _tf()
    own = op.get_random_transformation(part, training=True, seed=seeds)
    return tf.nest.map_structure(
        lambda whole, cut: tf.gather(whole, rows) if tf.is_tensor(whole) and whole.shape.rank else cut,
        transformation,
        own,
    )


def _host_draws(
    augmentation, seed, count, batch_size, batches_per_pass, start_batch, size, stream=0, shuffle=True
):
    """``f(index)``: the example rows and draws of batch ``start_batch + index`` of the stream, as a
    list for ``tf.numpy_function`` (the order of :data:`_DRAW_KEYS`); ``stream`` keeps the draws of
    other streams of one run (the ImageNet recipe's per-image and per-batch draws) apart.
    ``shuffle=False``: the stream is in order already (the rows are ``0..count-1``, no pass order
    drawn)."""
    orders = {}

    def draws_of(index):
        epoch_pass, position = divmod(start_batch + int(index), batches_per_pass)
        if not shuffle:
            rows = np.arange(count)
        else:
            if epoch_pass not in orders:  # one pass at a time: keep the newest order only
                orders.clear()
                orders[epoch_pass] = augment.pass_order(seed, epoch_pass, count)
            rows = orders[epoch_pass][position * batch_size : (position + 1) * batch_size]
        draws = augment.draw_batch(augmentation, seed, epoch_pass, position, len(rows), size, stream=stream)
        return [rows.astype(np.int64)] + [np.asarray(draws[k]) for k in _DRAW_KEYS[1:]]

    return draws_of


_DRAW_KEYS = (
    "examples",
    "offsets",
    "flips",
    "kernels",
    "arguments",
    "rows",
    "boxes",
    "noise_seed",
    "mix_weight",
    "mix_box",
    "keras_seed",
)
_DRAW_DTYPES = (
    "int64",
    "int32",
    "bool",
    "int32",
    "float32",
    "float32",
    "int32",
    "int64",
    "float32",
    "int32",
    "int64",
)


def _draws_in_graph(tf, host, index, augmentation, count, size):
    """:func:`_host_draws` inside ``tf.data``: a dict of tensors with their static shapes."""
    outs = tf.numpy_function(host, [index], [getattr(tf, d) for d in _DRAW_DTYPES], stateful=False)
    steps = augmentation.native_rand_augment.num_ops if augmentation.native_rand_augment else 0
    shapes = (
        (count,),
        (count, 2),
        (count,),
        (steps, count),
        (steps, count),
        (steps, count, 8),
        (count, 4),
        (),
        (),
        (4,),
        (2,),
    )
    return {k: tf.ensure_shape(t, shape) for k, t, shape in zip(_DRAW_KEYS, outs, shapes, strict=True)}


def _erase_noise(tf, augmentation, images, draws):
    """N(0, 1) of ``images``' shape for random erasing, from the batch's ``noise_seed`` (``None``
    without erasing)."""
    if not augmentation.random_erasing:
        return None
    seed = tf.stack([draws["noise_seed"], tf.constant(0, tf.int64)])
    return tf.random.stateless_normal(tf.shape(images), seed)


def _augment(tf, augmentation, images, labels, draws, mean, std, keras_layer):
    """:func:`~keras_structinit.recipes.augment.transform_batch` in TensorFlow ops (the Keras form
    of RandAugment through ``keras_layer``)."""
    keras_rand_augment = None
    if keras_layer is not None:

        def keras_rand_augment(images):
            return _seeded(keras_layer, images, draws["keras_seed"], call=rand_augment_batch)

    return augment.transform_batch(
        image_ops.backend_ops("tensorflow"),
        augmentation,
        images,
        labels,
        draws,
        _erase_noise(tf, augmentation, images, draws),
        mean,
        std,
        rand_augment=keras_rand_augment,
    )


def element_seed(seed, step, index):
    """The stateless seed ``(2,)`` int64 of example ``index`` in pass ``step`` of a run seeded ``seed``."""
    tf = _tf()
    base = tf.stack([tf.cast(seed, tf.int64), tf.cast(step, tf.int64)])
    return tf.random.experimental.stateless_fold_in(base, tf.cast(index, tf.int64))


def cifar_dataset(
    x,
    y,
    batch_size,
    mean,
    std,
    training,
    pad=4,
    flip=True,
    rand_augment=None,
    seed=0,
    drop_remainder=None,
    mixup_alpha=0.0,
    cutmix_alpha=0.0,
    random_erasing=0.0,
    start_batch=0,
):
    """``tf.data.Dataset`` of normalized ``(images, labels)`` batches from uint8 arrays.

    ``y`` is passed through as given (integer or one-hot labels; one-hot for mixing).

    Training: an endless stream of passes over the data, each in its own order; per image
    zero-pad ``pad`` pixels per side and take a random crop of the original size, a random
    horizontal flip, ``rand_augment`` (a form of :mod:`~keras_structinit.recipes.rand_augment`:
    ``"torchvision:n2-m12"``, ``"timm:m9-n2-mstd0.5"``, ``"keras:n2-f0.4"``), random erasing
    with probability ``random_erasing``; per batch MixUp / CutMix (:class:`~keras_structinit.
    recipes.augment.Augmentation`); then ``(x / 255 - mean) / std``. Every draw is a stateless
    function of ``seed``, the pass and the batch's position in it
    (:func:`~keras_structinit.recipes.augment.draw_batch`): two runs with one seed see the same
    batches, and the native stream (:class:`~keras_structinit.recipes.native.ArrayStream`) sees
    them too. ``start_batch`` (batches of the stream to skip, e.g. ``epoch * steps_per_epoch`` when
    a run resumes) starts the stream where an uninterrupted run would be. Each pass drops its last
    partial batch unless ``drop_remainder=False`` (then the data must fill whole batches or one).
    Evaluation: normalization only, in order, one pass.
    """
    tf = _tf()
    batch_size = validation.positive_int(batch_size, "batch_size")
    start_batch = validation.int_value(start_batch, "start_batch", minimum=0)
    seed = validation.random_seed(seed)
    a = augment.Augmentation(pad, flip, rand_augment, random_erasing, mixup_alpha, cutmix_alpha)
    if not training:
        ds = tf.data.Dataset.from_tensor_slices((x, np.asarray(y))).batch(
            batch_size, drop_remainder=bool(drop_remainder) and len(x) >= batch_size
        )
        return ds.map(
            lambda images, labels: (normalize_images(images, mean, std), labels),
            num_parallel_calls=tf.data.AUTOTUNE,
        ).prefetch(tf.data.AUTOTUNE)
    count, size = len(x), tuple(x.shape[1:3])
    drop = (True if drop_remainder is None else bool(drop_remainder)) and count >= batch_size
    batches_per_pass = count // batch_size if drop else -(-count // batch_size)
    if not drop and count > batch_size and count % batch_size:
        raise ValueError(
            f"The tf stream keeps one batch size: with drop_remainder=False the data "
            f"({count} images) must fill whole batches of {batch_size}; use pipeline='native'"
        )
    per_batch = min(batch_size, count)
    keras_layer = None
    if a.rand_augment is not None and a.rand_augment.library == "keras":
        keras_layer = _rand_augment_layer(a.rand_augment, seed)
    images, labels = tf.convert_to_tensor(x), tf.convert_to_tensor(np.asarray(y))
    host = _host_draws(a, seed, count, batch_size, batches_per_pass, start_batch, size)

    def make_batch(index):
        draws = _draws_in_graph(tf, host, index, a, per_batch, size)
        batch, batch_labels = tf.gather(images, draws["examples"]), tf.gather(labels, draws["examples"])
        return _augment(tf, a, batch, batch_labels, draws, mean, std, keras_layer)

    ds = tf.data.Dataset.range(np.iinfo(np.int64).max).map(make_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def random_labels(y, fraction, num_classes, seed=0):
    """``y`` with ``fraction`` of its labels replaced by uniformly random ones, fixed by ``seed``.

    Maennel et al.'s random-label setting (App. A.1): which examples get a random label,
    and which label, depend only on ``seed`` and the example's position, so every epoch
    (and every run with that seed) sees the same labels. ``fraction=1``: all labels random
    (a random label may equal the true one by chance, with probability ``1 / num_classes``).
    """
    fraction = validation.fraction(fraction, "random_labels", "a fraction in [0, 1]")
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    chosen = rng.permutation(len(y))[: int(round(fraction * len(y)))]
    out = y.copy()
    out[chosen] = rng.integers(0, num_classes, len(chosen))
    return out
