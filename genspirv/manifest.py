"""The manifest: ``ShaderInfo`` plus build facts <-> deterministic JSON.

Takes ``ManifestEntry`` records (what the build produced) and gives the bytes of
``manifests/shaders.json`` (schema ``genspirv/1``); reads them back with
``load_manifest``, which checks the schema (genspirv/schema/manifest.schema.json, with jsonschema:
the first problem), the paths (posix, relative, no ``..``) and, by default, every blob's size and
sha256. What a hand may edit is read as regular files only, up to ``MANIFEST_MAX`` and a blob's ``size``.

The same bytes come out of the same entries on every machine: sorted keys,
fixed indent, trailing newline, entries sorted by name. ``genspirv.reflect`` is
imported only where reflection is converted: a no-op build reads build facts alone.

longer than 500 lines because the format's writer and its checked reader are one contract, changed together.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from collections import abc
from typing import TYPE_CHECKING, Any, Mapping, Optional

from .errors import BlobIntegrityError, ManifestError
from .fsutil import RefusedRead, find_project_root, parse_json, read_regular

if TYPE_CHECKING:
    from .reflect import PushMember, ShaderInfo

SCHEMA = "genspirv/1"
MANIFEST_MAX = 64 << 20     # bytes read of a manifest: 10 times 2,000 entries of 3 KB


@dataclass(frozen=True)
class Toolchain:
    glslang: str
    target_env: str
    flags: tuple[str, ...] = ()
    spirv_opt: Optional[str] = None     # the optimiser's version, when some variant is optimised
    # slang-glslang's library version and its slangpy wheel's, when it built some variant
    slang_glslang: Optional[str] = None
    slangpy: Optional[str] = None


@dataclass(frozen=True)
class Unavailable:
    """An optional variant no compiler of its chain can build, and what the last one lacks."""

    name: str
    source: str
    missing: tuple[str, ...]
    inputs: str = ""                    # content key, as for a built variant
    depends: tuple[str, ...] = ()
    compiler: Optional[str] = None      # the compiler that lacks it, when not the default
    meta_json: str = ""                 # the variant's meta, canonical JSON ("" when none)


@dataclass(frozen=True)
class ManifestEntry:
    name: str
    source: str                 # posix path relative to the project root
    defines: tuple[tuple[str, str], ...]   # sorted (key, value) pairs
    spirv: str                  # posix path relative to the project root
    sha256: str
    size: int
    info: ShaderInfo
    # Provenance and per-variant toolchain facts (written when known / not the default).
    inputs: str = ""                     # the content key the blob was compiled from
    depends: tuple[str, ...] = ()        # the source and every include, posix, relative to the root
    validated: bool = True               # False: spirv-val was skipped (validate = false)
    optimized: bool = False              # spirv-opt -O ran
    stripped: bool = False               # its debug information is gone (-g0), after reflection read the names
    target_env: Optional[str] = None     # when it differs from the toolchain's
    compiler: Optional[str] = None       # the compiler that built it, when not the default
    meta_json: str = ""                  # the variant's meta (data for templates), canonical JSON

    @property
    def defines_dict(self) -> dict[str, str]:
        return dict(self.defines)

    @property
    def meta(self) -> dict[str, Any]:
        """The variant's ``meta`` table ({} when it has none)."""
        return json.loads(self.meta_json) if self.meta_json else {}


@dataclass(frozen=True)
class Manifest:
    toolchain: Toolchain
    shaders: tuple[ManifestEntry, ...]   # sorted by name
    root: Optional[Path] = field(default=None, compare=False)
    unavailable: tuple[Unavailable, ...] = ()   # sorted by name

    def entry(self, name: str) -> ManifestEntry:
        for e in self.shaders:
            if e.name == name:
                return e
        known = ", ".join(e.name for e in self.shaders) or "none"
        raise ManifestError(f"no shader named {name!r} in the manifest (known: {known})")

    def blob_path(self, entry: ManifestEntry) -> Path:
        if self.root is None:
            raise ManifestError("manifest has no project root to resolve blob paths")
        return self.root / entry.spirv

    def read_blob(self, entry: ManifestEntry) -> bytes:
        """The blob's bytes, verified against the recorded size and sha256."""
        try:
            data = read_regular(self.blob_path(entry), entry.size)      # a larger file differs, whatever its bytes
        except OSError as exc:
            if not (isinstance(exc, RefusedRead) and exc.too_large):
                raise ManifestError(f"{entry.name}: cannot read blob {entry.spirv}: {exc.strerror}") from None
            raise BlobIntegrityError(
                f"{entry.name}: blob {entry.spirv} does not match the manifest (size "
                f"{exc.size or f'over {entry.size}'} vs {entry.size}): `genspirv build` repairs it") from None
        check_blob(entry, data)
        return data


