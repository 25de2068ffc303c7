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
read once). ``FileHashes`` is one build's view through the log: each file
hashed at most once, a generated file hashed from the generator's text.

Only regular files are read: a FIFO, a device or a folder at a path the build
reads is absent to it (a FIFO would block the read, ``/dev/zero`` never end).
Every file-system call goes through a ``Disk`` (ninja's ``DiskInterface``):
``RealDisk`` in a build, a dictionary in the tests of the log and the plan.

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
import stat as stat_mod
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Protocol

from ..project.generated import is_generated
from ..statedir import read_state_json

STATS_SCHEMA = "genspirv-stats/1"
RACY_S = 0.05           # well above a kernel's timestamp tick (1-10 ms)
COARSE_RACY_S = 2.0     # a filesystem whose timestamps have no sub-second part


class FileStat(NamedTuple):
    """What the log keeps of a regular file's stat(): an edit changes one of them."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    def racy(self, now_ns: int) -> bool:
        """Changed so recently that a change within the timestamps' tick would keep this stat()."""
        newest = max(self.mtime_ns, self.ctime_ns)
        coarse = self.mtime_ns % 1_000_000_000 == 0 and self.ctime_ns % 1_000_000_000 == 0
        return now_ns - newest <= (COARSE_RACY_S if coarse else RACY_S) * 1e9


class Disk(Protocol):
    """Every file-system call the stat log makes: ``RealDisk``, or a dictionary in tests."""

    def stat(self, path: str) -> Optional[FileStat]:
        """The stat() of the regular file at ``path``; None when absent or anything else."""
        ...

    def read(self, path: str, size: int) -> bytes:
        """The whole file (``size``: what stat() gave; it may have grown since). Raises OSError."""
        ...

    def now_ns(self) -> int:
        ...


class RealDisk:
    """The file system."""

    @staticmethod
    def stat(path: str) -> Optional[FileStat]:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        return FileStat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)

    @staticmethod
    def read(path: str, size: int) -> bytes:
        """Read without a buffered file object (a fresh clone reads 2,000 blobs): the size stat()
        gave in one read, then until the end, should it have grown since. O_NONBLOCK: should a
        FIFO have replaced the file since its stat(), the open does not wait for a writer."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{path}: not a regular file")
            parts = [os.read(fd, size + 1)]
            while parts[-1]:
                parts.append(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
        return b"".join(parts)

    @staticmethod
    def now_ns() -> int:
        return time.time_ns()


class StatLog:
    """The stat log of one project (``None`` path: an empty log that is never saved)."""

    def __init__(self, root: Path, path: Optional[Path], disk: Disk = RealDisk()):
        self.root = root
        self._root = os.fspath(root)
        self.path = path
        self.disk = disk
        self._entries: dict[str, list] = {}
        self.changed = False
        data = read_state_json(path) if path is not None else None
        if isinstance(data, dict) and data.get("schema") == STATS_SCHEMA and isinstance(data.get("files"), dict):
            self._entries = data["files"]
        # The entries as the last build left them, beside its state: what ``settled`` compares
        # with, whatever this build hashes and logs meanwhile.
        self._left = dict(self._entries)

    def sha256(self, rel: str) -> Optional[str]:
        """sha256 of the file at ``rel`` (None: unreadable, absent, or not a regular file)."""
        path = os.path.join(self._root, rel)     # strings, not pathlib: 2,000 blobs a build
        st = self.disk.stat(path)
        if st is None:
            return None
        entry = self._entries.get(rel)
        if isinstance(entry, list) and len(entry) == 5 and st == tuple(entry[:4]):
            return entry[4]
        return self._hashed(rel, path, st)[1]

    def settled(self, rel: str) -> bool:
        """The file at ``rel`` has the stat() the last build logged for it: its digest is the one
        that build's records were made from, unread."""
        st = self.disk.stat(os.path.join(self._root, rel))
        entry = self._left.get(rel)
        return st is not None and isinstance(entry, list) and len(entry) == 5 and st == tuple(entry[:4])

    def read(self, rel: str) -> Optional[tuple[bytes, str]]:
        """The bytes of the file at ``rel`` and their sha256, logged as ``sha256`` logs them
        (None: unreadable, absent, or not a regular file): a file the build parses is read once."""
        path = os.path.join(self._root, rel)
        st = self.disk.stat(path)
        if st is None:
            return None
        data, digest = self._hashed(rel, path, st)
        return (data, digest) if data is not None and digest is not None else None

    def _hashed(self, rel: str, path: str, st: FileStat) -> tuple[Optional[bytes], Optional[str]]:
        try:
            data = self.disk.read(path, st.size)
        except OSError:
            return None, None
        digest = hashlib.sha256(data).hexdigest()
        self.note(rel, st, digest)
        return data, digest

    def note(self, rel: str, st: FileStat, digest: str) -> None:
        """Log that the file whose stat() is ``st`` has ``digest`` (unless it is racily new)."""
        if st.racy(self.disk.now_ns()):
            if self._entries.pop(rel, None) is not None:
                self.changed = True
            return
        entry = list(st) + [digest]
        if self._entries.get(rel) != entry:
            self._entries[rel] = entry
            self.changed = True

    def data(self) -> bytes:
        """The log as written (compact: the C encoder)."""
        return (json.dumps({"schema": STATS_SCHEMA, "files": self._entries}, sort_keys=True,
                           separators=(",", ":")) + "\n").encode()


@dataclass
class FileHashes:
    """sha256 of each file read during one build: a header shared by 2,000 variants is read once.

    A generated file is hashed from the text the generator gave (``generated``), never from
    disk: the key is the same whether its copy on disk is there, stale or elsewhere (check).
    Files on disk go through ``stats`` (the build's stat log: a file whose stat() is as logged is
    not read); check's log is empty and never saved: it trusts nothing a build kept."""

    stats: StatLog
    generated: Mapping[str, bytes] = field(default_factory=dict)
    _seen: dict = field(default_factory=dict)
    _settled: dict = field(default_factory=dict)

    def on_disk(self, rel: str) -> Optional[str]:
        """sha256 of the file at ``rel`` as it is on disk."""
        return self.stats.sha256(rel)

    def settled(self, rel: str) -> bool:
        """The file at ``rel`` has the digest the last build logged (``StatLog.settled``); a
        generated file's text is the settings digest's (``keys.settings_digest``)."""
        found = self._settled.get(rel)
        if found is None:
            found = self._settled[rel] = rel in self.generated or (not is_generated(rel) and self.stats.settled(rel))
        return found

    def get(self, rel: str) -> Optional[str]:
        """sha256 of the file at ``rel`` as a compile reads it (None: gone)."""
        if rel not in self._seen:
            if rel in self.generated:
                self._seen[rel] = hashlib.sha256(self.generated[rel]).hexdigest()
            elif is_generated(rel):
                self._seen[rel] = None      # a generated file the generator no longer gives: gone
            else:
                self._seen[rel] = self.stats.sha256(rel)
        return self._seen[rel]
