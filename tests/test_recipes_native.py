"""The native input stream and the pixel ops it shares with tf.data, on every backend."""

import importlib.util

import keras
import numpy as np
import pytest

from keras_structinit.recipes import augment, image_ops, native
from keras_structinit.recipes.rand_augment import KERNELS, TIMM_FILL, affine_rows

HAS_TF = importlib.util.find_spec("tensorflow") is not None


def images(n=12, size=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
    return x, np.eye(3, dtype="float32")[np.arange(n) % 3]


def numpy_of(batch):
    return tuple(keras.ops.convert_to_numpy(t) for t in batch)


def stream(x, y, batch=6, seed=0, start_batch=0, **options):
    return native.ArrayStream(
        x,
        y,
        batch,
        (0.5,) * 3,
        (0.25,) * 3,
        augment.Augmentation(**options),
        seed=seed,
        start_batch=start_batch,
    )


def test_crops_are_windows_of_the_padded_image_and_flips_mirror():
    x, y = images(n=16)
    s = native.ArrayStream(
        x, y, 16, (0.0,) * 3, (1 / 255,) * 3, augment.Augmentation(pad=2, flip=True), seed=3
    )
    out, _ = numpy_of(s[0])
    _, _, rows = s.indices(0)
    assert sorted(rows) == list(range(16))  # one pass: a permutation
    kinds = set()
    for image, i in zip(np.rint(out), rows, strict=True):
        padded = np.pad(x[i], ((2, 2), (2, 2), (0, 0)))
        found = [
            (a, b, f)
            for a in range(5)
            for b in range(5)
            for f in (False, True)
            if np.array_equal((padded[:, ::-1] if f else padded)[a : a + 8, b : b + 8], image)
        ]
        assert found, f"image {i} is not a (mirrored) window of its padded original"
        kinds.add(found[0][2])
    assert kinds == {False, True}


def test_the_stream_is_a_function_of_the_seed_and_resumes_at_any_batch():
    x, y = images(n=20, size=12)
    options = dict(
        pad=4,
        flip=True,
        rand_augment="timm:m9-n2-mstd0.5",
        random_erasing=0.5,
        mixup_alpha=0.8,
        cutmix_alpha=1.0,
    )
    first = [numpy_of(stream(x, y, **options)[i]) for i in range(7)]  # 3 batches a pass: crosses 2 passes
    again = stream(x, y, **options)
    resumed = stream(x, y, start_batch=4, **options)
    for i, (a, b) in enumerate(zip(first, [numpy_of(again[i]) for i in range(7)], strict=True)):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        if i >= 4:
            np.testing.assert_array_equal(a[0], numpy_of(resumed[i - 4])[0])
    assert not np.array_equal(first[0][0], first[3][0])
    assert not np.array_equal(first[0][0], numpy_of(stream(x, y, seed=1, **options)[0])[0])
    np.testing.assert_allclose(first[0][1].sum(-1), 1.0, atol=1e-6)  # mixtures of one-hot labels


def test_evaluation_normalizes_in_order():
    x, y = images(n=13)
    s = native.ArrayStream(x, y, 5, (0.5,) * 3, (0.25,) * 3)
    assert s.num_batches == 3
    got = np.concatenate([numpy_of(s[i])[0] for i in range(3)])
    np.testing.assert_allclose(got, (x / 255.0 - 0.5) / 0.25, atol=1e-5)


def _reference_step(x, kernel, value):
    """NumPy versions of the non-geometric ops (PIL's and torchvision's definitions)."""
    out = x.copy()
    gray = np.round(0.299 * x[..., 0:1] + 0.587 * x[..., 1:2] + 0.114 * x[..., 2:3])
    for i, (k, v) in enumerate(zip(kernel, value, strict=True)):
        name, img = KERNELS[k], x[i]
        if name == "invert":
            out[i] = 255 - img
        elif name == "posterize":
            out[i] = img - np.mod(img, 2.0 ** (8 - v))
        elif name == "solarize":
            out[i] = np.where(img >= v, 255 - img, img)
        elif name == "solarize_add":
            out[i] = np.where(img < 128, np.minimum(img + v, 255), img)
        elif name in ("brightness", "color", "contrast"):
            degenerate = {"brightness": 0.0, "color": gray[i], "contrast": np.round(gray[i].mean())}[name]
            out[i] = np.clip(np.round(degenerate + v * (img - degenerate)), 0, 255)
        elif name == "auto_contrast":
            lo, hi = img.min((0, 1)), img.max((0, 1))
            stretched = np.clip(np.round((img - lo) * 255 / np.maximum(hi - lo, 1)), 0, 255)
            out[i] = np.where(hi > lo, stretched, img)
        elif name == "equalize":
            for c in range(3):  # torchvision's _scale_channel
                hist = np.bincount(img[..., c].astype(int).ravel(), minlength=256)
                step = (hist.sum() - hist[np.nonzero(hist)[0][-1]]) // 255
                if step:
                    lut = np.clip((np.cumsum(hist) - hist + step // 2) // step, 0, 255)
                    out[i, ..., c] = lut[img[..., c].astype(int)]
    return out


def test_pixel_ops_against_their_definitions():
    K = image_ops.backend_ops()
    rng = np.random.default_rng(0)
    names = [
        "invert",
        "posterize",
        "solarize",
        "solarize_add",
        "brightness",
        "color",
        "contrast",
        "auto_contrast",
        "equalize",
        "identity",
    ]
    x = rng.integers(20, 200, (len(names) * 2, 9, 7, 3)).astype("float32")
    x[-1, ..., 1] = 77  # a channel in one bin
    kernel = np.array([KERNELS.index(n) for n in names] * 2, np.int32)
    value = np.array([0, 3, 100, 60, 1.4, 0.3, 1.7, 0, 0, 0] * 2, np.float32)
    rows = affine_rows(kernel, value, (9, 7)).astype("float32")
    t = keras.ops.convert_to_tensor
    got = image_ops.apply_step(K, t(x), t(kernel), t(value), t(rows), (0.0, 0.0, 0.0), "nearest")
    got = keras.ops.convert_to_numpy(got)
    np.testing.assert_allclose(got, _reference_step(x, kernel, value), atol=1e-3)


def test_geometric_ops_move_pixels_and_fill():
    K = image_ops.backend_ops()
    x = np.arange(2 * 6 * 6 * 3, dtype="float32").reshape(2, 6, 6, 3) % 256
    kernel = np.array([KERNELS.index("translate_x"), KERNELS.index("rotate")], np.int32)
    rows = affine_rows(kernel, np.array([2.0, 180.0]), (6, 6)).astype("float32")
    t = keras.ops.convert_to_tensor
    got = keras.ops.convert_to_numpy(image_ops.affine(K, t(x), t(rows), TIMM_FILL, "bilinear"))
    np.testing.assert_allclose(got[0, :, :4], x[0, :, 2:], atol=1e-3)  # output x reads input x + 2
    np.testing.assert_allclose(got[0, :, 4:], np.broadcast_to(TIMM_FILL, (6, 2, 3)), atol=1e-3)  # filled
    np.testing.assert_allclose(got[1], x[1, ::-1, ::-1], atol=1e-3)  # a half turn about the centre


@pytest.mark.skipif(not HAS_TF, reason="compares the native ops with their tf.data (TensorFlow) run")
def test_both_streams_give_the_same_batches():
    """One seed, one distribution: the native stream on this backend and tf.data (TensorFlow ops)
    see the same examples and draws; pixels agree up to a rounding step at float ties."""
    from keras_structinit.recipes.data import cifar_dataset

    x, y = images(n=40, size=16)
    for form in ("torchvision:n2-m12", "timm:m9-n2-mstd0.5-inc1"):
        options = dict(pad=4, flip=True, rand_augment=form, mixup_alpha=0.8, cutmix_alpha=1.0)
        ours = stream(x, y, batch=16, seed=5, start_batch=1, **options)
        ds = cifar_dataset(x, y, 16, (0.5,) * 3, (0.25,) * 3, True, seed=5, start_batch=1, **options)
        for i, theirs in enumerate(ds.take(3)):
            a, b = numpy_of(ours[i]), tuple(np.asarray(t) for t in theirs)
            np.testing.assert_allclose(a[1], b[1], atol=1e-6)
            off = np.abs(a[0] - b[0]) > 1e-4
            assert off.mean() < 1e-3, (form, i, off.mean())
            assert np.abs(a[0] - b[0]).max() <= 1.01 / 255 / 0.25  # one level at most


def test_groups_of_a_batch_give_the_whole_batchs_values(monkeypatch):
    """The device half runs on groups of a few images (issue 76: one call on a batch of 1024 x 224
    x 224 passed 12 GB on TensorFlow); each group holds its images' mixing partners, so the batch
    is the one a single call gives, odd batches (the middle image pairs with itself) included."""
    options = dict(
        pad=2,
        flip=True,
        rand_augment="timm:m9-n2-mstd0.5-inc1",
        random_erasing=0.5,
        mixup_alpha=0.8,
        cutmix_alpha=1.0,
    )
    for n in (10, 11):
        x, y = images(n=n, size=12)
        whole = [numpy_of(stream(x, y, batch=n, seed=1, **options)[i]) for i in range(3)]
        for chunk in (2, 4, 8):
            monkeypatch.setattr(native, "CHUNK_BYTES", chunk * 4 * 12 * 12 * 3)
            assert native.chunk_images(n, (12, 12)) == chunk
            grouped = stream(x, y, batch=n, seed=1, **options)
            for i, (a, b) in enumerate(whole):
                got = numpy_of(grouped[i])
                np.testing.assert_array_equal(got[0], a)
                np.testing.assert_array_equal(got[1], b)


@pytest.mark.parametrize("count", [1, 2, 7, 10, 11, 1000, 1024])
@pytest.mark.parametrize("chunk", [1, 2, 3, 64, 2048])
def test_mix_groups_are_closed_under_the_mixing_pairs(count, chunk):
    groups = list(native.mix_groups(count, chunk))
    fronts = [rows[:front] for rows, front in groups]
    backs = [rows[front:] for rows, front in reversed(groups)]
    np.testing.assert_array_equal(np.concatenate(fronts + backs), np.arange(count))  # in batch order
    for rows, _ in groups:
        np.testing.assert_array_equal(rows[::-1], count - 1 - rows)  # a group's flip is its pairing
        assert len(rows) <= max(chunk, 2) + 1


def test_the_imagenet_defaults_bound_what_the_native_stream_holds():
    """The bound of docs/models-and-recipes.md: at 1024 x 224 x 224 a finished batch is 617 MB
    (float32 images and labels); the stream queues one, whatever the workers, so with the one the
    enqueuer submits beyond the queue and the one ``fit`` trains on, 3 batches are in flight; the
    device half transforms 64 images (38.5 MB) a call."""
    size = (224, 224)
    assert native.batch_bytes(1024, size) == 4 * 1024 * (224 * 224 * 3 + 1) == 616_566_784
    assert native.batch_bytes(1024, size, num_classes=1000) < 621e6
    for workers in (1, 2, 8, 64):
        assert native.queue_depth(workers, 1024, size) == 1
    assert (native.queue_depth(8, 1024, size) + 2) * native.batch_bytes(1024, size, num_classes=1000) < 1.9e9
    assert native.chunk_images(1024, size) == 64 and 64 * 224 * 224 * 3 * 4 <= native.CHUNK_BYTES
    assert native.queue_depth(1, 512, (32, 32)) == 2 and native.queue_depth(8, 512, (32, 32)) == 8  # CIFAR
    assert native.queue_depth(8, 256, size) == 5  # 154 MB batches: 6 ahead fit 1 GiB
    s = native.ImageStream(
        np.zeros((2, 8, 8, 3), np.uint8),
        np.ones((2, 1), "float32"),
        1024,
        224,
        (0.0,) * 3,
        (1.0,) * 3,
        augment.Augmentation(flip=True),
        workers=8,
    )
    assert s.max_queue_size == 1 and s.workers == 8
    from keras_structinit.recipes import imagenet_data

    assert imagenet_data.BATCHES_IN_FLIGHT == imagenet_data.PREFETCH_BATCHES + 4 == 6


def test_choose_pipeline():
    assert native.choose_pipeline("native") == "native"
    assert native.choose_pipeline("auto") == "native"
    slower = keras.backend.backend() == "torch" and HAS_TF
    assert native.choose_pipeline("auto", recipe="imagenet") == ("tf" if slower else "native")
    if HAS_TF:
        assert native.choose_pipeline("auto", "multi_worker") == "tf"
        assert native.choose_pipeline("auto", "data_parallel") == (
            "tf" if keras.backend.backend() == "tensorflow" else "native"
        )
        assert native.choose_pipeline("auto", needs_tf=["data='tfds:x'"]) == "tf"
    else:
        with pytest.raises(ImportError, match="distribution='multi_worker' is read with tf.data"):
            native.choose_pipeline("auto", "multi_worker")
    with pytest.raises(ValueError, match="pipeline"):
        native.choose_pipeline("grain")
    with pytest.raises(ValueError, match="multi_worker"):
        native.choose_pipeline("native", "multi_worker")
    with pytest.raises(ValueError, match="tfds"):
        native.choose_pipeline("native", needs_tf=["data='tfds:x'"])
    if not HAS_TF:
        with pytest.raises(ImportError, match="native"):
            native.choose_pipeline("tf")


def test_resized_crop_box_is_torchvisions_get_params():
    rng = np.random.default_rng(0)
    height, width = 200, 300
    uniforms = rng.random((4000, 10, 4))
    boxes = np.array([augment.resized_crop_box(u, height, width) for u in uniforms])
    top, left, h, w = boxes.T
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= height).all() and (left + w <= width).all()
    area = h * w / (height * width)
    assert area.min() > 0.075 and area.max() <= 1.0
    assert np.all((w / h > 0.74) & (w / h < 1.35))
    # Where the first try's box (area fraction 0.08 + 0.92 u, aspect e^(log(3/4) + u log(16/9))) fits,
    # it is the box: area and aspect as drawn, up to rounding to whole pixels.
    target = 0.08 + 0.92 * uniforms[:, 0, 0]
    aspect = np.exp(np.log(3 / 4) + uniforms[:, 0, 1] * np.log(16 / 9))
    pixels = height * width
    first = (np.sqrt(target * aspect * pixels) < width - 1) & (np.sqrt(target / aspect * pixels) < height - 1)
    assert 0.3 < first.mean() < 0.9
    np.testing.assert_allclose(area[first], target[first], rtol=0.05)
    np.testing.assert_allclose((w / h)[first], aspect[first], rtol=0.1)
    # Positions uniform over the places the box fits.
    slack = (top / np.maximum(height - h, 1))[h < height - 20]
    assert abs(slack.mean() - 0.5) < 0.03
    # No try fits a 10 x 100 strip at a whole-image area: the central crop, aspect clamped to 4/3.
    assert augment.resized_crop_box(np.full((10, 4), [1.0, 0.5, 0.0, 0.0]), 10, 100) == (0, 43, 10, 13)
    assert augment.resized_crop_box(np.full((10, 4), [1.0, 0.5, 0.0, 0.0]), 100, 10) == (43, 0, 13, 10)
    assert augment.resized_crop_box(np.full((10, 4), 0.999), 50, 50) == (0, 0, 50, 50)  # the whole image


def _folder(root, sizes, seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    for i, (h, w) in enumerate(sizes):
        (root / f"c{i % 3}").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / f"c{i % 3}" / f"{i}.png")
    return str(root)


def test_image_stream_evaluates_the_central_square():
    x = np.zeros((1, 20, 60, 3), np.uint8)
    x[:, :, 16:44] = 200  # the central square of a 20 x 60 image, and the resize filter's reach
    s = native.ImageStream(
        x, np.ones((1, 1), "float32"), 1, 10, (0.0,) * 3, (1 / 255,) * 3, crop_fraction=1.0
    )
    assert s.num_batches == 1
    np.testing.assert_allclose(numpy_of(s[0])[0], 200.0, atol=1e-3)


def test_image_stream_decodes_files_of_any_size_and_resumes_at_any_batch(tmp_path):
    from keras_structinit import datasets

    sizes = [(30 + 7 * i, 50 - 3 * i) for i in range(9)]
    paths, labels, classes = datasets.list_image_folder(_folder(tmp_path / "f", sizes))
    assert classes == ["c0", "c1", "c2"] and len(paths) == 9
    assert labels.tolist() == sorted(labels.tolist())
    y = np.eye(3, dtype="float32")[labels]
    a = augment.Augmentation(
        flip=True, rand_augment="timm:m7-n2-mstd0.5-inc1", mixup_alpha=0.2, cutmix_alpha=1.0
    )

    def make(start_batch=0, workers=1):
        return native.ImageStream(
            paths,
            y,
            4,
            16,
            augment.IMAGENET_MEAN,
            augment.IMAGENET_STD,
            a,
            seed=2,
            start_batch=start_batch,
            workers=workers,
        )

    s = make()
    assert s.batches_per_pass == 2 and s.num_batches is None
    first = [numpy_of(s[i]) for i in range(5)]
    assert first[0][0].shape == (4, 16, 16, 3) and np.isfinite(first[0][0]).all()
    np.testing.assert_allclose(first[0][1].sum(-1), 1.0, atol=1e-6)
    resumed = make(start_batch=3, workers=3)
    for i in (3, 4):
        np.testing.assert_array_equal(first[i][0], numpy_of(resumed[i - 3])[0])
    assert not np.array_equal(first[0][0], first[2][0])


def test_image_stream_crops_are_resized_boxes_flipped_as_drawn():
    from PIL import Image

    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (4, 40, 64, 3), dtype=np.uint8)
    s = native.ImageStream(
        x,
        np.eye(4, dtype="float32"),
        4,
        12,
        (0.0,) * 3,
        (1 / 255,) * 3,
        augment.Augmentation(flip=True),
        seed=5,
    )
    out, _ = numpy_of(s[1])
    mirrored = []
    epoch_pass, position, rows = s.indices(1)
    uniforms = augment.draw_crops(5, epoch_pass, position, 4)
    for image, row, u in zip(out, rows, uniforms, strict=True):
        top, left, h, w = augment.resized_crop_box(u, 40, 64)
        crop = Image.fromarray(x[row]).crop((left, top, left + w, top + h))
        want = np.asarray(crop.resize((12, 12), Image.Resampling.BILINEAR), "float32")
        mirrored.append(np.allclose(image, want[:, ::-1], atol=1e-3))
        np.testing.assert_allclose(image, want[:, ::-1] if mirrored[-1] else want, atol=1e-3)
    assert mirrored == list(augment.draw_batch(s.augmentation, 5, epoch_pass, position, 4, (12, 12))["flips"])


def test_fit_imagenet_native_trains_on_a_folder(tmp_path):
    from keras_structinit import recipes

    folder = _folder(tmp_path / "f", [(36 + i, 48) for i in range(12)])
    inputs = keras.Input((16, 16, 3))
    hidden = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(3)(hidden))
    history = recipes.fit_imagenet(
        model, folder, 2, batch_size=4, image_size=16, pipeline="native", validation_data=folder, verbose=0
    )
    assert int(model.optimizer.iterations.value) == 6
    assert np.isfinite(history.history["loss"]).all() and len(history.history["val_accuracy"]) == 2


