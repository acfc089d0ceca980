"""Position-grid resizing: the NumPy rule against Keras' own bilinear resize on each backend."""

import keras
import numpy as np
import pytest

from keras_structinit.selection.resample import grid_layout, interpolation_matrix, resize_tokens

from conftest import to_numpy


@pytest.mark.parametrize(("source", "target"), [(4, 4), (4, 2), (4, 3), (3, 7), (8, 5), (1, 3)])
def test_interpolation_rows_are_convex_weights(source, target):
    m = interpolation_matrix(source, target)
    assert m.shape == (target, source)
    np.testing.assert_allclose(m.sum(axis=1), 1.0)
    assert (m >= 0).all() and ((m > 0).sum(axis=1) <= 2).all()
    if source == target:
        np.testing.assert_array_equal(m, np.eye(source))


@pytest.mark.parametrize(("g_t", "g_s"), [(4, 2), (4, 3), (3, 5), (8, 4), (6, 6)])
def test_grid_matches_keras_bilinear_resize_and_class_token_is_kept(g_t, g_s):
    rng = np.random.default_rng(g_t * 10 + g_s)
    embedding = rng.standard_normal((1, 1 + g_t * g_t, 6)).astype("float32")
    out = resize_tokens(embedding, 1 + g_s * g_s)
    assert out.shape == (1, 1 + g_s * g_s, 6) and out.dtype == np.float32
    np.testing.assert_array_equal(out[:, 0], embedding[:, 0])
    grid = embedding[:, 1:].reshape(1, g_t, g_t, 6)
    expected = keras.ops.image.resize(
        grid, (g_s, g_s), interpolation="bilinear", antialias=False, data_format="channels_last"
    )
    np.testing.assert_allclose(out[:, 1:].reshape(1, g_s, g_s, 6), to_numpy(expected), atol=1e-5)


def test_grid_without_class_token_and_other_axis():
    rng = np.random.default_rng(1)
    embedding = rng.standard_normal((3, 16))  # (d, tokens): a 4 x 4 grid on axis 1
    out = resize_tokens(embedding, 4, axis=1)
    m = interpolation_matrix(4, 2)
    expected = np.einsum("ia,jb,cab->cij", m, m, embedding.reshape(3, 4, 4)).reshape(3, 4)
    np.testing.assert_allclose(out, expected)


def test_a_constant_grid_stays_constant():
    embedding = np.full((1, 1 + 25, 4), 3.0)
    embedding[:, 0] = -1.0
    out = resize_tokens(embedding, 1 + 9)
    np.testing.assert_allclose(out[:, 1:], 3.0)
    np.testing.assert_array_equal(out[:, 0], -1.0)


def test_layout_errors_name_the_counts():
    assert grid_layout(65, 17) == (1, 8, 4)
    assert grid_layout(64, 16) == (0, 8, 4)
    with pytest.raises(ValueError, match="12 teacher tokens and 17 student tokens"):
        grid_layout(12, 17)
    with pytest.raises(ValueError, match="'pos'"):
        resize_tokens(np.zeros((1, 17, 2)), 16, what="'pos'")