def check_blob(entry: ManifestEntry, data: bytes) -> None:
    if len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
        raise BlobIntegrityError(
            f"{entry.name}: blob {entry.spirv} does not match the manifest "
            f"(size {len(data)} vs {entry.size}, sha256 {hashlib.sha256(data).hexdigest()[:16]}… "
            f"vs {entry.sha256[:16]}…): an interrupted build or a hand edit leaves this; "
            f"`genspirv build` repairs it")


# -- ShaderInfo <-> JSON ------------------------------------------------------


def info_to_dict(info: ShaderInfo) -> dict[str, Any]:
    """The reflection fields of one manifest entry (also `genspirv reflect --json`); a
    size's ``*_spec`` expression only where spec values change it."""
    d = {
        "entry_point": info.entry_point,
        "local_size": list(info.local_size),
        "local_size_spec_ids": list(info.local_size_spec_ids),
        "bindings": [{"set": b.set, "binding": b.binding, "name": b.name, "type": b.type, "count": b.count,
                      "access": b.access, "accessed": b.accessed, "written": b.written, "min_size": b.min_size,
                      "array_stride": b.array_stride, **_spec_field("min_size_spec", b.min_size_spec)}
                     for b in info.bindings],
        "binding_count": info.binding_count,
        "writable_mask": info.writable_mask,
        "readable_mask": info.readable_mask,
        "spec_constants": [{"id": s.id, "name": s.name, "type": s.type, "default": s.default}
                           for s in info.spec_constants],
        "push_constant_size": info.push_constant_size,
        "push_constants": [push_member_to_dict(m) for m in info.push_constants],
        "shared_memory": info.shared_memory,
        "capabilities": list(info.capabilities),
        "extensions": list(info.extensions),
    }
    d.update(_spec_field("shared_memory_spec", info.shared_memory_spec))
    d.update(_spec_field("push_constant_size_spec", info.push_constant_size_spec))
    return d


def _spec_field(key: str, expr) -> dict[str, Any]:
    from .reflect import spec_sizes
    return {} if expr is None else {key: spec_sizes.to_text(expr)}


def _spec_expr(d: Mapping[str, Any], key: str, where: str):
    """The ``*_spec`` expression ``key`` of ``d`` (None when absent)."""
    if key not in d:
        return None
    if not isinstance(d[key], str):
        raise ManifestError(f"{where}: field {key!r} must be a string, not {d[key]!r:.40}")
    from .reflect import spec_sizes
    try:
        return spec_sizes.from_text(d[key])
    except ValueError as exc:
        raise ManifestError(f"{where}: field {key!r}: {exc}") from None


def push_member_to_dict(m: PushMember) -> dict[str, Any]:
    """One push-constant member; a struct's ``members`` only where it has them."""
    from .reflect import STRUCT
    d = {"name": m.name, "offset": m.offset, "size": m.size, "type": m.type, "vector": m.vector,
         "columns": m.columns, "array": list(m.array), "array_stride": m.array_stride,
         "matrix_stride": m.matrix_stride, "row_major": m.row_major,
         **_spec_field("length_spec", m.length_spec)}
    if m.type == STRUCT:
        d["members"] = [push_member_to_dict(x) for x in m.members]
    return d


def entry_to_dict(entry: ManifestEntry) -> dict[str, Any]:
    d = info_to_dict(entry.info)
    d.update(build_facts(entry))
    return d


# The fields ``build_facts`` writes only where they say something.
OPTIONAL_FACTS = ("inputs", "depends", "validated", "optimized", "stripped", "target_env", "compiler", "meta")