def test_keras_rand_augment_form_runs_on_tf_data_or_is_refused_in_one_line(tmp_path, capsys):
    """Keras' form (``--rand-augment 2,0.4``) is a Keras layer in tf.data: with TensorFlow the run
    takes that stream and its weights differ from ``none``; on the native stream it is refused in
    one line naming the papers' forms, never dropped (issue 58, point 3)."""
    from keras_structinit import cli
    from keras_structinit.recipes import RecipeConfig

    with pytest.raises(
        ValueError,
        match=r"only the tf.data stream applies.*'timm:m9-n2-mstd0.5-inc1'.*"
        r"'torchvision:n2-m12'",
    ):
        RecipeConfig("cifar10", rand_augment=(2, 0.4), pipeline="native")
    assert native.choose_pipeline("native", rand_augment="timm:m9-n2-mstd0.5") == "native"
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "train.npz", x=rng.integers(0, 256, (48, 32, 32, 3), dtype=np.uint8), y=np.arange(48) % 10
    )
    argv = [
        "train",
        "--model",
        "simple-cnn",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--seed",
        "0",
        "--val-split",
        "0.25",
        "--data",
        str(tmp_path / "train.npz"),
    ]
    if not HAS_TF:
        assert cli.main([*argv, "--rand-augment", "2,0.4", "--out", str(tmp_path / "k")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "torchvision:n2-m12" in err, err
        assert not (tmp_path / "k").exists()
        return
    assert native.choose_pipeline("auto", rand_augment=(2, 0.4)) == "tf"
    assert (
        cli.main([*argv, "--rand-augment", "2,0.4", "--pipeline", "native", "--out", str(tmp_path / "n")])
        == 2
    )
    assert "only the tf.data stream applies" in capsys.readouterr().err
    weights = {}
    for form in ("none", "2,0.4"):  # the same stream, tf.data: only the augmentation differs
        out = tmp_path / form
        assert cli.main([*argv, "--rand-augment", form, "--pipeline", "tf", "--out", str(out)]) == 0
        weights[form] = keras.saving.load_model(out / "model.keras").get_weights()
    assert any(not np.array_equal(a, b) for a, b in zip(weights["none"], weights["2,0.4"], strict=True))
