"""What a build commits: the blob files, the manifest and generated code, and what it clears away.

Takes the compiled variants (``genspirv.buildsys.compile.Compiled``), the unavailable
ones and their content keys; gives every committed output as
``{posix path relative to the root: bytes}`` (``expected_outputs``, which
build writes and check compares), the blobs no variant builds any more, an
unavailable one's among them (``orphan_blobs``, ``orphan_reason``) and the temp files an interrupted write left
(``stale_temp_files``). ``outputs_key`` is what the manifest and generated
files are a function of besides the blobs (``outputs_current``: the last
build wrote them from it, untouched since); ``committed_manifest_current``
tells a fresh clone that its committed manifest already says what a build
would write.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Callable, Collection, Mapping, Optional, Sequence

from .. import manifest as manifest_mod
from .committed import CommittedManifest
from .state import STATE_DIR, OutputsRecord, Record, sha256_hex
from ..toolchain.compiler import Versions
from .compile import Compiled
from ..project.config import Config
from ..project.generated import provenance
from ..manifest import Manifest, ManifestEntry, Toolchain, Unavailable
from ..project.variants import CompilerName

# What the manifest's toolchain records of each compiler besides the default, by compiler
# ({"slang_glslang": "2026.12", "slangpy": "0.43.1"}): written when it built some variant.
Facts = Mapping[CompilerName, Mapping[str, str]]

Log = Optional[Callable[[str], None]]


def manifest_entry(config: Config, compiled: Compiled, key: Optional[str] = None) -> ManifestEntry:
    v = compiled.variant
    # Provenance lists only files inside the project: a fresh clone must find them; generated
    # files bring the templates they came from and the generator (what a build system watches).
    depends = provenance(tuple(d for d in compiled.deps if not d.startswith("/")), config.generated_files,
                         config.generator) if key else ()
    return ManifestEntry(name=v.name, source=v.source, defines=v.defines,
                         spirv=config.blob_relpath(v), sha256=sha256_hex(compiled.blob),
                         size=len(compiled.blob), info=compiled.info, inputs=key or "", depends=depends,
                         validated=v.validate, optimized=v.optimize,
                         target_env=v.target_env if v.target_env != config.target_env else None,
                         compiler=None if compiled.compiler is CompilerName.GLSLANG else compiled.compiler.value,
                         meta_json=v.meta_json)


def entry_text(config: Config, compiled: Compiled, key: Optional[str]) -> tuple[ManifestEntry, str]:
    """A compiled variant's manifest entry and its text, made as its compile finishes (the
    manifest's rendering then only joins them: ``render_outputs``' ``texts``)."""
    entry = manifest_entry(config, compiled, key)
    return entry, manifest_mod.render_entry(entry)


def _entry(config: Config, compiled: Compiled, key: Optional[str],
           texts: Optional[manifest_mod.EntryTexts]) -> ManifestEntry:
    """The entry rendered as this variant's compile finished (``texts``), where it was made from
    these bytes, this key and this compiler (what it is a function of, with the config); else
    made now."""
    known = texts.get(compiled.variant.name) if texts else None
    if known is not None:
        entry = known[0]
        compiler = None if compiled.compiler is CompilerName.GLSLANG else compiled.compiler.value
        if entry.inputs == (key or "") and entry.compiler == compiler and entry.sha256 == sha256_hex(compiled.blob):
            return entry
    return manifest_entry(config, compiled, key)


def _toolchain(config: Config, optimizer: Optional[str], compiled: Sequence[Compiled],
               facts: Optional[Facts] = None) -> Toolchain:
    """The manifest's toolchain: the default's, and each other compiler's facts where it built a variant."""
    used = {}
    for name in dict.fromkeys(c.compiler for c in compiled):
        used.update((facts or {}).get(name, {}))
    return Toolchain(glslang=config.glslang, target_env=config.target_env, flags=config.flags,
                     spirv_opt=optimizer if any(c.variant.optimize for c in compiled) else None, **used)


def render_outputs(config: Config, compiled: Sequence[Compiled], unavailable: Sequence[Unavailable] = (),
                   keys: Optional[Mapping[str, Optional[str]]] = None,
                   optimizer: Optional[str] = None, facts: Optional[Facts] = None,
                   texts: Optional[manifest_mod.EntryTexts] = None) -> dict[str, bytes]:
    """The manifest and every generated file, as {posix path relative to root: bytes};
    ``texts``: shader entries already rendered (``entry_texts``)."""
    keys = keys or {}
    manifest = Manifest(toolchain=_toolchain(config, optimizer, compiled, facts),
                        shaders=tuple(sorted((_entry(config, c, keys.get(c.variant.name), texts)
                                              for c in compiled), key=lambda e: e.name)),
                        root=config.root, unavailable=tuple(sorted(unavailable, key=lambda u: u.name)))
    outputs = {config.manifest: manifest_mod.dumps(manifest, texts)}
    if config.generate:
        from ..emit import render   # loads jinja2 only when a renderer is needed
        for g in config.generate:
            # The blobs are not written yet: hand the emitters the fresh bytes, not the old files.
            blobs = {c.variant.name: c.blob for c in compiled}
            for rel, data in render(g.target, manifest, g.output, blobs=blobs,
                                    template=g.template).items():
                outputs[rel] = data
    return outputs


