"""Configuration: a project's ``[tool.genspirv]`` table in, a frozen ``Config`` out.

Takes the project root (the folder holding ``pyproject.toml``) and gives a
``Config``: where sources, blobs and the manifest live, the toolchain pin and
flags, optional generated outputs, and every ``Variant`` (name, source, defines)
to build, in name order, each with its resolved toolchain settings (flags,
target env, optimise, validate, optional, preamble, compiler: variant over
source over top level, flags accumulating). Variants come from the shader table and from
an optional ``generator`` file (``genspirv.project.generator``), which may also give
sources and headers as text (``Config.generated``; ``glsl_dir`` may then be
absent); ``exclude`` globs keep sources out.
Files of other shader stages (``.frag``, ``.vert``, ...) in the folder are
listed (``other_stages``) for the build to name, never compiled; a variant
that names one is refused, naming the stage.

Zero configuration works: with no ``pyproject.toml`` in the root, or one
without a ``[tool.genspirv]`` table, the defaults below apply and every
``*.comp`` under ``glsl/`` (outside ``glsl/include/``) builds once under its
stem. Unknown keys, values of the wrong type and duplicate variant names are
``ConfigError``s naming the key (or the file) and the fix where there is one;
so is an output that would land on a file the build reads (a source, an
include, pyproject.toml, the generator, a template), on another output, or in
``.git/`` or ``.genspirv/`` (``OWNED_FOLDERS``), however spelled or symlinked.
``build_file(config, path)`` says what a path given on the command line (a
report: ``--depfile``, ``--json``) is to the build, by the file it names.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .. import settings
from ..errors import ConfigError
from ..fsutil import find_project_root
from .generated import GENERATED_DIR, GeneratedFile
# Settings and Variant are re-exported: the build's stages take them from here with the Config.
from .variants import (DEFAULT_TARGET_ENV, OTHER_STAGES, SETTING_KEYS, Settings, Variant, check_compute, check_keys, expect,
                       is_excluded, make_variant, merged_meta, parse_defines, parse_flags, parse_target_env,
                       relative_path, settings_of, source_meta, source_settings, type_name, variants_of)

# The built-in emitters a `generate` entry may name with `target = ...` (genspirv/emit renders them).
GENERATE_TARGETS = ("c",)

DEFAULTS = {
    "glsl_dir": "glsl",
    "spirv_dir": "spirv",
    "manifest": "manifests/shaders.json",
    "target_env": DEFAULT_TARGET_ENV,
    "glslang": "13.1.1",
}
INCLUDE_DIR = "include"          # under glsl_dir; headers there are never compiled on their own
SOURCE_SUFFIX = ".comp"

TOP_KEYS = set(DEFAULTS) | {"flags", "generate", "shaders", "generator", "exclude", "include_directive",
                            "optimize", "validate", "preamble", "compiler", "lint", "remote_cache"}
GENERATE_KEYS = {"target", "output", "template", "blobs"}


class BlobMode(str, Enum):
    """How generated C/C++ puts each blob into the binary (a ``generate`` entry's ``blobs``)."""

    ARRAYS = "arrays"   # a C initialiser of its bytes or words (the default)
    FILES = "files"     # the blob file itself: the assembler's .incbin, else #embed; no bytes in the text


SETTING_ORDER = tuple(sorted(SETTING_KEYS))     # one order for the keys of a resolved setting


@dataclass(frozen=True)
class Generate:
    target: str       # codegen target, e.g. "c"; "template" for a project's own template
    output: str       # posix path relative to the root (without extension for target "c")
    template: Optional[str] = None   # the jinja2 file, relative to the root
    blobs: BlobMode = BlobMode.ARRAYS


@dataclass(frozen=True)
class Config:
    root: Path
    glsl_dir: str
    spirv_dir: str
    manifest: str
    target_env: str
    glslang: str
    flags: tuple[str, ...]
    generate: tuple[Generate, ...]
    variants: tuple[Variant, ...]            # sorted by name
    include_directive: bool = True           # #include without GL_GOOGLE_include_directive, as glslc
    generator: Optional[str] = None          # posix path relative to the root
    other_stages: tuple[str, ...] = ()       # files of other shader stages in glsl_dir, left alone (root-relative)
    generated: tuple[GeneratedFile, ...] = ()    # the generator's files, sorted by path (under GENERATED_DIR)
    remote_cache: Optional[str] = None       # a remote compile cache's URL (GENSPIRV_REMOTE_CACHE overrides)
    defaults: bool = False                   # no [tool.genspirv] table: every setting is its default

    def path(self, relative: str) -> Path:
        """An absolute path for a posix path relative to the root."""
        return self.root / relative

    def blob_relpath(self, variant: Variant) -> str:
        return f"{self.spirv_dir}/{variant.name}.spv"

    @property
    def include_dir(self) -> str:
        return f"{self.glsl_dir}/{INCLUDE_DIR}"

    def other_stages_note(self, shown: int = 8) -> str:
        """The files of other shader stages left alone, the first ``shown`` by name (the build says it)."""
        files = self.other_stages
        names = ", ".join(files[:shown]) + (f", and {len(files) - shown} more" if len(files) > shown else "")
        return (f"genspirv builds compute shaders: {len(files)} other-stage file{'s' if len(files) != 1 else ''} "
                f"left alone: {names}")

    def defaults_note(self) -> str:
        """What a build in a folder with no ``[tool.genspirv]`` says, so the defaults are no surprise."""
        where = "pyproject.toml has no [tool.genspirv]" if (self.root / "pyproject.toml").is_file() \
            else "no pyproject.toml"
        return (f"{where}: the default settings apply (every {self.glsl_dir}/*.comp under its own name; "
                "`genspirv init` adds a [tool.genspirv] section to change them)")

    @functools.cached_property
    def generated_files(self) -> dict[str, GeneratedFile]:
        """The generated files by their root-relative path."""
        return {f.path: f for f in self.generated}

    @property
    def include_dirs(self) -> tuple[str, ...]:
        """The include path, relative to the root: ``glsl_dir/include`` where it exists, then the
        generated files' folder where the generator gave any."""
        dirs = (self.include_dir,) if self.path(self.include_dir).is_dir() else ()
        return dirs + ((GENERATED_DIR,) if self.generated else ())



def discover_sources(root: Path, glsl_dir: str, exclude: tuple[str, ...] = (),
                     suffixes: tuple[str, ...] = (SOURCE_SUFFIX,)) -> list[str]:
    """Every file with one of ``suffixes`` under glsl_dir (posix, relative to glsl_dir), includes and
    exclusions left out: the compilable sources, or (``OTHER_STAGES``) the files left alone."""
    base = os.path.join(root, glsl_dir)
    # One walk for every suffix (``rglob`` once per suffix walked the tree 13 times for the
    # other stages), with rglob's answer: symlinked folders not entered, names matched and
    # sorted as the platform's paths are (case-blind on Windows), a file once per suffix it ends with.
    ends = [os.path.normcase(suffix) for suffix in suffixes]
    matched = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        parts = () if folder == base else tuple(os.path.relpath(folder, base).split(os.sep))
        for name in dirs + files:
            hits = sum(os.path.normcase(name).endswith(end) for end in ends)
            if hits:
                matched.extend([(*parts, name)] * hits)
    found = []
    for rel_parts in sorted(matched, key=lambda ps: tuple(map(os.path.normcase, ps))):
        rel = "/".join(rel_parts)
        if rel_parts[0] == INCLUDE_DIR or not os.path.isfile(os.path.join(base, *rel_parts)) \
                or is_excluded(rel, exclude):
            continue
        found.append(rel)
    return found


UTF8_BOM = b"\xef\xbb\xbf"


def decode_utf8(data: bytes, name: str) -> str:
    """The text of a config file; a byte that is not UTF-8 is refused naming its line, column and
    offset, and a byte order mark is named (TOML readers, tomllib and pip's among them, refuse
    one; accepted here, the file would still break the project's other tools)."""
    if data.startswith(UTF8_BOM):
        raise ConfigError(f"{name}:1:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF), which "
                          "TOML readers (tomllib, pip) refuse: save it as UTF-8 without a BOM")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"{name}:{line}:{column}: byte 0x{data[exc.start]:02x} (offset {exc.start}) is not "
                          "UTF-8; save the file as UTF-8") from None


