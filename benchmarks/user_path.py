#!/usr/bin/env python
"""The user's path (``compile()`` with Keras' defaults, a plain ``fit``) beside the recipes' step.

``torch_reference`` and ``frozen_speed`` time one ``train_on_batch`` step with the compile mode
chosen per backend (the *recipe path*). A user who writes their own script runs::

    model = ks.models.convmixer(128, 6, kernel_size=9, patch_size=2)
    ks.freeze_spatial(model)                    # or not
    model.compile(keras.optimizers.AdamW(1e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=128, epochs=1)   # after a warm-up fit

(the *user's path*, issue 78: ``jit_compile="auto"``, ``verbose="auto"``, ``shuffle=True``). This
times both in one process per backend (``--all-backends``: every installed backend, one subprocess each),
thawed and frozen, on ``--images`` random 32x32x3 images (640: 5 steps of 128), and breaks the
difference down:

* ``user``: one ``fit`` epoch as above; per epoch and per step (the epoch / its steps, so the
  per-``fit`` work is shared among them, as a user's progress bar shows it);
* ``quiet``: the same model's ``fit(..., verbose=0)``: the progress bar's and History's cost is
  ``user`` less ``quiet``;
* ``one``: ``fit`` of one batch (verbose 0): with ``quiet``, a line through (1 step, ``one``) and
  (n steps, ``quiet``) splits an epoch into the *step inside fit* (its slope) and *per-fit set-up*
  (its intercept: ``fit``'s own work before and after the steps: data adapter and iterator,
  callbacks list, symbolic build, state sync);
* ``data``: Keras' data adapter alone for one epoch (``get_data_adapter(x, y, batch_size,
  shuffle=True)`` and the backend's iterator, no model);
* ``recipe``: ``torch_reference``'s Keras row on this backend (``keras_step``: its own model,
  ``train_on_batch`` on one fixed batch, ``jit_compile`` False on torch, ``"auto"`` elsewhere), per
  step.

The compile mode: what ``"auto"`` resolved to (``model.jit_compile``) and the depthwise path the
package's layers took under it (``last_path``); with ``--other-compile`` (the default) the other
``jit_compile`` value too (torch: ``torch.compile``; JAX: eager; TensorFlow: XLA): a quiet ``fit``
of two batches after a one-batch warm-up ``fit``, per step, and its path.

The machine may be shared: after a warm-up epoch of each model, ``--rounds`` rounds run every
measurement in turn (``user``, ``quiet``, ``one``, ``data``, ``recipe``), so that a change of load
hits them alike; medians over the rounds. The 1-minute load average is recorded at the start and
end of each backend.

Usage::

    python -m benchmarks.user_path --all-backends --out benchmarks/results/cpu
    python -m benchmarks.user_path --backend jax --rounds 2 --no-other-compile
    python -m benchmarks.user_path --all-backends --quick --out /tmp/user_path_smoke
"""

from __future__ import annotations

import argparse
import datetime
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import LOCAL_RESULTS, Benchmark, backend_parser, per_backend, run_per_backend

NAME = "user_path"
MODES = ("thawed", "frozen")
#: The recipe path's ``jit_compile`` per backend: ``torch_reference``'s Keras rows (torch eager).
RECIPE_COMPILE = {"torch": False, "jax": "auto", "tensorflow": "auto"}
#: Issue 78's goals: the user's step within this of the recipe's, and frozen this much faster.
GOALS = {"x recipe": 1.3, "frozen_speedup": 1.2}
#: What each timed row is, for the Markdown and the report (which path it times).
ROW_PATHS = {
    "user": "user's path: compile() defaults, fit(batch_size, epochs=1), verbose and shuffle default",
    "recipe": "recipe path: torch_reference's Keras row, train_on_batch, compile mode per backend",
}


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=640, help="images per epoch (default 640)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of every measurement (default 3)")
    parser.add_argument(
        "--other-compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the jit_compile value 'auto' did not pick (default: yes)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: ConvMixer-16/2 (k 5) on 16x16 inputs, batch 8"
    )
    parser.add_argument("--out", type=Path, default=LOCAL_RESULTS, help=f"directory of {NAME}.json / .md")
    args = parser.parse_args(argv)
    from benchmarks.torch_reference import MODEL, QUICK_MODEL

    args.model = QUICK_MODEL if args.quick else MODEL
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1; got {args.rounds}")
    if args.images < args.model["batch"] or args.images % args.model["batch"]:
        parser.error(f"--images must be a multiple of the batch ({args.model['batch']}); got {args.images}")
    return args


