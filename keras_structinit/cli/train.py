"""``structinit train``: one :class:`~keras_structinit.recipes.run.Run`, from flags.

Each flag's ``dest`` is the field it sets (of ``Run``, ``RecipeConfig``, or a zoo model's
builder), so no table maps flags to settings; a field a message names in backticks is shown
as its flag. The parser imports no Keras: argument errors come before any backend starts.
"""

from __future__ import annotations

import os

#: The exit status of a run stopped by a non-finite loss.
EXIT_DIVERGED = 3
#: Parsed arguments that are not settings of the run.
NOT_SETTINGS = (
    "command",
    "backend",
    "out",
    "resume",
    "overwrite",
    "paper",
    "recipe",
    "help_all",
    "max_model_bytes",  # the bound on model files read (keras_structinit.utils.model_files), set by cli.main
)


def run(args, parser):
    """Runs ``structinit train``; the exit status (2: a bad argument, one line, nothing written)."""
    from keras_structinit.recipes.backup import BackupRefused
    from keras_structinit.recipes.run_files import RunFiles, RunRefused
    from keras_structinit.utils.arguments import INPUT_ERRORS, spelled, usage_error

    flags = _flags(parser)

    def refuse(err):
        return usage_error("train", spelled(str(err), flags))

    try:
        if args.distribution == "multi_worker":
            args.out = _process_out(args.out)
        run_value = _run_of(args, flags)
        files = RunFiles(
            args.out, resume=args.resume, overwrite=args.overwrite, inputs=run_value.inputs(), names=flags
        )
        files.check()  # before the data is read
        checked = run_value.check()
    except INPUT_ERRORS as err:
        return refuse(err)
    try:
        results = checked.execute(args.out, resume=args.resume, overwrite=args.overwrite, names=flags)
    except (RunRefused, BackupRefused) as err:
        return refuse(err)
    except OSError as err:  # the disk failed the run (full, gone read-only): one line, results.json says it
        return _disk_failed(err, args.out, flags)
    except Exception as err:
        _end_if_a_peer_is_lost(err)
        raise
    return EXIT_DIVERGED if results["status"] == "diverged" else 0


def _end_if_a_peer_is_lost(err):
    """A multi-process JAX run whose peer died (its collective failed): one line, exit 1, with
    ``results.json`` saying ``failed`` (``recipes.devices.peer_lost``, ``end_process``)."""
    from keras_structinit.recipes import devices
    from keras_structinit.utils import validation

    if devices.peer_lost(err):
        first = validation.clipped(str(err).strip().splitlines()[0], 200)
        devices.end_process(
            f"structinit train: another process of this multi-process run stopped "
            f"({first}); this one stops too (results.json records it)",
            1,
        )


def _disk_failed(err, out, flags):
    """Says in one line that writing failed, and what ``results.json`` recorded; the exit status:
    2 for an ``--out`` that cannot be written at all, 1 for a disk that failed (full, an I/O error)."""
    import json

    from keras_structinit.recipes.run_files import READ_ONLY
    from keras_structinit.utils.arguments import usage_error

    try:
        with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        recorded = {}
    said = f"{err.strerror or err}" + (f": {err.filename!r}" if err.filename else "")
    if recorded.get("status") == "failed":
        epoch = recorded.get("last_backup_epoch")
        said += (
            f" (results.json records it; {flags.get('resume', '--resume')} goes on from epoch {epoch} "
            "once the disk has room)"
            if epoch
            else " (results.json records it)"
        )
    usage_error("train", said)
    return 2 if err.errno in READ_ONLY else 1


def _run_of(args, flags):
    """The :class:`Run` the flags describe (``--paper``: its setup, the flags overriding it)."""
    from keras_structinit.recipes.rand_augment import parse_rand_augment_flag
    from keras_structinit.recipes.run import Run

    values = {k: v for k, v in vars(args).items() if v is not None and k not in NOT_SETTINGS}
    if "rand_augment" in values:
        form = parse_rand_augment_flag(values.pop("rand_augment"))
        if form != "recipe":
            values["rand_augment"] = form  # None: off
    if args.paper is None:
        for field in ("model", "epochs"):
            if field not in values:
                raise ValueError(f"`{field}` is required (or --paper NAME, which sets it)")
        return Run.from_values(args.recipe, **values)
    run = Run.from_paper(args.paper, args.recipe, **values)
    print(f"Paper setup {run.paper['name']!r}: {run.paper['paper']}", flush=True)
    for setting, entry in run.paper["settings"].items():
        departure = run.paper["departures"].get(setting)
        mark = f"  <- departure: {flags.get(setting, setting)} {departure['given']}" if departure else ""
        print(f"  {setting} = {entry['value']!r}  [{entry['source']}]{mark}", flush=True)
    for note in run.paper["notes"]:
        print(f"  note: {note}", flush=True)
    return run


def _flags(parser):
    """``{dest: its flag}`` of ``train``'s ``parser``: how the command line spells each field."""
    return {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings and a.dest != "help"}


def _process_out(out):
    """Joins this process to a multi-process run (before any computation) and returns its
    ``--out``: process 0 writes ``out``, process ``i > 0`` its own ``out/process_<i>``."""
    from keras_structinit.recipes import devices

    _, index = devices.initialize_processes()
    return out if index == 0 else os.path.join(out, f"process_{index}")
