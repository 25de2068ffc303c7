"""The blob caches: compiled blobs by content key, so a variant compiled once is never compiled again.

Takes a ``Config`` (``BlobCache.for_config``) and gives ``BlobCache``: blobs in
``.genspirv/cache/`` and, when ``GENSPIRV_CACHE_DIR`` names one, in a folder
shared by clones and CI runs; each bounded by ``GENSPIRV_CACHE_MAX_MB`` (default
1024): past it, the least recently used blobs (by mtime, which a hit refreshes)
go first. Best effort throughout: a cache that cannot be read or written costs
a recompile, never a build; a shared folder that cannot be written is said in
one warning naming it. The keys are ``genspirv.buildsys.keys``'.
It counts its stores and failed writes into a ``cachestats.Tally`` when given
one; ``usage()`` and ``clear()`` serve ``genspirv cache stats`` and ``clear``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import Optional, Sequence

from .. import settings, statedir
from ..statedir import Kept
from .keys import sha256_hex
from ..cachestats import Stat, Tally
from ..project.config import Config
from ..fsutil import atomic_write

EVICT_TO = 0.8          # eviction stops at this share of the cap, so it does not run on every build


def _subfolders(folder: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        return [p for p in folder.glob("??") if p.is_dir()]
    return []


def local_cache_dir(config: Config) -> Path:
    """The project's own blob cache, ``.genspirv/cache/`` (its counters live there too)."""
    return statedir.path(config.root, Kept.CACHE)


def shared_cache_dir() -> Optional[Path]:
    """GENSPIRV_CACHE_DIR: a blob cache shared by clones and CI runs (None when unset)."""
    raw = settings.get("GENSPIRV_CACHE_DIR")
    return Path(raw).expanduser() if raw else None


def cache_max_bytes() -> int:
    """GENSPIRV_CACHE_MAX_MB (default 1024): the size each blob cache is trimmed to."""
    return int(settings.get("GENSPIRV_CACHE_MAX_MB") * (1 << 20))


class BlobCache:
    """Blobs by content key, ``<dir>/<key[:2]>/<key>.spv``, in every folder given (first is local).

    Best effort: a cache that cannot be read or written is only a slower build.
    """

    def __init__(self, folders: Sequence[Path], limit: Optional[int] = None, tally: Optional[Tally] = None):
        self.folders = tuple(folders)
        self.stored = 0
        self.limit = limit
        self.unwritable: Optional[str] = None      # the shared folder's first write failure, once said
        self._lock = threading.Lock()      # the build's writer threads put at once
        self.tally = tally or Tally()

    @classmethod
    def for_config(cls, config: Config, tally: Optional[Tally] = None) -> "BlobCache":
        folders = [local_cache_dir(config)]
        shared = shared_cache_dir()
        if shared is not None:
            folders.append(shared)
        return cls(folders, cache_max_bytes(), tally)      # a bad setting stops the build before it starts

    def empty(self) -> bool:
        """No folder holds a blob yet (no ``<key[:2]>`` subfolder): a build with no records of its
        own compiles every variant."""
        return not any(_subfolders(folder) for folder in self.folders)

    @staticmethod
    def _path(folder: Path, key: str) -> Path:
        return folder / key[:2] / f"{key}.spv"

    def get(self, key: str, sha256: Optional[str] = None) -> Optional[bytes]:
        for folder in self.folders:
            path = self._path(folder, key)
            try:
                blob = path.read_bytes()
            except OSError:
                continue
            if not blob or (sha256 is not None and sha256_hex(blob) != sha256):
                continue
            with contextlib.suppress(OSError):
                os.utime(path)          # a hit is a use: LRU by mtime
            if folder is not self.folders[0]:
                self._put(self.folders[0], key, blob)
            return blob
        return None

    def put(self, key: str, blob: bytes, replace: bool = False) -> None:
        """Keep ``blob`` under ``key`` in every folder; ``replace``: over what a folder holds
        there (``build --force`` re-seeds the caches: a damaged entry is written afresh)."""
        wrote = []
        for i, folder in enumerate(self.folders):
            written, failure = self._put(folder, key, blob, replace)
            wrote.append(written)
            self.tally.add(Stat.LOCAL_ERRORS, failure is not None)
            with self._lock:
                quiet = failure is None or i == 0 or self.unwritable is not None
                if not quiet:
                    self.unwritable = failure
            if not quiet:
                # The shared folder was asked for by name: its being of no use is said, once.
                print(f"genspirv: warning: GENSPIRV_CACHE_DIR={folder}: cannot write ({failure}); blobs "
                      "compiled here are not shared through it", file=sys.stderr, flush=True)
        with self._lock:
            self.stored += 1
        self.tally.add(Stat.LOCAL_STORES, any(wrote))

    @staticmethod
    def _put(folder: Path, key: str, blob: bytes, replace: bool = False) -> tuple[bool, Optional[str]]:
        """Store ``blob``: (whether it was written, the reason it could not be or None)."""
        path = BlobCache._path(folder, key)
        if not replace and path.is_file():
            return False, None
        try:
            atomic_write(path, blob, durable=False)
        except OSError as exc:
            return False, exc.strerror or str(exc)   # a cache that cannot take a blob costs a recompile
        return True, None

    @staticmethod
    def _blobs(folder: Path) -> list[Path]:
        with contextlib.suppress(OSError):
            return sorted(folder.glob("??/*.spv"))
        return []

    def usage(self) -> list[tuple[Path, int, int]]:
        """(folder, entries, bytes) of each folder."""
        found = []
        for folder in self.folders:
            sizes = []
            for path in self._blobs(folder):
                with contextlib.suppress(OSError):
                    sizes.append(path.stat().st_size)
            found.append((folder, len(sizes), sum(sizes)))
        return found

    def clear(self) -> list[tuple[Path, int, int]]:
        """Delete every blob of every folder (the counters stay); (folder, entries, bytes) removed."""
        removed = []
        for folder in self.folders:
            count = size = 0
            for path in self._blobs(folder):
                with contextlib.suppress(OSError):
                    n = path.stat().st_size
                    path.unlink()
                    count, size = count + 1, size + n
            for sub in _subfolders(folder):
                with contextlib.suppress(OSError):
                    sub.rmdir()         # only once empty: a file not ours stays, and so does its folder
            removed.append((folder, count, size))
        return removed

    def trim(self, limit: Optional[int] = None) -> int:
        """Delete the least recently used blobs of each folder past ``limit`` bytes; how many went."""
        limit = limit if limit is not None else self.limit if self.limit is not None else cache_max_bytes()
        gone = 0
        for folder in self.folders:
            entries = []
            with contextlib.suppress(OSError):
                for path in folder.glob("??/*.spv"):
                    with contextlib.suppress(OSError):
                        st = path.stat()
                        entries.append((st.st_mtime_ns, st.st_size, path))
            total = sum(size for _, size, _ in entries)
            if total <= limit:
                continue
            for _, size, path in sorted(entries):
                if total <= limit * EVICT_TO:
                    break
                with contextlib.suppress(OSError):
                    path.unlink()
                    total -= size
                    gone += 1
        return gone
