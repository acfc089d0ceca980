"""Small file-system helpers: writes that never leave half-written files, never replace an input.

* :func:`atomic_path` writes beside the destination and moves the result into
  place; its temporary file is removed on error, on Ctrl-C and on SIGTERM, and
  temporaries of the same destination left by a killed process (SIGKILL
  cannot be caught) are removed by the next write of that destination.
* :func:`check_output` and :func:`prepare_output_dir` refuse to write over an
  input, and over an existing output unless told to overwrite it.
* :class:`OutputLock` keeps a second process out of an output (a folder or a
  file) while one writes it: taken before anything there is removed or written,
  it names the holder's pid to whoever is refused.
* :func:`check_zip_sizes` reads an archive's directory, not its members: a zip bomb
  (a ``.keras`` file of a megabyte that inflates to gigabytes) is refused unread.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import signal
import tempfile
import threading

__all__ = [
    "LOCK_FILE",
    "MAX_INFLATION",
    "MAX_JSON_MEMBER_BYTES",
    "OutputInUse",
    "OutputLock",
    "atomic_path",
    "check_output",
    "check_unlocked",
    "check_zip_sizes",
    "locked_outputs",
    "prepare_output_dir",
    "write_json",
    "write_text",
]

_TMP_MARK = ".tmp-"
#: The lock file of an output folder (a file output's is ``.<name>.structinit.lock`` beside it).
LOCK_FILE = ".structinit.lock"
# Temporaries being written by this process; removed by the SIGTERM handler.
_LIVE = set()


def _tmp_prefix(path):
    """``.<name>.<pid>.tmp-``: ties a temporary to its destination and to the process writing it."""
    return f".{os.path.basename(path)}.{os.getpid()}{_TMP_MARK}"


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or a platform without signal 0: leave its files
    return True


def _remove_stale_temporaries(path, suffix):
    """Removes temporaries of ``path`` whose writing process is gone (killed with SIGKILL, say)."""
    if os.name != "posix":
        return
    directory, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(re.escape(f".{name}.") + r"(\d+)" + re.escape(_TMP_MARK) + r".*" + re.escape(suffix))
    for candidate in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(name)}.*{_TMP_MARK}*")):
        match = pattern.fullmatch(os.path.basename(candidate))
        if match and not _pid_alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.remove(candidate)


def _on_sigterm(previous):
    def handler(signum, frame):
        for tmp in list(_LIVE):
            with contextlib.suppress(OSError):
                os.remove(tmp)
        _LIVE.clear()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:  # the default: die of the signal, as without this handler
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    handler.structinit_cleanup = True
    return handler


@contextlib.contextmanager
def _sigterm_cleanup():
    """While active, SIGTERM first removes the live temporaries (then acts as before).

    Only in the main thread (Python's rule for signal handlers), and only when
    the current handler was set from Python; the previous handler is restored
    on exit, so a process that writes nothing keeps its own SIGTERM behaviour.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    install = previous is not None and not getattr(previous, "structinit_cleanup", False)
    if install:
        signal.signal(signal.SIGTERM, _on_sigterm(previous))
    try:
        yield
    finally:
        if install:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside ``path``; moves it into place on success.

    The temporary file (``.<name>.<pid>.tmp-XXXX<ext>``) keeps ``path``'s
    extension (writers such as matplotlib and ``numpy.savez`` pick the format
    from it) and is removed on error, Ctrl-C and SIGTERM. A process killed
    with SIGKILL leaves it behind until the next write of ``path`` removes it.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    suffix = os.path.splitext(path)[1]
    _remove_stale_temporaries(path, suffix)
    with _sigterm_cleanup():
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=_tmp_prefix(path), suffix=suffix)
        os.close(fd)
        _LIVE.add(tmp)
        try:
            yield tmp
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp files are owner-only
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
            raise
        finally:
            _LIVE.discard(tmp)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def check_output(path, name, *, overwrite=False, inputs=(), hint="overwrite=True"):
    """``path`` as a string, once it is known not to clobber anything.

    ``ValueError`` naming ``name`` when ``path`` is one of ``inputs`` (paths
    the same run reads; ``None`` entries and non-path inputs are skipped), or
    when it exists and ``overwrite`` is false (``hint`` says how to allow it).
    """
    path = os.fspath(path)
    for source in inputs:
        if isinstance(source, (str, os.PathLike)) and _same_file(path, source):
            raise ValueError(
                f"`{name}` {path!r} is an input of this run ({os.fspath(source)!r}); "
                "writing it would destroy that input: choose another path"
            )
    if os.path.exists(path) and not overwrite:
        raise ValueError(f"`{name}` {path!r} already exists; pass {hint} to replace it")
    return path