# ----------------------------------------------------------------------------
# The models and what is timed
# ----------------------------------------------------------------------------
def user_model(m, frozen, jit_compile="auto"):
    """The package's ConvMixer (size ``m``) compiled as a user would: AdamW(1e-3), the loss, and
    Keras' defaults (``jit_compile`` aside, which the compile-mode rows set)."""
    import keras

    from benchmarks.torch_reference import keras_convmixer

    model = keras_convmixer(m, frozen)
    extra = {} if jit_compile == "auto" else {"jit_compile": jit_compile}
    model.compile(
        keras.optimizers.AdamW(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True), **extra
    )
    return model


def images(m, count):
    """``(x, y)``: ``count`` random images and labels (seed 0)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((count, *m["input_shape"]), dtype=np.float32)
    return x, rng.integers(0, m["num_classes"], count)


def depthwise_paths(model):
    """The paths the package's depthwise layers took at their last trace, sorted, once each."""
    return sorted({layer.last_path for layer in model.layers if getattr(layer, "last_path", None)})


def data_epoch(x, y, batch):
    """One epoch of Keras' data adapter and the backend's iterator, no model (private Keras API)."""
    import keras
    from keras.src.trainers.data_adapters import get_data_adapter

    adapter = get_data_adapter(x, y, batch_size=batch, shuffle=True)
    backend = keras.backend.backend()
    iterator = {
        "jax": adapter.get_jax_iterator,
        "tensorflow": adapter.get_tf_dataset,
        "torch": adapter.get_torch_dataloader,
    }[backend]()
    for _ in iterator:
        pass


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def mode_units(args, frozen):
    """``(units, first, models)``: one mode's measurements (``{unit: zero-argument call}``), each
    called once to warm up (``first``: those calls' seconds, compilation included), and the user's
    and the recipe's models."""
    import keras

    from benchmarks.torch_reference import keras_step

    m, batch = args.model, args.model["batch"]
    x, y = images(m, args.images)
    model = user_model(m, frozen)
    recipe_step, _, recipe = keras_step(m, frozen, RECIPE_COMPILE[keras.backend.backend()])
    steps = args.images // batch
    units = {
        "user": lambda: model.fit(x, y, batch_size=batch, epochs=1),
        "quiet": lambda: model.fit(x, y, batch_size=batch, epochs=1, verbose=0),
        "one": lambda: model.fit(x[:batch], y[:batch], batch_size=batch, epochs=1, verbose=0),
        "data": lambda: data_epoch(x, y, batch),
        "recipe": lambda: [recipe_step() for _ in range(steps)],
    }
    first = {name: round(_timed(unit), 4) for name, unit in units.items()}  # compiles
    return units, first, {"user": model, "recipe": recipe}


def measure_mode(args, frozen):
    """One mode's round-robin timings and its breakdown."""
    units, first, models = mode_units(args, frozen)
    times = {name: [] for name in units}
    for _ in range(args.rounds):
        for name, unit in units.items():
            times[name].append(_timed(unit))
    steps = args.images // args.model["batch"]
    median = {name: float(np.median(t)) for name, t in times.items()}
    inside = (median["quiet"] - median["one"]) / (steps - 1) if steps > 1 else median["one"]
    model = models["user"]
    return {
        "times_s": {name: [round(t, 6) for t in ts] for name, ts in times.items()},
        "first_s": first,
        "steps": steps,
        "user_epoch_s": median["user"],
        "user_step_s": median["user"] / steps,
        "recipe_step_s": median["recipe"] / steps,
        "callbacks_s": median["user"] - median["quiet"],
        "fit_step_s": inside,
        "fit_setup_s": median["one"] - inside,
        "data_epoch_s": median["data"],
        "jit_compile": _jit_text(model),
        "paths": depthwise_paths(model),
        "recipe_paths": depthwise_paths(models["recipe"]),
        "recipe_jit_compile": _jit_text(models["recipe"]),
    }