def _read_table(root: Path) -> Optional[dict[str, Any]]:
    """The ``[tool.genspirv]`` table of the root's pyproject.toml; None when there is none."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        data = pyproject.read_bytes()
    except OSError as exc:
        raise ConfigError(f"pyproject.toml: cannot read: {exc.strerror}") from None
    try:
        doc = tomllib.loads(decode_utf8(data, "pyproject.toml"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"pyproject.toml: not valid TOML: {exc}") from None
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"pyproject.toml: tool: expected a table, got {type_name(tool)}")
    if "genspirv" not in tool:
        return None
    return expect(tool["genspirv"], dict, "tool.genspirv", "a table")


def _missing_glsl_dir(glsl_dir: str, configured: bool) -> ConfigError:
    if configured:
        return ConfigError(f"tool.genspirv.glsl_dir: no folder {glsl_dir!r} in the project: create it, "
                           "or set glsl_dir to the folder that holds the *.comp sources")
    return ConfigError(f"no genspirv project here: no {glsl_dir}/ folder and no [tool.genspirv] in "
                       "pyproject.toml; run `genspirv init` to start a project, or name one with --root DIR")


def load_config(root: Path | str) -> Config:
    """Read and check the config of the project at ``root``."""
    if not Path(root).is_dir():
        raise ConfigError(f"--root: {root} is not a folder")
    root = Path(root).resolve()
    found = _read_table(root)
    table = {} if found is None else found
    check_keys(table, TOP_KEYS, "tool.genspirv")
    values = {k: table.get(k, d) for k, d in DEFAULTS.items()}
    for k in ("glsl_dir", "spirv_dir", "manifest"):
        values[k] = relative_path(values[k], f"tool.genspirv.{k}")
    target_env = parse_target_env(values["target_env"], "tool.genspirv.target_env")
    glslang = expect(values["glslang"], str, "tool.genspirv.glslang", "a version string such as \"13.1.1\"")
    flags = parse_flags(table.get("flags", []), "tool.genspirv.flags")
    top = settings_of({k: table[k] for k in ("optimize", "validate", "preamble", "compiler", "lint") if k in table},
                      Settings(flags=flags, target_env=target_env), "tool.genspirv", root)
    include_directive = expect(table.get("include_directive", True), bool,
                                "tool.genspirv.include_directive", "true or false")
    exclude = expect(table.get("exclude", []), list, "tool.genspirv.exclude", "an array of globs")
    for i, pattern in enumerate(exclude):
        expect(pattern, str, f"tool.genspirv.exclude[{i}]", "a glob relative to glsl_dir")

    remote_cache = table.get("remote_cache")
    if remote_cache is not None:
        from .remote_url import URL_FORM, parse_url     # only where a store is named
        expect(remote_cache, str, "tool.genspirv.remote_cache", f"a URL, {URL_FORM}")
        parse_url(remote_cache, "tool.genspirv.remote_cache", allow_credentials=False)

    generate = []
    for i, g in enumerate(expect(table.get("generate", []), list, "tool.genspirv.generate", "an array of tables")):
        k = f"tool.genspirv.generate[{i}]"
        expect(g, dict, k, "a table")
        check_keys(g, GENERATE_KEYS, k)
        if "output" not in g:
            raise ConfigError(f"{k}.output: missing")
        if ("target" in g) == ("template" in g):
            raise ConfigError(f"{k}: give either target = \"c\" or template = \"path/x.j2\"")
        template = relative_path(g["template"], f"{k}.template") if "template" in g else None
        if template is not None and not (root / template).is_file():
            raise ConfigError(f"{k}.template: no such file {template}")
        target = expect(g.get("target", "template"), str, f"{k}.target", "a string")
        if template is None:
            if target not in GENERATE_TARGETS:
                raise ConfigError(f"{k}.target: unknown target {target!r} (known: {', '.join(sorted(GENERATE_TARGETS))}; "
                                  "or template = \"path/x.j2\" for a template of the project's own)")
        blobs = expect(g.get("blobs", BlobMode.ARRAYS.value), str, f"{k}.blobs", "a string")
        if blobs not in {m.value for m in BlobMode}:
            raise ConfigError(f"{k}.blobs: {blobs!r} is not one of {', '.join(repr(m.value) for m in BlobMode)} "
                              '("files": each blob by .incbin or #embed of its file, no bytes in the generated text)')
        generate.append(Generate(target, relative_path(g["output"], f"{k}.output"), template, BlobMode(blobs)))

    glsl_dir = values["glsl_dir"]
    shaders = expect(table.get("shaders", {}), dict, "tool.genspirv.shaders", "a table")
    if not (root / glsl_dir).is_dir() and "generator" not in table:
        # A generator may give every source as text; then there need be no glsl_dir.
        raise _missing_glsl_dir(glsl_dir, configured=found is not None)
    for key in shaders:
        rel = relative_path(key, f'tool.genspirv.shaders."{key}"')
        check_compute(f"{glsl_dir}/{rel}", f'tool.genspirv.shaders."{key}"')
        if not (root / glsl_dir / rel).is_file():
            raise ConfigError(f'tool.genspirv.shaders."{key}": no such source {glsl_dir}/{rel}')
        if is_excluded(rel, tuple(exclude)):
            raise ConfigError(f'tool.genspirv.shaders."{key}": the source is excluded by tool.genspirv.exclude')

    generator = None
    generated: list[Variant] = []
    files: tuple[GeneratedFile, ...] = ()
    if "generator" in table:
        from .generator import generator_items
        generator = relative_path(table["generator"], "tool.genspirv.generator")
        output = generator_items(root, generator, glsl_dir)
        files = output.files
        _check_shadowing(root, files, f"{glsl_dir}/{INCLUDE_DIR}", generator)
        # Many variants share a source: its checks and its table's settings and meta are made
        # once, in the order they were made per variant (the first variant that fails one is
        # still the one named).
        checked: set[str] = set()
        bases: dict[str, Settings] = {}
        metas: dict[str, dict] = {}
        # A backend's 2,000 variants hold few distinct settings: each distinct one is resolved
        # once (by the values' types too: 1 is no `true`), an item that fails each time.
        resolved_by: dict[tuple, Settings] = {}
        for it in output.items:
            if it.path not in checked:
                if not it.generated and is_excluded(it.source, tuple(exclude)):
                    raise ConfigError(f"{it.where}: source {it.source} is excluded by tool.genspirv.exclude")
                check_compute(it.path, f"{it.where}: source")
                checked.add(it.path)
            defines = it.item.get("defines", {})
            if not isinstance(defines, Mapping):
                raise ConfigError(f"{it.where}: 'defines' must be a mapping of name to string, got {defines!r}")
            # A generated source has no table of its own: the top level's settings are its base.
            if it.generated:
                base = top
            elif (base := bases.get(it.source)) is None:
                base = bases[it.source] = source_settings(shaders, it.source, top, root)
            try:
                given = (id(base), *((k, type(it.item[k]), it.item[k]) for k in SETTING_ORDER if k in it.item))
                resolved = resolved_by.get(given)
            except TypeError:       # a list (flags, compiler, lint): resolved each time
                given, resolved = None, None
            if resolved is None:
                resolved = settings_of(it.item, base, it.where, root)
                if given is not None:
                    resolved_by[given] = resolved
            if it.generated:
                meta_base = {}
            elif (meta_base := metas.get(it.source)) is None:
                meta_base = metas[it.source] = source_meta(shaders, it.source)
            meta = merged_meta(meta_base, it.item, it.where)
            generated.append(make_variant(it.name, it.path,
                                          parse_defines(dict(defines), f"{it.where}: defines"), resolved, meta))
    generated_sources = {v.source for v in generated}

    variants: dict[str, Variant] = {}
    sources = sorted(set(discover_sources(root, glsl_dir, tuple(exclude)))
                     | {PurePosixPath(k).as_posix() for k in shaders})
    matrix_max = settings.get("GENSPIRV_MATRIX_MAX")
    table_variants = [v for rel in sources
                      for v in variants_of(rel, f"{glsl_dir}/{rel}", shaders.get(rel, {}), top,
                                            generated=f"{glsl_dir}/{rel}" in generated_sources, root=root,
                                            matrix_max=matrix_max)]
    for v in table_variants + generated:
        if v.name in variants:
            other = variants[v.name]
            raise ConfigError(f"tool.genspirv.shaders: duplicate variant name {v.name!r} "
                              f"(from {other.source} and {v.source})")
        variants[v.name] = v
    _check_case(variants.values(), values["spirv_dir"])

    config = Config(root=root, glsl_dir=glsl_dir, spirv_dir=values["spirv_dir"], manifest=values["manifest"],
                    target_env=target_env, glslang=glslang, flags=flags, generate=tuple(generate),
                    variants=tuple(sorted(variants.values(), key=lambda v: v.name)),
                    include_directive=include_directive, generator=generator, generated=files,
                    remote_cache=remote_cache, defaults=found is None,
                    other_stages=tuple(f"{glsl_dir}/{rel}" for rel in
                                       discover_sources(root, glsl_dir, tuple(exclude), tuple(OTHER_STAGES))))
    _check_collisions(config)
    return config


def _check_case(variants, spirv_dir: str) -> None:
    """No two variant names may differ only in case: their blobs would be one file on a
    checkout on macOS or Windows (case-insensitive file systems)."""
    seen: dict[str, Variant] = {}
    for v in sorted(variants, key=lambda v: v.name):
        other = seen.setdefault(v.name.casefold(), v)
        if other is not v:
            raise ConfigError(f"tool.genspirv.shaders: variant names {other.name!r} (from {other.source}) and "
                              f"{v.name!r} (from {v.source}) differ only in case: {spirv_dir}/{other.name}.spv "
                              f"and {spirv_dir}/{v.name}.spv are one file on macOS and Windows; rename one")


def _check_shadowing(root: Path, files: tuple[GeneratedFile, ...], include_dir: str, generator: str) -> None:
    """A generated file may not share its name with a header in glsl_dir/include: an
    ``#include`` of that name would find one of the two by the order of the include path."""
    for f in files:
        name = PurePosixPath(f.path).relative_to(GENERATED_DIR).as_posix()
        if (root / include_dir / name).is_file():
            raise ConfigError(f"{generator}: the generated file {name!r} has the name of {include_dir}/{name}; "
                              "an #include of it would find either: rename one of them")


