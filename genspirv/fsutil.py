"""Small file-system helpers every stage shares: the one atomic writer, the one
commit reader.

``StagedFiles`` is the one way genspirv replaces a file: ``stage(path, data)``
writes the bytes to a temp file beside ``path`` (same folder, so the folder's
writability and the disk's space are proven here), fsynced; ``commit()`` then
``os.replace``-s every staged file in the order staged, and ``discard()``
removes the temps. A failure while staging leaves every target as it was; a
reader sees each file's old or new version, never half of either.
``atomic_write(path, data)`` stages and commits one file; ``write_json_atomic``
does the same for a JSON document. ``signals_deferred()`` holds SIGINT and
SIGTERM back for the few renames of a commit. ``try_lock(f)`` / ``unlock(f)``: an
exclusive lock on an open file that the system drops when its holder dies (``fcntl.flock``;
``msvcrt.locking`` of the file's first byte where there is no fcntl, as on Windows; chosen
at run time, so this module imports everywhere). ``exclusive_lock(path)`` holds such a lock
for a short read-modify-write (the cache counters), waiting until it is free.
``write_report(path, data)`` writes a file a user named on the command line
(through a symlink; into a device or FIFO as it is). ``git_commit(folder)`` names the
checkout's commit (``-dirty`` when tracked files differ), or None outside a git
checkout. ``find_project_root(start)``: the nearest folder with a ``[tool.genspirv]``
``pyproject.toml`` (the manifest loader and the config both ask). ``forks_safely()``:
whether a child may be forked here.

``read_regular(path, cap)`` is the one bounded reader of a file a hand or a stranger
may have edited (the committed manifest and blobs, ``.genspirv/`` files, the sources a
manifest names): only a regular file is read, and no more than ``cap`` bytes of it,
so a symlink to ``/dev/zero``, a FIFO or a file of gigabytes is one ``RefusedRead``
(an ``OSError``) instead of a hang or a ``MemoryError``. ``parse_json(data)`` parses
such bytes, every failure (not UTF-8, not JSON, nested past the recursion limit) one
``ValueError``; ``read_json(path, cap)`` is the two together. No genspirv imports.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Iterator, Optional

try:
    import fcntl
except ImportError:     # Windows
    fcntl = None
try:
    import msvcrt
except ImportError:     # POSIX
    msvcrt = None


class StagedFiles:
    """Files written beside their targets first, then put in place together.

    Used as a context manager, a block that raises discards every temp file. Safe from
    several threads; a file staged after the discard (a writer thread still running when an
    interrupt discarded the rest) is removed at once, so none is left beside its target.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, str]] = []      # (target, temp path), in commit order
        self._lock = threading.Lock()
        self._discarded = False

    def __len__(self) -> int:
        return len(self._staged)

    def stage(self, path: Path, data: bytes, durable: bool = True) -> None:
        """Write ``data`` to a temp file in ``path``'s folder (``.NAME.XXXXXXXX.tmp``).

        ``durable=False`` skips the fsync: for a cache, whose lost entry is only
        a recompile, all-or-nothing is enough. An OSError names ``path``."""
        path = Path(path)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            import tempfile     # here: a replayed no-op imports this module and writes nothing
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            # mkstemp makes the file 0600; give it the mode a plain open() would have.
            os.chmod(tmp, _new_file_mode(path))
        except OSError as exc:
            _unlink(tmp)
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        except BaseException:
            _unlink(tmp)
            raise
        with self._lock:
            if not self._discarded:
                self._staged.append((path, tmp))
                return
        _unlink(tmp)

    def commit(self) -> None:
        """Replace every target with its staged file, in the order staged.

        A rename that fails (rare: the temp is in the target's own folder)
        stops the commit: the targets before it are new, it and those after it
        old, their temps removed; the OSError names the target."""
        with self._lock:
            staged, self._staged = self._staged, []
        for i, (path, tmp) in enumerate(staged):
            try:
                os.replace(tmp, path)
            except OSError as exc:
                for _, rest in staged[i:]:
                    _unlink(rest)
                raise OSError(exc.errno, exc.strerror, str(path)) from None

    def discard(self) -> None:
        with self._lock:
            staged, self._staged, self._discarded = self._staged, [], True
        for _, tmp in staged:
            _unlink(tmp)

    def __enter__(self) -> "StagedFiles":
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()          # after a commit there is nothing left to discard


def _unlink(tmp: Optional[str]) -> None:
    if tmp is not None:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and os.replace."""
    with StagedFiles() as staged:
        staged.stage(path, data, durable=durable)
        staged.commit()


def write_report(path, data: bytes) -> None:
    """``data`` to a report file a user named (``--json``, ``--depfile``): atomically, into the
    file a symlink there leads to (the link stays a link); or, where ``path`` is no regular file
    (/dev/null, a FIFO, a terminal), written into it as a shell's ``>`` would: the atomic rename
    would replace the device node itself (as root, /dev/null) or the FIFO with a plain file."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        regular = True
    if not regular:
        with open(path, "wb") as f:
            f.write(data)
        return
    atomic_write(Path(os.path.realpath(path)), data)


