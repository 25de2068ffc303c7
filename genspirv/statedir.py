"""The state folder ``.genspirv/``: every file genspirv keeps in a project, by name, and its lock.

Takes a project root; gives the path of each thing genspirv keeps under it
(the only module that spells their names), and ``project_lock``, held by a
build or a check for as long as it runs. What each file holds is the business
of the module that reads and writes it:

| path | what | whose |
| --- | --- | --- |
| ``state.json`` | each variant's record: content key, files read, blob sha256 | ``buildsys.state`` |
| ``inputs.json`` | the inputs behind each record's key, read only to explain | ``buildsys.state`` |
| ``journal.jsonl`` | a record appended as each compile finishes | ``buildsys.state`` |
| ``stats.json`` | the stat() of each file the build hashed, with its sha256 | ``buildsys.statlog`` |
| ``lock`` | held by a build or a check while it runs | ``project_lock`` |
| ``tools.json`` | the tools' versions by binary (path, size, mtime) | ``toolchain.tools`` |
| ``slang-glslang.json`` | what slang-glslang predefines, per version | ``toolchain.slang`` |
| ``cache/`` | compiled blobs by content key, and the caches' counters | ``buildsys.blob_cache``, ``cachestats`` |
| ``generated/`` | the sources and headers a generator gave as text | ``project.generated`` |
| ``compile-*/`` | a running build's compile folders | ``buildsys.builder`` |

The folder is made with a ``.gitignore`` of ``*`` in it (as pytest's and ruff's
caches have), so git never lists it, whatever the project ignores. Nothing in
it is trusted as input the way the project's own files are: a CI cache may
hand it from job to job (docs/SECURITY.md), so each reader bounds what it reads
and treats anything malformed as a cold cache.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

STATE_DIR = ".genspirv"
GENERATED_DIR = f"{STATE_DIR}/generated"     # root-relative, posix: on the include path when there are files


class Kept(str, enum.Enum):
    """What genspirv keeps in the folder, by its name there (the table above)."""

    STATE = "state.json"
    INPUTS = "inputs.json"
    JOURNAL = "journal.jsonl"
    STATS = "stats.json"
    LOCK = "lock"
    TOOLS = "tools.json"
    PROBES = "slang-glslang.json"
    CACHE = "cache"


WORK_PREFIX = "compile-"

# What a reader of the folder reads at most: far past what 2,000 variants' state takes (a few
# MB); a file past it, like anything malformed, is a cold cache.
LARGEST_FILE = 256 << 20


def state_dir(root: Path) -> Path:
    return Path(root) / STATE_DIR


def path(root: Path, kept: Kept) -> Path:
    """Where ``kept`` lies in the project at ``root``."""
    return Path(root) / STATE_DIR / kept.value


def generated_dir(root: Path) -> Path:
    return Path(root) / GENERATED_DIR


def work_dirs(root: Path) -> list[Path]:
    """The compile folders a killed build left (only a build holding the lock makes them)."""
    folder = state_dir(root)
    return sorted(folder.glob(WORK_PREFIX + "*")) if folder.is_dir() else []


def read_bounded(file: Path, limit: int = LARGEST_FILE) -> Optional[bytes]:
    """The bytes of the regular file ``file`` when it holds at most ``limit`` of them; None
    for anything else (absent, a FIFO, a device, a folder, too large, unreadable), without
    blocking on a FIFO or reading past the limit."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        parts, size = [], 0
        while size <= limit:
            part = os.read(fd, min(1 << 20, limit + 1 - size))
            if not part:
                return b"".join(parts)
            parts.append(part)
            size += len(part)
        return None         # grew past the limit while being read
    except OSError:
        return None
    finally:
        os.close(fd)


def read_state_json(file: Path, limit: int = LARGEST_FILE) -> Any:
    """The JSON document a file of the folder holds; None for anything unreadable, too large,
    too deeply nested or malformed (a cold cache: the caller starts afresh)."""
    data = read_bounded(file, limit)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def make_state_dir(root: Path) -> Path:
    """``.genspirv/``, with its ``.gitignore`` of ``*``; the folder."""
    folder = state_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text("# genspirv's build state, cache and generated sources\n*\n")
    return folder


@contextlib.contextmanager
def project_lock(root: Path, timeout: Optional[float] = None,
                 log: Optional[Callable[[str], None]] = None) -> Iterator[None]:
    """Hold ``.genspirv/lock`` (``fsutil.try_lock``: flock, or msvcrt on Windows) for the
    duration; ``LockError`` after ``timeout`` (default ``GENSPIRV_LOCK_TIMEOUT``)."""
    from . import settings
    from .errors import LockError, OutputError
    from .fsutil import try_lock, unlock
    if timeout is None:
        timeout = settings.get("GENSPIRV_LOCK_TIMEOUT")
    lock_path = path(root, Kept.LOCK)
    try:
        make_state_dir(root)
        lock_file = open(lock_path, "a+b")
    except OSError as exc:
        raise OutputError(f"{lock_path}: cannot create the build lock: {exc.strerror or exc}") from None
    with lock_file as f:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                if try_lock(f):
                    break
            except OSError as exc:
                raise LockError(f"cannot lock {lock_path}: {exc.strerror or exc}") from None
            if not told:
                print(f"genspirv: waiting for {lock_path}: another build or check of this project is running",
                      file=sys.stderr, flush=True)
                told = True
            if time.monotonic() >= deadline:
                raise LockError(f"{lock_path} is still held by another build or check after {timeout:g} s "
                                "(set GENSPIRV_LOCK_TIMEOUT to wait longer)")
            time.sleep(0.1)
        try:
            yield
        finally:
            unlock(f)