def output_files(config: Config) -> list[tuple[str, str, str]]:
    """(path, the key that names it, what it is) of every file a build writes besides the blobs."""
    outputs = [(config.manifest, "tool.genspirv.manifest", "the manifest")]
    for i, g in enumerate(config.generate):
        # A C table writes <output>.h and .c; <output> itself is refused too (meant for the manifest?).
        suffixes = ("",) if g.template else ("", ".h", ".c")
        key = f"tool.genspirv.generate[{i}].output"
        outputs += [(g.output + suffix, key, f"generated by {key}") for suffix in suffixes]
    return outputs


def input_files(config: Config) -> dict[str, str]:
    """Every file a build reads (posix, relative to the root) and what it is, for the messages."""
    inputs = {"pyproject.toml": "the project's pyproject.toml"}
    if config.generator:
        inputs[config.generator] = "the generator file"
    for i, g in enumerate(config.generate):
        if g.template:
            inputs[g.template] = f"the template of tool.genspirv.generate[{i}]"
    for v in config.variants:
        inputs.setdefault(v.source, f"the source of variant {v.name}")
        if v.preamble:
            inputs.setdefault(v.preamble, f"the preamble of variant {v.name}")
    for f in config.generated:
        for template in f.templates:
            inputs.setdefault(template, f"a template of the generated {f.path}")
    return inputs


