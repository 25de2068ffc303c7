"""A fresh clone's reads, started in a forked child before the build is imported.

Takes the project root of a plain ``genspirv build`` (``noopreplay.plain_build_root``);
gives, later and in the build's process, what the child read: stat-log entries
of every file under glsl_dir and spirv_dir, and the committed manifest parsed
down to its build facts, with its path and sha256 (``take_early_reads``).

A fresh clone has no stat log: its no-op hashes every committed file and parses
the manifest, and none of that depends on the variants the generator gives.
So when a plain build finds no state, ``python -m genspirv`` forks this child
first thing (``start_early_reads``): it reads the project's table for its
folders (the generator is not run) and does those reads while this process
imports the build, runs the generator and finds its tools. The build trusts
nothing of it blindly: each hash joins the stat log with the stat() the file
had when it was read, none racily new, so the stat-first check takes it or reads
the file again at use, as for entries a build logged; the manifest's facts
stand for the file only while the stat log gives the sha256 they were parsed
from (``genspirv.buildsys.committed.early_manifest``).

Only where forking is safe (``fsutil.forks_safely``) and only before any
thread runs; the child imports what reading needs, answers through a pipe and
ends with ``os._exit``, so nothing of this process runs twice. A child that
fails, or none: the build reads for itself. This module imports only the
standard library until the child runs: it is imported before the command line.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Optional

STATE_FILE = os.path.join(".genspirv", "state.json")    # genspirv.buildsys.state's; kept equal by the tests

LARGEST_FILE = 16 << 20     # larger than any source or blob: not read early (the build reads it if it must)

_started: list[tuple[str, int, int]] = []      # (root, pid, the read end of its pipe), until taken


def start_early_reads(root: Optional[str]) -> None:
    """Fork the child that reads the project at ``root`` (a real path), when it has no build state
    and forking is safe here; else nothing."""
    from ..fsutil import forks_safely
    if root is None or _started or not forks_safely() or os.path.exists(os.path.join(root, STATE_FILE)):
        return
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
    except OSError:
        return
    if pid == 0:
        status = 1
        try:
            os.close(read_end)
            answer = pickle.dumps(_read(root), pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(answer)
            status = 0
        finally:
            os._exit(status)        # an exception or Ctrl-C included: no traceback, no atexit
    os.close(write_end)
    _started.append((root, pid, read_end))


def take_early_reads(root: str) -> Optional[dict[str, Any]]:
    """What the child started for ``root`` read, once it has finished: ``{"entries": {path: stat
    log entry}, "manifest": (path, sha256, build facts) or None}``; None: no child for it, or it failed."""
    if not _started or _started[0][0] != root:
        return None
    _, pid, fd = _started.pop()
    with os.fdopen(fd, "rb") as answer:
        data = answer.read()
    _, status = os.waitpid(pid, 0)
    try:
        found = pickle.loads(data) if status == 0 else None
    except Exception:       # an answer cut short: the build reads for itself
        return None
    return found if isinstance(found, dict) and isinstance(found.get("entries"), dict) else None


def _read(root: str) -> dict[str, Any]:
    """In the child: every file under glsl_dir and spirv_dir hashed (its entry logged unless racily
    new), and the manifest parsed down to its build facts while its entry is logged."""
    from pathlib import Path
    from stat import S_ISREG
    from ..errors import GenspirvError
    from ..manifest import BUILD_FACTS, read_manifest_json
    from ..project.config import project_folders
    from .statlog import StatLog
    glsl_dir, spirv_dir, manifest = project_folders(Path(root))
    stats = StatLog(Path(root), None)
    for folder in (glsl_dir, spirv_dir):
        for parent, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                path = os.path.join(parent, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if S_ISREG(st.st_mode) and st.st_size <= LARGEST_FILE:
                    stats.sha256(os.path.relpath(path, root))
    read = stats.read(manifest)
    entries = stats.logged()
    try:
        doc = read_manifest_json(os.path.join(root, manifest), read[0]) if read is not None else None
    except GenspirvError:
        doc = None
    if not isinstance(doc, dict) or manifest not in entries:
        return {"entries": entries, "manifest": None}
    if isinstance(doc.get("shaders"), list):
        doc["shaders"] = [{k: e[k] for k in BUILD_FACTS if k in e} if isinstance(e, dict) else e
                          for e in doc["shaders"]]
    return {"entries": entries, "manifest": (manifest, read[1], doc)}
