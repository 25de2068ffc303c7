"""Build: a ``Config`` in, committed blobs, manifest and generated files out.

Plans which variants are stale (``buildstate.content_key``: the source, every
file its last depfile named, defines, toolchain versions and settings), takes
what it can from the blob caches, compiles the rest in parallel with the pinned
glslang (then ``spirv-opt -O`` where asked), validates each blob with
``spirv-val`` (unless opted out), reflects every blob and writes what changed,
under a lock file.

Nothing committed is half-written: every file goes through a temp file in its
own folder and ``os.replace``. A failed build writes no committed file, but
keeps every variant it did compile in the cache, so the next build compiles
only what changed or failed; each distinct compiler error is reported once with
every variant it hit. A no-op build writes no file. ``build()`` returns a
``BuildReport``; tests assert on it, not on timing.

The compile step itself, shared with ``check``, is ``genspirv.compile``.
"""

from __future__ import annotations

import contextlib
import functools
import errno
import fcntl
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

from . import manifest as manifest_mod
from . import settings
from .buildstate import (STATE_DIR, STATE_SCHEMA, BlobCache, FileHashes, content_key, include_dirs,
                         load_state_file, outputs_current, outputs_key, read_manifest_json,
                         records_from_manifest, sha256_hex, state_path)
from .config import Config, Variant
from .errors import GenspirvError, LockError, OutputError, UnavailableError
from .fsutil import atomic_write
from .manifest import Manifest, ManifestEntry, Toolchain, Unavailable
from .reflect import ShaderInfo
from .remote_cache import Lookup, RemoteCache
from .compile import (CommandLog, Compiled, Log, Tools, _dep_path, compile_all, compile_variants,
                      find_tools, raise_failures, reflect_blob)

LOCK_FILE = "lock"
TOOLS_FILE = "tools.json"     # the tools' versions by binary (path, size, mtime)

# Re-exported: callers of the build also use these.
__all__ = ["STATE_DIR", "STATE_SCHEMA", "content_key", "include_dirs", "state_path", "build",
           "compile_variants", "find_tools", "Compiled", "Tools", "ShaderInfo"]


# -- files --------------------------------------------------------------------


