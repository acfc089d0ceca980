#!/usr/bin/env python
"""Wall time of covariance-initializing the depthwise kernels of a ConvMixer.

Compares ``keras_structinit.apply_conv_covariance`` with the reference
procedure of Trockman et al. (ICLR 2023): for every depthwise layer, draw the
filters with ``numpy.random.multivariate_normal`` (default SVD method) from
``conv_covariance(k, sigma_i)`` and, in the "+ assign" variant, write them into
the layer's kernel variable. The model (ConvMixer-1536/24, k=9, by default) is
built once and not timed; every method is warmed up once and then timed
``--repeats`` times.

Four measurements per backend:

* ``reference_sampling``: covariance + ``multivariate_normal`` + reshape,
  24 layers, nothing assigned;
* ``reference_sampling_assign``: the same plus ``variable.assign``;
* ``apply_conv_covariance_cold``: the package call with its per-sigma factor
  cache cleared before each run (it recomputes covariance + eigh, like the
  reference recomputes covariance + SVD);
* ``apply_conv_covariance``: the package call as used in practice (factors
  cached after the warm-up).

After timing, the kernels written by ``apply_conv_covariance`` are checked
against the covariance they should follow (centre-pixel variance per layer).

Usage::

    python -m benchmarks.init_cost                     # current KERAS_BACKEND
    python -m benchmarks.init_cost --backend jax
    python -m benchmarks.init_cost --all-backends      # one subprocess each

Results are merged per backend into ``<out>/init_cost.json`` and rendered to
``<out>/init_cost.md`` (``<out>`` defaults to ``benchmarks/results``).
"""

from __future__ import annotations

import datetime
import os
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.bench_utils import (
    BACKENDS,
    LOCAL_RESULTS,
    Benchmark,
    backend_parser,
    loadavg_cell,
    per_backend,
    run_per_backend,
    summarize,
)
from keras_structinit.utils.reporting import describe_machine, format_table, machine_info, versions

METHODS = {
    "reference_sampling": "reference: multivariate_normal only",
    "reference_sampling_assign": "reference: multivariate_normal + assign",
    "apply_conv_covariance_cold": "apply_conv_covariance, factor cache cleared",
    "apply_conv_covariance": "apply_conv_covariance",
}
BASELINE = "reference_sampling_assign"


