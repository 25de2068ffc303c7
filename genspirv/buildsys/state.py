"""What a build remembers: content keys, state records, the journal.

Takes a ``Config`` and gives the facts the build plans with:

- ``KeyInputs``: everything that decides a variant's bytes (the source and
  every file it read with their sha256, its preamble, defines, compiler and
  optimiser versions, flags, target env, include handling, whether it is
  validated);
  its ``key`` (sha256 of its JSON) is the variant's content key. Two inputs
  compared field by field say *why* a variant is stale (``genspirv.buildsys.plan``).
- ``Record``: per variant what the last build knew: key, the files it read,
  the blob's sha256 (or what the compiler lacked, for an unavailable one) and
  which compiler built it (or lacked what it needs).
- the state ``.genspirv/state.json`` (``load_state``; ``stage_state`` writes
  it): the records and the outputs' own key; beside it
  ``.genspirv/inputs.json``, the ``KeyInputs`` behind each record's key,
  read only to explain (``RecordedInputs``); and the journal
  ``.genspirv/journal.jsonl``, one record appended as each compile finishes
  (``Journal``), so an interrupted build keeps its work: ``load_state``
  applies it over the state file, and the next state written folds it in;
- ``project_lock``: ``.genspirv/lock``, held by a build for as long as it runs.

The blobs themselves, by content key, are ``genspirv.buildsys.blob_cache``'s.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from .. import settings

from ..project.config import Config, Variant
from ..errors import LockError, OutputError
from ..fsutil import StagedFiles, try_lock, unlock
from ..project.generated import is_generated
from .statlog import STATS_FILE, StatLog
from ..project.variants import CompilerName, compiler_named
from ..toolchain.compiler import Versions

STATE_DIR = ".genspirv"
STATE_FILE = "state.json"
INPUTS_FILE = "inputs.json"
JOURNAL_FILE = "journal.jsonl"
TOOLS_FILE = "tools.json"      # the tools' versions by binary (path, size, mtime): a no-op starts no tool
LOCK_FILE = "lock"             # held by a build while it runs (project_lock)
STATE_SCHEMA = "genspirv-state/1"
INPUTS_SCHEMA = "genspirv-inputs/1"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def include_dirs(config: Config) -> tuple[str, ...]:
    return config.include_dirs


@dataclass
class FileHashes:
    """sha256 of each file read during one build: a header shared by 2,000 variants is read once.

    A generated file is hashed from the text the generator gave (``generated``), never from
    disk: the key is the same whether its copy on disk is there, stale or elsewhere (check).
    With ``stats`` (the build's stat log, ``genspirv.buildsys.statlog``) a file whose stat() is as
    logged is not read; check passes none: it trusts nothing a build kept."""

    root: Path
    generated: Mapping[str, bytes] = field(default_factory=dict)
    stats: Optional[StatLog] = None
    _seen: dict = field(default_factory=dict)

    @classmethod
    def for_config(cls, config: Config, stats: Optional[StatLog] = None) -> "FileHashes":
        return cls(config.root, {f.path: f.data for f in config.generated}, stats)

    def on_disk(self, rel: str) -> Optional[str]:
        """sha256 of the file at ``rel`` as it is on disk, through the stat log when there is one."""
        if self.stats is not None:
            return self.stats.sha256(rel)
        try:
            return sha256_hex((self.root / rel).read_bytes())
        except OSError:
            return None

    def get(self, rel: str) -> Optional[str]:
        if rel not in self._seen:
            if rel in self.generated:
                self._seen[rel] = sha256_hex(self.generated[rel])
            elif is_generated(rel):
                self._seen[rel] = None      # a generated file the generator no longer gives: gone
            else:
                self._seen[rel] = self.on_disk(rel)
        return self._seen[rel]


# -- content keys -------------------------------------------------------------


@dataclass(frozen=True)
class KeyInputs:
    """Everything that decides a variant's bytes; ``key`` is their sha256."""

    source: str
    defines: tuple[tuple[str, str], ...]
    compiler: str
    flags: tuple[str, ...]
    target_env: str
    include_dirs: tuple[str, ...]
    include_directive: bool
    validate: bool
    files: tuple[tuple[str, Optional[str]], ...]   # (path, sha256) sorted; None: the file is gone
    optimize: bool = False
    optimizer: Optional[str] = None                # the optimiser's version, when optimised
    preamble: Optional[str] = None                 # its path; its sha256 is in ``files``

    @functools.cached_property
    def doc(self) -> dict[str, Any]:
        """The exact document the key has always hashed (committed manifests carry these keys)."""
        doc = {"source": self.source, "defines": [list(d) for d in self.defines], "compiler": self.compiler,
               "flags": list(self.flags), "target_env": self.target_env, "include_dirs": list(self.include_dirs),
               "files": [list(f) for f in self.files], "include_directive": self.include_directive,
               "validate": self.validate}
        if self.optimize:
            doc["optimizer"] = self.optimizer
        if self.preamble is not None:       # only when set: keys without one stay as they were
            doc["preamble"] = self.preamble
        return doc

    @functools.cached_property
    def key(self) -> Optional[str]:
        """The content key; None when a file it read is gone (the variant must compile)."""
        if any(digest is None for _, digest in self.files):
            return None
        return sha256_hex(json.dumps(self.doc, sort_keys=True).encode())

    @classmethod
    def from_doc(cls, d: Any) -> Optional["KeyInputs"]:
        try:
            return cls(source=d["source"], defines=tuple((str(k), str(v)) for k, v in d["defines"]),
                       compiler=d["compiler"], flags=tuple(d["flags"]), target_env=d["target_env"],
                       include_dirs=tuple(d["include_dirs"]), include_directive=bool(d["include_directive"]),
                       validate=bool(d["validate"]), files=tuple((str(p), h) for p, h in d["files"]),
                       optimize="optimizer" in d, optimizer=d.get("optimizer"), preamble=d.get("preamble"))
        except (KeyError, TypeError, ValueError):
            return None


def key_inputs(config: Config, versions: Versions, variant: Variant, deps: Sequence[str],
               hashes: FileHashes, dirs: Optional[tuple[str, ...]] = None) -> KeyInputs:
    """The inputs of ``variant`` compiled from ``deps`` (the files its last compile read)."""
    read = {variant.source, *([variant.preamble] if variant.preamble else [])}
    files = tuple((dep, hashes.get(dep)) for dep in sorted(set(deps) | read))
    return KeyInputs(source=variant.source, defines=variant.defines, compiler=versions.of(variant),
                     flags=variant.flags, target_env=variant.target_env,
                     include_dirs=include_dirs(config) if dirs is None else dirs,
                     include_directive=config.include_directive, validate=variant.validate, files=files,
                     optimize=variant.optimize, optimizer=versions.optimizer if variant.optimize else None,
                     preamble=variant.preamble)


# -- records and the state file -----------------------------------------------


@dataclass(frozen=True)
class Record:
    """What a build knew of one variant: built (``sha256``) or unavailable (``missing``)."""

    key: Optional[str]
    deps: tuple[str, ...]
    sha256: Optional[str] = None
    missing: tuple[str, ...] = ()                  # unavailable: what the compiler lacks
    compiler: CompilerName = CompilerName.GLSLANG  # the one that built it, or whose lack stands
    # The KeyInputs behind the key, as JSON, when this build made the record (the state file
    # keeps them apart, in RecordedInputs: a no-op build of 2,000 variants never reads them).
    inputs_doc: Optional[Mapping[str, Any]] = field(default=None, compare=False, repr=False)
    # How long its last compile took: the next build starts the longest compiles first.
    seconds: Optional[float] = field(default=None, compare=False)

    @classmethod
    def of(cls, inputs: KeyInputs, deps: Sequence[str], sha256: Optional[str] = None,
           missing: Sequence[str] = (), compiler: CompilerName = CompilerName.GLSLANG,
           seconds: Optional[float] = None) -> "Record":
        return cls(inputs.key, tuple(deps), sha256, tuple(missing), compiler, inputs.doc, seconds)

    @functools.cached_property
    def inputs(self) -> Optional[KeyInputs]:
        return KeyInputs.from_doc(self.inputs_doc) if self.inputs_doc is not None else None

    @property
    def unavailable(self) -> bool:
        return bool(self.missing)

    def to_doc(self, with_inputs: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {"key": self.key, "deps": list(self.deps)}
        if self.sha256 is not None:
            doc["sha256"] = self.sha256
        if self.missing:
            doc["unavailable"] = list(self.missing)
        if self.compiler is not CompilerName.GLSLANG:
            doc["compiler"] = self.compiler.value
        if self.seconds is not None:
            doc["seconds"] = round(self.seconds, 3)
        if with_inputs and self.inputs_doc is not None:
            doc["inputs"] = self.inputs_doc
        return doc

    @classmethod
    def from_doc(cls, d: Any) -> Optional["Record"]:
        """A record from its JSON; None for anything malformed (it is only a cold cache)."""
        if not isinstance(d, dict) or not isinstance(d.get("deps"), list) or \
                not isinstance(d.get("key"), (str, type(None))):
            return None
        sha, missing, inputs = d.get("sha256"), d.get("unavailable", ()), d.get("inputs")
        if not isinstance(sha, (str, type(None))) or not isinstance(missing, (list, tuple)):
            return None
        compiler = compiler_named(d.get("compiler"))
        if compiler is None:
            return None
        seconds = d.get("seconds")
        return cls(key=d["key"], deps=tuple(map(str, d["deps"])), sha256=sha, missing=tuple(map(str, missing)),
                   compiler=compiler, inputs_doc=inputs if isinstance(inputs, dict) else None,
                   seconds=float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
                   else None)


@dataclass(frozen=True)
class OutputsRecord:
    """The manifest's and generated files' key, and the sha256 of each file as written."""

    key: str
    files: Mapping[str, str]


class RecordedInputs:
    """The KeyInputs behind each record's key, kept in ``.genspirv/inputs.json``.

    Read at the first ``get``: only a build that explains a stale variant, or keeps the
    old record of a variant that failed, needs them; a no-op build never does."""

    def __init__(self, path: Path):
        self.path = path
        self._docs: Optional[dict[str, Any]] = None

    def doc(self, name: str, key: Optional[str]) -> Optional[Mapping[str, Any]]:
        """The inputs document of ``name`` whose key is ``key`` (None when none is kept)."""
        if self._docs is None:
            try:
                data = json.loads(self.path.read_bytes())
            except (OSError, ValueError):
                data = None
            ok = isinstance(data, dict) and data.get("schema") == INPUTS_SCHEMA and isinstance(data.get("variants"), dict)
            self._docs = data["variants"] if ok else {}
        doc = self._docs.get(name)
        inputs = KeyInputs.from_doc(doc) if doc is not None else None
        return doc if inputs is not None and key is not None and inputs.key == key else None

    def get(self, name: str, key: Optional[str]) -> Optional[KeyInputs]:
        doc = self.doc(name, key)
        return KeyInputs.from_doc(doc) if doc is not None else None


@dataclass(frozen=True)
class State:
    records: Mapping[str, Record]
    inputs: RecordedInputs
    outputs: Optional[OutputsRecord] = None
    found: bool = False             # a state file or journal was there (False: a fresh clone)
    sha256: Optional[str] = None    # the state file's bytes (None: no state file); the no-op stamp's


def state_path(config: Config) -> Path:
    return config.root / STATE_DIR / STATE_FILE


def stats_path(config: Config) -> Path:
    return config.root / STATE_DIR / STATS_FILE


def stat_log(config: Config) -> StatLog:
    """The build's stat log (``.genspirv/stats.json``)."""
    return StatLog(config.root, stats_path(config))


def inputs_path(config: Config) -> Path:
    return config.root / STATE_DIR / INPUTS_FILE


def journal_path(config: Config) -> Path:
    return config.root / STATE_DIR / JOURNAL_FILE


def load_state(config: Config) -> State:
    """The last build's state with the journal applied; anything unreadable is a cold cache."""
    records: dict[str, Record] = {}
    outputs = None
    found = False
    digest = None
    try:
        raw = state_path(config).read_bytes()
        digest = sha256_hex(raw)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and data.get("schema") == STATE_SCHEMA and isinstance(data.get("variants"), dict):
        found = True
        for name, doc in data["variants"].items():
            record = Record.from_doc(doc)
            if record is not None:
                records[name] = record
        out = data.get("outputs")
        if isinstance(out, dict) and isinstance(out.get("key"), str) and isinstance(out.get("files"), dict):
            outputs = OutputsRecord(out["key"], dict(out["files"]))
    try:
        lines = journal_path(config).read_bytes().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue        # the line a kill cut short
        record = Record.from_doc(entry.get("record")) if isinstance(entry, dict) else None
        if record is not None and isinstance(entry.get("name"), str):
            records[entry["name"]] = record
            found = True
    return State(records, RecordedInputs(inputs_path(config)), outputs, found, digest)


def _compact(doc: Any) -> bytes:
    # Compact: json's C encoder (an indent would take the pure-Python one, a tenth of a
    # second per 2,000 variants on every build that writes state).
    return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def stage_state(config: Config, staged: StagedFiles, records: Mapping[str, Record],
                outputs: Optional[OutputsRecord], recorded: RecordedInputs, stats: Optional[StatLog] = None) -> None:
    """Stage the state file and the inputs file (each unless it holds these bytes) and the stat
    log where it changed; commit, then ``clear_journal``. A record this build did not make
    keeps its recorded inputs."""
    doc: dict[str, Any] = {"schema": STATE_SCHEMA, "variants": {n: r.to_doc() for n, r in records.items()}}
    if outputs is not None:
        doc["outputs"] = {"key": outputs.key, "files": dict(outputs.files)}
    inputs = {n: r.inputs_doc if r.inputs_doc is not None else recorded.doc(n, r.key) for n, r in records.items()}
    # The inputs file only explains: losing it to a crash costs no work, so no fsync.
    for path, data, durable in ((state_path(config), _compact(doc), True),
                                (inputs_path(config), _compact({"schema": INPUTS_SCHEMA, "variants": {
                                    n: d for n, d in inputs.items() if d is not None}}), False)):
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                continue
        staged.stage(path, data, durable=durable)
    if stats is not None and stats.changed and stats.path is not None:
        staged.stage(stats.path, stats.data(), durable=False)     # a lost log costs only hashing


def clear_journal(config: Config) -> None:
    """Forget the journal once the state file holds its records."""
    with contextlib.suppress(FileNotFoundError):
        journal_path(config).unlink()


class Journal:
    """``.genspirv/journal.jsonl``: a record appended as each compile finishes (ninja's log).

    Not fsynced: it is a cache, and the kernel keeps what a killed process
    wrote. A write that fails only costs a recompile next time."""

    def __init__(self, config: Config):
        self.path = journal_path(config)
        self._file = None

    def append(self, name: str, record: Record) -> None:
        line = json.dumps({"name": name, "record": record.to_doc(with_inputs=True)}, sort_keys=True,
                          separators=(",", ":"))
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "ab", buffering=0)
            self._file.write(line.encode() + b"\n")
        except OSError:
            pass

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# -- the lock -----------------------------------------------------------------


@contextlib.contextmanager
def project_lock(root: Path, timeout: Optional[float] = None, log: Optional[Callable[[str], None]] = None) -> Iterator[None]:
    """Hold ``.genspirv/lock`` (``fsutil.try_lock``: flock, or msvcrt on Windows) for the
    duration; LockError after ``timeout``."""
    if timeout is None:
        timeout = settings.get("GENSPIRV_LOCK_TIMEOUT")
    path = root / STATE_DIR / LOCK_FILE
    try:
        _make_state_dir(path.parent)
        lock_file = open(path, "a+b")
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the build lock: {exc.strerror or exc}") from None
    with lock_file as f:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                if try_lock(f):
                    break
            except OSError as exc:
                raise LockError(f"cannot lock {path}: {exc.strerror or exc}") from None
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
            unlock(f)


def _make_state_dir(folder: Path) -> None:
    """``.genspirv/``, with a ``.gitignore`` of ``*`` in it (as pytest's and ruff's caches have):
    git never lists the state, the cache or the generated files, whatever the project ignores."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text("# genspirv's build state, cache and generated sources\n*\n")
