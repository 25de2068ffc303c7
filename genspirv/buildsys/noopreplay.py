"""The no-op replayed: a plain ``genspirv build`` answered from the last no-op's stamp, by stat() alone.

Takes the command line; gives the exit status of a build that has nothing to do
(0, after printing what the last no-op printed), or None: the full build runs
and decides. Called first thing by ``python -m genspirv`` and the console
script, before the command line parser, the config or any tool is looked at,
so it imports only the standard library's basics and ``genspirv.fsutil``.

A full build that finds nothing to do stamps it (``genspirv.buildsys.noopstamp``:
the stat() of every file it consulted) and the CLI seals the stamp
(``noopstamp.seal``) with this module's ``REPLAY`` section: everything else a
build's outcome depends on, each in a form a stat() or a comparison answers:

- ``files``: the stat() signature (size, mtime, ctime, inode) of every file and
  folder that decided it, or null for one that was absent: the stamped files
  (sources, includes, blobs, the manifest, generated outputs), pyproject.toml,
  the state file, the folders under glsl_dir (a source added or removed changes
  its folder's mtime), what the generator read (``genspirv.project.reads``), the
  tool version cache and the tools' folders, and every folder the tools are
  looked up in (``sys.path``, PATH: a wheel installed adds an entry);
- ``env``: every ``GENSPIRV_*`` setting, PATH, PYTHONPATH and what the
  generator read, by value (the whole environment if it walked it);
- ``python``: the interpreter, its version and ``sys.path``; genspirv's version
  and where it was imported from; the working folder when the generator named
  a relative path;
- ``lines``: what the build printed.

This command line qualifies only as ``build`` with ``--root DIR``, ``-j N`` /
``--jobs N`` and ``-q`` / ``--quiet`` at most (anything else, ``--force``,
``--explain``, ``--json``, ``--depfile``, named variants, runs the full
build); the lock must be free (a build running: the full path waits for it),
and no journal left by an interrupted build. Racily new files were never
stamped (``genspirv.buildsys.statlog``'s rule), so an unchanged stat() means an
unchanged file. What no stat() sees is outside what a build depends on:
a generator's use of the time or the network (docs/GUIDE.md says so).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional, Sequence

from .statlog import signature

STATE_DIR = ".genspirv"         # genspirv.buildsys.state's; kept equal by tests/test_noop_replay.py
STAMP_FILE = "noop.json"
JOURNAL_FILE = "journal.jsonl"
LOCK_FILE = "lock"
REPLAY = "replay"
SETTING_PREFIX = "GENSPIRV_"
LOOKUP_ENV = ("PATH", "PYTHONPATH")     # where tools and the generator's imports are found
WHOLE_ENVIRONMENT = "*"     # genspirv.project.reads' (kept equal by the tests): the whole environment


def plain_build_root(argv: Sequence[str]) -> Optional[str]:
    """The project root a plain ``build`` command line names (``--root``, else the nearest folder
    with ``[tool.genspirv]`` at or above this one, as ``config.find_root`` finds it), or None
    when the line is anything else (an abbreviated option too: the parser decides those)."""
    options: dict[str, Optional[str]] = {}
    words = []
    given = iter(argv)
    for a in given:
        name, eq, value = a.partition("=")
        if a in ("-q", "--quiet"):
            continue
        if eq and name in ("--root", "--jobs"):
            options[name] = value
        elif a in ("--root", "--jobs", "-j"):
            options["--jobs" if a == "-j" else a] = next(given, None)
        elif a.startswith("-j") and len(a) > 2:
            options["--jobs"] = a[2:]
        elif a.startswith("-"):
            return None
        else:
            words.append(a)
    if words != ["build"] or None in options.values():
        return None
    jobs = options.get("--jobs")
    if jobs is not None and not (jobs.isdigit() and int(jobs) >= 1):
        return None             # the parser's message, from the full path
    root = options.get("--root")
    if root is not None:
        return os.path.realpath(root) if os.path.isdir(root) else None
    return _find_root(os.path.realpath(os.getcwd()))


def _find_root(start: str) -> str:
    from ..fsutil import find_project_root
    from pathlib import Path
    found = find_project_root(Path(start))
    return str(found) if found is not None else start


def _signature(path: str) -> Optional[list[int]]:
    """What the seal keeps of a file or folder (``statlog.signature``; None: absent)."""
    try:
        return signature(os.stat(path))
    except OSError:
        return None


def settings_env() -> dict[str, Optional[str]]:
    """Every GENSPIRV_* variable set, and where tools and imports are looked up."""
    env: dict[str, Optional[str]] = {k: v for k, v in os.environ.items() if k.startswith(SETTING_PREFIX)}
    for name in LOOKUP_ENV:
        env[name] = os.environ.get(name)
    return env


def python_identity() -> list:
    from .. import __version__
    return [sys.executable, sys.version, list(sys.path), __version__, os.path.dirname(os.path.dirname(__file__))]


def holds(replay: dict) -> bool:
    """Everything the replay section names is as it was."""
    if replay.get("python") != python_identity():
        return False
    cwd = replay.get("cwd")
    if cwd is not None and os.getcwd() != cwd:
        return False
    env = replay.get("env")
    if not isinstance(env, dict):
        return False
    if WHOLE_ENVIRONMENT in env:
        if env[WHOLE_ENVIRONMENT] != dict(os.environ):
            return False
    elif any(os.environ.get(k) != v for k, v in env.items()) or \
            any(k.startswith(SETTING_PREFIX) and k not in env for k in os.environ):
        return False
    files = replay.get("files")
    if not isinstance(files, dict):
        return False
    return all(_signature(path) == sig for path, sig in files.items())


def replay(argv: Sequence[str]) -> Optional[int]:
    """0 after printing the last no-op's lines, when ``argv`` is a plain build and nothing it
    depends on changed since; None otherwise (and nothing printed)."""
    root = plain_build_root(argv)
    if root is None:
        return None
    state = os.path.join(root, STATE_DIR)
    if os.path.exists(os.path.join(state, JOURNAL_FILE)):
        return None
    try:
        with open(os.path.join(state, STAMP_FILE), "rb") as f:
            doc = json.loads(f.read())
        section = doc[REPLAY]
        lines = section["lines"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    from ..fsutil import try_lock, unlock
    try:
        lock = open(os.path.join(state, LOCK_FILE), "a+b")
    except OSError:
        return None
    with lock:
        try:
            if not try_lock(lock):
                return None         # a build is running: the full path waits for it
        except OSError:
            return None
        try:
            if not isinstance(lines, list) or not holds(section):
                return None
        finally:
            unlock(lock)
    try:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()
    except BrokenPipeError:
        # `genspirv build | head -0`: the reader left; as the CLI does, say nothing more and keep
        # Python's exit-time flush from raising again on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