def write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically write ``data`` unless the file already holds exactly those bytes.

    Any OSError (a full disk, no permission, a file where a folder should be) is
    an OutputError naming the file; the temp file is gone and ``path`` untouched.
    """
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    try:
        atomic_write(path, data)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise OutputError(f"{path}: cannot write: {exc.strerror or 'No space left on device'}: "
                              "the disk is full; free some space and build again") from None
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return True


@contextlib.contextmanager
def project_lock(root: Path, timeout: Optional[float] = None, log: Log = None) -> Iterator[None]:
    """Hold ``.genspirv/lock`` (fcntl.flock) for the duration; LockError after ``timeout``."""
    if timeout is None:
        timeout = settings.get("GENSPIRV_LOCK_TIMEOUT")
    path = root / STATE_DIR / LOCK_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = open(path, "a+b")
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the build lock: {exc.strerror or exc}") from None
    with lock_file as f:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise LockError(f"cannot lock {path}: {exc.strerror}") from None
            if not told:
                print(f"genspirv: waiting for {path}: another build of this project is running",
                      file=sys.stderr, flush=True)
                told = True
            if time.monotonic() >= deadline:
                raise LockError(f"{path} is still held by another build after {timeout:g} s "
                                "(set GENSPIRV_LOCK_TIMEOUT to wait longer)")
            time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# -- the manifest and generated files -----------------------------------------


def manifest_entry(config: Config, compiled: Compiled, key: Optional[str] = None) -> ManifestEntry:
    v = compiled.variant
    # Provenance lists only files inside the project: a fresh clone must find them.
    depends = tuple(d for d in compiled.deps if not d.startswith("/")) if key else ()
    return ManifestEntry(name=v.name, source=v.source, defines=v.defines,
                         spirv=config.blob_relpath(v), sha256=sha256_hex(compiled.blob),
                         size=len(compiled.blob), info=compiled.info, inputs=key or "", depends=depends,
                         validated=v.validate, optimized=v.optimize,
                         target_env=v.target_env if v.target_env != config.target_env else None)


def render_outputs(config: Config, compiled: Sequence[Compiled], unavailable: Sequence[Unavailable] = (),
                   keys: Optional[Mapping[str, Optional[str]]] = None,
                   optimizer: Optional[str] = None) -> dict[str, bytes]:
    """The manifest and every generated file, as {posix path relative to root: bytes}."""
    keys = keys or {}
    manifest = Manifest(toolchain=Toolchain(glslang=config.glslang, target_env=config.target_env,
                                            flags=config.flags,
                                            spirv_opt=optimizer if any(c.variant.optimize for c in compiled) else None),
                        shaders=tuple(sorted((manifest_entry(config, c, keys.get(c.variant.name))
                                              for c in compiled), key=lambda e: e.name)),
                        root=config.root, unavailable=tuple(sorted(unavailable, key=lambda u: u.name)))
    outputs = {config.manifest: manifest_mod.dumps(manifest)}
    if config.generate:
        from . import codegen   # only projects that ask for generated code need jinja2 templates
        for g in config.generate:
            # The blobs are not written yet: hand codegen the fresh bytes, not the old files.
            blobs = {c.variant.name: c.blob for c in compiled}
            for rel, data in codegen.render(g.target, manifest, g.output, blobs=blobs,
                                            template=g.template).items():
                outputs[rel] = data
    return outputs


def orphan_blobs(config: Config) -> list[str]:
    """``*.spv`` files in spirv_dir that belong to no variant (relative to the root)."""
    folder = config.path(config.spirv_dir)
    if not folder.is_dir():
        return []
    known = {f"{v.name}.spv" for v in config.variants}
    return sorted(f"{config.spirv_dir}/{p.name}" for p in folder.glob("*.spv")
                  if p.is_file() and p.name not in known)


def stale_temp_files(config: Config) -> list[Path]:
    """Temp files of atomic writes a killed build left in the output folders.

    ``atomic_write`` names them ``.NAME.XXXXXXXX.tmp`` (tempfile's 8 random
    characters) next to NAME. Only a build holding the lock writes there, so
    under the lock every such file is garbage.
    """
    folders = {config.path(config.spirv_dir), config.path(config.manifest).parent,
               config.root / STATE_DIR}
    folders |= {config.path(g.output).parent for g in config.generate}
    found = []
    for folder in sorted(folders):
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if _TEMP_NAME.match(p.name) and p.is_file())
    return found


_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def remove_stale_temp_files(config: Config, log: Log = None) -> None:
    """Delete what interrupted builds left: temp files and compile folders (call under the lock)."""
    for path in stale_temp_files(config):
        with contextlib.suppress(OSError):
            path.unlink()
            if log:
                log(f"removed {path.relative_to(config.root).as_posix()} (left by an interrupted build)")
    state_dir = config.root / STATE_DIR
    if state_dir.is_dir():
        for folder in state_dir.glob("compile-*"):
            shutil.rmtree(folder, ignore_errors=True)


# -- build --------------------------------------------------------------------


@dataclass(frozen=True)
class BuildReport:
    compiled: tuple[str, ...]      # variant names compiled this time
    up_to_date: tuple[str, ...]    # variant names reused from the last build
    removed: tuple[str, ...]       # orphan blobs deleted (paths relative to the root)
    written: tuple[str, ...]       # files written (paths relative to the root)
    cached: tuple[str, ...] = ()   # variant names taken from a blob cache instead of compiled
    unavailable: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (name, missing) of optional variants
    failed: tuple[str, ...] = ()   # variant names that failed (only on a BuildFailed's report)
    remote: Optional[tuple[str, ...]] = None   # variant names taken from the remote cache; None: none set

    def summary(self) -> str:
        parts = [f"{len(self.compiled)} compiled"]
        if self.remote is not None:
            parts.append(f"{len(self.remote)} from the remote cache")
        if self.cached:
            parts.append(f"{len(self.cached)} from cache")
        parts.append(f"{len(self.up_to_date)} up to date")
        if self.unavailable:
            parts.append(f"{len(self.unavailable)} unavailable")
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        return ", ".join(parts) + f", {len(self.removed)} removed, {len(self.written)} files written"


def _unavailable_deps(config: Config, exc: UnavailableError) -> list[str]:
    """The source and the files glslang's messages name (where the #extension line is)."""
    deps = [exc.source]
    for line in exc.messages.splitlines():
        path = line.split(":", 1)[0]
        if path and (config.root / path).is_file():
            deps.append(_dep_path(config.root, path))
    return list(dict.fromkeys(deps))


