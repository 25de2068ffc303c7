"""The stat log: a file's sha256 without reading it, when its stat() says it did not change.

Takes file paths (relative to the project root) and gives their sha256, as
ninja decides from the stat() results it logged: ``.genspirv/stats.json``
keeps, per file a build read (sources, includes, committed blobs, the
manifest), its size, mtime, ctime and inode with the sha256 they went with.
A file whose stat() matches its entry is not read; any other is read and
hashed (the fallback that makes a touched but unchanged file rebuild
nothing), and its new entry is logged. Entries are only a cache of hashes:
the build's decisions still come from content keys. ``read`` gives a file's
bytes with their sha256, logged the same way (the manifest a build parses is
read once); ``adopt`` takes the entries another reader logged (a fresh clone's
early reads, ``genspirv.buildsys.early``), each trusted at use by the same
stat-first check.

A file changed within the timestamps' granularity of when it was logged would
keep its stat() (git's "racily clean" entries): an entry is logged only when
the file's mtime and ctime are older than the moment it was hashed by more
than ``RACY_S`` (2 s for timestamps with no sub-second part, which a
filesystem of coarse timestamps gives), so such a file is hashed again next
time instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Optional

STATS_FILE = "stats.json"
STATS_SCHEMA = "genspirv-stats/1"
RACY_S = 0.05           # well above a kernel's timestamp tick (1-10 ms)
COARSE_RACY_S = 2.0     # a filesystem whose timestamps have no sub-second part


def signature(st: os.stat_result) -> list[int]:
    """What the stat log, the no-op stamp and its seal keep of a file's stat(): an edit changes one."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def racy(st: os.stat_result, now_ns: int) -> bool:
    newest = max(st.st_mtime_ns, st.st_ctime_ns)
    coarse = st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0
    return now_ns - newest <= (COARSE_RACY_S if coarse else RACY_S) * 1e9


def _read(path: str, size: int) -> bytes:
    """The file's bytes, read without a buffered file object (a fresh clone reads 2,000 blobs):
    the size stat() gave in one read, then until the end, should it have grown since."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        parts = [os.read(fd, size + 1)]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
    finally:
        os.close(fd)
    return b"".join(parts)


class StatLog:
    """The stat log of one project (``None`` path: an empty log that is never saved)."""

    def __init__(self, root: Path, path: Optional[Path]):
        self.root = root
        self._root = os.fspath(root)
        self.path = path
        self._entries: dict[str, list] = {}
        self.changed = False
        # rel -> the stat() signature its digest was given for, when the log holds it (None:
        # absent, unreadable or racily new): what the no-op stamp (genspirv.buildsys.noopstamp) lists.
        self.consulted: dict[str, Optional[list[int]]] = {}
        if path is not None:
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict) and data.get("schema") == STATS_SCHEMA and isinstance(data.get("files"), dict):
                self._entries = data["files"]

    def sha256(self, rel: str) -> Optional[str]:
        """sha256 of the file at ``rel`` (None: unreadable or absent)."""
        path = os.path.join(self._root, rel)     # strings, not pathlib: 2,000 blobs a build
        self.consulted[rel] = None
        try:
            st = os.stat(path)
        except OSError:
            return None
        sig = signature(st)
        entry = self._entries.get(rel)
        if isinstance(entry, list) and len(entry) == 5 and entry[:4] == sig:
            self.consulted[rel] = sig
            return entry[4]
        return self._hashed(rel, path, st)[1]

    def read(self, rel: str) -> Optional[tuple[bytes, str]]:
        """The bytes of the file at ``rel`` and their sha256, logged as ``sha256`` logs them
        (None: unreadable or absent): a file the build parses is read once."""
        path = os.path.join(self._root, rel)
        self.consulted[rel] = None
        try:
            data, digest = self._hashed(rel, path, os.stat(path))
        except OSError:
            return None
        return (data, digest) if data is not None else None

    def _hashed(self, rel: str, path: str, st: os.stat_result) -> tuple[Optional[bytes], Optional[str]]:
        try:
            data = _read(path, st.st_size)
        except OSError:
            return None, None
        digest = hashlib.sha256(data).hexdigest()
        self.note(rel, st, digest)
        if rel in self._entries:
            self.consulted[rel] = signature(st)
        return data, digest

    def logged(self) -> dict[str, list]:
        """Every entry: path -> stat() signature and sha256."""
        return dict(self._entries)

    def adopt(self, entries: dict) -> None:
        """Take the entries another reader logged (``genspirv.buildsys.early``) for the paths this log
        has none of: each is trusted, at use, only while the file's stat() is the one it names."""
        for rel, entry in entries.items():
            if rel not in self._entries and isinstance(entry, list) and len(entry) == 5:
                self._entries[rel] = entry
                self.changed = True

    def note(self, rel: str, st: os.stat_result, digest: str) -> None:
        """Log that the file whose stat() is ``st`` has ``digest`` (unless it is racily new)."""
        if racy(st, time.time_ns()):
            if self._entries.pop(rel, None) is not None:
                self.changed = True
            return
        entry = signature(st) + [digest]
        if self._entries.get(rel) != entry:
            self._entries[rel] = entry
            self.changed = True

    def data(self) -> bytes:
        """The log as written (compact: the C encoder)."""
        return (json.dumps({"schema": STATS_SCHEMA, "files": self._entries}, sort_keys=True,
                           separators=(",", ":")) + "\n").encode()
