"""What a generator read: the files it opened or looked at, the folders it listed, the environment it asked.

Takes nothing; ``watch()``, called in the generator's child process before the
generator runs, starts recording, and the function it returns gives the
``Reads`` so far. A later build may take the generator's last answer instead of
running it again only while every one of these is as it was
(``genspirv.buildsys.noopreplay``): each file with the same ``stat()`` (or still
absent), each folder with the same ``stat()`` (an entry added, removed or
renamed changes its mtime), each variable with the same value, and the same
working folder when the generator named a relative path.

How it records, in the child only (the process ends after the generator):
Python's audit hooks (PEP 578) see every ``open`` (``open()``, ``os.open``, and
``io.open_code``, through which every imported module is read) and every
``os.listdir``/``os.scandir`` (``glob``, ``os.walk`` and ``pathlib`` go
through them); ``os.stat`` and ``os.lstat`` are wrapped, which
``os.path.exists``, ``isfile``, ``isdir`` and ``pathlib``'s tests call, so a
file the generator only looked for is recorded too; ``os.environ`` is wrapped,
so ``os.environ[...]``, ``.get`` and ``os.getenv`` name the variable read, and
anything that walks the whole environment records it whole. What no hook sees
(the time, random numbers, a network) is outside what a generator may depend
on: docs/GUIDE.md says so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

WHOLE_ENVIRONMENT = "*"     # the name recorded when the generator walked the whole environment


@dataclass(frozen=True)
class Reads:
    files: tuple[str, ...] = ()         # absolute paths opened or stat()ed, present or not
    folders: tuple[str, ...] = ()       # absolute paths of folders listed
    env: tuple[str, ...] = ()           # variable names read (WHOLE_ENVIRONMENT: all of them)
    cwd: Optional[str] = None           # the working folder, when a relative path was named


def _path(value) -> Optional[str]:
    """A path argument as text; None for a file descriptor or anything else."""
    if isinstance(value, int) or value is None:
        return None
    try:
        text = os.fsdecode(value)
    except TypeError:
        return None
    return text


class _WatchedEnviron(MutableMapping):
    """``os.environ`` that remembers each name read; iteration reads every name."""

    def __init__(self, real, names: dict):
        self._real, self._names = real, names

    def __getitem__(self, key):
        self._names[key] = None
        return self._real[key]

    def __contains__(self, key) -> bool:
        self._names[key] = None
        return key in self._real

    def __setitem__(self, key, value) -> None:
        self._real[key] = value

    def __delitem__(self, key) -> None:
        del self._real[key]

    def __iter__(self) -> Iterator:
        self._names[WHOLE_ENVIRONMENT] = None
        return iter(self._real)

    def __len__(self) -> int:
        return len(self._real)

    def copy(self) -> dict:
        self._names[WHOLE_ENVIRONMENT] = None
        return self._real.copy()

    def __getattr__(self, name):           # encodekey, putenv and the rest of os._Environ
        return getattr(self._real, name)


def watch() -> Callable[[], Reads]:
    """Start recording in this process; call what it returns for the ``Reads`` so far."""
    files: dict[str, None] = {}
    folders: dict[str, None] = {}
    names: dict[str, None] = {}
    relative = [False]
    recording = [True]

    def note(where: dict, value) -> None:
        path = _path(value)
        if path is None:
            return
        if not os.path.isabs(path):
            relative[0] = True
        where[os.path.abspath(path)] = None

    def hook(event: str, args: tuple) -> None:
        if not recording[0]:
            return
        if event == "open":
            note(files, args[0])
        elif event in ("os.listdir", "os.scandir"):
            note(folders, args[0] if args[0] is not None else ".")

    real_stat, real_lstat = os.stat, os.lstat

    def stat(path, *args, **kwargs):
        if recording[0]:
            note(files, path)
        return real_stat(path, *args, **kwargs)

    def lstat(path, *args, **kwargs):
        if recording[0]:
            note(files, path)
        return real_lstat(path, *args, **kwargs)

    sys.addaudithook(hook)      # hooks cannot be removed: this process ends after the generator
    os.stat, os.lstat = stat, lstat
    os.environ = _WatchedEnviron(os.environ, names)

    # The standard library's own modules, read as the generator imports them, change only with
    # Python, whose version the stamp holds: listing them would only cost a stat() each.
    stdlib = os.path.dirname(os.__file__) + os.sep

    def reads() -> Reads:
        recording[0] = False
        return Reads(tuple(sorted(f for f in files if not f.startswith(stdlib))),
                     tuple(sorted(f for f in folders if not f.startswith(stdlib))), tuple(sorted(names)),
                     os.getcwd() if relative[0] else None)

    return reads
