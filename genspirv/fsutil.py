"""Small file-system helpers every stage shares: the one atomic writer, the one
commit reader.

``atomic_write(path, data)`` writes bytes through a temp file in the same
folder, fsynced, then ``os.replace``: a reader sees the old file or the new
one, never half of either. ``write_json_atomic`` does the same for a JSON
document. ``git_commit(folder)`` names the checkout's commit (``-dirty`` when
tracked files differ), or None outside a git checkout. No genspirv imports.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file 0600; give it the mode a plain open() would have.
        os.chmod(tmp, _new_file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


def git_commit(folder: Path) -> Optional[str]:
    """HEAD of the checkout holding ``folder``, ``-dirty`` if tracked files differ; else None."""
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