def build_facts(entry: ManifestEntry) -> dict[str, Any]:
    """The entry's fields that are not reflection: names, paths, digests, provenance."""
    d: dict[str, Any] = {"name": entry.name, "source": entry.source, "defines": dict(entry.defines),
                         "spirv": entry.spirv, "sha256": entry.sha256, "size": entry.size}
    if entry.inputs:
        d["inputs"], d["depends"] = entry.inputs, list(entry.depends)
    for key, value, default in (("validated", entry.validated, True), ("optimized", entry.optimized, False),
                                ("stripped", entry.stripped, False)):
        if value != default:        # written only where it says something
            d[key] = value
    if entry.target_env is not None:
        d["target_env"] = entry.target_env
    if entry.compiler is not None:
        d["compiler"] = entry.compiler
    if entry.meta_json:
        d["meta"] = json.loads(entry.meta_json)
    return d


def _meta_text(value: Any) -> str:
    """Canonical JSON of a manifest's ``meta`` object (as the build writes it)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) if value else ""


def manifest_to_dict(manifest: Manifest, shaders: bool = True) -> dict[str, Any]:
    """The manifest as JSON data (``shaders=False``: its shader list left empty)."""
    toolchain = {"glslang": manifest.toolchain.glslang, "target_env": manifest.toolchain.target_env,
                 "flags": list(manifest.toolchain.flags)}
    tc = manifest.toolchain
    for key, value in (("spirv_opt", tc.spirv_opt), ("slang_glslang", tc.slang_glslang), ("slangpy", tc.slangpy)):
        if value is not None:
            toolchain[key] = value
    d = {
        "schema": SCHEMA,
        "toolchain": toolchain,
        "shaders": [entry_to_dict(e) for e in sorted(manifest.shaders, key=lambda e: e.name)] if shaders else [],
    }
    if manifest.unavailable:
        d["unavailable"] = [_unavailable_to_dict(u) for u in sorted(manifest.unavailable, key=lambda u: u.name)]
    return d


def _unavailable_to_dict(u: Unavailable) -> dict[str, Any]:
    d = {"name": u.name, "source": u.source, "missing": list(u.missing), "inputs": u.inputs,
         "depends": list(u.depends)}
    if u.compiler is not None:
        d["compiler"] = u.compiler
    if u.meta_json:
        d["meta"] = json.loads(u.meta_json)
    return d


# A shader's entry as written, by name: (the entry, its text), made while other compiles run.
EntryTexts = Mapping[str, tuple[ManifestEntry, str]]

_NO_SHADERS = '\n  "shaders": []'     # a newline is never inside a JSON string: the hole is unique


def render_entry(entry: ManifestEntry) -> str:
    """One shader entry exactly as ``dumps`` writes it inside the manifest (indented at depth 2)."""
    return indented_json(entry_to_dict(entry), 2)


_STRING = json.encoder.encode_basestring       # ensure_ascii=False's, in C
_FLOATS = {float("inf"): "Infinity", float("-inf"): "-Infinity"}


def indented_json(value: Any, depth: int = 0) -> str:
    """``json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)`` for JSON data, the text
    starting at ``depth`` levels of indentation: the same bytes (tests/test_schema.py holds it on
    random data) without the pure-Python encoder json falls back to for an indent, which took a
    fresh clone's build ~0.4 s for 2,000 entries."""
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = "\n" + "  " * (depth + 1)
        return "{" + ",".join(f"{inner}{_STRING(k)}: {indented_json(value[k], depth + 1)}" for k in sorted(value)) \
            + "\n" + "  " * depth + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = "\n" + "  " * (depth + 1)
        return "[" + ",".join(inner + indented_json(v, depth + 1) for v in value) + "\n" + "  " * depth + "]"
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return _FLOATS.get(value, "NaN" if value != value else float.__repr__(value))
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def dumps(manifest: Manifest, texts: Optional[EntryTexts] = None) -> bytes:
    """Deterministic manifest bytes: ``json.dumps(manifest_to_dict(m), indent=2, sort_keys=True)``.

    Each entry is rendered on its own and spliced in, so a build renders an entry as its
    compile finishes (``texts``: used where the entry is the same) and the manifest's own
    rendering at the end is a join, not 2,000 entries through json's pure-Python indenter."""
    text = json.dumps(manifest_to_dict(manifest, shaders=False), indent=2, sort_keys=True, ensure_ascii=False)
    if manifest.shaders:
        at, known = text.index(_NO_SHADERS), texts or {}
        body = ",\n    ".join(known[e.name][1] if e.name in known and known[e.name][0] == e else render_entry(e)
                               for e in sorted(manifest.shaders, key=lambda e: e.name))
        text = text[:at] + '\n  "shaders": [\n    ' + body + "\n  ]" + text[at + len(_NO_SHADERS):]
    return (text + "\n").encode("utf-8")