def _new_file_mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_json_atomic(path, doc: Any) -> None:
    """``doc`` as indented, key-sorted JSON with a final newline, written atomically."""
    data = json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"
    atomic_write(Path(path), data.encode("utf-8"))


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then act as they would have.

    For a commit's renames: an interrupt between two of them would leave some
    outputs new and some old. Off the main thread (where Python cannot change
    handlers) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:         # None: a handler not set from Python; leave ours
                signal.signal(sig, handler)
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)


def try_lock(f: IO) -> bool:
    """An exclusive lock on the open file ``f``, without waiting: True if taken, False while
    another process holds it; OSError for any other failure."""
    if fcntl is not None:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
    if msvcrt is not None:
        f.seek(0)       # msvcrt locks bytes from the current position: always byte 0
        try:
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EDEADLK):
                return False
            raise
    raise OSError(errno.ENOSYS, "this platform has neither fcntl.flock nor msvcrt.locking")


def unlock(f: IO) -> None:
    """Release the lock ``try_lock`` took on ``f``."""
    if fcntl is not None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    elif msvcrt is not None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold ``path`` (created if need be) locked for the block; other holders wait. The OS
    releases it when the holder dies, so a killed process never leaves it held."""
    with open(path, "a+b") as f:
        while not try_lock(f):
            time.sleep(0.005)       # a counter update takes milliseconds
        try:
            yield
        finally:
            unlock(f)


def git_commit(folder: Path) -> Optional[str]:
    """HEAD of the checkout holding ``folder``, ``-dirty`` if tracked files differ; else None."""
    import subprocess
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def forks_safely() -> bool:
    """This system forks, and safely: not Windows (no fork), not macOS, where the fork of a process
    whose system frameworks have started threads can crash (why CPython's multiprocessing stopped
    forking there). Asked at each call, so a test can take fork away."""
    return hasattr(os, "fork") and sys.platform != "darwin"


def find_project_root(start: Path) -> Optional[Path]:
    """The nearest folder at or above ``start`` whose pyproject.toml has [tool.genspirv]."""
    for folder in [start, *start.parents]:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                text = pyproject.read_bytes()     # bytes: a file that is not UTF-8 is the config's to refuse
            except OSError:
                continue
            if b"[tool.genspirv" in text:
                return folder
    return None


# The most read of a small cache genspirv keeps in .genspirv/ (tool versions, probe answers,
# counters): each is a few hundred bytes; a larger one is not ours and is started again.
CACHE_FILE_MAX = 1 << 20


class RefusedRead(OSError):
    """A file ``read_regular`` would not read: not a regular file (``errno.EINVAL``), or larger
    than its cap (``errno.EFBIG``; ``size``: the size stat() gave, where it did). ``strerror``
    says which, in words, and ``filename`` names the file."""

    def __init__(self, code: int, reason: str, path, size: Optional[int] = None):
        super().__init__(code, reason, os.fspath(path))
        self.size = size

    @property
    def too_large(self) -> bool:
        return self.errno == errno.EFBIG


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _refuse_unless_regular(st: os.stat_result, path) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a plain file")
        raise RefusedRead(errno.EINVAL, f"not a regular file ({kind})", path)


def _too_large(path, cap: int, size: Optional[int]) -> RefusedRead:
    told = f"{size} bytes, " if size is not None else ""
    return RefusedRead(errno.EFBIG, f"{told}more than the {cap} bytes genspirv reads of it", path, size)


def read_regular(path, cap: int) -> bytes:
    """The bytes of the regular file at ``path`` (a symlink is followed), at most ``cap`` of them.

    stat() first, so no device, FIFO or socket is ever opened; then the open is non-blocking
    (a FIFO swapped in after the stat() cannot hold it) and fstat() checks the file opened.
    A file whose stat() says more than ``cap`` bytes is refused unread; one that grows past
    ``cap`` while it is read (or whose stat() under-states it, as /proc's files do) is refused
    after ``cap`` + 1 bytes. ``RefusedRead`` for either, an ``OSError`` as open() gives for
    the rest (absent, no permission)."""
    _refuse_unless_regular(os.stat(path), path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        _refuse_unless_regular(st, path)
        if st.st_size > cap:
            raise _too_large(path, cap, st.st_size)
        parts, left = [], cap + 1
        while left > 0:
            part = os.read(fd, min(left, max(st.st_size, 1 << 16)))
            if not part:
                break
            parts.append(part)
            left -= len(part)
    finally:
        os.close(fd)
    if left <= 0:
        raise _too_large(path, cap, None)
    return b"".join(parts)


def parse_json(data: bytes) -> Any:
    """``data`` (UTF-8 JSON) as Python values; ValueError, one line, for bytes that are not UTF-8,
    text that is not JSON, or nesting deeper than the parser's recursion limit (a RecursionError
    inside json, which a file of ``[[[[...`` gives)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested deeper than genspirv reads (arrays or objects inside each other "
                         "hundreds of levels deep)") from None


def read_json(path, cap: int) -> Any:
    """``parse_json(read_regular(path, cap))``: OSError (``RefusedRead`` among them) or ValueError."""
    return parse_json(read_regular(path, cap))