def parse_args(argv=None):
    parser = backend_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="cifar-p2")
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--depth", type=int, default=24)
    parser.add_argument("--kernel-size", type=int, default=9)
    parser.add_argument(
        "--out", type=Path, default=LOCAL_RESULTS, help="directory for init_cost.json / init_cost.md"
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


# ----------------------------------------------------------------------------
# Environment
# ----------------------------------------------------------------------------
def time_runs(fn, repeats, setup=lambda: None, sync=lambda: None):
    """One untimed warm-up, then ``repeats`` timed runs of ``fn(); sync()``."""
    setup()
    fn()
    sync()
    times = []
    for _ in range(repeats):
        setup()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return summarize(times)


def reference_init(kernels, sigmas, kernel_size, assign):
    """The paper's procedure: per layer, SVD-based multivariate_normal draws."""
    from keras_structinit.covariance import conv_covariance

    n = kernel_size * kernel_size
    for kernel, sigma in zip(kernels, sigmas, strict=True):
        channels = kernel.shape[-2] * kernel.shape[-1]
        filters = np.random.multivariate_normal(
            np.zeros(n), conv_covariance(kernel_size, sigma), size=channels
        )  # (channels, k*k), each row a row-major flattened filter
        value = filters.T.reshape(kernel.shape).astype(np.float32)
        if assign:
            kernel.assign(value)


# ----------------------------------------------------------------------------
# Correctness check (not a timing)
# ----------------------------------------------------------------------------
def variance_check(kernels, sigmas, kernel_size):
    """Empirical vs expected per-pixel variance of the sampled filters.

    The expected covariance is the PSD-handled ``Q |Lambda| Q^T`` that
    ``psd="abs"`` samples. Filters have zero mean, so the variance estimate is
    the mean of squares over the N filters, with standard error var*sqrt(2/N).
    """
    import keras

    from keras_structinit.covariance import conv_covariance, psd_project

    centre = (kernel_size * kernel_size) // 2
    layers = []
    for i, (kernel, sigma) in enumerate(zip(kernels, sigmas, strict=True)):
        w = keras.ops.convert_to_numpy(kernel).astype(np.float64)
        filters = w.reshape(kernel_size * kernel_size, -1)
        empirical = np.mean(filters**2, axis=1)
        expected = np.diag(psd_project(conv_covariance(kernel_size, sigma), "abs"))
        std_err = expected[centre] * np.sqrt(2.0 / filters.shape[1])
        layers.append(
            {
                "layer": i + 1,
                "sigma": sigma,
                "expected_centre_var": float(expected[centre]),
                "empirical_centre_var": float(empirical[centre]),
                "centre_z": float((empirical[centre] - expected[centre]) / std_err),
                "mean_pixel_var_ratio": float(np.mean(empirical / expected)),
            }
        )
    max_z = max(abs(layer["centre_z"]) for layer in layers)
    return {
        "num_filters_per_layer": int(filters.shape[1]),
        "max_abs_centre_z": max_z,
        "passed": bool(max_z < 4.0),
        "layers": layers,
    }


# ----------------------------------------------------------------------------
# One backend
# ----------------------------------------------------------------------------
def run_backend(args):
    import keras

    from keras_structinit import apply_conv_covariance
    from keras_structinit.covariance import PRESETS, depth_fractions, variance_schedule
    from keras_structinit.covariance.initializers import _cached_factor
    from keras_structinit.models import convmixer

    backend = keras.backend.backend()
    load_start = os.getloadavg()[0]
    model = convmixer(args.dim, args.depth, kernel_size=args.kernel_size)
    kernels = [layer.kernel for layer in model.layers if isinstance(layer, keras.layers.DepthwiseConv2D)]
    sigmas = [variance_schedule(d, *PRESETS[args.preset]) for d in depth_fractions(len(kernels))]

    def sync():  # TF and torch on CPU run eagerly
        return None

    if backend == "jax":
        import jax

        def sync():
            return jax.block_until_ready([k.value for k in kernels])

    # The closed-form covariance is slightly indefinite, so numpy warns on
    # every draw; the check itself still runs (as in the reference code).
    warnings.filterwarnings("ignore", message="covariance is not", category=RuntimeWarning)
    np.random.seed(args.seed)

    def apply():
        apply_conv_covariance(model, preset=args.preset, seed=args.seed)

    timings = {}
    for name, fn, setup in (
        ("reference_sampling", lambda: reference_init(kernels, sigmas, args.kernel_size, False), None),
        ("reference_sampling_assign", lambda: reference_init(kernels, sigmas, args.kernel_size, True), None),
        ("apply_conv_covariance_cold", apply, _cached_factor.cache_clear),
        ("apply_conv_covariance", apply, None),
    ):
        timings[name] = time_runs(fn, args.repeats, setup or (lambda: None), sync)
        print(f"[{backend}] {name}: median {timings[name]['median_s']:.4f} s", flush=True)

    apply()
    check = variance_check(kernels, sigmas, args.kernel_size)
    print(
        f"[{backend}] variance check: max |z| = {check['max_abs_centre_z']:.2f} "
        f"({'passed' if check['passed'] else 'FAILED'})",
        flush=True,
    )

    return backend, {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        # 1-minute load average: other processes on the machine skew timings.
        "loadavg_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "software": versions(),
        "config": {
            "model": f"ConvMixer-{args.dim}/{args.depth}",
            "kernel_size": args.kernel_size,
            "kernel_shape": list(kernels[0].shape),
            "num_depthwise_layers": len(kernels),
            "preset": args.preset,
            "seed": args.seed,
            "repeats": args.repeats,
        },
        "timings": timings,
        "variance_check": check,
    }


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------
def _timings_table(results):
    """One row per backend and method: median, mean ± std, speed-up over the baseline."""
    rows = [
        (backend, label, entry["timings"][name], entry["timings"][BASELINE]["median_s"])
        for backend, entry in results.items()
        for name, label in METHODS.items()
    ]
    return format_table(
        rows,
        [
            ("Backend", lambda r: r[0]),
            ("Method", lambda r: r[1]),
            ("Median (s)", lambda r: r[2]["median_s"], ".4f", "right"),
            ("Mean ± std (s)", lambda r: f"{r[2]['mean_s']:.4f} ± {r[2]['std_s']:.4f}", "", "right"),
            (
                "Speed-up vs reference + assign",
                lambda r: r[3] / r[2]["median_s"],
                lambda v: f"{v:.1f}x",
                "right",
            ),
        ],
    )


def _software_table(results):
    """One row per backend: date, versions, repeats, load."""
    return format_table(
        results.items(),
        [
            ("Backend", lambda r: r[0]),
            ("Date (UTC)", lambda r: r[1]["date"]),
            ("Python", lambda r: r[1]["software"]["python"]),
            ("NumPy", lambda r: r[1]["software"]["numpy"]),
            ("Keras", lambda r: r[1]["software"]["keras"]),
            ("Backend version", lambda r: r[1]["software"]["backend_version"]),
            ("Repeats", lambda r: r[1]["config"]["repeats"], "", "right"),
            ("1-min load avg (start / end)", lambda r: loadavg_cell(r[1]["loadavg_1min"])),
        ],
    )


def _check_table(results):
    """One row per backend: the variance check's summary."""
    return format_table(
        results.items(),
        [
            ("Backend", lambda r: r[0]),
            ("Max abs z (centre)", lambda r: r[1]["variance_check"]["max_abs_centre_z"], ".2f", "right"),
            (
                "Mean pixel ratio (over layers)",
                lambda r: np.mean(
                    [layer["mean_pixel_var_ratio"] for layer in r[1]["variance_check"]["layers"]]
                ),
                ".4f",
                "right",
            ),
            ("Result", lambda r: "pass" if r[1]["variance_check"]["passed"] else "FAIL"),
        ],
    )


def _layers_table(results):
    """Per layer: sigma, expected and (one column per backend) empirical centre variance."""
    columns = [
        ("Layer", lambda rows: rows[0]["layer"], "", "right"),
        ("sigma", lambda rows: rows[0]["sigma"], ".4f", "right"),
        ("Expected centre var", lambda rows: rows[0]["expected_centre_var"], ".4f", "right"),
    ]
    columns += [
        (backend, lambda rows, i=i: rows[i]["empirical_centre_var"], ".4f", "right")
        for i, backend in enumerate(results)
    ]
    per_backend = [entry["variance_check"]["layers"] for entry in results.values()]
    return format_table(zip(*per_backend, strict=False), columns)


def render_markdown(data):
    results = {b: data["results"][b] for b in BACKENDS if b in data["results"]}
    first = next(iter(results.values()))
    cfg, machine = first["config"], first["machine"]
    lines = [
        "# Initialization cost: covariance init of ConvMixer depthwise kernels",
        "",
        (
            f"Model {cfg['model']}, {cfg['num_depthwise_layers']} depthwise kernels of "
            f"shape {tuple(cfg['kernel_shape'])}, preset `{cfg['preset']}`, seed "
            f"{cfg['seed']}. Model built once (untimed); each method warmed up once, "
            f"then timed {cfg['repeats']} times. Generated by `benchmarks/init_cost.py`."
        ),
        "",
        describe_machine(machine),
        "",
        _timings_table(results),
        "",
        (
            "Reference = for each layer, `numpy.random.multivariate_normal(zeros(k*k), "
            "conv_covariance(k, sigma_i), size=C)` (SVD method, as in the paper's code), "
            'reshaped to the Keras kernel layout; "+ assign" also writes it with '
            "`variable.assign`. `apply_conv_covariance` always assigns. The "
            '"factor cache cleared" row recomputes every layer\'s covariance factor '
            "(eigh), as a first call in a fresh process would. Wall-clock times; "
            "other load on the machine and CPU thread pools (BLAS, OpenMP) affect "
            "them, so the load average is recorded below."
        ),
        "",
        "## Software",
        "",
        _software_table(results),
        "",
        "## Check: variance of the sampled filters (not a timing)",
        "",
        (
            "After timing, `apply_conv_covariance` is run once more and each layer's "
            "empirical centre-pixel variance (mean of squares over its "
            f"{first['variance_check']['num_filters_per_layer']} filters) is compared "
            "with the centre diagonal entry of the sampled covariance "
            '(`psd_project(conv_covariance(k, sigma_i), "abs")`; the raw closed form '
            "gives exactly 0.5 there). z = (empirical - expected) / (expected * sqrt(2/N)); "
            'the check passes when every |z| < 4. "Mean pixel ratio" is the average '
            "over all k*k pixels of empirical / expected variance."
        ),
        "",
        _check_table(results),
        "",
        _layers_table(results),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    run_per_backend(__file__, "init_cost", parse_args, run_backend, render_markdown, argv)


# ----------------------------------------------------------------------------
# The suite report (benchmarks/report.py): headline, verdict and figures
# ----------------------------------------------------------------------------
def _init_cost(data):
    parts = [
        f"{backend} {entry['timings']['apply_conv_covariance']['median_s']:.3f} s "
        f"(reference + assign {entry['timings']['reference_sampling_assign']['median_s']:.3f} s)"
        for backend, entry in per_backend(data)
    ]
    return "apply_conv_covariance, ConvMixer-1536/24: " + "; ".join(parts), None


def headline(name, data):
    """The suite report's line for the entry ``name``: ``(our numbers, verdict)``, the verdict
    "yes", "no" or "within noise" on the paper's direction, or ``None``."""
    return _init_cost(data)


# ----------------------------------------------------------------------------
# This script's entries in the replication suites (collected by benchmarks/suite.py)
# ----------------------------------------------------------------------------
SUITE = {
    "cpu": (
        Benchmark(
            name="init_cost",
            script="init_cost.py",
            args=("--all-backends",),
            title="Initialization cost: ConvCovariance of ConvMixer-1536/24's depthwise kernels vs the "
            "paper's multivariate_normal sampling",
            paper="no number in the paper (its listing samples each layer with numpy's SVD-based "
            "multivariate_normal)",
            minutes=3,
        ),
    ),
}


if __name__ == "__main__":
    main()