def _jit_text(model):
    jit = model.jit_compile
    return jit if isinstance(jit, str) else bool(jit)


def measure_other_compile(args, frozen, auto):
    """The ``jit_compile`` value ``auto`` did not pick: a quiet ``fit`` of two batches per step, after
    a one-batch warm-up ``fit`` (JAX's eager step and ``torch.compile`` are slow: few steps)."""
    m, batch = args.model, args.model["batch"]
    x, y = images(m, 2 * batch)
    setting = not auto
    try:
        model = user_model(m, frozen, jit_compile=setting)
        warmup = _timed(lambda: model.fit(x[:batch], y[:batch], batch_size=batch, epochs=1, verbose=0))
        epoch = _timed(lambda: model.fit(x, y, batch_size=batch, epochs=1, verbose=0))
    except Exception as exc:  # a compiler that fails is recorded, the rest still runs
        return {"jit_compile": setting, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return {
        "jit_compile": setting,
        "warmup_epoch_s": round(warmup, 4),
        "step_s": epoch / 2,
        "paths": depthwise_paths(model),
    }


def run_backend(args):
    """``(backend, entry)``: this process's measurements, thawed then frozen."""
    import keras

    from benchmarks.bench_utils import code_provenance
    from keras_structinit.utils.reporting import machine_info, versions

    backend = keras.backend.backend()
    start, load = time.perf_counter(), os.getloadavg()[0]
    entry = {
        "config": {**args.model, "input_shape": list(args.model["input_shape"]), "images": args.images},
        "rounds": args.rounds,
        "machine": machine_info(),
        "versions": versions(),
        "code": code_provenance(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "modes": {},
    }
    for mode in MODES:
        result = measure_mode(args, mode == "frozen")
        if args.other_compile:
            result["other_compile"] = measure_other_compile(args, mode == "frozen", result["jit_compile"])
        entry["modes"][mode] = result
        print(
            f"[{backend}] {mode}: user {result['user_step_s']:.3f} s/step, recipe "
            f"{result['recipe_step_s']:.3f} s/step, jit_compile {result['jit_compile']}, "
            f"paths {result['paths']}",
            flush=True,
        )
    entry["loadavg_1min"] = {"start": load, "end": os.getloadavg()[0]}
    entry["wall_s"] = round(time.perf_counter() - start, 1)
    return backend, entry


def main(argv=None):
    run_per_backend(__file__, NAME, parse_args, run_backend, render_markdown, argv)


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _speedup(result, key):
    thawed, frozen = (result["modes"].get(mode, {}).get(key) for mode in MODES)
    return thawed / frozen if thawed and frozen else None


def _row_cell(backend, result, row):
    """One line of :func:`rows_table`: ``row`` (``"user"`` or ``"recipe"``) of ``backend``."""
    key = f"{row}_step_s"
    thawed, frozen = (result["modes"][mode] for mode in MODES)
    speedup = _speedup(result, key)
    prefix = "" if row == "user" else "recipe_"
    return {
        "backend": backend,
        "row": f"`{row}`",
        "path": ROW_PATHS[row],
        "jit": thawed[f"{prefix}jit_compile"],
        "dw": "/".join(thawed[f"{prefix}paths"]),
        "thawed": f"{thawed[key]:.3f}",
        "frozen": f"{frozen[key]:.3f}",
        "epoch": f"{thawed['user_epoch_s']:.2f} / {frozen['user_epoch_s']:.2f}" if row == "user" else "",
        "x": " / ".join(f"{m[key] / m['recipe_step_s']:.2f}" for m in (thawed, frozen)),
        "speedup": f"{speedup:.2f}x" if speedup else "",
    }


def rows_table(data):
    """Per backend and row (``user``, ``recipe``): thawed and frozen s/step, and the frozen speed-up."""
    from keras_structinit.utils.reporting import format_table

    cells = [_row_cell(backend, r, row) for backend, r in per_backend(data) for row in ROW_PATHS]
    return format_table(
        cells,
        [
            ("Backend", lambda c: c["backend"]),
            ("Row", lambda c: c["row"]),
            ("Path it times", lambda c: c["path"]),
            ("jit_compile (resolved)", lambda c: c["jit"]),
            ("Depthwise path", lambda c: c["dw"]),
            ("Thawed s/step", lambda c: c["thawed"], "", "right"),
            ("Frozen s/step", lambda c: c["frozen"], "", "right"),
            ("s/epoch (thawed / frozen)", lambda c: c["epoch"], "", "right"),
            ("x recipe (thawed / frozen)", lambda c: c["x"], "", "right"),
            ("Frozen speed-up", lambda c: c["speedup"], "", "right"),
        ],
    )


def breakdown_table(data):
    """Per backend and mode: where an epoch of the user's path goes."""
    from keras_structinit.utils.reporting import format_table

    def other(result):
        o = result.get("other_compile")
        if not o:
            return ""
        if "error" in o:
            return f"jit_compile={o['jit_compile']}: {o['error']}"
        return f"jit_compile={o['jit_compile']}: {o['step_s']:.3f} s/step, {'/'.join(o['paths'])}"

    rows = [(backend, mode, r["modes"][mode]) for backend, r in per_backend(data) for mode in MODES]
    return format_table(
        rows,
        [
            ("Backend", lambda t: t[0]),
            ("Mode", lambda t: t[1]),
            ("User epoch s", lambda t: t[2]["user_epoch_s"], ".3f", "right"),
            ("Progress bar + History s", lambda t: t[2]["callbacks_s"], ".3f", "right"),
            ("Per-fit set-up s", lambda t: t[2]["fit_setup_s"], ".3f", "right"),
            ("Step inside fit s", lambda t: t[2]["fit_step_s"], ".3f", "right"),
            ("Recipe step s", lambda t: t[2]["recipe_step_s"], ".3f", "right"),
            ("Data adapter s/epoch", lambda t: t[2]["data_epoch_s"], ".3f", "right"),
            ("Other compile mode", lambda t: other(t[2])),
        ],
    )


def goals(result):
    """``{mode: user step / recipe step}``, the user's frozen speed-up, and whether both goals hold."""
    ratios = {
        mode: result["modes"][mode]["user_step_s"] / result["modes"][mode]["recipe_step_s"] for mode in MODES
    }
    speedup = _speedup(result, "user_step_s")
    met = max(ratios.values()) <= GOALS["x recipe"] and speedup >= GOALS["frozen_speedup"]
    return ratios, speedup, met


def goals_table(data):
    from keras_structinit.utils.reporting import format_table

    cells = []
    for backend, r in per_backend(data):
        ratios, speedup, met = goals(r)
        cells.append((backend, ratios, speedup, met))
    return format_table(
        cells,
        [
            ("Backend", lambda c: c[0]),
            ("User / recipe step (thawed / frozen)", lambda c: " / ".join(f"{v:.2f}" for v in c[1].values())),
            (
                f"<= {GOALS['x recipe']}x",
                lambda c: "yes" if max(c[1].values()) <= GOALS["x recipe"] else "no",
            ),
            ("User frozen speed-up", lambda c: f"{c[2]:.2f}x"),
            (f">= {GOALS['frozen_speedup']}x", lambda c: "yes" if c[2] >= GOALS["frozen_speedup"] else "no"),
        ],
    )


def processes_table(data):
    from keras_structinit.utils.reporting import format_table

    def software(r):
        v = r["versions"]
        return f"Keras {v['keras']}, {v['backend']} {v['backend_version']}"

    return format_table(
        per_backend(data),
        [
            ("Backend", lambda t: t[0]),
            ("Date (UTC)", lambda t: t[1]["date"]),
            ("Software", lambda t: software(t[1])),
            ("Wall s", lambda t: t[1]["wall_s"], ".0f", "right"),
            (
                "1-min load avg (start / end)",
                lambda t: f"{t[1]['loadavg_1min']['start']:.2f} / {t[1]['loadavg_1min']['end']:.2f}",
            ),
        ],
    )


def render_markdown(data):
    from keras_structinit.utils.reporting import describe_machine

    results = per_backend(data)
    if not results:
        return "# The user's path beside the recipe path\n\nNo results.\n"
    c, r0 = results[0][1]["config"], results[0][1]
    lines = [
        "# The user's path beside the recipe path",
        "",
        f"`benchmarks/user_path.py` (see its docstring; issue 78). ConvMixer-{c['dim']}/{c['depth']} "
        f"(k {c['kernel_size']}, patch {c['patch_size']}, {'x'.join(map(str, c['input_shape']))} inputs), "
        f"batch {c['batch']}, {c['images']} images an epoch; medians of {r0['rounds']} round-robin rounds "
        "after a warm-up of each. Which path each row times:",
        "",
        *(f"* `{row}`: {text}." for row, text in ROW_PATHS.items()),
        "",
        "*x recipe*: the row's step over the recipe row's, same backend, mode and rounds. *Frozen*: "
        "`freeze_spatial` (the depthwise kernels not trainable).",
        "",
        describe_machine(r0["machine"]),
        "",
        rows_table(data),
        "",
        "## Where the user's epoch goes",
        "",
        "*Progress bar + History*: `fit`'s default epoch less `verbose=0`'s. *Step inside fit* and "
        "*Per-fit set-up*: slope and intercept through a one-batch and a full `verbose=0` epoch. "
        "*Data adapter*: Keras' adapter and the backend's iterator alone, one epoch. *Other compile "
        'mode*: the `jit_compile` value `"auto"` did not pick, with the depthwise path under it.',
        "",
        breakdown_table(data),
        "",
        "## Issue 78's goals",
        "",
        f"The user's step within {GOALS['x recipe']}x of the recipe's, thawed and frozen, and the user's "
        f"frozen step at least {GOALS['frozen_speedup']}x faster than the thawed one.",
        "",
        goals_table(data),
        "",
        processes_table(data),
        "",
    ]
    return "\n".join(lines)


def headline(name, data):
    """The suite report's line: per backend the user's thawed / frozen step, x the recipe's."""
    parts = []
    for backend, r in per_backend(data):
        ratios, speedup, _ = goals(r)
        thawed, frozen = (r["modes"][mode]["user_step_s"] for mode in MODES)
        parts.append(
            f"{backend} {thawed:.3f} / {frozen:.3f} s ({ratios['thawed']:.2f}x / {ratios['frozen']:.2f}x "
            f"recipe, frozen {speedup:.2f}x)"
        )
    return "user's path (compile defaults, plain fit) step thawed / frozen: " + "; ".join(parts), None


SUITE = {
    "cpu": (
        # A timing entry: run alone (no run_key), every backend in one entry.
        Benchmark(
            name=NAME,
            script="user_path.py",
            args=("--all-backends",),
            title="ConvMixer-128/6 (k 9, patch 2, batch 128): the user's path (compile defaults, plain fit) "
            "beside the recipe's train_on_batch step, thawed and frozen, every backend, with a breakdown",
            paper="no timing in the papers; issue 78's bar: the user's step within 1.3x of the recipe's, "
            "frozen >= 1.2x faster",
            minutes=10,
            estimated=True,
            depends=("benchmarks/torch_reference.py",),
        ),
    ),
}


if __name__ == "__main__":
    main()
