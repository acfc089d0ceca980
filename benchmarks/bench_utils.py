"""Helpers shared by the benchmark scripts: statistics, output, the per-backend runner.

Machine facts and versions come from :mod:`keras_structinit.utils.reporting`
(``machine_info``, ``versions``); import it only after ``KERAS_BACKEND`` is set.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import report_stats
from keras_structinit.utils import stats

BACKENDS = ("tensorflow", "jax", "torch")
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: Where a script run on its own writes by default (ignored by git): the suites write to results/<suite>.
LOCAL_RESULTS = RESULTS_DIR / "local"
# The shared CIFAR-10 training split beside the repository (not part of it); where that is absent
# (a lent GPU: only the working tree travels), the copy scripts/gpu_bundle.sh puts in .data/.
_CIFAR10_ZIP = "cifar10-train-jpeg.zip"
_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / _CIFAR10_ZIP
_BUNDLED = Path(__file__).resolve().parents[1] / ".data" / _CIFAR10_ZIP
SHARED_CIFAR10 = _SHARED if _SHARED.exists() or not _BUNDLED.exists() else _BUNDLED
#: An environment variable: a Unix time by which a training benchmark stops (scripts/gpu_quick.sh sets it).
DEADLINE_VARIABLE = "BENCH_DEADLINE"
#: The exit status of a benchmark that stopped at the deadline with work left (its finished runs
#: saved): the runner keeps them but does not mark the entry finished.
DEADLINE_EXIT = 75
WARMUP = 2  # untimed calls before the timed ones
MIN_REPEATS = 3  # timed calls a time budget may not cut below


#: Where :func:`data_provenance` keeps the digests it computed, by path, mtime and size.
DIGEST_CACHE = LOCAL_RESULTS / "digests.json"
#: Paths (relative to the repository root) whose changes leave a result's code clean: what the
#: benchmarks themselves write while a suite runs (the runner rebuilds the REPORT and, from the
#: same results, the evidence table ``--init auto`` reads, after each entry).
NOT_CODE = ("benchmarks/results", "benchmarks/REPORT.md", "keras_structinit/core/evidence.json")


# ----------------------------------------------------------------------------
# Provenance: which code and which data a result came from (not which machine path)
# ----------------------------------------------------------------------------
def package_root():
    """The folder that holds the imported ``keras_structinit`` package (not imported here), or
    ``None`` where it cannot be found."""
    spec = importlib.util.find_spec("keras_structinit")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).resolve().parent.parent


def git(root, *args):
    """The stripped stdout of ``git -C root args``, or ``None`` where git is missing or fails."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def _code_at(root):
    commit = git(root, "rev-parse", "HEAD")
    if commit is None:
        return None
    status = git(root, "status", "--porcelain", "--", ".", *(f":(exclude){p}" for p in NOT_CODE))
    return {"commit": commit, "dirty": status is None or bool(status)}


#: Set by the suite runner for a resumed entry (``benchmarks/run.py``, ``resumed_code``): the commit
#: its earlier runs recorded, where none of the entry's dependencies changed since.
SAME_CODE_ENV = "STRUCTINIT_BENCH_SAME_CODE_AS"


def code_provenance(root=None):
    """``{"commit": ..., "dirty": bool}``: the git commit of the checkout that holds the package
    (``root``, default :func:`package_root`) and whether its tree differed from it (tracked or
    untracked changes outside :data:`NOT_CODE`); ``None`` without git. Computed once per process
    and root: the code a process runs is the code it imported. A clean tree run by the suite
    runner to resume an entry whose code has not changed since its earlier runs' commit also
    records that commit, ``"same_code_as"`` (:data:`SAME_CODE_ENV`): the runs pair with them."""
    root = package_root() if root is None else Path(root).resolve()
    found = None if root is None else _code_at(root)
    if found is None:
        return None
    found, same = dict(found), os.environ.get(SAME_CODE_ENV)
    if same and same != found["commit"] and not found["dirty"]:
        found["same_code_as"] = same
    return found


def _load_digests():
    try:
        return json.loads(DIGEST_CACHE.read_text())
    except (OSError, ValueError):
        return {}


def file_sha256(path):
    """The sha256 (hex) of the file at ``path``, cached in :data:`DIGEST_CACHE` under its resolved
    path, mtime and size, so that a large data file is read once, not per process."""
    path = Path(path).resolve()
    stat = path.stat()
    key = f"{path}|{stat.st_mtime_ns}|{stat.st_size}"
    cache = _load_digests()
    if key in cache:
        return cache[key]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    cache = _load_digests()  # another process may have added entries meanwhile
    cache[key] = digest.hexdigest()
    try:
        DIGEST_CACHE.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=DIGEST_CACHE.parent, delete=False, suffix=".tmp") as tmp:
            json.dump(cache, tmp, indent=0, sort_keys=True)
        os.replace(tmp.name, DIGEST_CACHE)
    except OSError:  # a read-only checkout: the digest is still right, only not cached
        pass
    return cache[key]


