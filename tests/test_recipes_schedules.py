"""Triangular / piecewise-linear schedules: values at and between knots, serialization."""

import keras
import numpy as np
import pytest

from keras_structinit.recipes.schedules import (
    PiecewiseLinearSchedule,
    TriangularSchedule,
    step_decay,
    warmup_cosine,
)


def lr_at(schedule, step):
    return float(keras.ops.convert_to_numpy(schedule(step)))


def test_triangular_knots_and_linear_between():
    s = TriangularSchedule(0.01, total_steps=1000)
    expected = {0: 0.0, 400: 0.01, 800: 0.01 / 20, 1000: 0.0, 1500: 0.0}
    for step, value in expected.items():
        assert lr_at(s, step) == pytest.approx(value, abs=1e-9)
    # Linear: the midpoint of each segment is the mean of its end values.
    assert lr_at(s, 200) == pytest.approx(0.005, rel=1e-5)
    assert lr_at(s, 600) == pytest.approx((0.01 + 0.0005) / 2, rel=1e-5)
    assert lr_at(s, 900) == pytest.approx(0.00025, rel=1e-5)
    steps = np.arange(0, 1001, 7)
    values = np.array([lr_at(s, t) for t in steps])
    np.testing.assert_allclose(
        values, np.interp(steps / 1000, [0, 0.4, 0.8, 1], [0, 0.01, 0.0005, 0]), rtol=1e-5, atol=1e-9
    )


def test_serialization_round_trip_and_inside_a_saved_model(tmp_path):
    s = TriangularSchedule(0.02, 321, peak_fraction=0.3, end_fraction=0.9, final_divisor=10)
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(s))
    assert isinstance(restored, TriangularSchedule) and restored.get_config() == s.get_config()
    for step in (0, 50, 96, 200, 300, 321):
        assert lr_at(restored, step) == pytest.approx(lr_at(s, step), abs=1e-9)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.AdamW(s), loss="mse")
    model.fit(np.zeros((4, 4)), np.zeros((4, 2)), verbose=0)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    schedule = loaded.optimizer._learning_rate
    assert isinstance(schedule, TriangularSchedule) and schedule.get_config() == s.get_config()


def test_piecewise_linear_general_knots():
    s = PiecewiseLinearSchedule(100, [0.0, 0.5, 1.0], [1.0, 3.0, 2.0])
    assert [lr_at(s, t) for t in (0, 25, 50, 75, 100)] == pytest.approx([1.0, 2.0, 3.0, 2.5, 2.0])


def test_warmup_cosine_peak_and_end():
    s = warmup_cosine(0.004, total_steps=100, warmup_steps=10)
    assert lr_at(s, 0) == pytest.approx(0.0, abs=1e-9)
    assert lr_at(s, 5) == pytest.approx(0.002, rel=1e-4)
    assert lr_at(s, 10) == pytest.approx(0.004, rel=1e-4)
    assert lr_at(s, 55) == pytest.approx(0.002, rel=1e-3)  # cosine midpoint
    assert lr_at(s, 100) == pytest.approx(0.0, abs=1e-8)


@pytest.mark.parametrize(
    "kwargs, match, error",
    [
        ({"peak_learning_rate": 0.0, "total_steps": 10}, "peak_learning_rate", ValueError),
        ({"peak_learning_rate": 0.1, "total_steps": 0}, "total_steps", ValueError),
        (
            {"peak_learning_rate": 0.1, "total_steps": 10, "peak_fraction": 0.9, "end_fraction": 0.5},
            "peak_fraction",
            ValueError,
        ),
        ({"peak_learning_rate": "0.1", "total_steps": 10}, "peak_learning_rate", TypeError),
    ],
)
def test_bad_triangular_arguments(kwargs, match, error):
    with pytest.raises(error, match=match):
        TriangularSchedule(**kwargs)


def test_bad_piecewise_and_warmup_arguments():
    with pytest.raises(ValueError, match="fractions"):
        PiecewiseLinearSchedule(10, [0.0, 0.7, 0.5, 1.0], [0, 1, 1, 0])
    with pytest.raises(ValueError, match="same length"):
        PiecewiseLinearSchedule(10, [0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_cosine(0.1, 10, 10)


def test_step_decay_divides_by_three_at_a_third_and_two_thirds():
    s = step_decay(0.002, 300)
    steps = (0, 99, 100, 101, 200, 201, 299, 400)
    expected = [0.002, 0.002, 0.002, 0.002 / 3, 0.002 / 3, 0.002 / 9, 0.002 / 9, 0.002 / 9]
    assert [lr_at(s, t) for t in steps] == pytest.approx(expected, rel=1e-6)
    s = step_decay(1.0, 10, fractions=[0.5], divisor=10.0)
    assert [lr_at(s, t) for t in (5, 6)] == pytest.approx([1.0, 0.1])
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(s))
    assert lr_at(restored, 6) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="fractions"):
        step_decay(0.1, 10, fractions=[0.7, 0.3])
    with pytest.raises(ValueError, match="fractions"):
        step_decay(0.1, 10, fractions=[0.0, 0.5])
    with pytest.raises(TypeError, match="fractions"):
        step_decay(0.1, 10, fractions=0.5)
    with pytest.raises(ValueError, match="divisor"):
        step_decay(0.1, 10, divisor=0.0)