# -- reading ------------------------------------------------------------------


def _need(obj: Mapping[str, Any], key: str, kind, where: str):
    # type() first: a manifest of 2,000 entries asks this ~80 times an entry (dict and list are
    # what JSON gives; the abstract check is for the rest).
    if (type(obj) is not dict and not isinstance(obj, abc.Mapping)) or key not in obj:
        raise ManifestError(f"{where}: missing field {key!r}")
    value = obj[key]
    if type(value) is kind:
        return value
    # bool is an int in Python; keep them apart.
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ManifestError(f"{where}: field {key!r} must be an integer, not {value!r}")
    if kind is not int and not isinstance(value, kind):
        raise ManifestError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def check_relative_path(path: str, where: str) -> str:
    p = PurePosixPath(path)
    if "\\" in path or p.is_absolute() or path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise ManifestError(f"{where}: path {path!r} must be relative to the project root")
    if ".." in p.parts:
        raise ManifestError(f"{where}: path {path!r} must not contain '..'")
    if not path or path != p.as_posix():
        raise ManifestError(f"{where}: path {path!r} is not a normalised posix path")
    return path


def info_from_dict(d: Mapping[str, Any], where: str) -> ShaderInfo:
    from .reflect import ACCESS_KINDS, DESCRIPTOR_TYPES, SPEC_TYPES, Binding, ShaderInfo, SpecConstant
    bindings = []
    for i, b in enumerate(_need(d, "bindings", list, where)):
        w = f"{where}, binding #{i}"
        btype = _need(b, "type", str, w)
        access = _need(b, "access", str, w)
        if btype not in DESCRIPTOR_TYPES:
            raise ManifestError(f"{w}: unknown descriptor type {btype!r}")
        if access not in ACCESS_KINDS:
            raise ManifestError(f"{w}: unknown access {access!r}")
        bindings.append(Binding(set=_need(b, "set", int, w), binding=_need(b, "binding", int, w),
                                name=_need(b, "name", str, w), type=btype,
                                count=_need(b, "count", int, w), access=access,
                                accessed=_need(b, "accessed", bool, w),
                                written=_need(b, "written", bool, w),
                                min_size=_need(b, "min_size", int, w),
                                array_stride=_need(b, "array_stride", int, w),
                                min_size_spec=_spec_expr(b, "min_size_spec", w)))
    specs = []
    for i, s in enumerate(_need(d, "spec_constants", list, where)):
        w = f"{where}, spec constant #{i}"
        stype = _need(s, "type", str, w)
        if stype not in SPEC_TYPES:
            raise ManifestError(f"{w}: unknown spec constant type {stype!r}")
        if "default" not in s or not isinstance(s["default"], (bool, int, float)):
            raise ManifestError(f"{w}: missing or non-scalar 'default'")
        specs.append(SpecConstant(id=_need(s, "id", int, w), name=_need(s, "name", str, w),
                                  type=stype, default=s["default"]))
    push = tuple(_push_member(m, f"{where}, push constant #{i}")
                 for i, m in enumerate(_need(d, "push_constants", list, where)))
    local_size = _need(d, "local_size", list, where)
    spec_ids = _need(d, "local_size_spec_ids", list, where)
    if len(local_size) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) for x in local_size):
        raise ManifestError(f"{where}: local_size must be three integers")
    if len(spec_ids) != 3 or not all(x is None or (isinstance(x, int) and not isinstance(x, bool)) for x in spec_ids):
        raise ManifestError(f"{where}: local_size_spec_ids must be three integers or nulls")
    info = ShaderInfo(entry_point=_need(d, "entry_point", str, where),
                      local_size=tuple(local_size), local_size_spec_ids=tuple(spec_ids),
                      bindings=tuple(bindings), spec_constants=tuple(specs),
                      push_constant_size=_need(d, "push_constant_size", int, where),
                      shared_memory=_need(d, "shared_memory", int, where),
                      push_constants=push,
                      shared_memory_spec=_spec_expr(d, "shared_memory_spec", where),
                      push_constant_size_spec=_spec_expr(d, "push_constant_size_spec", where),

                      capabilities=_names(d, "capabilities", where),
                      extensions=_names(d, "extensions", where))
    # The derived fields are stored for other consumers; they must agree.
    for key in ("binding_count", "writable_mask", "readable_mask"):
        if _need(d, key, int, where) != getattr(info, key):
            raise ManifestError(f"{where}: {key} {d[key]} disagrees with its bindings "
                                f"({getattr(info, key)})")
    return info


