"""The files a remote entry names, as this project holds them: which the build may hash.

Takes the project's root and an entry's ``deps`` (already paths a manifest's
``depends`` may hold: ``genspirv.remote.entry`` refused any other); gives
``foreign_dep``, why one of them is no file of the project (a FIFO, a device,
a folder, a symlink that leads out of the project), or None. Only ``stat`` is
asked, which opens nothing, so a FIFO is never waited on and ``/dev/zero``
never read. The store is not trusted, signed entries included: docs/SECURITY.md.
"""

from __future__ import annotations

import os
import stat
from typing import Optional, Sequence

from ..project.generated import is_generated


def foreign_dep(root: str, deps: Sequence[str]) -> Optional[str]:
    """Why one of ``deps`` is no file of the project at ``root`` (a real path) to hash; None when
    each is one, or is missing (a header the other machine had hashes as gone here: a miss)."""
    for dep in deps:
        if is_generated(dep):
            continue        # hashed from the generator's text, never from disk
        path = os.path.join(root, dep)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"names {dep!r}, which cannot be looked at ({exc.strerror})"
        if not stat.S_ISREG(st.st_mode):
            return f"names {dep!r}, which is not a regular file"
        if os.path.commonpath([os.path.realpath(path), root]) != root:
            return f"names {dep!r}, which leads out of the project"
    return None