def data_provenance(path):
    """How a result records the data at ``path``: ``{"name", "sha256"}``, its name and a digest of
    its content (for a folder, of its files' relative paths and digests), never where it lies;
    ``{"name"}`` alone where ``path`` does not exist; ``None`` for ``None``."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"data_provenance: path must be a str or path; got {type(path).__name__}")
    path = Path(path)
    name = path.resolve().name if path.exists() else path.name
    if path.is_file():
        return {"name": name, "sha256": file_sha256(path)}
    if path.is_dir():
        digest = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\n".encode())
        return {"name": name, "sha256": digest.hexdigest()}
    return {"name": name}


def data_label(recorded):
    """A recorded ``data`` entry (:func:`data_provenance`'s dict, or an older path string) as
    text: the name, and the digest's first 12 hex digits when there is one."""
    if isinstance(recorded, dict):
        digest = recorded.get("sha256")
        return recorded.get("name", "?") + (f" (sha256 {digest[:12]})" if digest else "")
    return Path(str(recorded)).name


def stamp_code(record):
    """``record`` with ``code`` set to :func:`code_provenance` (in place; returned too)."""
    record["code"] = code_provenance()
    return record


# ----------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------
def summarize(times):
    times = np.asarray(times)
    return {
        "times_s": [round(float(t), 6) for t in times],
        "median_s": float(np.median(times)),
        "mean_s": float(times.mean()),
        "std_s": float(times.std(ddof=1)) if times.size > 1 else 0.0,
    }


def time_calls(fn, repeats, budget=None, sync=lambda out: out, warmup=WARMUP):
    """``warmup`` untimed calls of ``sync(fn())``, then up to ``repeats`` timed.

    With a ``budget``, the number of timed calls is cut so they fit in ``budget``
    seconds (as estimated from the last warm-up), but not below
    ``min(MIN_REPEATS, repeats)``.
    Returns the summary (with ``repeats`` and the warm-up times ``warmup_s``)
    and the last output.
    """
    warmup_times, out = [], None
    for _ in range(warmup):
        start = time.perf_counter()
        out = sync(fn())
        warmup_times.append(time.perf_counter() - start)
    n = repeats
    if budget is not None and warmup_times:
        n = max(min(MIN_REPEATS, repeats), min(repeats, int(budget // max(warmup_times[-1], 1e-9))))
    times = []
    for _ in range(n):
        start = time.perf_counter()
        out = sync(fn())
        times.append(time.perf_counter() - start)
    return {**summarize(times), "repeats": n, "warmup_s": [round(t, 6) for t in warmup_times]}, out


def mean_std(values, spec=".2f"):
    """``mean ± std`` (ddof 1) over seeds; a single value is shown alone, not as ``± 0``."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return f"{values[0]:{spec}}"
    return f"{values.mean():{spec}} ± {values.std(ddof=1):{spec}}"


def timing_cell(stats, cap, spec, scale=1.0):
    """``stats``' median (times ``scale``) formatted with ``spec``, marked ``*`` when it
    has fewer than ``cap`` timed calls (cut by the time budget)."""
    capped = "*" if stats["repeats"] < cap else ""
    return f"{stats['median_s'] * scale:{spec}}{capped}"


def loadavg_cell(loadavg):
    """``"start / end"`` of a recorded 1-minute load average."""
    return f"{loadavg['start']:.2f} / {loadavg['end']:.2f}"


def runs_table(rows, part_header, columns):
    """The Markdown table of a benchmark's runs.

    ``rows``: tuples ``(backend, part, software, entry)``, where ``software``
    holds ``keras`` and ``backend_version`` and ``entry`` has ``date`` and
    ``loadavg_1min``. ``columns`` (``format_table`` columns of such a tuple)
    go between the versions and the load average.
    """
    from keras_structinit.utils.reporting import format_table  # no keras import

    return format_table(
        rows,
        [
            ("Backend", lambda r: r[0]),
            (part_header, lambda r: r[1]),
            ("Date (UTC)", lambda r: r[3]["date"]),
            ("Keras", lambda r: r[2]["keras"]),
            ("Backend version", lambda r: r[2]["backend_version"]),
            *columns,
            ("1-min load avg (start / end)", lambda r: loadavg_cell(r[3]["loadavg_1min"])),
        ],
    )


# ----------------------------------------------------------------------------
# Memory beside time (issue 62): the peak memory of measured steps
# ----------------------------------------------------------------------------
#: Bytes per GB in the tables (decimal, as ``machine_info``'s RAM is not: these are small numbers).
GB = 1e9
#: The column a speed table shows :func:`memory_cell` under.
MEMORY_HEADER = "Peak RSS GB (+ step growth)"
#: What :class:`StepMemory` measures, in the words of a results page.
MEMORY_NOTE = (
    "*Peak RSS GB*: the process' peak resident set (`ru_maxrss`: the framework and all that ran "
    "before in the same process included) when the measured steps ended, and in brackets how far "
    "the resident set rose above its size before them, at its peak during them (on Linux the "
    "kernel's peak mark, reset before the steps, so that this is the steps' own growth). On a GPU "
    "the device's peak allocation instead, marked GPU (torch `max_memory_allocated` and "
    "TensorFlow's peak, reset before the steps; JAX `peak_bytes_in_use`, which cannot be reset). "
    "Rows recorded before issue 62 have none."
)
_peak_seen = 0  # the process' peak resident set before StepMemory last reset the kernel's mark


def rss_bytes():
    """The current resident set of this process in bytes (``/proc/self/statm``); ``None``
    where there is no ``/proc``."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _marked_peak_bytes():
    """The kernel's peak resident set mark (``VmHWM``) in bytes, or ``None``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss_bytes():
    """The process' peak resident set in bytes: ``ru_maxrss`` (KiB on Linux, bytes on macOS),
    or the peak before :class:`StepMemory` last reset the kernel's mark where that was higher."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return max(peak, _peak_seen)


def _reset_rss_peak():
    """Sets the kernel's peak mark to the current resident set (Linux: ``5`` written to
    ``/proc/self/clear_refs``; :func:`peak_rss_bytes` keeps the peak before); ``True`` where it did."""
    global _peak_seen
    _peak_seen = peak_rss_bytes()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return _marked_peak_bytes() is not None


def device_memory(backend):
    """``(reset, peak_bytes)`` of the backend's GPU allocator, or ``None`` when running on CPU.
    JAX's peak cannot be reset: it holds what earlier work in the process used."""
    if backend == "torch":
        import torch

        if not torch.cuda.is_available():
            return None
        return torch.cuda.reset_peak_memory_stats, torch.cuda.max_memory_allocated
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform == "cpu":
            return None
        return (lambda: None), (lambda: (device.memory_stats() or {}).get("peak_bytes_in_use"))
    import tensorflow as tf

    if not tf.config.list_logical_devices("GPU"):
        return None
    return (
        lambda: tf.config.experimental.reset_memory_stats("GPU:0"),
        lambda: tf.config.experimental.get_memory_info("GPU:0")["peak"],
    )


class StepMemory:
    """The memory of the steps run inside ``with StepMemory(backend) as memory:``; after the
    block ``memory.record`` is a dict (a speed row's ``memory`` field):

    * ``kind``: ``"cpu_rss"``, or ``"gpu"`` where the backend computes on a GPU;
    * ``rss_before_bytes``: the resident set when the block began (``None`` without ``/proc``);
    * ``rss_peak_bytes``: the process' peak resident set when it ended (:func:`peak_rss_bytes`);
    * ``rss_step_peak_bytes``: the peak resident set during the block (the kernel's mark, reset
      at its start); ``None`` where it cannot be reset (then growth is taken from the process peak);
    * ``rss_growth_bytes``: that peak minus ``rss_before_bytes``;
    * ``device_peak_bytes``: the GPU allocator's peak (reset at the start, except JAX's), or ``None``.

    ``scoped=False`` leaves the kernel's mark alone (``ru_maxrss`` then stays the process peak)."""

    def __init__(self, backend, scoped=True):
        self.backend, self.scoped, self.record = backend, scoped, None

    def __enter__(self):
        self._device = device_memory(self.backend)
        if self._device:
            self._device[0]()
        self._scoped = self.scoped and _reset_rss_peak()
        self._before = rss_bytes()
        return self

    def __exit__(self, *exc):
        step_peak = _marked_peak_bytes() if self._scoped else None
        peak = peak_rss_bytes()
        device_peak = self._device[1]() if self._device else None
        before = self._before
        if step_peak is not None and before is not None:
            # The kernel updates its mark lazily (other threads may allocate between the reset and
            # the reading before): the block's peak is at least its start.
            step_peak = max(step_peak, before)
        self.record = {
            "kind": "gpu" if self._device else "cpu_rss",
            "rss_before_bytes": before,
            "rss_peak_bytes": peak,
            "rss_step_peak_bytes": step_peak,
            "rss_growth_bytes": None if before is None else (step_peak or peak) - before,
            "device_peak_bytes": None if device_peak is None else int(device_peak),
        }
        return False


def memory_cell(record):
    """A table cell of a :class:`StepMemory` record: on CPU the peak resident set and, in
    brackets, the steps' growth, in GB; on a GPU the device peak in GB, marked GPU; ``""``
    without a record (rows measured before issue 62)."""
    if not record:
        return ""
    if record.get("kind") == "gpu":
        peak = record.get("device_peak_bytes")
        return "? GPU" if peak is None else f"{peak / GB:.2f} GPU"
    growth = record.get("rss_growth_bytes")
    return f"{record['rss_peak_bytes'] / GB:.2f}" + ("" if growth is None else f" (+{growth / GB:.2f})")


def memory_column(measured, modes):
    """A ``format_table`` column of :func:`memory_cell` per mode, ``" / "``-joined, headed
    :data:`MEMORY_HEADER` and the modes: ``measured(row, mode)`` is a mode's measurement (a
    dict that may hold a ``memory`` record)."""
    return (
        f"{MEMORY_HEADER}: {' / '.join(modes)}",
        lambda r: " / ".join(filter(None, (memory_cell(measured(r, m).get("memory")) for m in modes))),
        "",
        "right",
    )


# ----------------------------------------------------------------------------
# Running a benchmark: its command, its backends, its results
# ----------------------------------------------------------------------------
def script_command(script):
    """``(argv, cwd)`` that run the benchmark script at ``script`` again in a new process,
    as a module from the repository root (``python -m benchmarks.<name>``), so that its
    ``benchmarks.*`` imports resolve without a path edit."""
    script = Path(script).resolve()
    return [sys.executable, "-m", f"{script.parent.name}.{script.stem}"], script.parent.parent


def run_facts(machine, versions):
    """The sentence a training benchmark's Markdown opens with: the machine and the software."""
    from keras_structinit.utils.reporting import describe_machine, describe_software

    return f"{describe_machine(machine)} Software: {describe_software(versions)}."


def installed_backends(announce=True):
    """The backends of :data:`BACKENDS` whose package is installed, in that order; with
    ``announce``, prints one line per backend left out (a GPU image may hold JAX and PyTorch
    but no TensorFlow)."""
    found = [b for b in BACKENDS if importlib.util.find_spec(b) is not None]
    if announce:
        for backend in BACKENDS:
            if backend not in found:
                print(f"[{backend}] skipped: the {backend} package is not installed", flush=True)
    return found


def backend_parser(description):
    """An ``ArgumentParser`` with the ``--backend`` / ``--all-backends`` choice."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--backend", choices=BACKENDS, help="Keras backend (default: current KERAS_BACKEND)")
    which.add_argument(
        "--all-backends",
        action="store_true",
        help="run every installed backend, one subprocess each (a backend whose "
        "package is missing is skipped, with a line saying so)",
    )
    return parser


def save_results(out_dir, name, backend, entry, render_markdown):
    """Merges ``entry`` into ``<out_dir>/<name>.json`` under ``backend`` (parts of
    an earlier entry not re-run are kept; the backend's and the file's ``code`` become this
    process's, :func:`code_provenance`) and re-renders ``<name>.md``."""
    from keras_structinit.utils.io_utils import write_text  # after KERAS_BACKEND is set

    out_dir = Path(out_dir)
    json_path = out_dir / f"{name}.json"
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    data["benchmark"] = name
    old = data.setdefault("results", {}).get(backend, {})
    data["results"][backend] = stamp_code({**old, **entry})
    stamp_code(data)
    write_text(json_path, json.dumps(data, indent=2) + "\n")
    write_text(out_dir / f"{name}.md", render_markdown(data))
    print(f"[{backend}] wrote {json_path} and {name}.md", flush=True)


def run_per_backend(script, name, parse_args, run_backend, render_markdown, argv=None):
    """A benchmark's ``main``: with ``--all-backends`` re-runs ``script`` once per
    backend in a subprocess; otherwise sets ``KERAS_BACKEND`` (before Keras is
    imported), runs ``run_backend(args)`` and saves its entry."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.all_backends:
        rest = [a for a in argv if a != "--all-backends"]
        launch, root = script_command(script)
        for backend in installed_backends():
            subprocess.run([*launch, "--backend", backend, *rest], cwd=root, check=True)
        return
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    code_provenance()  # computed once per process: the code as this process starts, not as it ends
    backend, entry = run_backend(args)
    save_results(args.out, name, backend, entry, render_markdown)


def _shard(text):
    import argparse

    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N, e.g. 0/2; got {text!r}") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < N; got {text!r}")
    return index, count


def add_shard_argument(parser):
    """``--shard I/N``: a resumable benchmark runs only part ``I`` of ``N`` of its plan."""
    parser.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="I/N",
        help="run only runs I, I+N, I+2N, ... of the plan (0-based), so that N "
        "processes, each with its own --out, share it (default 0/1: all)",
    )


def shard_of(plan, shard):
    """The runs of ``plan`` (a list, in its fixed order) that belong to ``shard = (I, N)``, dealt
    back and forth (shards 0, 1, ..., N-1, then N-1, ..., 0, ...): a plan whose innermost loop
    alternates a cheap and a costly run (100 and 1000 iterations, a frozen and a learnable network)
    gives every shard its share of both, where dealing in turn gave one shard all the costly ones."""
    index, count = shard

    def owner(k):
        turn, place = divmod(k, count)
        return place if turn % 2 == 0 else count - 1 - place

    return [run for k, run in enumerate(plan) if owner(k) == index]


def add_eval_data_argument(parser):
    """``--eval-data PATH``: an external labelled set every trained model is also evaluated on."""
    parser.add_argument(
        "--eval-data",
        type=Path,
        default=None,
        help="also evaluate every trained model on this labelled set (.npz with uint8 "
        "x and int y, or an ImageFolder directory/.zip); not part of the config",
    )


def external_accuracy(model, normalization, source, batch_size=500):
    """Top-1 accuracy of ``model`` on the labelled images at ``source``, scaled as in training.

    ``normalization``: the ``{"mean", "std"}`` (per channel, [0, 1] units) a
    recipe stored in ``history.normalization``; images become
    ``(x / 255 - mean) / std``. Read with
    :func:`keras_structinit.datasets.load_labeled_images`.
    """
    from keras_structinit.datasets import load_labeled_images

    return split_accuracy(
        model, normalization, load_labeled_images(str(source), name="--eval-data"), batch_size
    )


# ----------------------------------------------------------------------------
# The fixed split of the shared CIFAR-10 training images (issue 79, point 5): a training part, a
# validation part (the only one choices are made on) and a test part that chose nothing
# ----------------------------------------------------------------------------
#: The seed of the test part's draw (the validation part is ``load_cifar``'s stratified 10%, seed 0:
#: the held-out images every default up to issue 79 was chosen on).
SPLIT_SEED = 79
#: The share of a set in its test part and in its validation part (each 10 %: of CIFAR-10's
#: 50,000 training images 5,000, 500 a class).
SPLIT_FRACTION = 0.1
#: :func:`index_digest` of the test part and of the validation part of the shared CIFAR-10 training
#: split (``cifar_split`` of its labels: 5,000 a class, class after class in source order, which
#: ``np.repeat(np.arange(10), 5000)`` reproduces; tests/test_benchmarks_bench_utils.py checks both).
CIFAR10_TEST_SHA256 = "b5c99020ddf8a62a1a00bd08f169b319145c0891d68fd6ebb163cb691d4818aa"
CIFAR10_VALIDATION_SHA256 = "ef70177e17d68f285ac0c6a99a9de35bbb865bc7b31ee207364dbab02772d79b"
#: The parts of :class:`DataSplit`, in the order a record lists them.
SPLIT_PARTS = ("train", "validation", "test")


def index_digest(indices):
    """The sha256 (hex) of ``indices`` sorted and written as decimal text joined by commas (``"3,17,42"``):
    the name of a set of images by their places in the source order, independent of their order."""
    text = ",".join(str(int(i)) for i in np.sort(np.asarray(indices, dtype=np.int64).reshape(-1)))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _stratified_pick(y, candidates, size, seed):
    """``size`` of ``candidates`` (indices into ``y``), the same share of each class (``round(size /
    len(candidates) * count)`` a class, as ``stratified_split`` rounds), drawn with ``default_rng(seed)``;
    sorted."""
    from keras_structinit.datasets import stratified_split

    if size == 0:
        return np.empty((0,), np.int64)
    _, pick = stratified_split(y[candidates], size / len(candidates), seed)
    return np.sort(candidates[pick]).astype(np.int64)


@dataclass(frozen=True, eq=False)
class DataSplit:
    """Three disjoint parts of a labelled set, as sorted ``int64`` indices into its source order.

    ``validation``: ``stratified_split(y, validation_size / N, seed=0)``'s held-out (for CIFAR-10 and
    5,000: the images every benchmark's held-out accuracy was measured on before issue 79, on which
    the defaults were chosen): choices are made here. ``test``: a stratified ``test_size`` of the
    rest, drawn with ``seed``: results are reported here, nothing is chosen on it. ``train``: the
    rest. Each part is named by :func:`index_digest`; :meth:`record` is what a result's config keeps.
    """

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    seed: int
    total: int

    def part(self, name):
        """The indices of the part ``name`` (one of :data:`SPLIT_PARTS`)."""
        if name not in SPLIT_PARTS:
            raise ValueError(f"part must be one of {SPLIT_PARTS}; got {name!r}")
        return getattr(self, name)

    def digest(self, name):
        """:func:`index_digest` of the part ``name``."""
        return index_digest(self.part(name))

    def record(self):
        """``{"total", "seed", "validation_rule", <part>: {"size", "sha256"}}``: the split a result ran on."""
        return {
            "total": self.total,
            "seed": self.seed,
            "validation_rule": "stratified_split(y, validation_size / total, seed=0)",
            "test_rule": f"stratified test_size of the rest, seed {self.seed}",
            **{name: {"size": len(self.part(name)), "sha256": self.digest(name)} for name in SPLIT_PARTS},
        }


def cifar_split(labels, *, test_size=None, validation_size=None, seed=SPLIT_SEED):
    """The fixed split (:class:`DataSplit`) of a labelled set whose labels, in source order, are
    ``labels``: a stratified validation part of ``validation_size`` (seed 0), a stratified test
    part of ``test_size`` of the rest (``seed``), and the training part (all that is left). Both
    sizes default to :data:`SPLIT_FRACTION` of the set (5,000 each of CIFAR-10's 50,000).

    The same labels give the same parts on every machine (NumPy's ``default_rng``): for the shared
    CIFAR-10 training split the test part's :func:`index_digest` is :data:`CIFAR10_TEST_SHA256`.
    """
    y = np.asarray(labels).reshape(-1)
    total = len(y)
    test_size = round(SPLIT_FRACTION * total) if test_size is None else test_size
    validation_size = round(SPLIT_FRACTION * total) if validation_size is None else validation_size
    for label, size in (("test_size", test_size), ("validation_size", validation_size)):
        if not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"cifar_split: {label} must be an int >= 0; got {size!r}")
    if test_size + validation_size >= total:
        raise ValueError(
            f"cifar_split: test_size + validation_size must leave training images: {test_size} + "
            f"{validation_size} of {total}"
        )
    everything = np.arange(total, dtype=np.int64)
    validation = _stratified_pick(y, everything, validation_size, 0)
    rest = np.setdiff1d(everything, validation)
    test = _stratified_pick(y, rest, test_size, seed)
    train = np.setdiff1d(rest, test)
    return DataSplit(train=train, validation=validation, test=test, seed=int(seed), total=total)


def split_subset(indices, size, seed=0):
    """``size`` of ``indices`` (a part of a :class:`DataSplit`): the first ``size`` of a seeded
    permutation (``default_rng(seed)``), sorted, so that a smaller size is a subset of a larger one
    (all of them when ``size`` is ``None`` or not smaller)."""
    indices = np.asarray(indices, np.int64)
    if size is None or size >= len(indices):
        return indices
    return np.sort(indices[np.random.default_rng(seed).permutation(len(indices))[:size]])


@dataclass(frozen=True, eq=False)
class SplitData:
    """The images :func:`load_split` gives: ``train``, ``validation`` (``None`` when not asked
    for) and ``test``, each ``(x, y)``; ``record``: the ``split`` entry of a result's config."""

    train: tuple
    validation: tuple | None
    test: tuple
    record: dict


def load_split(data, *, train_size=None, validation_size=None, test_size=None, train_offset=0, name="--data"):
    """The images of the fixed split (:func:`cifar_split`, its default sizes: 10 % each) of the labelled
    set at ``data`` (what ``keras_structinit.datasets.load_labeled_images`` reads).

    ``train_size``: images of the training part, the first ``train_size`` after ``train_offset`` of
    its seeded order (seed 0; nested: a smaller size is a subset of a larger one; default all).
    ``validation_size`` / ``test_size``: a fixed subset of that part (:func:`split_subset`, seed 0);
    ``None``: all of it; ``validation_size=0``: no validation images (``validation`` is ``None``).

    Returns a :class:`SplitData` whose ``record`` names the whole parts and the images used by their
    digests (:meth:`DataSplit.record`, plus ``"used": {part: {"size", "sha256"}}``).
    """
    from keras_structinit.datasets import load_labeled_images

    x, y = load_labeled_images(str(data), name=name)
    split = cifar_split(y)
    order = split.train[np.random.default_rng(0).permutation(len(split.train))]
    stop = None if train_size is None else train_offset + train_size
    if stop is not None and stop > len(order):
        raise ValueError(
            f"{name}: train_offset + train_size must be at most the {len(order)} images of the training "
            f"part; got {train_offset} + {train_size}"
        )
    used = {
        "train": np.sort(order[train_offset:stop]),
        "validation": split_subset(split.validation, validation_size) if validation_size != 0 else None,
        "test": split_subset(split.test, test_size),
    }
    record = split.record()
    record["used"] = {
        part: {"size": len(found), "sha256": index_digest(found)}
        for part, found in used.items()
        if found is not None
    }
    if train_offset:
        record["used"]["train"]["offset"] = train_offset
    parts = {part: None if found is None else (x[found], y[found]) for part, found in used.items()}
    return SplitData(record=record, **parts)


def add_split_arguments(parser, validation_default=0):
    """``--test-size N`` and ``--validation-size N`` (:func:`load_split`'s sizes): the images of the
    test part the entry reports on (default all 5,000) and of the validation part it also evaluates
    (default ``validation_default``; 0: none)."""
    parser.add_argument(
        "--test-size",
        type=int,
        default=None,
        help="report on a fixed subset (seed 0) of this many of the test part's 5,000 images "
        "(default: all); the test part chooses nothing",
    )
    parser.add_argument(
        "--validation-size",
        type=int,
        default=validation_default,
        help="also evaluate a fixed subset (seed 0) of this many of the validation part's 5,000 images, "
        f"the images choices are made on (default {validation_default}; 0: none)",
    )


def check_split_arguments(parser, args):
    """``parser.error`` where ``--test-size`` is below 1 or ``--validation-size`` below 0."""
    if args.test_size is not None and args.test_size < 1:
        parser.error(f"--test-size must be >= 1; got {args.test_size}")
    if args.validation_size is not None and args.validation_size < 0:
        parser.error(f"--validation-size must be >= 0; got {args.validation_size}")


def split_note(config):
    """Which split a result's numbers come from, in words: the test part (its size and digest) and the
    validation images evaluated beside it, from a config's ``split`` (:func:`load_split`); a result
    recorded before issue 79 says its held-out images were also the ones the defaults were chosen on."""
    split = (config or {}).get("split")
    if not split:
        held = (config or {}).get("held_out") or "stratified 10% of the training split, seed 0"
        return f"held-out images ({held}), the images the defaults were chosen on (recorded before issue 79)"
    used = split.get("used", {})
    test = used.get("test", split["test"])
    whole = split["test"]
    text = f"test part: {test['size']:,} of its {whole['size']:,} images (sha256 {whole['sha256'][:12]})"
    if "validation" in used:
        text += f"; validation: {used['validation']['size']:,} images (where choices are made)"
    return text


def accuracy_of(run):
    """The accuracy a run reports: on the test part (``test_accuracy``) where it measured one, else
    (runs recorded before issue 79, and scripts not yet split) its held-out ``val_accuracy``."""
    return run["test_accuracy"] if "test_accuracy" in run else run["val_accuracy"]


def split_accuracy(model, normalization, images, batch_size=500):
    """Top-1 accuracy of ``model`` on ``images`` (``(x, y)``, uint8), scaled as in training
    (``normalization``: a recipe's ``history.normalization``)."""
    x, y = images
    mean = np.asarray(normalization["mean"], np.float32)
    std = np.asarray(normalization["std"], np.float32)
    correct = 0
    for start in range(0, len(x), batch_size):
        batch = (x[start : start + batch_size].astype(np.float32) / 255.0 - mean) / std
        logits = model.predict_on_batch(batch)
        correct += int(
            np.sum(np.argmax(np.asarray(logits), axis=-1) == np.asarray(y[start : start + batch_size]))
        )
    return correct / len(x)


def held_out_subset(held_out, size):
    """``size`` of the held-out ``(x, y)``: a fixed subset (seed 0, original order); all when ``None``."""
    if size is None or size >= len(held_out[0]):
        return held_out
    keep = np.sort(np.random.default_rng(0).permutation(len(held_out[0]))[:size])
    return held_out[0][keep], held_out[1][keep]


#: The RandAugment forms a benchmark's ``--rand-augment`` takes (keras_structinit.recipes.rand_augment).
RAND_AUGMENT_LIBRARIES = ("timm", "torchvision")


def rand_augment_form(text):
    """``--rand-augment``'s type: a named form of the papers' code (``torchvision:n2-m12``,
    ``timm:m9-n2-mstd0.5-inc1``), checked in full where the recipe parses it; no Keras import here."""
    import argparse

    if text.partition(":")[0] not in RAND_AUGMENT_LIBRARIES or ":" not in text:
        named = " or ".join(f"{name}:..." for name in RAND_AUGMENT_LIBRARIES)
        raise argparse.ArgumentTypeError(
            f"expected a named form, {named} (e.g. torchvision:n2-m12). Received: {text!r}"
        )
    return text


def add_rand_augment_argument(parser):
    """``--rand-augment FORM`` (default: none), as the ConvMixer CIFAR script's recipe takes it."""
    parser.add_argument(
        "--rand-augment",
        type=rand_augment_form,
        default=None,
        metavar="FORM",
        help="RandAugment as a named form, applied to every run (default: none). The "
        "covariance and mimetic papers train with ConvMixer's CIFAR script, whose "
        "README's 92.5%% command is torchvision:n2-m12 (train.py's default is 1 op at "
        "magnitude 8); neither paper states N and M",
    )


def rand_augment_text(value):
    """How a result's ``rand_augment`` reads: its form, ``off``; ``True`` in records written before
    forms were named meant Keras' ``(2, 0.4)``."""
    if value is True:
        return "Keras' (2, 0.4)"
    return value or "off"


def fit_and_measure(
    model,
    train,
    held_out,
    epochs,
    *,
    batch_size,
    seed,
    rand_augment=None,
    eval_data=None,
    callbacks=(),
    pipeline=None,
    test=None,
):
    """Trains ``model`` on ``train`` with ``recipes.fit_cifar`` (its defaults; ``rand_augment`` a
    named RandAugment form or ``None``; progress lines) and evaluates it on ``held_out``.

    ``test``: the test part (:func:`load_split`), evaluated too and recorded as ``test_accuracy``, the
    number the entry reports; ``held_out`` is then the validation part (``None``: not evaluated).

    ``pipeline``: ``fit_cifar``'s input stream (its default, ``"auto"``, when ``None``). Where
    :data:`DEADLINE_VARIABLE` is set, training stops after the epoch past which another would end
    after it (:func:`deadline_callbacks`); the model is evaluated as it is then.

    Returns ``(history, fields)``: the measurements a training benchmark records
    for a run (``val_accuracy`` where ``held_out`` was evaluated, ``test_accuracy`` with ``test``,
    ``train_accuracy``, ``train_time_s``, ``epochs_done``
    (fewer than ``epochs`` when the deadline cut it short), ``date``, and with ``eval_data``
    its :func:`data_provenance` and ``eval_data_accuracy``).
    """
    import datetime

    from keras_structinit import recipes
    from keras_structinit.recipes.progress import progress_callbacks

    verbose, progress = progress_callbacks()
    deadline = deadline_callbacks()
    start = time.perf_counter()
    history = recipes.fit_cifar(
        model,
        train,
        epochs,
        batch_size=batch_size,
        seed=seed,
        rand_augment=rand_augment,
        eval_data=test if test is not None else held_out,
        callbacks=[*progress, *callbacks, *deadline],
        verbose=verbose,
        **({"pipeline": pipeline} if pipeline else {}),
    )
    seconds = time.perf_counter() - start
    measured = history.eval_results["accuracy"]
    fields = {"test_accuracy": measured} if test is not None else {"val_accuracy": measured}
    if test is not None and held_out is not None:
        fields["val_accuracy"] = split_accuracy(model, history.normalization, held_out)
    fields |= {
        "train_accuracy": float(history.history["accuracy"][-1]),
        "train_time_s": seconds,
        "epochs_done": len(history.history["accuracy"]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if eval_data is not None:
        fields.update(
            eval_data=data_provenance(eval_data),
            eval_data_accuracy=external_accuracy(model, history.normalization, eval_data),
        )
    return history, fields


def deadline():
    """The Unix time in :data:`DEADLINE_VARIABLE`, or ``None`` when it is not set."""
    value = os.environ.get(DEADLINE_VARIABLE)
    return float(value) if value else None


def past_deadline(margin_s=0.0):
    """Whether :func:`deadline` is set and less than ``margin_s`` seconds away."""
    end = deadline()
    return end is not None and time.time() + margin_s >= end


def deadline_callbacks():
    """``[callback]`` that stops ``fit`` at the end of an epoch when the next one would end after
    :func:`deadline` (judged by the longest epoch so far); ``[]`` when no deadline is set."""
    end = deadline()
    if end is None:
        return []
    import keras

    class StopAtDeadline(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.time()

        def on_epoch_end(self, epoch, logs=None):
            self._longest = max(getattr(self, "_longest", 0.0), time.time() - self._start)
            if time.time() + self._longest > end:
                print(
                    f"{DEADLINE_VARIABLE}: stopping after epoch {epoch + 1} (another would end past "
                    "the deadline)",
                    flush=True,
                )
                self.model.stop_training = True

    return [StopAtDeadline()]


def held_out_note(subset_size=None):
    """The ``held_out`` entry of a training benchmark's config: how its held-out images were chosen
    (``load_cifar``'s stratified 10%, seed 0, and the ``held_out_subset`` size when one was taken)."""
    return "stratified 10% of the training split, seed 0" + (
        f"; a fixed subset (seed 0) of {subset_size}" if subset_size else ""
    )


def eval_data_lines(runs):
    """Markdown lines with the mean ``--eval-data`` accuracy of the ``runs`` that measured it (or none)."""
    external = [100 * r["eval_data_accuracy"] for r in runs if "eval_data_accuracy" in r]
    if not external:
        return []
    return [
        f"--eval-data accuracy over all {len(external)} runs that measured it: {mean_std(external)} %.",
        "",
    ]


def resumable_results(out_dir, name, config, render_markdown):
    """``(data, save)`` of a resumable benchmark's ``<out_dir>/<name>.json``.

    ``data`` holds the earlier ``runs`` (none at first), with ``config``,
    backend, machine, versions and ``code`` (:func:`code_provenance`) refreshed; a
    file holding another ``config`` exits with a message. ``save()`` stamps the
    time, gives each run added since ``code`` too (earlier runs keep theirs, or
    none), and rewrites the JSON and ``<name>.md`` (``render_markdown(data)``).
    Call after ``KERAS_BACKEND`` is set.
    """
    import datetime

    import keras

    from keras_structinit.utils.io_utils import write_text
    from keras_structinit.utils.reporting import machine_info, versions

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    data = json.loads(json_path.read_text()) if json_path.exists() else {}
    if data.get("config", config) != config:
        sys.exit(f"{name}: error: {json_path} holds runs of another configuration; move it away")
    data.update(
        benchmark=name,
        config=config,
        backend=keras.backend.backend(),
        machine=machine_info(),
        versions=versions(),
        code=code_provenance(),
    )
    earlier = {id(run): run for run in data.setdefault("runs", [])}  # holding them keeps ids unique

    def save():
        data["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        for run in data["runs"]:
            if id(run) not in earlier and "code" not in run:
                run["code"] = data["code"]
        write_text(json_path, json.dumps(data, indent=2) + "\n")
        write_text(out_dir / f"{name}.md", render_markdown(data))

    return data, save


# ----------------------------------------------------------------------------
# Reading recorded runs: the shared pieces of the scripts' summaries and figures
# ----------------------------------------------------------------------------
def ms(values, scale=1.0):
    values = scale * np.asarray(values, dtype=float)
    if values.size == 1:
        return f"{values[0]:.2f}"
    return f"{values.mean():.2f} ± {values.std(ddof=1):.2f}"


def by(runs, field, value):
    return [r for r in runs if r.get(field) == value]


def ahead(higher, lower=(0.0,)):
    """Whether ``higher`` beats ``lower`` (per-seed values) by Welch's t-test at 95 %
    (:func:`~keras_structinit.utils.stats.welch_test`): ``True`` beyond noise, ``False`` beyond noise the
    other way, ``None`` (within noise) otherwise, also where one value per side allows no test."""
    return stats.welch_test(higher, lower).ahead


def verdict_of(checks):
    """``"yes"`` when every check holds beyond noise, ``"no"`` when one goes the other way beyond
    noise, ``"within noise"`` otherwise; ``None`` without checks. A check is ``True``, ``False`` or
    ``None`` (:func:`ahead`), or a :class:`Comparison` (its :attr:`~Comparison.ahead`; those with
    ``counts=False`` are context and left out)."""
    checks = [
        c.ahead if isinstance(c, Comparison) else c
        for c in checks
        if not isinstance(c, Comparison) or c.counts
    ]
    if not checks:
        return None
    return "no" if False in checks else "yes" if all(checks) else "within noise"


# ----------------------------------------------------------------------------
# Paired verdicts (issue 59): where two variants share a seed, the per-seed difference is the
# measurement
# ----------------------------------------------------------------------------
#: When the CIFAR input stream became a stateless function of (seed, pass, example) (commit
#: fd6702d): runs recorded before it shared the data order between the variants of one seed
#: (tf.data's seeded shuffle) but not their augmentation draws (crop, flip and RandAugment drew
#: from stateful ops in a parallel map, in whatever order its threads ran), so they are not paired.
STATELESS_STREAM = "2026-11-26T01:09:18+00:00"
#: Runs that record no commit count as one code when their recorded end times chain with gaps of at
#: most this many hours (one sitting; the recorded sittings of a result are 10 hours and more apart).
SESSION_HOURS = 3.0
#: Run-to-run spread (issue 59, point 6), in accuracy points: the largest shift of a 3-seed mean
#: recorded between two runs of one configuration with the same seeds on different code
#: (:data:`CODE_SPREAD_SOURCE`: :func:`rerun_spread`; tests/test_benchmarks_report.py recomputes
#: it). A difference whose two sides ran on different code must exceed twice its standard error by
#: this much too.
CODE_SPREAD = 2.82
#: Where :data:`CODE_SPREAD` was measured, as the report says it.
CODE_SPREAD_SOURCE = (
    "`lc_accuracy_fig1`'s runs of 2026-11-24 against `lc_fgsm`'s repeat of them (E = 1 and 8, seeds "
    "0-2) of 2026-11-27, on other code and thread settings "
    "(`results/archive/lc_accuracy_fig1_20261124.json`, `results/archive/lc_fgsm_20261127.json`)"
)
#: Why the variants of one seed in a script's runs are paired (``PAIRING``, a script's sentence in
#: the report) unless the script says otherwise.
PAIRED_BY_SEED = (
    "each run calls `keras.utils.set_random_seed(seed)` before it builds its model, the "
    "variant changes only its own weights, and `recipes.fit_cifar(seed=seed)` draws the "
    "data order and every augmentation from (seed, pass, example) alone"
)


def _when(text):
    """A recorded date (ISO 8601) as an aware datetime (UTC where it names no zone), or ``None``."""
    import datetime

    if not text:
        return None
    try:
        value = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)


def _commit(run):
    code = run.get("code")
    return code.get("commit") if isinstance(code, dict) else None


def _code_commit(run):
    """The commit whose code ``run`` ran: the one it records, or the earlier one it resumed with
    the same code (``same_code_as``, :func:`code_provenance`)."""
    code = run.get("code")
    return (code.get("same_code_as") or code.get("commit")) if isinstance(code, dict) else None


def code_keys(data):
    """``{id(run): key}`` for the runs of the result ``data``: which code each ran on, as far as the
    record tells. A run that records a commit: that commit (or the one it resumed with the same
    code, :func:`_code_commit`). One that does not: its sitting (runs whose recorded end times
    chain with gaps of at most :data:`SESSION_HOURS`). One without a date either: the file's (one
    process wrote such a file)."""
    runs = (data or {}).get("runs", [])
    keys, sitting, last = {}, 0, None
    for when, run in sorted(
        ((_when(r.get("date")), r) for r in runs if not _commit(r) and _when(r.get("date"))),
        key=lambda item: item[0],
    ):
        if last is not None and (when - last).total_seconds() > SESSION_HOURS * 3600:
            sitting += 1
        keys[id(run)], last = ("sitting", sitting), when
    for run in runs:
        if _commit(run):
            keys[id(run)] = ("commit", _code_commit(run))
        keys.setdefault(id(run), ("file",))
    return keys


def file_date(data):
    """When a result that dates no run was written: its ``updated`` time, else its suite run's end."""
    return (data or {}).get("updated") or ((data or {}).get("suite_run") or {}).get("finished")


def stream_shared(run, data=None):
    """Whether ``run`` drew its data order and augmentation from (seed, pass, example) alone: it
    records a commit (recorded from 2026-11-27 on), or its date (else its file's) is not before
    :data:`STATELESS_STREAM`."""
    if _commit(run):
        return True
    when = _when(run.get("date") or file_date(data))
    return when is not None and when >= _when(STATELESS_STREAM)


def by_seed(runs, value=lambda r: 100 * accuracy_of(r)):
    """``{seed: (value, runs)}`` of ``runs`` (their ``value``, default :func:`accuracy_of` in points;
    several runs of one seed, e.g. of two teachers, give their mean), seeds in order."""
    groups = {}
    for run in runs:
        groups.setdefault(run["seed"], []).append(run)
    return {
        seed: (float(np.mean([value(r) for r in group])), tuple(group))
        for seed, group in sorted(groups.items())
    }


def seed_differences(first, second):
    """``{seed: (first - second, runs of both)}`` over the seeds both :func:`by_seed` samples hold."""
    return {s: (first[s][0] - second[s][0], first[s][1] + second[s][1]) for s in first if s in second}


def _se(values):
    values = np.asarray(values, float)
    return float(np.sqrt(values.var(ddof=1) / values.size)) if values.size > 1 else 0.0


@dataclass
class Comparison:
    """One difference a report row's verdict rests on: the paper expects ``higher`` above ``lower``.

    ``higher`` and ``lower``: :func:`by_seed` samples (``{seed: (value, runs)}``). ``data``: the
    result file they come from (its dates tell which code each run ran on). ``paired``: ``True``
    where the script's variants of one seed share the data order, the augmentation draws and the
    initial weights the variant does not change; else the reason they do not (a sentence).
    ``spread``: the margin added where the two sides ran on different code (:data:`CODE_SPREAD`
    for accuracy points; 0 for other units). ``counts``: whether the verdict counts it (``False``:
    context, shown beside). ``spec``: how its numbers print.

    The rule (:attr:`ahead`, issue 79): the report's two-sided t-test at 95 %
    (:func:`~benchmarks.report_stats.t_test`), paired where judged paired (:attr:`why_unpaired` is
    ``None``), Welch's otherwise, the difference moved toward 0 by ``spread`` where the sides ran on
    different code. :attr:`ahead_2se` keeps the rule before it (twice the standard error), which
    the report's *What changed* compares with.
    """

    label: str
    higher: dict
    lower: dict
    data: dict | None = None
    paired: bool | str = True
    spread: float = CODE_SPREAD
    counts: bool = True
    spec: str = ".2f"

    def _values(self, side):
        return np.array([value for value, _ in side.values()], float)

    @property
    def seeds(self):
        """The seeds both sides hold, in order."""
        return [s for s in self.higher if s in self.lower]

    @functools.cached_property
    def unpaired(self):
        """``(difference of the means, its standard error, (n_higher, n_lower))``."""
        hi, lo = self._values(self.higher), self._values(self.lower)
        return float(hi.mean() - lo.mean()), float(np.hypot(_se(hi), _se(lo))), (hi.size, lo.size)

    @functools.cached_property
    def differences(self):
        """The per-seed differences ``higher - lower`` over :attr:`seeds`."""
        return np.array([self.higher[s][0] - self.lower[s][0] for s in self.seeds], float)

    @functools.cached_property
    def paired_figure(self):
        """``(mean per-seed difference, its standard error, n)``; ``None`` with fewer than 2 seeds."""
        d = self.differences
        return (float(d.mean()), _se(d), d.size) if d.size >= 2 else None

    def _runs(self, *sides):
        return [run for side in sides for _, runs in side.values() for run in runs]

    @functools.cached_property
    def _code_keys(self):
        return code_keys(self.data)

    def _code_of(self, run):
        """Which code ``run`` ran on (:func:`code_keys` of ``data``); a run that is not among
        ``data``'s (one copied from another result) by the commit it records."""
        commit = _code_commit(run)
        return self._code_keys.get(id(run)) or (("commit", commit) if commit else ("file",))

    @functools.cached_property
    def mixed_code(self):
        """Whether the runs of the two sides ran on different code (:func:`code_keys`)."""
        return len({self._code_of(r) for r in self._runs(self.higher, self.lower)}) > 1

    @functools.cached_property
    def why_unpaired(self):
        """``None`` where the difference is judged paired; else why not."""
        if self.paired is not True:
            return self.paired or "the variants of a seed share no data order and draws"
        if self.paired_figure is None:
            return "fewer than 2 seeds with both"
        for seed in self.seeds:
            runs = list(self.higher[seed][1]) + list(self.lower[seed][1])
            if not all(stream_shared(r, self.data) for r in runs):
                return "recorded before the stateless input stream (2026-11-26): draws not shared"
            if len({self._code_of(r) for r in runs}) > 1:
                return "a seed's runs ran on different code"
        return None

    @functools.cached_property
    def figure(self):
        """``(difference, margin)`` :attr:`ahead_2se` compares: the paired figure where judged
        paired, twice its standard error (plus ``spread`` where the sides ran on different code)."""
        if self.why_unpaired is None:
            diff, se, _ = self.paired_figure
            return diff, 2 * se
        diff, se, _ = self.unpaired
        return diff, 2 * se + (self.spread if self.mixed_code else 0.0)

    @functools.cached_property
    def ahead(self):
        """``True`` beyond noise the paper's way, ``False`` beyond noise the other way, else ``None``:
        the t-test's outcome (:func:`~benchmarks.report_stats.ahead`)."""
        return report_stats.ahead(self)

    @functools.cached_property
    def ahead_2se(self):
        """The outcome by the rule before issue 79: :attr:`figure`'s difference beyond its margin."""
        diff, margin = self.figure
        return True if diff > margin else False if diff < -margin else None

    def text(self, figure):
        """``"+1.23 ± 0.45"`` of ``figure`` (:attr:`paired_figure` or :attr:`unpaired`); ``"—"``."""
        if figure is None:
            return "—"
        return f"{figure[0]:+{self.spec}} ± {figure[1]:{self.spec}}"

    @property
    def judged(self):
        """How :attr:`ahead` judged it, in words."""
        if self.why_unpaired is None:
            return "paired"
        widened = f"; + {self.spread:g} (sides on different code)" if self.mixed_code and self.spread else ""
        return f"unpaired ({self.why_unpaired}{widened})"


def pairing_of(comparisons):
    """A row's pairing in a word: ``"paired"`` when every counted comparison is judged paired,
    ``"unpaired"`` when none is, ``"partly (k of n)"`` otherwise; ``"—"`` without comparisons."""
    counted = [c for c in comparisons if c.counts] or list(comparisons)
    if not counted:
        return "—"
    paired = sum(c.why_unpaired is None for c in counted)
    return (
        "paired"
        if paired == len(counted)
        else "unpaired"
        if not paired
        else f"partly ({paired} of {len(counted)})"
    )


def rerun_spread(earlier, later, key):
    """How far runs moved between two results of one configuration with the same seeds: ``None``
    where their configs differ or they share no run; else ``{"runs": n, "largest": max |change|
    of one run, "mean": mean change, "sd": its std, "cells": {cell: mean change over its seeds},
    "largest_mean": max |cell mean change|, "dates": (earlier's, later's)}``, in accuracy points.
    ``key``: the run fields that identify a run (its seed among them); a cell is the key less the
    seed."""
    if not earlier or not later or earlier.get("config") != later.get("config"):
        return None
    before = {tuple(json.dumps(r.get(f), sort_keys=True) for f in key): r for r in earlier.get("runs", [])}
    changes, cells, dates = [], {}, ([], [])
    for run in later.get("runs", []):
        found = before.get(tuple(json.dumps(run.get(f), sort_keys=True) for f in key))
        if found is None:
            continue
        change = 100 * (accuracy_of(run) - accuracy_of(found))
        changes.append(change)
        cells.setdefault(tuple(run.get(f) for f in key if f != "seed"), []).append(change)
        for kept, one in zip(dates, (found, run), strict=True):
            kept.append(str(one.get("date") or file_date(earlier if one is found else later) or "?")[:10])
    if not changes:
        return None
    means = {cell: float(np.mean(values)) for cell, values in cells.items()}

    def days(found):
        found = sorted(set(found))
        return found[0] + (f" to {found[-1]}" if len(found) > 1 else "")

    return {
        "runs": len(changes),
        "largest": float(np.max(np.abs(changes))),
        "mean": float(np.mean(changes)),
        "sd": float(np.std(changes, ddof=1)) if len(changes) > 1 else 0.0,
        "cells": means,
        "largest_mean": float(max(abs(v) for v in means.values())),
        "dates": tuple(days(d) for d in dates),
    }


def seed_gaps(runs):
    """Frozen minus learnable accuracy (points, :func:`accuracy_of`) per seed with both runs."""
    acc = {(r["seed"], r["frozen"]): accuracy_of(r) for r in runs}
    return [100 * (acc[s, True] - acc[s, False]) for s, frozen in acc if frozen and (s, False) in acc]


def per_backend(data):
    return [(b, data["results"][b]) for b in BACKENDS if b in data.get("results", {})]


def bars(ax, series, labels):
    """Grouped bars with std error bars: ``series`` maps a legend label to one list of per-seed
    values (%) per entry of ``labels`` (an empty list leaves a gap)."""
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        x = np.arange(len(labels)) + (i - (len(series) - 1) / 2) * width
        ax.bar(
            x,
            [np.mean(v) if v else np.nan for v in values],
            width,
            yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for v in values],
            capsize=2,
            label=name,
        )
    ax.set_xticks(np.arange(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.legend(fontsize=7)


# ----------------------------------------------------------------------------
# Suite entries: each script declares its own in SUITE = {"cpu": (...), "gpu": (...)}
# ----------------------------------------------------------------------------
TRAIN_SEEDS = ("--seeds", "0", "1", "2")
#: What every entry's numbers depend on (paths from the repository root): the recipes (training
#: loop, optimizers, the input stream), the model builders and their layers, and the data loader.
COMMON_DEPENDENCIES = (
    "keras_structinit/recipes",
    "keras_structinit/models",
    "keras_structinit/layers",
    "keras_structinit/datasets",
)
#: The init method's code, by the first word of a script's name (``covariance_accuracy.py``:
#: ``covariance``); a script whose first word is not here depends on the common paths alone.
METHOD_DEPENDENCIES = {
    "alignment": ("keras_structinit/alignment",),
    "covariance": ("keras_structinit/covariance", "keras_structinit/engine/freezing.py"),
    "init": ("keras_structinit/covariance",),
    "lc": ("keras_structinit/lc", "keras_structinit/engine/freezing.py"),
    "mimetic": ("keras_structinit/mimetic",),
    "selection": ("keras_structinit/selection",),
    "inspect": ("keras_structinit/methods/inspection.py",),
    "depthwise": ("keras_structinit/ops", "keras_structinit/engine/freezing.py"),
    "frozen": ("keras_structinit/ops", "keras_structinit/engine/freezing.py"),
    "torch": ("keras_structinit/ops", "keras_structinit/engine/freezing.py"),
}

#: Code that only the ``structinit`` command runs and no benchmark script calls: the demo, and the
#: ``Run`` value that ``structinit train`` checks and runs with its output folder (the scripts train
#: through ``fit_cifar`` and the other recipes; ``keras_structinit.recipes`` imports ``run.py`` for its
#: names only). Left out of every entry's dependencies, so that the demo's defaults or a run's checks
#: stale no result, unless an entry names the file in ``depends`` (the ``demo`` entry does).
COMMAND_ONLY = (
    "keras_structinit/cli/demo.py",
    "keras_structinit/recipes/run.py",
    "keras_structinit/recipes/run_files.py",
)


@dataclass(frozen=True)
class Benchmark:
    """One entry of a suite.

    Attributes:
        name: the results stem: the script writes ``<out>/<name>.json`` / ``.md``.
        script: the file in ``benchmarks/`` that measures it.
        args: the script's arguments in this suite (``--out`` and ``--shard``
            are added by the runner).
        title: what is measured, one line.
        paper: the paper's number or statement this is compared with.
        minutes: expected wall time: on 2 cores for the CPU suite, on one H100 for the GPU
            suites (a guide for ``--list``; ``gpu-quick``'s must add up to ``GPU_QUICK_MINUTES``).
        run_key: fields of one entry of ``data["runs"]`` that identify a run;
            ``None`` for benchmarks whose runs cannot be split across processes
            (timings, which need the machine to themselves).
        eval_data: whether the script takes ``--eval-data`` (an external set
            every trained model is also evaluated on).
        more_args: further invocations of the script, run after ``args`` into
            the same results file (same ``--out``, sharded the same way): runs
            a single argument list cannot plan, e.g. another model or a longer
            budget for a subset of the variants. Their configuration must
            match ``args``'s.
        smoke_args: the script's arguments under ``python -m benchmarks.run --smoke``: the same
            work at tiny sizes (a few images, steps, epochs) that a CPU runs in about a minute,
            so that what a lent GPU runs has run here first; ``None``: the entry has none.
        estimated: ``minutes`` is an estimate, not a measured time (``--list`` says so).
        depends: paths (from the repository root) its numbers depend on beyond
            :attr:`dependencies`' defaults, e.g. a second init method's subpackage.
        artifacts: files its runs keep beside their results (relative to the suite's folder)
            and read back, e.g. a trained teacher: set aside with the results when they are stale.
        repeats: the name of an entry of the same suite whose configuration and seeds this one runs
            again (its extra measurements aside): the report measures the run-to-run spread from
            the runs both hold (:func:`rerun_spread`).
    """

    name: str
    script: str
    args: tuple = ()
    title: str = ""
    paper: str = ""
    minutes: float = 30.0
    run_key: tuple | None = None
    eval_data: bool = False
    figures: tuple = field(default=())
    more_args: tuple = field(default=())
    smoke_args: tuple | None = None
    estimated: bool = False
    depends: tuple = ()
    artifacts: tuple = ()
    repeats: str = ""

    @property
    def dependencies(self):
        """The paths (from the repository root) whose change since a result's commit makes it
        stale: :data:`COMMON_DEPENDENCIES`, the script's init method (:data:`METHOD_DEPENDENCIES`),
        the script itself (when it lies in ``benchmarks/``) and :attr:`depends`."""
        script = Path(self.script)
        own = (
            (f"benchmarks/{script.name}",)
            if not script.is_absolute() or script.parent == Path(__file__).resolve().parent
            else ()
        )
        method = METHOD_DEPENDENCIES.get(script.stem.split("_")[0], ())
        return tuple(dict.fromkeys((*COMMON_DEPENDENCIES, *method, *own, *self.depends)))

    @property
    def excluded(self):
        """The files under :attr:`dependencies` whose changes leave its results current: those of
        :data:`COMMAND_ONLY` that :attr:`depends` does not name."""
        return tuple(path for path in COMMAND_ONLY if path not in self.depends)

    @property
    def invocations(self):
        """The argument lists the runner runs, in order: ``args``, then each of ``more_args``."""
        return (tuple(self.args), *(tuple(a) for a in self.more_args))
