"""Runs a replication suite and rebuilds ``benchmarks/REPORT.md`` from its results.

Usage (from the repository root)::

    python -m benchmarks.run --suite cpu                   # every CPU benchmark, then the report
    python -m benchmarks.run --suite cpu --only lc_accuracy_fig1 mimetic_sweep
    python -m benchmarks.run --suite cpu --eval-data test.npz   # also evaluate on an external set
    python -m benchmarks.run --suite cpu --list            # what would run, and what is done
    python -m benchmarks.run --suite gpu-quick             # the GPU headlines in ~9 min (results/gpu/)
    python -m benchmarks.run --suite gpu-quick --smoke     # the same entries at tiny sizes, on a CPU
    python -m benchmarks.run --report                      # only rebuild REPORT.md

Each benchmark (:mod:`benchmarks.suite`) is its script run in subprocesses
with the suite's arguments; results go to ``benchmarks/results/<suite>/<name>
.json`` and ``.md``. A benchmark whose runs can be split (``run_key``) runs as
``--jobs`` processes, each pinned to its own cores with one part of the plan
(``--shard I/N``, the runs dealt back and forth: ``bench_utils.shard_of``) and its own
folder under ``results/<suite>/parts/<name>/``;
every part starts from all runs already finished, so an interrupted suite
resumes where it stopped (whatever ``--jobs`` is), and the parts are merged
into ``<name>.json`` when all have finished. Timing benchmarks run alone, with
every core. ``results/<suite>/suite.json`` records what finished, with its
arguments and wall time; a finished benchmark is skipped unless its arguments
changed or ``--rerun`` names it.

An entry is *stale* when the code its runs depend on (``Benchmark.dependencies``: the recipes,
the model builders, the init's subpackage, the data loader, its script) changed after the commit
its results record (``git diff <commit>`` plus untracked files; a Python file whose syntax
tree, docstrings aside, is the same does not count, so ``ruff format`` or a reworded comment
leaves results fresh), or when a result records no commit. ``--list`` marks it; a run moves its
results (and parts) aside, under ``<--results>/local/stale/``, and runs it again from nothing,
unless ``--no-stale``.

``--smoke`` runs each entry with its ``smoke_args`` (a few images, steps and epochs) instead,
into ``<--results>/<folder>`` (default ``results/local/smoke/``; each entry's earlier smoke
results removed first) with a
``REPORT.md`` beside it: what runs on a lent GPU runs end to end on a CPU first. A runner stopped
by SIGTERM (``timeout``), or an entry that stopped at ``BENCH_DEADLINE`` with runs left
(exit status ``DEADLINE_EXIT``), merges the runs its parts finished and does not mark it finished.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks import BENCH_DIR, RESULTS_DIR
from benchmarks.bench_utils import DEADLINE_EXIT, LOCAL_RESULTS, SAME_CODE_ENV, data_provenance, git
from benchmarks.suite import DEFAULT_JOBS, FOLDERS, SUITES

#: Where ``--smoke`` writes unless ``--results`` says otherwise (ignored by git).
SMOKE_RESULTS = LOCAL_RESULTS / "smoke"

# Start-up chatter of TensorFlow/XLA (absl logging) that would drown the progress lines.
NOISE = ("I0000 ", "E0000 ", "W0000 ", "WARNING: All log messages before absl")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=sorted(SUITES), default="cpu", help="default: cpu")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks")
    parser.add_argument(
        "--rerun",
        nargs="+",
        metavar="NAME",
        default=[],
        help="run these again although finished (their finished runs are kept)",
    )
    parser.add_argument(
        "--eval-data",
        type=Path,
        default=None,
        help="an external labelled set (.npz with uint8 x and int y, or an ImageFolder "
        "directory/.zip) every trained model is also evaluated on",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="processes per splittable benchmark (default: one per core for the CPU "
        "suite, 1 for the GPU suite)",
    )
    parser.add_argument("--results", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="run every entry at tiny sizes (its smoke arguments), on a CPU, into "
        "results/local/smoke/ (the entry's earlier smoke results removed first): "
        "a check that the suite runs end to end",
    )
    parser.add_argument("--list", action="store_true", help="list the suite's benchmarks and exit")
    parser.add_argument(
        "--no-stale",
        action="store_true",
        help="leave stale entries (code changed since their results' commit, or no "
        "commit recorded) as they are: skip them when finished, resume them "
        "otherwise",
    )
    parser.add_argument("--report", action="store_true", help="only rebuild REPORT.md and exit")
    args = parser.parse_args(argv)
    names = [b.name for b in SUITES[args.suite]]
    for option, chosen in (("--only", args.only or []), ("--rerun", args.rerun)):
        unknown = [n for n in chosen if n not in names]
        if unknown:
            parser.error(
                f"{option}: unknown benchmark(s) {', '.join(unknown)} of suite "
                f"{args.suite!r}; expected some of: {', '.join(names)}"
            )
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be >= 1; got {args.jobs}")
    if args.eval_data is not None and not args.eval_data.exists():
        parser.error(f"--eval-data {str(args.eval_data)!r} does not exist")
    if args.smoke:
        if args.report:
            parser.error("--smoke runs the suite; --report only rebuilds REPORT.md")
        missing = [b.name for b in SUITES[args.suite] if b.smoke_args is None]
        if missing:
            parser.error(f"--smoke: no smoke arguments for {', '.join(missing)} of suite {args.suite!r}")
        if args.results is not None and args.results.resolve() == RESULTS_DIR:
            parser.error("--smoke does not write into benchmarks/results (it removes earlier results)")
    if args.results is None:
        args.results = SMOKE_RESULTS if args.smoke else RESULTS_DIR
    return args


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _read_json(path):
    return json.loads(Path(path).read_text()) if Path(path).exists() else None


def _write_json(path, obj):
    from keras_structinit.utils.io_utils import write_json  # atomic; no Keras import

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(path, obj)


# ----------------------------------------------------------------------------
# Parts: one process per shard, merged afterwards
# ----------------------------------------------------------------------------
def _key(run, fields):
    return tuple(json.dumps(run.get(f), sort_keys=True) for f in fields)


def merge_runs(datas, fields):
    """One results dict from ``datas`` (the same benchmark and config): the runs
    of all, each key once (the first seen), in the order they finished."""
    datas = [d for d in datas if d]
    if not datas:
        return None
    configs = {json.dumps(d.get("config"), sort_keys=True) for d in datas}
    if len(configs) > 1:
        raise ValueError(
            f"results of {datas[0].get('benchmark')} hold different configurations; move the old ones away"
        )
    merged, seen, runs = dict(datas[-1]), set(), []
    for data in datas:
        for run in data.get("runs", []):
            key = _key(run, fields)
            if key not in seen:
                seen.add(key)
                runs.append(run)
    merged["runs"] = sorted(runs, key=lambda r: r.get("date", ""))
    return merged


def _render(bench, data):
    from benchmarks.report import script_module

    return script_module(bench.script).render_markdown(data)


def _stream(process, prefix, log):
    for line in process.stdout:
        log.write(line)
        log.flush()
        if not line.startswith(NOISE):
            print(f"{prefix} {line.rstrip()}", flush=True)


def _command(bench, args, out, eval_data, shard=None):
    script = BENCH_DIR / bench.script
    launch = ["-m", f"benchmarks.{script.stem}"] if script.parent == BENCH_DIR else [str(script)]
    command = [sys.executable, *launch, *args, "--out", str(out)]
    if shard is not None:
        command += ["--shard", f"{shard[0]}/{shard[1]}"]
    if eval_data is not None and bench.eval_data:
        command += ["--eval-data", str(eval_data)]
    return command


def _launch(command, cores, prefix, log_path, extra_env=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(extra_env or {}))
    if cores is not None:
        threads = str(len(cores))
        env.update(
            OMP_NUM_THREADS=threads,
            TF_NUM_INTRAOP_THREADS=threads,
            TF_NUM_INTEROP_THREADS="1",
            OPENBLAS_NUM_THREADS=threads,
            MKL_NUM_THREADS=threads,
        )
    log = open(log_path, "a", encoding="utf-8")
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=BENCH_DIR.parent,
        preexec_fn=(lambda: os.sched_setaffinity(0, cores))
        if cores and hasattr(os, "sched_setaffinity")
        else None,
    )
    thread = threading.Thread(target=_stream, args=(process, prefix, log), daemon=True)
    thread.start()
    return process, thread, log


def _finished_with(done, bench):
    """Whether the suite state ``done`` records ``bench`` finished with its present arguments."""
    return (
        bool(done)
        and done.get("args") == list(bench.args)
        and done.get("more_args", []) == [list(a) for a in bench.more_args]
    )


def run_benchmark(bench, suite_dir, jobs, eval_data):
    """Runs ``bench`` to completion (resuming what is there); returns its merged results."""
    final = suite_dir / f"{bench.name}.json"
    if bench.run_key is None:
        jobs = 1
    parts_dir = suite_dir / "parts" / bench.name
    parts_dir.mkdir(parents=True, exist_ok=True)
    if bench.run_key is not None:
        # Every part starts from every finished run, so a resume with any --jobs skips them.
        earlier = merge_runs(
            [_read_json(final)] + [_read_json(p) for p in sorted(parts_dir.glob(f"*/{bench.name}.json"))],
            bench.run_key,
        )
    # A resume on a later commit that changed none of the entry's code: its runs pair with the earlier.
    same = resumed_code(bench, [earlier]) if bench.run_key is not None and earlier is not None else None
    extra_env = {SAME_CODE_ENV: same} if same else None
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    for stage, args in enumerate(bench.invocations):
        launched = []
        for index in range(jobs):
            out = parts_dir / str(index) if bench.run_key is not None else suite_dir
            out.mkdir(parents=True, exist_ok=True)
            if stage == 0 and bench.run_key is not None and earlier is not None:
                _write_json(out / f"{bench.name}.json", earlier)
            mine = (cores[index::jobs] or [cores[index % len(cores)]]) if cores and jobs > 1 else None
            prefix = f"[{bench.name}" + (f" {index + 1}/{jobs}]" if jobs > 1 else "]")
            command = _command(
                bench, args, out, eval_data, (index, jobs) if bench.run_key is not None else None
            )
            launched.append(_launch(command, mine, prefix, parts_dir / f"{index}.log", extra_env))
        failed = []
        try:
            for process, _, _ in launched:
                process.wait()
        except BaseException:  # SIGTERM (see main) or Ctrl-C: keep the runs the parts finished
            for process, _, _ in launched:
                process.terminate()
            if bench.run_key is not None:
                _merge_parts(bench, suite_dir, parts_dir, jobs)
                print(f"[{bench.name}] interrupted: the runs its parts finished are in {final}", flush=True)
            raise
        for index, (process, thread, log) in enumerate(launched):
            process.wait()
            thread.join()
            log.close()
            if process.returncode == DEADLINE_EXIT:
                failed.append(f"part {index} stopped at BENCH_DEADLINE with runs left")
            elif process.returncode:
                failed.append(
                    f"part {index} exited with status {process.returncode} "
                    f"(log: {parts_dir / f'{index}.log'})"
                )
        if failed:
            # Stopped by the deadline (a GPU loan running out): the runs that finished are merged,
            # as after SIGTERM. After a crash nothing is merged; a resume starts from the parts.
            if bench.run_key is not None and any(p.returncode == DEADLINE_EXIT for p, _, _ in launched):
                _merge_parts(bench, suite_dir, parts_dir, jobs)
            raise RuntimeError(f"{bench.name}: " + "; ".join(failed))
    if bench.run_key is None:
        return _read_json(final)
    return _merge_parts(bench, suite_dir, parts_dir, jobs)


def _merge_parts(bench, suite_dir, parts_dir, jobs):
    """Merges the runs of ``bench``'s ``jobs`` parts into ``<suite_dir>/<name>.json`` and ``.md``, and
    the figures its parts wrote (``<part>/figures/``, e.g. one seed's ``inspect`` PNGs) into
    ``<suite_dir>/figures/``."""
    final = suite_dir / f"{bench.name}.json"
    for index in range(jobs):
        figures = parts_dir / str(index) / "figures"
        if figures.is_dir():
            shutil.copytree(figures, suite_dir / "figures", dirs_exist_ok=True)
    merged = merge_runs(
        [_read_json(final)] + [_read_json(parts_dir / str(i) / f"{bench.name}.json") for i in range(jobs)],
        bench.run_key,
    )
    if merged is None:
        return None
    from keras_structinit.utils.io_utils import write_text

    _write_json(final, merged)
    write_text(suite_dir / f"{bench.name}.md", _render(bench, merged))
    return merged


# ----------------------------------------------------------------------------
# Staleness: has the code a result depends on changed since the commit it records?
# ----------------------------------------------------------------------------
def code_records(data):
    """Every ``code`` record in the result ``data`` (the file's, each backend's, each run's, each
    record's), with ``None`` for each run that has none; ``[None]`` when there is none at all."""
    found = []

    def walk(obj):
        if isinstance(obj, dict):
            for key, value in obj.items():
                if key == "code" and (value is None or isinstance(value, dict) and "commit" in value):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(data)
    found += [None for run in data.get("runs", []) if isinstance(run, dict) and "code" not in run]
    return found or [None]


def changed_files(commit, paths, root, excluded=()):
    """The files under ``paths`` but not ``excluded`` (relative to the git checkout ``root``) that
    differ from ``commit``: changed in a later commit or in the working tree, or new and untracked;
    ``None`` when git cannot tell (no git, or ``commit`` is not in this repository). A Python file
    whose code is unchanged (:func:`_same_code`: only layout, comments, docstrings or ``--help``
    texts differ) is not counted."""
    if git(root, "cat-file", "-e", f"{commit}^{{commit}}") is None:
        return None
    specs = [*paths, *(f":(exclude){path}" for path in excluded)]
    diff = git(root, "diff", "--name-only", commit, "--", *specs)
    new = git(root, "ls-files", "--others", "--exclude-standard", "--", *specs)
    if diff is None or new is None:
        return None
    changed = [path for path in diff.splitlines() if not _same_code(commit, path, root)]
    return sorted(set(changed) | set(new.splitlines()))


def _code_form(text):
    """The syntax tree of Python source ``text`` without docstrings, without the ``help=`` texts of
    ``add_argument`` calls and without a module-level ``SUITE = ...`` declaration, as text (``None``
    where it does not parse): equal for sources that differ only in layout, comments, docstrings,
    ``--help`` texts or their suite entries. An entry's arguments are checked on their own
    (:func:`_finished_with`), so adding an entry to a script, or changing one, leaves the script's
    other entries current; the names ``SUITE`` uses are compared as code."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    tree.body = [node for node in tree.body if not _declares_suite(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            node.keywords = [k for k in node.keywords if k.arg != "help"]
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def _declares_suite(node):
    """Whether the module-level statement ``node`` assigns ``SUITE`` (``SUITE = {...}``)."""
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == "SUITE" for t in targets
    )


def _same_code(commit, path, root):
    """Whether the Python file ``path`` (relative to ``root``) runs the same code in the working tree
    as at ``commit``: only its layout, comments or docstrings differ (``ruff format``, a reworded
    docstring), so results recorded at ``commit`` still stand for it."""
    now = Path(root) / path
    if not path.endswith(".py") or not now.is_file():
        return False
    form = _committed_form(str(root), commit, path)
    return form is not None and form == _code_form(now.read_text(encoding="utf-8", errors="replace"))


@functools.cache
def _committed_form(root, commit, path):
    """:func:`_code_form` of ``path`` as committed at ``commit`` (``None`` where git has no such
    file): a commit's files do not change, so each is read once per process (``--list`` asks for
    the same files for every entry)."""
    before = git(root, "show", f"{commit}:{path}")
    return None if before is None else _code_form(before)


def stale_status(bench, datas, root=BENCH_DIR.parent):
    """Why the results ``datas`` of ``bench`` (its results file and parts) no longer stand for the
    code at ``root``: ``"stale (no commit recorded)"``, ``"stale (commit C not in this
    repository)"`` or ``"stale (N file(s) changed since C)"``; ``None`` when they do, when nothing
    is recorded, or when ``root`` is no git checkout (nothing to compare with)."""
    records = [record for data in datas if data for record in code_records(data)]
    if not records:
        return None
    if None in records:
        return "stale (no commit recorded)"
    if git(root, "rev-parse", "--git-dir") is None:
        return None
    changed = set()
    for commit in sorted({record["commit"] for record in records}):
        files = changed_files(commit, bench.dependencies, root, bench.excluded)
        if files is None:
            return f"stale (commit {commit[:7]} not in this repository)"
        changed |= set(files)
    if not changed:
        return None
    since = ", ".join(sorted({r["commit"][:7] for r in records}))
    return f"stale ({len(changed)} file(s) changed since {since})"


def resumed_code(bench, datas, root=BENCH_DIR.parent):
    """The commit whose code the finished runs ``datas`` of ``bench`` ran, where resuming them at
    ``root``'s HEAD runs the same code for this entry (none of :attr:`Benchmark.dependencies`
    changed since, in later commits or the working tree): new runs record it (``same_code_as``,
    ``bench_utils.code_provenance``) and so pair with the earlier ones. ``None`` where the runs
    record no single commit, it is HEAD, or git cannot tell."""
    records = [record for data in datas if data for record in code_records(data)]
    if not records or None in records or any(record.get("dirty", True) for record in records):
        return None
    commits = {record.get("same_code_as") or record["commit"] for record in records}
    if len(commits) != 1:
        return None
    (commit,) = commits
    if git(root, "rev-parse", "HEAD") in (None, commit):
        return None
    return commit if changed_files(commit, bench.dependencies, root, bench.excluded) == [] else None


def _recorded(bench, suite_dir):
    """The results of ``bench`` under ``suite_dir``: its results file and its parts' files."""
    paths = [
        suite_dir / f"{bench.name}.json",
        *sorted((suite_dir / "parts" / bench.name).glob(f"*/{bench.name}.json")),
    ]
    return [data for data in map(_read_json, paths) if data]