def prepare_output_dir(
    out, files, name, *, overwrite=False, inputs=(), hint="overwrite=True", check_only=False
):
    """Makes the output folder ``out``, of which a run writes ``files`` (names).

    Refuses (``ValueError`` naming ``name``) a folder that holds any of
    ``files`` unless ``overwrite``; with ``overwrite`` those files are removed
    first, so that nothing of an earlier run is left beside the new one.
    Refuses an ``out`` whose outputs would replace one of ``inputs``.
    Other files in ``out`` are left alone. ``check_only``: raise what would be
    raised, change nothing (for command lines that check before loading data).
    """
    out = os.fspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"`{name}` {out!r} exists and is not a folder")
    paths = [os.path.join(out, f) for f in files]
    for path in paths:
        check_output(path, name, overwrite=True, inputs=inputs)
    existing = [p for p in paths if os.path.exists(p)]
    if existing and not overwrite:
        listed = ", ".join(os.path.basename(p) for p in existing)
        raise ValueError(
            f"`{name}` {out!r} already holds the results of a run ({listed}); "
            f"pass {hint} to replace them, or choose another folder"
        )
    if check_only:
        return out
    for path in existing:
        os.remove(path)
    os.makedirs(out, exist_ok=True)
    return out


def write_text(path, text):
    """Atomically writes ``text`` to ``path``."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def write_json(path, obj):
    """Atomically writes ``obj`` as indented JSON to ``path``."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


#: The most bytes a JSON member of an archive (a ``.keras`` file's ``config.json``) may inflate to; a
#: model's config is kilobytes to a few megabytes, and it is read whole.
MAX_JSON_MEMBER_BYTES = 64 << 20
#: A member that inflates to more than this many times its stored size, and to more than
#: :data:`INFLATION_FLOOR_BYTES`, is a bomb: Keras stores its files uncompressed, and weights hardly
#: compress. (Keras' own check starts at 4 GiB; a 1 MB file inflating to 2.35 GB passed it.)
MAX_INFLATION = 100
INFLATION_FLOOR_BYTES = 16 << 20


def check_zip_sizes(path, name, *, json_members=("config.json", "metadata.json")):
    """Refuses (``ValueError``, one line naming ``name``) an archive whose directory declares a member
    that would inflate far beyond its stored size (:data:`MAX_INFLATION`), or a ``json_members``
    entry above :data:`MAX_JSON_MEMBER_BYTES`; reads the central directory only. Python's ``zipfile``
    stops inflating a member at its declared size, so the declared sizes bound what a reader gets.
    A file that is no zip is left to the reader's own error."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (OSError, zipfile.BadZipFile, EOFError):
        return
    for info in infos:
        where = f"`{name}` {os.fspath(path)!r}: its member {info.filename!r}"
        if info.filename in json_members and info.file_size > MAX_JSON_MEMBER_BYTES:
            raise ValueError(
                f"{where} inflates to {info.file_size} bytes, above the "
                f"{MAX_JSON_MEMBER_BYTES} a model's config may have: not read"
            )
        stored = max(info.compress_size, 1)
        if info.file_size > INFLATION_FLOOR_BYTES and info.file_size > MAX_INFLATION * stored:
            raise ValueError(
                f"{where} inflates {info.compress_size} stored bytes to {info.file_size} "
                f"(more than {MAX_INFLATION} times): a zip bomb, not read"
            )


def file_sha256(path):
    """The SHA-256 of a file's bytes, hex, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OutputInUse(ValueError):
    """Another process holds the :class:`OutputLock` of an output."""