class _Plan:
    """Which variants a build can take as they are, from a cache, or must compile."""

    def __init__(self, config: Config, tools: Tools, force: bool, remote: RemoteCache):
        self.config, self.tools, self.remote = config, tools, remote
        self.hashes = FileHashes(config.root)
        self.cache = BlobCache.for_config(config)
        self.state_doc = {} if force else load_state_file(config)
        records = dict(self.state_doc.get("variants", {}))
        self.manifest_doc = {} if force else read_manifest_json(config)
        # A fresh clone has no state: the committed manifest's provenance stands in for it.
        self.from_manifest = records_from_manifest(self.manifest_doc)
        for name, record in self.from_manifest.items():
            records.setdefault(name, record)
        self.records = records
        self.fresh: list[Variant] = []        # committed blob matches its inputs
        self.cached: dict[str, bytes] = {}    # blob from a cache
        self.unavailable: dict[str, dict] = {}
        self.stale: list[Variant] = []
        for v in config.variants:
            self._place(v, records.get(v.name))
        self.from_remote: list[str] = []      # names of the cached blobs the remote cache gave
        self.infos: dict[str, ShaderInfo] = {}    # their reflection, made when they were verified
        if not force:
            self._ask_remote()
        self.fresh_names = {v.name for v in self.fresh}

    def key(self, v: Variant, deps) -> Optional[str]:
        return content_key(self.config, self.tools.versions, v, deps, self.hashes)

    def _place(self, v: Variant, record: object) -> None:
        if isinstance(record, dict) and isinstance(record.get("deps"), list):
            key = self.key(v, record["deps"])
            if key is not None and key == record.get("key"):
                if "unavailable" in record and v.optional:
                    self.unavailable[v.name] = record
                    return
                sha = record.get("sha256")
                try:
                    on_disk = self.config.path(self.config.blob_relpath(v)).read_bytes()
                except OSError:
                    on_disk = None
                if on_disk is not None and sha is not None and sha256_hex(on_disk) == sha:
                    self.fresh.append(v)
                    return
                blob = self.cache.get(key, sha) if sha else None
                if blob is not None:
                    self.cached[v.name] = blob
                    return
            elif key is not None:
                blob = self.cache.get(key)      # a shared cache may hold what the inputs now give
                if blob is not None:
                    self.cached[v.name] = blob
                    return
        self.stale.append(v)

    def _ask_remote(self) -> None:
        """What the remote cache holds of the local misses (docs/GUIDE.md, "Sharing compiles
        across machines"): each verified hit is a cache hit, and lands in the local cache."""
        lookups = []
        for v in self.stale:
            record = self.records.get(v.name)
            key = sha = None
            if isinstance(record, dict) and isinstance(record.get("deps"), list) and "unavailable" not in record:
                key = self.key(v, record["deps"])
                sha = record.get("sha256") if key == record.get("key") else None
            lookups.append(Lookup(v, key, sha))
        hits = self.remote.fetch(lookups, self.key, self.cache.get,
                                 lambda v, blob: reflect_blob(v.name, "remote cache", blob))
        for v in [v for v in self.stale if v.name in hits]:
            hit = hits[v.name]
            self.stale.remove(v)
            self.cached[v.name] = hit.blob
            self.records[v.name] = {"key": hit.key, "deps": list(hit.deps), "sha256": sha256_hex(hit.blob)}
            if hit.remote:
                self.cache.put(hit.key, hit.blob)
                self.from_remote.append(v.name)
                self.infos[v.name] = hit.info

    @functools.cached_property
    def manifest_trusted(self) -> bool:
        """This build's state wrote the committed manifest (its bytes are unchanged), or there is
        no state at all (a fresh clone): its reflection may stand in for re-reading the blobs."""
        recorded = self.state_doc.get("outputs", {}).get("files") if self.state_doc else None
        if recorded is None:
            return not self.state_doc
        try:
            return recorded.get(self.config.manifest) == sha256_hex(self.config.path(self.config.manifest).read_bytes())
        except OSError:
            return False

    def manifest_info(self, v: Variant, blob_sha: str) -> Optional[ShaderInfo]:
        """The committed manifest's reflection of a fresh variant, when the manifest is trusted."""
        if not self.manifest_trusted:
            return None
        entry = self.from_manifest.get(v.name, {}).get("entry")
        if not isinstance(entry, dict) or entry.get("sha256") != blob_sha:
            return None
        try:
            return manifest_mod.info_from_dict(entry, v.name)
        except GenspirvError:
            return None