# Folders no output goes into, at any depth and in any case: git's (an output of .git/config
# erased the remote) and genspirv's own state, whose files a build owns by name.
OWNED_FOLDERS = {".git": "git's own folder", ".genspirv": "genspirv's state folder"}


def resolved_parts(config: Config, path: Path) -> tuple[str, ...]:
    """The parts of ``path`` with its symlinks resolved: root-relative inside the project, whole outside."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):     # a symlink loop, which no write gets through either
        return ()
    return resolved.relative_to(config.root).parts if resolved.is_relative_to(config.root) else resolved.parts


def owned_folder(config: Config, parts: tuple[str, ...]) -> Optional[str]:
    """The folder of ``OWNED_FOLDERS`` among ``parts`` (None: none of them)."""
    names = {part.casefold() for part in parts}
    return next((name for name in OWNED_FOLDERS if name in names), None)


def _check_parents(config: Config, path: str, key: str) -> None:
    """Refuse an output whose folder cannot be made because a file sits where a folder must be."""
    blocked = next((parent for parent in PurePosixPath(path).parents
                    if parent.parts and config.path(str(parent)).is_file()), None)
    if blocked is not None:
        raise ConfigError(f"{key}: {path!r} cannot be written: {blocked} is a file, not a folder")


def _check_collisions(config: Config) -> None:
    """No output may land on a file the build reads or on another output (it would overwrite it)."""
    spirv = config.path(config.spirv_dir)
    if spirv.exists() and not spirv.is_dir():
        raise ConfigError(f"tool.genspirv.spirv_dir: {config.spirv_dir!r} is a file; the blobs need a folder")
    _check_parents(config, config.spirv_dir, "tool.genspirv.spirv_dir")
    taken = {config.blob_relpath(v): f"the blob of variant {v.name}" for v in config.variants}
    inputs = input_files(config)
    for path, what in taken.items():
        if path in inputs:      # a preamble or template kept among the blobs, under a variant's name
            raise ConfigError(f"tool.genspirv.spirv_dir: {path!r}, {what}, would overwrite {inputs[path]}; "
                              "rename the variant or move the file")
    outputs = output_files(config)
    for path, key in [(config.spirv_dir, "tool.genspirv.spirv_dir"), *((p, k) for p, k, _ in outputs)]:
        owned = owned_folder(config, PurePosixPath(path).parts + resolved_parts(config, config.path(path)))
        if owned is not None:
            raise ConfigError(f"{key}: {path!r} is inside {owned}/, {OWNED_FOLDERS[owned]}; write outputs elsewhere")
    for path, key, what in outputs:
        if config.path(path).is_dir():
            raise ConfigError(f"{key}: {path!r} is a folder; name a file")
        _check_parents(config, path, key)
        if path in inputs:
            raise ConfigError(f"{key}: {path!r} would overwrite {inputs[path]}; write outputs elsewhere")
        inside = PurePosixPath(path).is_relative_to(config.glsl_dir)
        if PurePosixPath(path).is_relative_to(config.include_dir) or (inside and path.endswith(SOURCE_SUFFIX)):
            raise ConfigError(f"{key}: {path!r} is among the sources and includes in {config.glsl_dir}/, which "
                              "the build reads; write outputs elsewhere")
        if path in taken:
            raise ConfigError(f"{key}: {path!r} is {taken[path]}, another output of the build")
        taken[path] = what


def find_root(start: Optional[Path] = None) -> Path:
    """The project root for a run without --root: the nearest folder with [tool.genspirv], else ``start``."""
    start = Path(start or Path.cwd()).resolve()
    return find_project_root(start) or start