def _set_aside(bench, suite_dir, results_dir):
    """Moves what ``bench`` wrote under ``suite_dir`` (results, Markdown, parts, artifacts) to a new folder
    under ``<results_dir>/local/stale/`` (ignored by git); returns that folder."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside = Path(results_dir) / "local" / "stale" / suite_dir.name / f"{bench.name}-{stamp}"
    aside.mkdir(parents=True, exist_ok=True)
    for path in (
        suite_dir / f"{bench.name}.json",
        suite_dir / f"{bench.name}.md",
        suite_dir / "parts" / bench.name,
        *(suite_dir / a for a in bench.artifacts),
    ):
        if path.exists():
            shutil.move(str(path), str(aside / path.name))
    return aside


def _smoke(bench):
    """``bench`` as ``--smoke`` runs it: its smoke arguments, no further invocations."""
    return dataclasses.replace(bench, args=tuple(bench.smoke_args), more_args=())


def _clear(bench, suite_dir):
    """Removes what ``bench`` wrote under ``suite_dir`` (its results, Markdown and parts)."""
    for path in (suite_dir / f"{bench.name}.json", suite_dir / f"{bench.name}.md"):
        path.unlink(missing_ok=True)
    shutil.rmtree(suite_dir / "parts" / bench.name, ignore_errors=True)


def _sigterm(signum, frame):
    raise SystemExit(128 + signum)


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------
def main(argv=None):
    args = parse_args(argv)
    from benchmarks.report import write_report

    suite_dir = args.results / FOLDERS[args.suite]
    benches = SUITES[args.suite]
    if args.smoke:
        benches = tuple(_smoke(b) for b in benches)
    state_path = suite_dir / "suite.json"
    state = _read_json(state_path) or {"suite": args.suite, "benchmarks": {}}
    if args.list:
        width = max(len(b.name) for b in benches)
        for bench in benches:
            done = state["benchmarks"].get(bench.name, {})
            stale = stale_status(bench, _recorded(bench, suite_dir)) if done else None
            status = (
                stale
                if stale and not args.no_stale
                else "done " + done["finished"]
                if _finished_with(done, bench)
                else "to run"
                if not done
                else "to re-run (arguments changed)"
            )
            estimate = " (est.)" if bench.estimated else "       "
            print(f"{bench.name:<{width}} ~{bench.minutes:>5.1f} min{estimate}  {status:<40} {bench.title}")
        estimated = sum(b.minutes for b in benches if b.estimated)
        print(
            f"{'total':<{width}} ~{sum(b.minutes for b in benches):>5.1f} min"
            + (f" ({estimated:.1f} of them estimated, not measured)" if estimated else "")
        )
        return 0
    signal.signal(signal.SIGTERM, _sigterm)
    if not args.report:
        chosen = [b for b in benches if args.only is None or b.name in args.only]
        jobs = (
            args.jobs
            or DEFAULT_JOBS.get(args.suite)
            or len(
                os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
            )
        )
        total = time.perf_counter()
        for i, bench in enumerate(chosen, 1):
            done = state["benchmarks"].get(bench.name, {})
            stale = None if args.smoke or args.no_stale else stale_status(bench, _recorded(bench, suite_dir))
            if args.smoke:  # every time from nothing
                _clear(bench, suite_dir)
            elif stale:  # results of other code: run again from nothing, not resumed
                aside = _set_aside(bench, suite_dir, args.results)
                state = _read_json(state_path) or state
                if state["benchmarks"].pop(bench.name, None) is not None:
                    _write_json(state_path, state)
                print(f"[{i}/{len(chosen)}] {bench.name}: {stale}; its results moved to {aside}", flush=True)
            elif (
                _finished_with(done, bench)
                and bench.name not in args.rerun
                and (args.eval_data is None or done.get("eval_data") == data_provenance(args.eval_data))
            ):
                print(f"[{i}/{len(chosen)}] {bench.name}: done {done['finished']}; skipped", flush=True)
                continue
            print(f"[{i}/{len(chosen)}] {bench.name}: {bench.title} (~{bench.minutes:.0f} min)", flush=True)
            start = time.perf_counter()
            try:
                run_benchmark(bench, suite_dir, jobs, args.eval_data)
            except (RuntimeError, ValueError) as error:
                print(f"{error}", file=sys.stderr, flush=True)
                write_report(args.results)
                return DEADLINE_EXIT if "BENCH_DEADLINE" in str(error) else 1
            wall = time.perf_counter() - start
            # Re-read: another runner (`--only` on other entries) may have finished one meanwhile.
            state = _read_json(state_path) or state
            state["benchmarks"][bench.name] = {
                "args": list(bench.args),
                **({"more_args": [list(a) for a in bench.more_args]} if bench.more_args else {}),
                "finished": _now(),
                "wall_s": round(wall, 3),
                "jobs": jobs if bench.run_key else 1,
                "eval_data": data_provenance(args.eval_data),
            }
            _write_json(state_path, state)
            results = _read_json(suite_dir / f"{bench.name}.json")
            if results is not None:  # the results file carries how the suite ran it, too
                results["suite_run"] = {"suite": args.suite, **state["benchmarks"][bench.name]}
                _write_json(suite_dir / f"{bench.name}.json", results)
            print(
                f"[{i}/{len(chosen)}] {bench.name}: finished in {wall / 60:.1f} min "
                f"({(time.perf_counter() - total) / 60:.1f} min so far)",
                flush=True,
            )
    path = write_report(args.results)
    print(f"report: {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