def _names(d: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """A sorted list of names (capabilities, extensions), as reflection gives it."""
    names = _need(d, key, list, where)
    if not all(isinstance(n, str) for n in names) or names != sorted(set(names)):
        raise ManifestError(f"{where}: field {key!r} must list distinct names in sorted order, "
                            f"not {names!r}")
    return tuple(names)


def _push_member(m: Any, where: str) -> PushMember:
    from .reflect import PUSH_TYPES, STRUCT, PushMember
    name = _need(m, "name", str, where)
    where = f"{where} ({name!r})"
    ptype = _need(m, "type", str, where)
    if ptype not in PUSH_TYPES:
        raise ManifestError(f"{where}: unknown push constant type {ptype!r}")
    array = _need(m, "array", list, where)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in array):
        raise ManifestError(f"{where}: field 'array' must list positive integers, not {array!r}")
    members = ()
    if ptype == STRUCT:
        members = tuple(_push_member(x, f"{where}, member #{i}")
                        for i, x in enumerate(_need(m, "members", list, where)))
    elif "members" in m:
        raise ManifestError(f"{where}: a {ptype} member has no 'members'")
    return PushMember(name=name, offset=_need(m, "offset", int, where),
                      size=_need(m, "size", int, where), type=ptype,
                      vector=_need(m, "vector", int, where), columns=_need(m, "columns", int, where),
                      array=tuple(array), array_stride=_need(m, "array_stride", int, where),
                      matrix_stride=_need(m, "matrix_stride", int, where),
                      row_major=_need(m, "row_major", bool, where), members=members,
                      length_spec=_spec_expr(m, "length_spec", where))


