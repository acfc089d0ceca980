"""Small file-system helpers: writes that never leave half-written files, never replace an input.

* :func:`atomic_path` writes beside the destination and moves the result into
  place; its temporary file is removed on error, on Ctrl-C and on SIGTERM (as a
  held lock file is), and
  temporaries of the same destination left by a killed process (SIGKILL
  cannot be caught) are removed by the next write of that destination.
* :func:`check_output` and :func:`prepare_output_dir` refuse to write over an
  input, and over an existing output unless told to overwrite it.
* :class:`OutputLock` keeps a second process out of an output (a folder or a
  file) while one writes it: taken before anything there is removed or written,
  it names the holder's pid to whoever is refused.
* Nothing is written through a link: where a run writes a file, an entry that is
  not a plain file (a symbolic link, dangling or not, a FIFO, a device, a folder)
  is refused in one line (:func:`check_plain`), and the files written in place
  (the lock, an appended log) are opened with ``O_NOFOLLOW`` (:func:`open_plain`); where a run
  writes a folder, a symbolic link there is refused too (:func:`check_folder`).
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
import stat
import tempfile
import threading

from keras_structinit.utils.validation import quoted

__all__ = [
    "LOCK_FILE",
    "OutputInUse",
    "OutputLock",
    "OutputUnwritable",
    "atomic_path",
    "check_folder",
    "check_output",
    "check_plain",
    "check_unlocked",
    "locked_outputs",
    "open_plain",
    "prepare_output_dir",
    "write_json",
    "write_text",
]

_TMP_MARK = ".tmp-"
#: The lock file of an output folder (a file output's is ``.<name>.structinit.lock`` beside it).
LOCK_FILE = ".structinit.lock"
# What this process would leave behind if SIGTERM ended it now (temporaries being written, lock files
# it holds): the SIGTERM handler of _sigterm_cleanup removes them.
_LIVE = set()
# Folders made only to hold a lock file: removed after _LIVE when left empty.
_LIVE_FOLDERS = set()
# How many _sigterm_cleanup scopes are open, and the handler the first one replaced.
_SCOPES = {"depth": 0, "previous": None}


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
        for path in list(_LIVE):
            with contextlib.suppress(OSError):
                os.remove(path)
        _LIVE.clear()
        for folder in list(_LIVE_FOLDERS):
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only when empty
        _LIVE_FOLDERS.clear()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:  # the default: die of the signal, as without this handler
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    handler.structinit_cleanup = True
    return handler


def is_cleanup_handler(handler):
    """Whether ``handler`` is the SIGTERM handler of :func:`_sigterm_cleanup` (which a handler that
    replaces only the default may replace too: it restores it, and it acts as the default does)."""
    return getattr(handler, "structinit_cleanup", False)


@contextlib.contextmanager
def _sigterm_cleanup():
    """While any such scope is open, SIGTERM first removes the paths in ``_LIVE`` (then acts as before).

    Only in the main thread (Python's rule for signal handlers), and only when the handler found was
    set from Python; the last scope to close restores it, so a process that writes nothing keeps its
    own SIGTERM behaviour. Scopes need not nest (a lock may be released inside a write's scope).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _SCOPES["depth"] == 0:
        previous = signal.getsignal(signal.SIGTERM)
        if previous is None or is_cleanup_handler(previous):  # a C handler: left alone
            yield
            return
        signal.signal(signal.SIGTERM, _on_sigterm(previous))
        _SCOPES["previous"] = previous
    _SCOPES["depth"] += 1
    try:
        yield
    finally:
        _SCOPES["depth"] -= 1
        if _SCOPES["depth"] == 0:
            signal.signal(signal.SIGTERM, _SCOPES["previous"])
            _SCOPES["previous"] = None


@contextlib.contextmanager
def _sigterm_blocked():
    """SIGTERM held back (delivered on exit) in the main thread, where signal masks are per thread."""
    blocking = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if blocking:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        if blocking:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


@contextlib.contextmanager
def _live(make):
    """``make()``'s path, registered in ``_LIVE`` with SIGTERM held back in between, so that no
    SIGTERM finds it made but unregistered; unregistered on exit."""
    with _sigterm_blocked():
        path = make()
        _LIVE.add(path)
    try:
        yield path
    finally:
        _LIVE.discard(path)


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
    with _sigterm_cleanup(), _live(lambda: _mkstemp(directory, path, suffix)) as tmp:
        try:
            yield tmp
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp files are owner-only
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
            raise


def _mkstemp(directory, path, suffix):
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=_tmp_prefix(path), suffix=suffix)
    os.close(fd)
    return tmp


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


#: ``os.open`` flags of a file written in place: never through a final symbolic link
#: (``ELOOP``), never blocking on a FIFO, never inherited by a child process.
_IN_PLACE = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _kind(mode):
    """What a non-regular ``st_mode`` is, in words."""
    for test, kind in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def _not_plain(path, name, kind, writes="a plain file"):
    target = ""
    if kind == "a symbolic link":
        with contextlib.suppress(OSError):
            target = f" (to {os.readlink(path)!r})"
    return ValueError(
        f"{quoted(name)}: {os.fspath(path)!r} is {kind}{target}, where this writes {writes}; it is "
        "neither followed nor replaced: remove it, or choose another path"
    )


def check_folder(path, name):
    """Refuses (``ValueError``, one line naming ``name``) a symbolic link, dangling or not, at ``path``,
    where a run writes a folder: its files are never written through it (a dangling one would
    otherwise fail as "File exists"). A missing ``path``, or a real folder, passes."""
    if os.path.islink(path):
        raise _not_plain(path, name, "a symbolic link", writes="a folder")


def check_plain(path, name, *, single_link=False):
    """Refuses (``ValueError``, one line naming ``name``) an entry at ``path`` that is not a regular
    file: a symbolic link (dangling or not), FIFO, device, socket or folder. A missing ``path`` passes.
    ``single_link``: a file with other hard links is refused too (for files written in place, whose
    other names would see the write). Reads the entry itself (``lstat``), never what it points to."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise _not_plain(path, name, _kind(st.st_mode))
    if single_link and st.st_nlink > 1:
        raise _not_plain(path, name, f"a file of {st.st_nlink} hard links")


def open_plain(path, mode, name):
    """``open(path, mode)`` (``"w"``, ``"a"`` or ``"r+"``; text, UTF-8) of a plain file written in
    place: a symbolic link, FIFO or device at ``path``, or a file of several hard links, is refused
    (:func:`check_plain`) and never opened through; ``O_NOFOLLOW`` closes the gap between the check
    and the open."""
    check_plain(path, name, single_link=True)
    flags = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}
    flags["r+"] = os.O_RDWR | os.O_CREAT
    fd = _open_checked(path, flags[mode] | _IN_PLACE, name)
    return os.fdopen(fd, mode, encoding="utf-8", newline="")


def _open_checked(path, flags, name):
    """``os.open`` with ``flags`` (which hold ``O_NOFOLLOW``), refusing what is not a plain file of one
    link once open (an entry swapped in after :func:`check_plain`)."""
    import errno

    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _not_plain(path, name, "a symbolic link") from None
        if err.errno == errno.ENXIO:  # O_NONBLOCK's answer for a FIFO that nobody reads
            raise _not_plain(path, name, "a FIFO") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        kind = _kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else f"a file of {st.st_nlink} hard links"
        raise _not_plain(path, name, kind)
    return fd


class OutputUnwritable(OSError):
    """An output that cannot be written (a read-only or full disk); its message names the argument
    and the path, with the system's reason. ``errno`` is the system's."""

    def __init__(self, err, name, path):
        super().__init__(
            err.errno,
            f"{name} {os.fspath(path)!r} cannot be written ({err.strerror or err}): choose "
            "a folder this process may write, on a disk with room",
        )

    def __str__(self):
        return self.strerror


def check_output(path, name, *, overwrite=False, inputs=(), hint="overwrite=True"):
    """``path`` as a string, once it is known not to clobber anything.

    ``ValueError`` naming ``name`` when ``path`` is one of ``inputs`` (paths
    the same run reads; ``None`` entries and non-path inputs are skipped), or
    when it exists and ``overwrite`` is false (``hint`` says how to allow it); whatever ``overwrite``,
    when it is not a plain file (:func:`check_plain`: a folder, a symbolic link, a FIFO).
    """
    path = os.fspath(path)
    for source in inputs:
        if isinstance(source, (str, os.PathLike)) and _same_file(path, source):
            raise ValueError(
                f"{quoted(name)} {path!r} is an input of this run ({os.fspath(source)!r}); "
                "writing it would destroy that input: choose another path"
            )
    check_plain(path, name)  # a link, FIFO or folder is never written through, overwrite or not
    if os.path.exists(path) and not overwrite:
        raise ValueError(f"{quoted(name)} {path!r} already exists; pass {hint} to replace it")
    return path


def prepare_output_dir(
    out, files, name, *, overwrite=False, inputs=(), hint="overwrite=True", check_only=False
):
    """Makes the output folder ``out``, of which a run writes ``files`` (names).

    Refuses (``ValueError`` naming ``name``) a folder that holds any of
    ``files`` unless ``overwrite``, and one where any of them is not a plain
    file (:func:`check_plain`) whatever ``overwrite``; with ``overwrite`` those files are removed
    first, so that nothing of an earlier run is left beside the new one.
    Refuses an ``out`` whose outputs would replace one of ``inputs``.
    Other files in ``out`` are left alone. ``check_only``: raise what would be
    raised, change nothing (for command lines that check before loading data).
    """
    out = os.fspath(out)
    check_folder(out, name)
    if os.path.lexists(out) and not os.path.isdir(out):
        raise ValueError(f"{quoted(name)} {out!r} exists and is not a folder")
    paths = [os.path.join(out, f) for f in files]
    for path in paths:
        check_output(path, name, overwrite=True, inputs=inputs)
    existing = [p for p in paths if os.path.exists(p)]
    if existing and not overwrite:
        listed = ", ".join(os.path.basename(p) for p in existing)
        raise ValueError(
            f"{quoted(name)} {out!r} already holds the results of a run ({listed}); "
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
        self._fd, self._made, self._scope = None, None, None

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
        """Raises :class:`OutputInUse` when another process holds the lock, ``ValueError`` when the lock
        file is not a plain file (:func:`check_plain`); changes nothing."""
        try:
            import fcntl
        except ImportError:
            return
        if self.folder:
            check_folder(self.path, self.name)
        check_plain(self.lock_path, self.name, single_link=True)
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | _IN_PLACE)
        except OSError:
            return  # no lock file (or one swapped for a link since: acquire refuses it)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            raise self._refusal(fd) from None
        finally:
            os.close(fd)

    def acquire(self):
        """Takes the lock (making the folder that holds the lock file); :class:`OutputInUse` if held.

        The lock file is opened without following a link and without blocking; an entry there that is
        not a plain file of one link is refused (``ValueError``), never written. A disk that refuses
        the lock (read-only, full) raises :class:`OutputUnwritable` naming ``name`` and leaves no lock
        file, nor a folder this made."""
        try:
            import fcntl
        except ImportError:
            return self
        scope = contextlib.ExitStack()
        scope.enter_context(_sigterm_cleanup())  # SIGTERM removes the lock file too
        try:
            with _sigterm_blocked():
                fd = self._lock_fd(fcntl)
                _LIVE.add(self.lock_path)
                if self._made is not None:
                    _LIVE_FOLDERS.add(self._made)
        except BaseException as err:
            scope.close()
            self._remove_made()
            if not isinstance(err, OSError) or isinstance(err, OutputUnwritable):
                raise
            raise OutputUnwritable(err, self.name, self.path) from None
        self._fd, self._scope = fd, scope
        return self

    def _lock_fd(self, fcntl):
        """The open, locked lock file with this process's pid in it."""
        directory = os.path.dirname(self.lock_path)
        if self.folder:
            check_folder(self.path, self.name)
        if not os.path.isdir(directory):
            self._made = directory
            os.makedirs(directory, exist_ok=True)
        check_plain(self.lock_path, self.name, single_link=True)
        while True:
            fd = _open_checked(self.lock_path, os.O_RDWR | os.O_CREAT | _IN_PLACE, self.name)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                err = self._refusal(fd)
                os.close(fd)
                self._remove_made()
                raise err from None
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(self.lock_path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder removed it as we opened it: lock the file that is there now
        try:
            os.ftruncate(fd, 0)  # a plain file of one link, ours: an earlier holder's pid goes
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:  # a full disk: no lock file is left behind
            with contextlib.suppress(OSError):
                os.remove(self.lock_path)
            os.close(fd)
            raise
        return fd

    def release(self):
        """Removes the lock file and releases the lock (the folder it made, if left empty)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.remove(self.lock_path)
        _LIVE.discard(self.lock_path)
        os.close(self._fd)
        self._fd = None
        self._scope.close()
        self._remove_made()

    def _remove_made(self):
        _LIVE_FOLDERS.discard(self._made)
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
