"""The blob caches: compiled blobs by content key, so a variant compiled once is never compiled again.

Takes a ``Config`` (``BlobCache.for_config``) and gives ``BlobCache``: blobs in
``.genspirv/cache/`` and, when ``GENSPIRV_CACHE_DIR`` names one, in a folder
shared by clones and CI runs; each bounded by ``GENSPIRV_CACHE_MAX_MB`` (default
1024): past it, the least recently used blobs (by mtime, which a hit refreshes)
go first. Best effort throughout: a cache that cannot be read or written costs
a recompile, never a build; a shared folder that cannot be written is said in
one warning naming it. The keys are ``genspirv.buildstate``'s.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import settings
from .buildstate import STATE_DIR, sha256_hex
from .config import Config
from .fsutil import atomic_write

CACHE_SUBDIR = "cache"
EVICT_TO = 0.8          # eviction stops at this share of the cap, so it does not run on every build


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

    def __init__(self, folders: Sequence[Path], limit: Optional[int] = None):
        self.folders = tuple(folders)
        self.stored = 0
        self.limit = limit
        self.unwritable: Optional[str] = None      # the shared folder's first write failure, once said

    @classmethod
    def for_config(cls, config: Config) -> "BlobCache":
        folders = [config.root / STATE_DIR / CACHE_SUBDIR]
        shared = shared_cache_dir()
        if shared is not None:
            folders.append(shared)
        return cls(folders, cache_max_bytes())      # a bad setting stops the build before it starts

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

    def put(self, key: str, blob: bytes) -> None:
        for i, folder in enumerate(self.folders):
            failure = self._put(folder, key, blob)
            if failure is not None and i > 0 and self.unwritable is None:
                # The shared folder was asked for by name: its being of no use is said, once.
                self.unwritable = failure
                print(f"genspirv: warning: GENSPIRV_CACHE_DIR={folder}: cannot write ({failure}); blobs "
                      "compiled here are not shared through it", file=sys.stderr, flush=True)
        self.stored += 1

    @staticmethod
    def _put(folder: Path, key: str, blob: bytes) -> Optional[str]:
        """Store ``blob``; the reason it could not be, or None."""
        path = BlobCache._path(folder, key)
        if path.is_file():
            return None
        try:
            atomic_write(path, blob, durable=False)
        except OSError as exc:
            return exc.strerror or str(exc)      # a cache that cannot take a blob costs a recompile, nothing more
        return None

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
