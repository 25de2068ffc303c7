"""What the last build kept: its records, from ``.genspirv/`` or, in a fresh clone, from the committed manifest.

Takes a project root (and, for a fresh clone, the ``Config`` and the build's
stat log); gives ``State``: each variant's ``Record`` (``genspirv.buildsys.keys``)
and the outputs' own key, which the plan and the loop decide with.

- ``.genspirv/state.json`` (``load_state``; ``stage_state`` writes it): the
  records and the outputs' key; beside it ``.genspirv/inputs.json``, the
  ``KeyInputs`` behind each record's key, read only to explain
  (``RecordedInputs``); and the journal ``.genspirv/journal.jsonl``, one record
  appended as each compile finishes (``Journal``), so an interrupted build
  keeps its work: ``load_state`` applies it over the state file, and the next
  state written folds it in (ninja's log).
- ``CommittedManifest`` (``committed_manifest``): the committed manifest as
  plain JSON, unverified, with its provenance (``inputs``, ``depends``,
  ``sha256``) as records, so a fresh clone with no state builds as a no-op
  when the committed outputs match their inputs.

Everything here is a cache of work done: a file that is absent, too large,
malformed or from another version is a cold cache, never an error
(``statedir.read_state_json`` bounds every read). The folder's file names are
``genspirv.statedir``'s.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from .. import statedir
from ..statedir import Kept
from ..fsutil import StagedFiles
from ..project.config import Config
from ..project.generated import compiled_deps
from ..project.variants import compiler_named
from .keys import KeyInputs, OutputsRecord, Record
from .statlog import StatLog

STATE_SCHEMA = "genspirv-state/1"
INPUTS_SCHEMA = "genspirv-inputs/1"


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
            data = statedir.read_state_json(self.path)
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
    # keys.settings_digest of the build that saved the state; None where a journal adds records
    # another build made (an interrupted one's, with settings of its own)
    settings: Optional[str] = None


def load_state(root: Path) -> State:
    """The last build's state with the journal applied; anything unreadable is a cold cache."""
    records: dict[str, Record] = {}
    outputs = settings = None
    found = False
    data = statedir.read_state_json(statedir.path(root, Kept.STATE))
    if isinstance(data, dict) and data.get("schema") == STATE_SCHEMA and isinstance(data.get("variants"), dict):
        found = True
        for name, doc in data["variants"].items():
            record = Record.from_doc(doc)
            if record is not None:
                records[name] = record
        out = data.get("outputs")
        if isinstance(out, dict) and isinstance(out.get("key"), str) and isinstance(out.get("files"), dict):
            outputs = OutputsRecord(out["key"], {str(k): str(v) for k, v in out["files"].items()})
        settings = data.get("settings") if isinstance(data.get("settings"), str) else None
    raw = statedir.read_bounded(statedir.path(root, Kept.JOURNAL))
    for line in raw.splitlines() if raw is not None else ():
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue        # the line a kill cut short
        record = Record.from_doc(entry.get("record")) if isinstance(entry, dict) else None
        if record is not None and isinstance(entry.get("name"), str):
            records[entry["name"]] = record
            found = True
            settings = None
    return State(records, RecordedInputs(statedir.path(root, Kept.INPUTS)), outputs, found, settings)


def _compact(doc: Any) -> bytes:
    # Compact: json's C encoder (an indent would take the pure-Python one, a tenth of a
    # second per 2,000 variants on every build that writes state).
    return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def stage_state(root: Path, staged: StagedFiles, records: Mapping[str, Record], outputs: Optional[OutputsRecord],
                recorded: RecordedInputs, stats: Optional[StatLog] = None, settings: Optional[str] = None) -> None:
    """Stage the state file and the inputs file (each unless it holds these bytes) and the stat
    log where it changed; commit, then ``clear_journal``. A record this build did not make
    keeps its recorded inputs. ``settings``: the digest the records were made with."""
    doc: dict[str, Any] = {"schema": STATE_SCHEMA, "variants": {n: r.to_doc() for n, r in records.items()}}
    if settings is not None:
        doc["settings"] = settings
    if outputs is not None:
        doc["outputs"] = {"key": outputs.key, "files": dict(outputs.files)}
    inputs = {n: r.inputs_doc if r.inputs_doc is not None else recorded.doc(n, r.key) for n, r in records.items()}
    statedir.make_state_dir(root)
    # The inputs file only explains: losing it to a crash costs no work, so no fsync.
    for path, data, durable in ((statedir.path(root, Kept.STATE), _compact(doc), True),
                                (statedir.path(root, Kept.INPUTS), _compact({"schema": INPUTS_SCHEMA, "variants": {
                                    n: d for n, d in inputs.items() if d is not None}}), False)):
        if statedir.read_bounded(path) == data:
            continue
        staged.stage(path, data, durable=durable)
    if stats is not None and stats.changed and stats.path is not None:
        staged.stage(stats.path, stats.data(), durable=False)     # a lost log costs only hashing


