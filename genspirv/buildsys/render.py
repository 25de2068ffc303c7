"""Rendering: the manifest and generated code a build commits, as bytes, from the compiled variants.

Takes the compiled variants (``genspirv.buildsys.compile.Compiled``), the
unavailable ones and their content keys; gives every committed output as
``{posix path relative to the root: bytes}`` (``expected_outputs``: the blobs,
the generated files, the manifest last, which build writes and check
compares). Each manifest entry can be rendered as its compile finishes
(``entry_text``), so the end of a build only joins them. ``committed_outputs`` says whether a fresh clone's committed manifest is
what a build would write, so a fresh clone's no-op renders nothing.
Nothing here reads or writes a committed file but a project template. What the
outputs are a function of (``keys.outputs_key``) is decided below the plan, so
a build that renders nothing never loads this module.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional, Sequence

from .. import manifest as manifest_mod
from ..manifest import Manifest, ManifestEntry, Toolchain, Unavailable
from ..project.config import Config
from ..project.generated import provenance
from ..project.variants import CompilerName
from .keys import OutputsRecord, Record, sha256_hex
from .variant_compile import Compiled

# What the manifest's toolchain records of each compiler besides the default, by compiler
# ({"slang_glslang": "2026.12", "slangpy": "0.43.1"}): written when it built some variant.
Facts = Mapping[CompilerName, Mapping[str, str]]


def manifest_entry(config: Config, compiled: Compiled, key: Optional[str] = None) -> ManifestEntry:
    v = compiled.variant
    # Provenance lists only files inside the project: a fresh clone must find them; generated
    # files bring the templates they came from and the generator (what a build system watches).
    depends = provenance(tuple(d for d in compiled.deps if not d.startswith("/")), config.generated_files,
                         config.generator) if key else ()
    return ManifestEntry(name=v.name, source=v.source, defines=v.defines,
                         spirv=config.blob_relpath(v), sha256=sha256_hex(compiled.blob),
                         size=len(compiled.blob), info=compiled.info, inputs=key or "", depends=depends,
                         validated=v.validate, optimized=v.optimize, stripped=v.strip_debug,
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
    ran_opt = any(c.variant.optimize or c.variant.strip_debug for c in compiled)
    return Toolchain(glslang=config.glslang, target_env=config.target_env, flags=config.flags,
                     spirv_opt=optimizer if ran_opt else None, **used)


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
        for files in _render_generated(config, manifest, {c.variant.name: c.blob for c in compiled}):
            outputs.update(files)
    return outputs


def _render_generated(config: Config, manifest: Manifest, blobs: Mapping[str, bytes]) -> list[dict[str, bytes]]:
    """Every ``generate`` entry's files, in the entries' order, rendered from one ``RenderInput``
    (the fresh blobs, not yet written, each verified once and shared by every output), a core
    each: the project templates' outputs in forked children (``emit.render_outputs``), the
    blobs shared with this process rather than copied."""
    from ..emit import prepare, render_outputs   # jinja2 loads only when a renderer is needed
    return render_outputs(prepare(manifest, blobs), config.generate, os.cpu_count() or 1)


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


def committed_outputs(config: Config, doc: Mapping, sha256: Optional[str], built: Mapping[str, Record],
                      unavailable: Sequence[Unavailable], key: str, optimizer: Optional[str],
                      facts: Optional[Facts] = None) -> Optional[OutputsRecord]:
    """The outputs' record a fresh clone's committed manifest stands for (None: it says
    something a build would not write, or there are generated files, which only rendering
    proves). ``doc``: the committed manifest as parsed, ``sha256`` its bytes'; ``built``: the
    record of every built variant, all up to date (their blobs' sha256 among them).

    Compared: every field but the reflection (names, paths, sha256, provenance, toolchain, the
    unavailable list). The reflection and the formatting are taken on trust, as a fresh
    clone's build takes them for an up-to-date blob (``Builder._up_to_date``); check verifies
    both byte for byte."""
    if config.generate or sha256 is None:
        return None
    variants = [v for v in config.variants if v.name in built]
    shaders = doc.get("shaders")
    if not isinstance(shaders, list) or len(shaders) != len(variants):
        return None
    entries = {e.get("name"): e for e in shaders if isinstance(e, dict)}
    bare = [Compiled(v, b"", built[v.name].deps, None, built[v.name].compiler) for v in variants]
    head = manifest_mod.manifest_to_dict(Manifest(toolchain=_toolchain(config, optimizer, bare, facts),
                                                  shaders=(), unavailable=tuple(unavailable)))
    if {k: v for k, v in doc.items() if k != "shaders"} != {k: v for k, v in head.items() if k != "shaders"}:
        return None
    for c in bare:
        record, entry = built[c.variant.name], entries.get(c.variant.name)
        written = manifest_mod.build_facts(manifest_entry(config, c, record.key))
        written.update(sha256=record.sha256)
        written.pop("size")     # the blob's own, whose sha256 is compared
        if entry is None or any(entry.get(k) != v for k, v in written.items()) \
                or any(k in entry for k in manifest_mod.OPTIONAL_FACTS if k not in written):
            return None
    return OutputsRecord(key, {config.manifest: sha256})
