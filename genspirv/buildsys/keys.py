"""Content keys and records: what decides a variant's bytes, and what a build knew of each variant.

Takes a ``Variant``, the compilers' ``Versions``, the include settings and a
file's sha256 by its path; gives

- ``KeyInputs``: everything that decides a variant's bytes (the source and
  every file it read with their sha256, its preamble, defines, compiler and
  optimiser versions, flags, target env, include handling, whether it is
  validated); its ``key`` (the sha256 of its JSON) is the variant's content
  key. Two inputs compared field by field say *why* a variant is stale
  (``genspirv.buildsys.plan``). Committed manifests carry these keys, so the
  document hashed never changes shape.
- ``Record``: per variant, what a build knew: the key, the files it read, the
  blob's sha256 (or what the compiler lacked, for an unavailable one) and which
  compiler built it (or lacked what it needs);
- ``settings_digest``: everything in every variant's key but the files it read;
- ``outputs_key``: what the manifest and generated files are a function of
  besides the blobs, and ``outputs_current``: the last build wrote them from the
  same key and nobody touched them since (then nothing is rendered at all).

Pure, and light to import: the plan imports this and nothing heavier.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from ..project.variants import CompilerName, Variant, Versions, compiler_named

if TYPE_CHECKING:
    from ..project.config import Config


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    stripper: Optional[str] = None                 # the optimiser's version, when it strips a -g0 blob

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
        if self.stripper is not None:       # likewise
            doc["stripper"] = self.stripper
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
                       optimize="optimizer" in d, optimizer=d.get("optimizer"), preamble=d.get("preamble"),
                       stripper=d.get("stripper"))
        except (KeyError, TypeError, ValueError):
            return None


Digest = Callable[[str], Optional[str]]     # a file's sha256 by its root-relative path; None: gone


def key_inputs(variant: Variant, deps: Sequence[str], digest: Digest, versions: Versions,
               include_dirs: tuple[str, ...], include_directive: bool) -> KeyInputs:
    """The inputs of ``variant`` compiled from ``deps`` (the files its last compile read)."""
    read = {variant.source, *([variant.preamble] if variant.preamble else [])}
    files = tuple((dep, digest(dep)) for dep in sorted(set(deps) | read))
    return KeyInputs(source=variant.source, defines=variant.defines, compiler=versions.of(variant),
                     flags=variant.flags, target_env=variant.target_env, include_dirs=include_dirs,
                     include_directive=include_directive, validate=variant.validate, files=files,
                     optimize=variant.optimize, optimizer=versions.optimizer if variant.optimize else None,
                     preamble=variant.preamble, stripper=versions.optimizer if variant.strip_debug else None)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _dep_path(dep: Any) -> bool:
    """A file a compile may have read, as ``toolchain.compiler.dep_path`` names it: relative to the
    root and normalised (no ``..``), or absolute for one outside the project; one line of text."""
    if not isinstance(dep, str) or not dep or len(dep) > 4096 or _CONTROL.search(dep):
        return False
    return dep.startswith("/") or (".." not in dep.split("/") and "\\" not in dep and not dep.startswith("./"))


def settings_digest(variants: Sequence[Variant], versions: Versions, include_dirs: tuple[str, ...],
                    include_directive: bool, generated: Mapping[str, bytes]) -> str:
    """One digest of everything in every variant's ``KeyInputs`` but the files on disk it read:
    each variant's settings, the compilers' versions, the include handling and the generator's
    files' text. The state keeps it: while it is the same, a record's key stands as long as the
    files it was made from have the stat() the stat log gave them (``plan.decide``)."""
    rows = [[v.name, v.source, v.defines, v.flags, v.target_env, v.validate, v.optimize, v.preamble,
             [c.value for c in v.chain]] for v in variants]
    doc = [rows, versions.compiler, versions.optimizer, [[c.value, label] for c, label in versions.others],
           include_dirs, include_directive, sorted((path, sha256_hex(data)) for path, data in generated.items())]
    return sha256_hex(json.dumps(doc).encode())


@dataclass(frozen=True)
class Record:
    """What a build knew of one variant: built (``sha256``) or unavailable (``missing``)."""

    key: Optional[str]
    deps: tuple[str, ...]
    sha256: Optional[str] = None
    missing: tuple[str, ...] = ()                  # unavailable: what the compiler lacks
    compiler: CompilerName = CompilerName.GLSLANG  # the one that built it, or whose lack stands
    # The KeyInputs behind the key, as JSON, when this build made the record (the state file
    # keeps them apart, in state.RecordedInputs: a no-op build of 2,000 variants never reads them).
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
        """A record from its JSON; None for anything malformed (it is only a cold cache), a file it
        names that no compile could have read among them."""
        if type(d) is not dict:
            return None
        deps, key, sha = d.get("deps"), d.get("key"), d.get("sha256")
        if type(deps) is not list or not (key is None or type(key) is str) or not (sha is None or type(sha) is str):
            return None
        if not all(map(_dep_path, deps)):
            return None
        missing, compiler = d.get("unavailable", ()), compiler_named(d.get("compiler"))
        if type(missing) not in (list, tuple) or compiler is None:
            return None
        seconds, inputs = d.get("seconds"), d.get("inputs")
        return cls(key, tuple(deps), sha, tuple(map(str, missing)), compiler,
                   inputs if type(inputs) is dict else None,
                   float(seconds) if type(seconds) in (int, float) else None)


# -- the outputs' key: what the manifest and generated files are a function of --------------


@dataclass(frozen=True)
class OutputsRecord:
    """The manifest's and generated files' key, and the sha256 of each file as written."""

    key: str
    files: Mapping[str, str]


def outputs_key(config: Config, versions: Versions, variant_keys: Mapping[str, Optional[str]]) -> str:
    """What the manifest and generated files are a function of, besides the blobs' keys
    (a variant's ``meta`` among them: changing it re-renders, it does not recompile)."""
    doc = {"variants": [[v.name, v.source, list(v.defines), config.blob_relpath(v), variant_keys.get(v.name)]
                        + ([v.meta_json] if v.meta_json else []) for v in config.variants],
           "manifest": str(config.manifest), "generate": generate_keys(config),
           "toolchain": [versions.compiler, versions.optimizer, config.target_env, list(config.flags)]}
    return sha256_hex(json.dumps(doc, sort_keys=True).encode())


def generate_keys(config: Config) -> list[list[str]]:
    """Each ``generate`` entry's target, output and renderer (``_template_key``), and where its blobs
    go (``blobs = "files"``: written only when not the default, so existing keys stand)."""
    return [list(map(str, (g.target, g.output))) + _template_key(config, g)
            + ([g.blobs.value] if g.blobs.value != "arrays" else []) for g in config.generate]


def _template_key(config: Config, g) -> list[str]:
    """A project template's path and bytes, or a built-in target's renderer: editing
    either (or upgrading genspirv) re-renders the output."""
    if g.template is None:
        from ..emit import renderer_key
        return [renderer_key(g.target)]
    try:
        return [g.template, sha256_hex(config.path(g.template).read_bytes())]
    except OSError:
        return [g.template, "unreadable"]   # render then names the problem


def outputs_current(recorded: Optional[OutputsRecord], key: str, sha: Digest) -> bool:
    """The last build wrote these outputs from the same inputs, and nobody touched them since
    (``sha``: a file's sha256 by its path, None when unreadable: the build's stat log)."""
    if recorded is None or recorded.key != key or not recorded.files:
        return False
    return all(sha(rel) == digest for rel, digest in recorded.files.items())