class OutputLock:
    """An exclusive ``fcntl.flock`` on an output, held while one process removes or writes it.

    ``path`` is a folder (``folder=True``: the lock is its :data:`LOCK_FILE`) or a file (the lock is
    ``.<name>.structinit.lock`` beside it). :meth:`acquire` raises :class:`OutputInUse` naming
    ``name`` and the holder's pid (which the holder writes into the lock file) when another process
    holds it; :meth:`check` raises the same and changes nothing on disk. The kernel releases the lock
    of a killed process. :meth:`release` removes the lock file; an acquire that locked a file removed
    in between locks again, so two processes never both hold one. Without ``fcntl`` (Windows) there
    is no lock. Use as a context manager, or :meth:`acquire` then :meth:`release`.
    """

    def __init__(self, path, name, *, folder=True, what="another process"):
        self.path, self.name, self.folder, self.what = os.fspath(path), name, folder, what
        head, tail = os.path.split(os.path.abspath(self.path))
        self.lock_path = (
            os.path.join(self.path, LOCK_FILE) if folder else os.path.join(head, f".{tail}.structinit.lock")
        )
        self._fd, self._made = None, None

    def _refusal(self, fd):
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            pid = os.read(fd, 32).decode("ascii", "replace").strip()
        except OSError:
            pid = ""
        holder = f"process {pid}" if pid.isdigit() else f"it holds {os.path.basename(self.lock_path)}"
        return OutputInUse(
            f"{self.name} {self.path!r} is in use by {self.what} ({holder}); wait for it to "
            "end, or choose another path"
        )

    def check(self):
        """Raises :class:`OutputInUse` when another process holds the lock; changes nothing."""
        try:
            import fcntl
        except ImportError:
            return
        try:
            fd = os.open(self.lock_path, os.O_RDONLY)
        except OSError:
            return  # no lock file: nobody holds it
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            raise self._refusal(fd) from None
        finally:
            os.close(fd)

    def acquire(self):
        """Takes the lock (making the folder that holds the lock file); :class:`OutputInUse` if held."""
        try:
            import fcntl
        except ImportError:
            return self
        directory = os.path.dirname(self.lock_path)
        if not os.path.isdir(directory):
            self._made = directory
            os.makedirs(directory, exist_ok=True)
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                err = self._refusal(fd)
                os.close(fd)
                self._remove_made()
                raise err from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.lock_path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder removed it as we opened it: lock the file that is there now
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self):
        """Removes the lock file and releases the lock (the folder it made, if left empty)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.remove(self.lock_path)
        os.close(self._fd)
        self._fd = None
        self._remove_made()

    def _remove_made(self):
        if self._made is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self._made)  # only when empty
            self._made = None

    @property
    def held(self):
        return self._fd is not None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


def _locks(files, folders, what):
    return [
        OutputLock(path, name, folder=folder, what=what)
        for entries, folder in ((files, False), (folders, True))
        for path, name in entries
        if path is not None
    ]


def check_unlocked(files=(), folders=(), what="another process"):
    """:class:`OutputInUse` when another process holds the lock of one of ``files`` or ``folders``
    (``(path, name)`` pairs, ``None`` paths skipped); changes nothing. Check this before an output's
    existence, so that a busy output is never answered with advice to overwrite it."""
    for lock in _locks(files, folders, what):
        lock.check()


@contextlib.contextmanager
def locked_outputs(files=(), folders=(), what="another process"):
    """Holds the :class:`OutputLock` of each ``(path, name)`` in ``files`` and ``folders`` (``None``
    paths skipped), taken in order; :class:`OutputInUse` for the first one another process holds."""
    with contextlib.ExitStack() as stack:
        for lock in _locks(files, folders, what):
            stack.enter_context(lock)
        yield
