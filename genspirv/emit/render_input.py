"""What every output of one build is rendered from: a manifest and its blobs in, a ``RenderInput`` out.

``prepare(manifest, blobs=None) -> RenderInput`` verifies each blob once
against its entry's size and sha256 (``blobs``: the fresh bytes of a build not
yet written; an entry without one is read from the committed file), and makes
once what every output reads: the manifest as JSON data and, per entry, the
values a project template receives (``template_shaders``: the entry's fields
with ``meta``, ``blob``, ``words`` and ``ident`` added). The blobs are
referenced, never copied, and ``words`` is a ``ctext.Words`` view of the bytes
(no list of ints per blob).

A ``RenderInput`` is shared by every output of a build, by threads at once or
by worker processes forked after it was made: nothing in it changes after
``prepare``, and ``shared_ids`` names every list and dict in it, so the
template renderer refuses a template that would change one (each output gets
its own top-level copy of every shader's mapping, which it may change).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ..manifest import Manifest, ManifestEntry, check_blob, manifest_to_dict
from .ctext import Words, c_ident

Blobs = Optional[Mapping[str, bytes]]


def sorted_entries(manifest: Manifest) -> list[ManifestEntry]:
    # The C lookup is a binary search with strcmp, which orders UTF-8 bytes.
    return sorted(manifest.shaders, key=lambda e: e.name.encode("utf-8"))


def blob_of(manifest: Manifest, entry: ManifestEntry, blobs: Blobs) -> bytes:
    """The entry's bytes: the fresh ones given, else the committed file; verified either way."""
    if blobs is None or entry.name not in blobs:
        return manifest.read_blob(entry)
    check_blob(entry, blobs[entry.name])
    return blobs[entry.name]


@dataclass(frozen=True, eq=False)
class RenderInput:
    manifest: Manifest
    blobs: Mapping[str, bytes]                  # every entry's verified bytes, by name
    doc: Mapping[str, Any]                      # manifest_to_dict(manifest)
    template_shaders: tuple[Mapping[str, Any], ...]   # per entry, sorted by name (see the module docstring)
    shared_ids: frozenset[int]                  # id() of every list and dict above


def _containers(value: Any, out: set[int]) -> None:
    """The ids of every list and dict in ``value`` (JSON data and the values added to it)."""
    if isinstance(value, dict):
        out.add(id(value))
        for v in value.values():
            _containers(v, out)
    elif isinstance(value, list):
        out.add(id(value))
        for v in value:
            _containers(v, out)


def prepare(manifest: Manifest, blobs: Blobs = None) -> RenderInput:
    """Verify (or read) every blob once and make what every output reads; see the module docstring."""
    verified = {e.name: blob_of(manifest, e, blobs) for e in sorted_entries(manifest)}
    doc = manifest_to_dict(manifest)
    shaders = []
    for entry in doc["shaders"]:
        blob = verified[entry["name"]]
        shaders.append({**entry, "meta": entry.get("meta", {}), "blob": blob,
                        "words": Words(blob, entry["spirv"]), "ident": c_ident(entry["name"])})
    ids: set[int] = set()
    _containers(doc, ids)
    for s in shaders:          # each mapping, not the list: that one is gone, and its id with it
        ids.add(id(s))         # its values are the doc entry's (walked above), but for a new meta
        ids.add(id(s["meta"]))
    return RenderInput(manifest, verified, doc, tuple(shaders), frozenset(ids))