def build(config: Config, jobs: Optional[int] = None, force: bool = False, log: Log = None,
          on_command: CommandLog = None) -> BuildReport:
    """Bring blobs, manifest and generated files up to date with the sources.

    On failure raises the error (CompileError for a shader) with ``.report``: what
    was compiled and kept in the cache, what failed.
    """
    tools = find_tools(config, version_cache=config.root / STATE_DIR / TOOLS_FILE)
    remote = RemoteCache.for_config(config)     # a bad URL stops the build before it starts
    with project_lock(config.root, log=log), remote:
        remove_stale_temp_files(config, log)
        plan = _Plan(config, tools, force, remote)
        from_remote = tuple(plan.from_remote) if remote.enabled else None
        local_hits = tuple(n for n in plan.cached if n not in plan.from_remote)
        fresh_names = {v.name for v in plan.fresh}
        variant_keys = {v.name: plan.records[v.name]["key"] for v in plan.fresh}
        variant_keys.update({n: plan.records[n]["key"] for n in plan.unavailable})
        # Nothing changed (ninja-style): no compile, no reflection, no rendering, no write.
        if not plan.stale and not plan.cached and not orphan_blobs(config) and outputs_current(
                config, plan.state_doc.get("outputs"), outputs_key(config, tools.versions, variant_keys)):
            return BuildReport(compiled=(), up_to_date=tuple(v.name for v in plan.fresh), removed=(),
                               written=(), unavailable=_unavailable_pairs(plan.unavailable), remote=from_remote)
        work = config.root / STATE_DIR
        with tempfile.TemporaryDirectory(prefix="compile-", dir=work) as tmp:
            outcome = compile_all(config, tools, plan.stale, Path(tmp), jobs=jobs, log=log, on_command=on_command)
        records = {}
        for name, c in outcome.compiled.items():
            key = plan.key(c.variant, c.deps)
            if key is not None:
                plan.cache.put(key, c.blob)
                remote.publish(c.variant, key, c.deps, c.blob, plan.key)
            records[name] = {"key": key, "deps": list(c.deps), "sha256": sha256_hex(c.blob)}
        by_name = {v.name: v for v in config.variants}
        for name, exc in outcome.unavailable.items():
            v = by_name[name]
            deps = _unavailable_deps(config, exc)
            records[name] = {"key": plan.key(v, deps), "deps": deps, "unavailable": list(exc.missing)}
            plan.unavailable[name] = records[name]
        for v in config.variants:
            if v.name in plan.cached or v.name in fresh_names or (
                    v.name in plan.unavailable and v.name not in records):
                records[v.name] = {k: val for k, val in plan.records[v.name].items() if k != "entry"}
        if outcome.failures:
            # Keep what compiled (state and cache): the next build compiles only what failed or changed.
            _write_state(config, records, plan.state_doc.get("outputs"))
            report = BuildReport(compiled=tuple(outcome.compiled), up_to_date=tuple(sorted(fresh_names)),
                                 removed=(), written=(), cached=local_hits,
                                 unavailable=_unavailable_pairs(plan.unavailable),
                                 failed=tuple(sorted(outcome.failures)), remote=from_remote)
            try:
                raise_failures(outcome.failures, f"genspirv build: {report.summary()} "
                               "(nothing committed written; the compiled variants wait in the cache)")
            except GenspirvError as exc:
                exc.report = report
                raise
        compiled = dict(outcome.compiled)
        for name, blob in plan.cached.items():
            v = by_name[name]
            deps = tuple(plan.records[name]["deps"]) if name in plan.records else (v.source,)
            compiled[name] = Compiled(v, blob, deps, plan.infos.get(name) or reflect_blob(name, "cache", blob))
            records[name] = {"key": plan.key(v, deps), "deps": list(deps), "sha256": sha256_hex(blob)}
        unavailable = [Unavailable(v.name, v.source, tuple(plan.unavailable[v.name]["unavailable"]),
                                   plan.unavailable[v.name]["key"], tuple(plan.unavailable[v.name]["deps"]))
                       for v in config.variants if v.name in plan.unavailable]
        keys = {name: r["key"] for name, r in records.items()}
        if not plan.state_doc and not outcome.compiled and not plan.cached and not config.generate \
                and _committed_manifest_current(config, plan, tools, keys, unavailable):
            # A fresh clone whose committed outputs match their inputs: nothing to render or write.
            manifest_sha = sha256_hex(config.path(config.manifest).read_bytes())
            _write_state(config, records, {"key": outputs_key(config, tools.versions, keys),
                                           "files": {config.manifest: manifest_sha}})
            return BuildReport(compiled=(), up_to_date=tuple(v.name for v in plan.fresh), removed=(),
                               written=(), unavailable=_unavailable_pairs(plan.unavailable), remote=from_remote)
        for v in plan.fresh:
            rel = config.blob_relpath(v)
            blob = config.path(rel).read_bytes()
            info = plan.manifest_info(v, sha256_hex(blob)) or reflect_blob(v.name, rel, blob)
            compiled[v.name] = Compiled(v, blob, tuple(plan.records[v.name]["deps"]), info)
        ordered = [compiled[v.name] for v in config.variants if v.name in compiled]

        # Render everything before writing anything, so a codegen failure leaves no mix.
        outputs = render_outputs(config, ordered, unavailable=unavailable, keys=keys,
                                 optimizer=tools.optimizer_version)
        written = []
        for c in ordered:
            rel = config.blob_relpath(c.variant)
            if write_if_changed(config.path(rel), c.blob):
                written.append(rel)
        removed = orphan_blobs(config)
        for rel in removed:
            config.path(rel).unlink()
            if log:
                log(f"removed {rel} (no variant {Path(rel).stem} any more)")
        for rel, data in outputs.items():
            if write_if_changed(config.path(rel), data):
                written.append(rel)
        _write_state(config, records, {"key": outputs_key(config, tools.versions, keys),
                                       "files": {rel: sha256_hex(data) for rel, data in sorted(outputs.items())}})
        if plan.cache.stored:
            plan.cache.trim()
    return BuildReport(compiled=tuple(v.name for v in plan.stale if v.name in outcome.compiled),
                       up_to_date=tuple(v.name for v in plan.fresh), removed=tuple(removed),
                       written=tuple(written), cached=local_hits,
                       unavailable=_unavailable_pairs(plan.unavailable), remote=from_remote)


