"""What a build remembers: content keys, the state file, the blob caches and provenance.

Takes a ``Config`` and gives the facts the build plans with:

- ``content_key``: sha256 over everything that decides a variant's bytes (the
  source and every file it read, defines, compiler and optimiser versions, flags,
  target env, include handling, whether it is validated);
- the state file ``.genspirv/state.json``: per variant the last key, the files it
  read and the blob's sha256 (also for variants of a build that failed: their
  blobs wait in the cache), or what the compiler lacked for an unavailable one;
- ``records_from_manifest``: the same facts from the committed manifest's
  provenance (``inputs``, ``depends``), so a fresh clone with no state builds as
  a no-op when the committed outputs match;
- ``BlobCache``: compiled blobs by content key, in ``.genspirv/cache/`` and, when
  ``GENSPIRV_CACHE_DIR`` names one, in a folder shared by clones and CI runs;
  bounded by ``GENSPIRV_CACHE_MAX_MB`` (default 1024): past it, the least
  recently used blobs (by mtime, which a hit refreshes) go first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from . import settings
from .config import Config, Variant
from .fsutil import atomic_write

STATE_DIR = ".genspirv"
STATE_FILE = "state.json"
CACHE_SUBDIR = "cache"
STATE_SCHEMA = "genspirv-state/1"
EVICT_TO = 0.8          # eviction stops at this share of the cap, so it does not run on every build


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def include_dirs(config: Config) -> tuple[str, ...]:
    return (config.include_dir,) if config.path(config.include_dir).is_dir() else ()


@dataclass
class FileHashes:
    """sha256 of each file read during one build: a header shared by 2,000 variants is read once."""

    root: Path
    _seen: dict = field(default_factory=dict)

    def get(self, rel: str) -> Optional[str]:
        if rel not in self._seen:
            try:
                self._seen[rel] = sha256_hex((self.root / rel).read_bytes())
            except OSError:
                self._seen[rel] = None
        return self._seen[rel]


@dataclass(frozen=True)
class Versions:
    compiler: str
    optimizer: Optional[str] = None     # spirv-opt's, when any variant is optimised


def content_key(config: Config, versions: Versions, variant: Variant, deps: Sequence[str],
                hashes: Optional[FileHashes] = None) -> Optional[str]:
    """sha256 over everything that decides the blob's bytes; None if a dependency is gone."""
    hashes = hashes or FileHashes(config.root)
    files = []
    for dep in sorted(set(deps) | {variant.source}):
        digest = hashes.get(dep)
        if digest is None:
            return None
        files.append([dep, digest])
    doc = {"source": variant.source, "defines": variant.defines, "compiler": versions.compiler,
           "flags": variant.flags, "target_env": variant.target_env,
           "include_dirs": include_dirs(config), "files": files,
           "include_directive": config.include_directive, "validate": variant.validate}
    if variant.optimize:
        doc["optimizer"] = versions.optimizer
    return sha256_hex(json.dumps(doc, sort_keys=True).encode())


# -- the state file -----------------------------------------------------------


def state_path(config: Config) -> Path:
    return config.root / STATE_DIR / STATE_FILE


def load_state_file(config: Config) -> dict:
    """The last build's state document; an unreadable state is just a cold cache."""
    try:
        data = json.loads(state_path(config).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA or \
            not isinstance(data.get("variants"), dict):
        return {}
    return data


def read_manifest_json(config: Config) -> dict:
    """The committed manifest as plain JSON ({} if absent or unreadable); not verified here."""
    try:
        data = json.loads(config.path(config.manifest).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def records_from_manifest(doc: Mapping) -> dict[str, dict]:
    """State records from the manifest's provenance, for variants the state does not know."""
    records = {}
    for e in doc.get("shaders", ()) if isinstance(doc.get("shaders"), list) else ():
        if isinstance(e, dict) and isinstance(e.get("inputs"), str) and isinstance(e.get("depends"), list):
            records[e.get("name")] = {"key": e["inputs"], "deps": e["depends"], "sha256": e.get("sha256"),
                                      "entry": e}
    for u in doc.get("unavailable", ()) if isinstance(doc.get("unavailable"), list) else ():
        if isinstance(u, dict) and isinstance(u.get("inputs"), str) and isinstance(u.get("depends"), list):
            records[u.get("name")] = {"key": u["inputs"], "deps": u["depends"],
                                      "unavailable": list(u.get("missing", ()))}
    return records


def outputs_key(config: Config, versions: Versions, variant_keys: Mapping[str, str]) -> str:
    """What the manifest and generated files are a function of, besides the blobs' keys."""
    doc = {"variants": [[v.name, v.source, list(v.defines), config.blob_relpath(v), variant_keys.get(v.name)]
                        for v in config.variants],
           "manifest": str(config.manifest), "generate": [list(map(str, (g.target, g.output)))
                                                      + _template_key(config, g)
                                                      for g in config.generate],
           "toolchain": [versions.compiler, versions.optimizer, config.target_env, list(config.flags)]}
    return sha256_hex(json.dumps(doc, sort_keys=True).encode())


def _template_key(config: Config, g) -> list[str]:
    """A project template's path and bytes, or a built-in target's renderer: editing
    either (or upgrading genspirv) re-renders the output."""
    if g.template is None:
        from .emit import renderer_key
        return [renderer_key(g.target)]
    try:
        return [g.template, sha256_hex(config.path(g.template).read_bytes())]
    except OSError:
        return [g.template, "unreadable"]   # render then names the problem


def outputs_current(config: Config, recorded: object, key: str) -> bool:
    """The last build wrote these outputs from the same inputs, and nobody touched them since."""
    if not isinstance(recorded, dict) or recorded.get("key") != key or \
            not isinstance(recorded.get("files"), dict) or not recorded["files"]:
        return False
    for rel, digest in recorded["files"].items():
        try:
            if sha256_hex(config.path(rel).read_bytes()) != digest:
                return False
        except OSError:
            return False
    return True


# -- blob caches --------------------------------------------------------------


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
        for folder in self.folders:
            self._put(folder, key, blob)
        self.stored += 1

    @staticmethod
    def _put(folder: Path, key: str, blob: bytes) -> None:
        path = BlobCache._path(folder, key)
        if path.is_file():
            return
        try:
            atomic_write(path, blob, durable=False)
        except OSError:
            pass          # a cache that cannot take a blob costs a recompile, nothing more

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