def clear_journal(root: Path) -> None:
    """Forget the journal once the state file holds its records."""
    with contextlib.suppress(FileNotFoundError):
        statedir.path(root, Kept.JOURNAL).unlink()


def journal_exists(root: Path) -> bool:
    return statedir.path(root, Kept.JOURNAL).exists()


class Journal:
    """``.genspirv/journal.jsonl``: a record appended as each compile finishes (ninja's log).

    Not fsynced: it is a cache, and the kernel keeps what a killed process
    wrote. A write that fails only costs a recompile next time."""

    def __init__(self, root: Path):
        self.root = root
        self._file = None

    def append(self, name: str, record: Record) -> None:
        line = json.dumps({"name": name, "record": record.to_doc(with_inputs=True)}, sort_keys=True,
                          separators=(",", ":"))
        try:
            if self._file is None:
                statedir.make_state_dir(self.root)
                self._file = open(statedir.path(self.root, Kept.JOURNAL), "ab", buffering=0)
            self._file.write(line.encode() + b"\n")
        except OSError:
            pass

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# -- a fresh clone: the committed manifest's provenance -------------------------


@dataclass(frozen=True)
class CommittedManifest:
    """The committed manifest as plain JSON, unverified, and its provenance as records."""

    doc: Mapping[str, Any]
    records: Mapping[str, Record]
    entries: Mapping[str, Mapping[str, Any]]       # shader entries by name
    sha256: Optional[str] = None                   # of the bytes parsed (None: unreadable)

    def blob_paths(self) -> frozenset[str]:
        """The blobs it lists: genspirv's own, as far as this manifest says."""
        return frozenset(e["spirv"] for e in self.entries.values() if isinstance(e.get("spirv"), str))


def committed_manifest(config: Config, stats: StatLog) -> CommittedManifest:
    """What the committed manifest says ({} if absent, unreadable or not a manifest); read
    through the build's stat log, which then holds its sha256."""
    from ..errors import ManifestError
    from ..manifest import read_manifest_json
    read = stats.read(config.manifest)
    try:
        doc = read_manifest_json(config.path(config.manifest), read[0]) if read is not None else {}
    except ManifestError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    records: dict[str, Record] = {}
    entries: dict[str, Mapping[str, Any]] = {}
    files = config.generated_files

    def deps(depends: list) -> tuple[str, ...]:
        # depends lists the templates behind generated files too; the key covers what was compiled.
        return compiled_deps(tuple(map(str, depends)), files, config.generator, config.glsl_dir)

    for e in doc.get("shaders", ()) if isinstance(doc.get("shaders"), list) else ():
        if isinstance(e, dict) and isinstance(e.get("name"), str):
            entries[e["name"]] = e
            compiler = compiler_named(e.get("compiler"))
            if isinstance(e.get("inputs"), str) and isinstance(e.get("depends"), list) and compiler is not None:
                sha = e.get("sha256")
                records[e["name"]] = Record(e["inputs"], deps(e["depends"]), sha if isinstance(sha, str) else None,
                                            compiler=compiler)
    for u in doc.get("unavailable", ()) if isinstance(doc.get("unavailable"), list) else ():
        compiler = compiler_named(u.get("compiler")) if isinstance(u, dict) else None
        if isinstance(u, dict) and isinstance(u.get("name"), str) and isinstance(u.get("inputs"), str) \
                and isinstance(u.get("depends"), list) and u.get("missing") and compiler is not None:
            records[u["name"]] = Record(u["inputs"], deps(u["depends"]), missing=tuple(map(str, u["missing"])),
                                        compiler=compiler)
    return CommittedManifest(doc, records, entries, read[1] if read is not None and doc else None)