def expected_outputs(config: Config, compiled: Sequence[Compiled], unavailable: Sequence[Unavailable],
                     keys: Mapping[str, Optional[str]], optimizer: Optional[str],
                     facts: Optional[Facts] = None,
                     texts: Optional[manifest_mod.EntryTexts] = None) -> dict[str, bytes]:
    """Every committed output, in the order a build replaces them: the blobs, the generated
    files, the manifest last (a reader never sees a manifest newer than its blobs)."""
    out = {config.blob_relpath(c.variant): c.blob for c in compiled}
    rendered = render_outputs(config, compiled, unavailable, keys, optimizer, facts, texts)
    manifest = rendered.pop(config.manifest)
    out.update(rendered)
    out[config.manifest] = manifest
    return out


def orphan_blobs(config: Config, unavailable: Collection[str] = ()) -> list[str]:
    """``*.spv`` files in spirv_dir that belong to no variant, or to one of the ``unavailable``
    variants (names): an old blob of a variant that no compiler here builds any more would
    otherwise stand beside a manifest that lists it unavailable (relative to the root)."""
    known = {f"{v.name}.spv" for v in config.variants if v.name not in unavailable}
    try:
        # scandir: the type comes with the listing, no stat() per blob (a no-op lists 2,000).
        with os.scandir(config.path(config.spirv_dir)) as entries:
            return sorted(f"{config.spirv_dir}/{e.name}" for e in entries
                          if e.name.endswith(".spv") and not e.name.startswith(".") and e.name not in known
                          and e.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []


_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def unavailable_names(records: Mapping[str, Record]) -> frozenset[str]:
    """The variants the records say are unavailable."""
    return frozenset(name for name, r in records.items() if r.unavailable)


def orphan_reason(rel: str, unavailable: Collection[str]) -> str:
    """Why an orphan blob goes: its variant is unavailable, or there is none."""
    name = Path(rel).stem
    return f"variant {name} is unavailable" if name in unavailable else f"no variant {name} any more"


def stale_temp_files(config: Config) -> list[Path]:
    """Temp files of atomic writes a killed build left in the output folders.

    ``fsutil.StagedFiles`` names them ``.NAME.XXXXXXXX.tmp`` (tempfile's 8 random
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


def committed_manifest_current(config: Config, committed: CommittedManifest, fresh: Mapping[str, Record],
                               optimizer: Optional[str], unavailable: Sequence[Unavailable],
                               facts: Optional[Facts] = None) -> bool:
    """Does the committed manifest say, for every variant, what a build would write besides the
    reflection (names, paths, sha256, provenance, toolchain, unavailable variants)?

    ``fresh``: the record of every built variant, all up to date. The reflection and the
    formatting are taken on trust here, as the blobs' sha256 are unchanged; ``check``
    verifies both byte for byte.
    """
    doc = committed.doc
    variants = [v for v in config.variants if v.name in fresh]
    # The reflection is not needed for what is compared here.
    built = [Compiled(v, b"", fresh[v.name].deps, None, fresh[v.name].compiler) for v in variants]
    head = manifest_mod.manifest_to_dict(Manifest(toolchain=_toolchain(config, optimizer, built, facts),
                                                  shaders=(), unavailable=tuple(unavailable)))
    if {k: val for k, val in doc.items() if k != "shaders"} != {k: val for k, val in head.items() if k != "shaders"}:
        return False
    if len(committed.entries) != len(variants) or len(doc.get("shaders", ())) != len(variants):
        return False
    for c in built:
        e = committed.entries.get(c.variant.name)
        record = fresh[c.variant.name]
        written = manifest_mod.build_facts(manifest_entry(config, c, record.key))
        written.update(sha256=record.sha256)
        written.pop("size")
        if e is None or any(e.get(k) != val for k, val in written.items()) or \
                any(k in e for k in manifest_mod.OPTIONAL_FACTS if k not in written):
            return False
    return True


def outputs_key(config: Config, versions: Versions, variant_keys: Mapping[str, Optional[str]]) -> str:
    """What the manifest and generated files are a function of, besides the blobs' keys
    (a variant's ``meta`` among them: changing it re-renders, it does not recompile)."""
    doc = {"variants": [[v.name, v.source, list(v.defines), config.blob_relpath(v), variant_keys.get(v.name)]
                        + ([v.meta_json] if v.meta_json else []) for v in config.variants],
           "manifest": str(config.manifest), "generate": generate_keys(config),
           "toolchain": [versions.compiler, versions.optimizer, config.target_env, list(config.flags)]}
    return sha256_hex(json.dumps(doc, sort_keys=True).encode())


def generate_keys(config: Config) -> list[list[str]]:
    """Each ``generate`` entry's target, output and renderer (``_template_key``)."""
    return [list(map(str, (g.target, g.output))) + _template_key(config, g) for g in config.generate]


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


def outputs_current(config: Config, recorded: Optional[OutputsRecord], key: str,
                    sha: Optional[Callable[[str], Optional[str]]] = None) -> bool:
    """The last build wrote these outputs from the same inputs, and nobody touched them since
    (``sha``: a file's sha256 by its path, None when unreadable; the build's goes through its
    stat log)."""
    if recorded is None or recorded.key != key or not recorded.files:
        return False
    for rel, digest in recorded.files.items():
        if sha is not None:
            if sha(rel) != digest:
                return False
            continue
        try:
            if sha256_hex(config.path(rel).read_bytes()) != digest:
                return False
        except OSError:
            return False
    return True
