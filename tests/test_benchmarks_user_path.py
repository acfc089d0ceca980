"""benchmarks/user_path.py at tiny sizes, on the backend under test: what it records and renders
(no timing assertions)."""

import json

import keras
import pytest

from benchmarks import user_path
from benchmarks.suite import CPU

BACKEND = keras.backend.backend()


def test_a_tiny_run_records_both_paths_thawed_and_frozen_with_the_breakdown(tmp_path, capsys):
    # Torch's other compile mode is torch.compile (a minute or more on 2 cores): left out there.
    other = [] if BACKEND == "torch" else ["--other-compile"]
    user_path.main(
        ["--quick", "--images", "16", "--rounds", "1", "--no-other-compile", *other, "--out", str(tmp_path)]
    )
    data = json.loads((tmp_path / "user_path.json").read_text())
    entry = data["results"][BACKEND]
    assert entry["config"]["images"] == 16 and entry["config"]["batch"] == 8 and entry["code"]
    for mode in user_path.MODES:
        result = entry["modes"][mode]
        assert result["steps"] == 2 and result["user_step_s"] > 0 and result["recipe_step_s"] > 0
        assert {len(t) for t in result["times_s"].values()} == {1}
        assert result["jit_compile"] == result["recipe_jit_compile"]  # Keras' default is the recipe's here
        assert result["paths"] == result["recipe_paths"] and len(result["paths"]) == 1
        if other:
            assert result["other_compile"]["jit_compile"] is (not result["jit_compile"])
            assert "error" not in result["other_compile"], result["other_compile"]
    text = (tmp_path / "user_path.md").read_text()
    for row, what in user_path.ROW_PATHS.items():
        assert f"| {BACKEND} | `{row}` | {what} |" in text
    assert "## Where the user's epoch goes" in text and "## Issue 78's goals" in text
    line, verdict = user_path.headline(user_path.NAME, data)
    assert verdict is None and line.count(f"{BACKEND} ") == 1 and "recipe" in line


def _mode(user, recipe):
    return {
        "user_step_s": user,
        "recipe_step_s": recipe,
        "user_epoch_s": 5 * user,
        "callbacks_s": 0.01,
        "fit_setup_s": 0.1,
        "fit_step_s": user,
        "data_epoch_s": 0.02,
        "jit_compile": False,
        "recipe_jit_compile": False,
        "paths": ["native"],
        "recipe_paths": ["native"],
        "other_compile": {"jit_compile": True, "error": "XlaRuntimeError: boom"},
    }


def test_the_goals_hold_the_users_step_to_the_recipes_and_the_frozen_speed_up():
    result = {"modes": {"thawed": _mode(0.6, 0.55), "frozen": _mode(0.45, 0.4)}}
    ratios, speedup, met = user_path.goals(result)
    assert ratios["thawed"] == pytest.approx(0.6 / 0.55) and speedup == pytest.approx(0.6 / 0.45) and met
    result["modes"]["frozen"] = _mode(0.55, 0.4)  # frozen only 1.09x faster
    assert not user_path.goals(result)[2]
    result = {"modes": {"thawed": _mode(0.9, 0.55), "frozen": _mode(0.6, 0.4)}}  # 1.64x the recipe's
    assert not user_path.goals(result)[2]


def test_the_markdown_says_which_path_each_row_times_and_a_failed_compile_mode():
    entry = {
        "config": {**user_path.parse_args(["--quick"]).model, "input_shape": [16, 16, 3], "images": 16},
        "rounds": 1,
        "machine": {"cpu": "AMD EPYC", "cores": 2, "ram_gib": 23.5, "os": "Linux"},
        "versions": {"keras": "3", "backend": "jax", "backend_version": "0"},
        "date": "2026-12-02T15:00:00+00:00",
        "wall_s": 10.0,
        "loadavg_1min": {"start": 1.0, "end": 1.5},
        "modes": {"thawed": _mode(0.6, 0.55), "frozen": _mode(0.45, 0.4)},
    }
    text = user_path.render_markdown({"results": {"jax": entry}})
    assert "| jax | `recipe` | recipe path:" in text and "jit_compile=True: XlaRuntimeError: boom" in text
    assert "| jax | 1.09 / 1.12 | yes | 1.33x | yes |" in text
    assert user_path.render_markdown({}).endswith("No results.\n")


def test_the_entry_runs_every_backend_and_bad_arguments_name_themselves(capsys):
    (entry,) = [b for b in CPU if b.name == user_path.NAME]
    assert entry.run_key is None and user_path.parse_args([*entry.args, "--out", "x"]).all_backends
    assert "benchmarks/torch_reference.py" in entry.dependencies
    for argv, word in ((["--rounds", "0"], "--rounds"), (["--quick", "--images", "12"], "--images")):
        with pytest.raises(SystemExit):
            user_path.parse_args(argv)
        assert word in capsys.readouterr().err