@functools.lru_cache(maxsize=1)
def _schema_validator():
    import jsonschema  # imported here: only reading a manifest needs it
    from importlib import resources     # so is this (3 ms: every build imports this module)
    text = resources.files("genspirv").joinpath("schema/manifest.schema.json").read_text("utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def schema_errors(d: Any) -> list:
    """Every violation of genspirv/schema/manifest.schema.json, as jsonschema errors."""
    return list(_schema_validator().iter_errors(d))


def validate_schema(d: Any, where: str) -> None:
    """Raise a ManifestError naming ``where``, the JSON path and the shader of the first bad field found."""
    import jsonschema
    first = next(iter(_schema_validator().iter_errors(d)), None)     # lazily: 30,000 errors took 12 s
    if first is None:
        return
    error = jsonschema.exceptions.best_match([first])      # within an anyOf, its best branch
    path = list(error.absolute_path)
    shader = ""
    if len(path) >= 2 and path[0] == "shaders" and isinstance(d.get("shaders"), list):
        entry = d["shaders"][path[1]]
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            shader = f" (shader {entry['name']!r})"
    description = error.schema.get("description") if isinstance(error.schema, Mapping) else None
    if error.validator in ("pattern", "multipleOf") and description:
        # A regex in the message helps nobody; the schema says what the rule means.
        reason = f"{error.instance!r} is not valid: {description}"
    elif error.validator == "const":
        reason = f"{error.instance!r} is not {error.validator_value!r}"
    elif error.validator == "required":
        # Most often a manifest written before the field existed: a build rewrites it.
        reason = f"{error.message}; `genspirv build` writes every field"
    else:
        reason = error.message
    raise ManifestError(f"{where}: {error.json_path}{shader}: {reason}")


def manifest_from_dict(d: Any, where: str, root: Optional[Path] = None) -> Manifest:
    try:
        validate_schema(d, where)       # jsonschema: about 3 frames a JSON level, the checks below fewer
    except RecursionError:
        raise ManifestError(f"{where}: nested too deeply to check; `genspirv build` writes it afresh") from None
    if not isinstance(d, Mapping):
        raise ManifestError(f"{where}: top level must be an object")
    schema = d.get("schema")
    if schema != SCHEMA:
        raise ManifestError(f"{where}: schema {schema!r} is not {SCHEMA!r}")
    tc = _need(d, "toolchain", Mapping, where)
    toolchain = Toolchain(glslang=_need(tc, "glslang", str, f"{where}, toolchain"),
                          target_env=_need(tc, "target_env", str, f"{where}, toolchain"),
                          flags=tuple(_need(tc, "flags", list, f"{where}, toolchain")),
                          spirv_opt=tc.get("spirv_opt"), slang_glslang=tc.get("slang_glslang"),
                          slangpy=tc.get("slangpy"))
    entries = []
    seen = set()
    for i, e in enumerate(_need(d, "shaders", list, where)):
        name = _need(e, "name", str, f"{where}, shader #{i}")
        w = f"{where}, shader {name!r}"
        if name in seen:
            raise ManifestError(f"{w}: duplicate shader name")
        seen.add(name)
        defines = _need(e, "defines", Mapping, w)
        if not all(isinstance(v, str) for v in defines.values()):
            raise ManifestError(f"{w}: define values must be strings")
        sha = _need(e, "sha256", str, w)
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ManifestError(f"{w}: sha256 {sha!r} is not 64 lowercase hex digits")
        entries.append(ManifestEntry(
            name=name, source=check_relative_path(_need(e, "source", str, w), w),
            defines=tuple(sorted(defines.items())),
            spirv=check_relative_path(_need(e, "spirv", str, w), w),
            sha256=sha, size=_need(e, "size", int, w), info=info_from_dict(e, w),
            inputs=e.get("inputs", ""), depends=tuple(check_relative_path(p, w) for p in e.get("depends", ())),
            validated=e.get("validated", True), optimized=e.get("optimized", False),
            stripped=e.get("stripped", False), target_env=e.get("target_env"), compiler=e.get("compiler"),
            meta_json=_meta_text(e.get("meta"))))
    unavailable = tuple(Unavailable(u["name"], check_relative_path(u["source"], f"{where}, unavailable"),
                                    tuple(u["missing"]), u.get("inputs", ""), tuple(u.get("depends", ())),
                                    u.get("compiler"), _meta_text(u.get("meta")))
                        for u in d.get("unavailable", ()))
    return Manifest(toolchain=toolchain, shaders=tuple(sorted(entries, key=lambda e: e.name)), root=root,
                    unavailable=unavailable)


def read_manifest_json(path, raw: Optional[bytes] = None) -> Any:
    """The one place a manifest is parsed (``raw``: its bytes, where read); ManifestError if unreadable or not JSON."""
    path = Path(path)
    try:
        return parse_json(read_regular(path, MANIFEST_MAX) if raw is None else raw)
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc.strerror}") from None
    except ValueError as exc:
        raise ManifestError(f"{path}: not valid JSON: {exc}") from None


def load_manifest(path, root=None, verify_blobs: bool = True) -> Manifest:
    """Read and verify a manifest. ``root`` defaults to the project root above it."""
    path = Path(path)
    data = read_manifest_json(path)
    if root is None:
        root = find_project_root(path.resolve().parent)
        if root is None:
            # A manifest shipped on its own: paths are relative to its parent's parent
            # (manifests/ and spirv/ side by side), the layout genspirv writes.
            root = path.resolve().parent.parent
    manifest = manifest_from_dict(data, str(path), root=Path(root))
    if verify_blobs:
        for entry in manifest.shaders:
            manifest.read_blob(entry)
    return manifest