def _committed_manifest_current(config: Config, plan: _Plan, tools, keys: Mapping[str, Optional[str]],
                                unavailable: Sequence[Unavailable]) -> bool:
    """Does the committed manifest say, for every variant, what a build would write besides the
    reflection (names, paths, sha256, provenance, toolchain, unavailable variants)?

    The reflection and the formatting are taken on trust here, as the blobs' sha256 are
    unchanged; ``check`` verifies both byte for byte.
    """
    doc = plan.manifest_doc
    fresh = [v for v in config.variants if v.name in plan.fresh_names]
    optimizer = tools.optimizer_version if any(v.optimize for v in fresh) else None
    head = manifest_mod.manifest_to_dict(Manifest(
        toolchain=Toolchain(glslang=config.glslang, target_env=config.target_env, flags=config.flags,
                            spirv_opt=optimizer),
        shaders=(), unavailable=tuple(unavailable)))
    if {k: val for k, val in doc.items() if k != "shaders"} != {k: val for k, val in head.items() if k != "shaders"}:
        return False
    entries = {e.get("name"): e for e in doc.get("shaders", ()) if isinstance(e, dict)}
    if len(entries) != len(fresh) or len(doc.get("shaders", ())) != len(fresh):
        return False
    for v in fresh:
        e = entries.get(v.name)
        record = plan.records[v.name]
        facts = manifest_mod.build_facts(manifest_entry(
            config, Compiled(v, b"", tuple(record["deps"]), None), keys.get(v.name)))
        facts.update(sha256=record["sha256"])
        facts.pop("size")
        if e is None or any(e.get(k) != val for k, val in facts.items()) or \
                any(k in e for k in manifest_mod.OPTIONAL_FACTS if k not in facts):
            return False
    return True


def _unavailable_pairs(unavailable: Mapping[str, dict]) -> tuple:
    return tuple((name, tuple(r["unavailable"])) for name, r in sorted(unavailable.items()))


def _write_state(config: Config, records: Mapping[str, dict], outputs: object) -> None:
    doc = {"schema": STATE_SCHEMA, "variants": dict(records)}
    if outputs:
        doc["outputs"] = outputs
    # Compact: json's C encoder (an indent would take the pure-Python one, a tenth of a
    # second per 2,000 variants on every build that writes state).
    write_if_changed(state_path(config), (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode())
