"""The committed manifest as a fresh clone's state: its provenance as records.

Takes a ``Config`` and the build's stat log (``genspirv.buildsys.statlog``); gives
``CommittedManifest`` (``committed_manifest``): the committed manifest as plain
JSON, unverified, and its provenance (``inputs``, ``depends``, ``sha256``) as
records, so a fresh clone with no state builds as a no-op when the committed
outputs match. ``early_manifest`` gives the same from the build facts a forked
child parsed before the build was imported (``genspirv.buildsys.early``), only
while the stat log gives the sha256 they were parsed from; its entries hold no
reflection (``reflection`` False): a build that needs one parses the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ..errors import ManifestError
from ..manifest import read_manifest_json
from ..project.config import Config
from ..project.generated import compiled_deps
from ..project.variants import compiler_named
from .state import Record
from .statlog import StatLog


@dataclass(frozen=True)
class CommittedManifest:
    """The committed manifest as plain JSON, unverified, and its provenance as records."""

    doc: Mapping[str, Any]
    records: Mapping[str, Record]
    entries: Mapping[str, Mapping[str, Any]]       # shader entries by name
    sha256: Optional[str] = None                   # of the bytes parsed (None: unreadable)
    reflection: bool = True                        # False: the entries hold their build facts only


def committed_manifest(config: Config, stats: Optional[StatLog] = None) -> CommittedManifest:
    """What the committed manifest says ({} if absent or unreadable); read through the build's
    stat log (``stats``), which then holds its sha256."""
    read = stats.read(config.manifest) if stats is not None else None
    try:
        doc = read_manifest_json(config.path(config.manifest), read[0] if read is not None else None)
    except ManifestError:
        doc = {}
    return from_doc(config, doc, read[1] if read is not None else None)


def from_doc(config: Config, doc: Any, sha256: Optional[str], reflection: bool = True) -> CommittedManifest:
    """``CommittedManifest`` of the parsed manifest ``doc`` (anything but an object: {})."""
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
    return CommittedManifest(doc, records, entries, sha256 if doc else None, reflection)


def early_manifest(config: Config, early: Optional[Mapping[str, Any]], stats: StatLog) -> Optional[CommittedManifest]:
    """The committed manifest from the early reads' build facts (``genspirv.buildsys.early``), while
    the stat log still gives the sha256 they were parsed from; None: parse the file."""
    found = early.get("manifest") if early is not None else None
    if not isinstance(found, tuple) or len(found) != 3:
        return None
    path, sha256, doc = found
    if path != config.manifest or stats.sha256(path) != sha256:
        return None
    return from_doc(config, doc, sha256, reflection=False)
