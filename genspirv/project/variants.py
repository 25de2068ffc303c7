"""Variants: the shader table's entries (and a generator's, once checked) resolved into ``Variant``s.

Takes a source's table (``[tool.genspirv.shaders."x.comp"]``: a ``matrix`` of
defines, explicit ``variants``, common ``defines``) and the settings it
inherits, and gives ``Variant`` records: name, source, sorted defines and the
toolchain settings resolved variant over source over top level (``flags``
and ``lint.ignore`` accumulate; ``target_env``, ``optimize``, ``validate``,
``optional``, ``preamble``, ``compiler`` override), and the variant's ``meta`` (a table
of JSON data for project templates; a variant's keys over its source's). Also the small
checkers every config value goes through, each refusing with a ``ConfigError`` that names
the key; and ``Versions``, the compilers' versions as every content key names them. Pure:
no file is read; given a root, a preamble is checked to be a file under it.
"""

from __future__ import annotations

import datetime
import enum
import fnmatch
import itertools
import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Optional

from ..errors import ConfigError
from .lint_rules import SUPPRESSIBLE
from .variant_names import check_matrix_name, check_name, check_stem

DEFAULT_TARGET_ENV = "vulkan1.2"
TARGET_ENVS = ("vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3", "spirv1.3", "spirv1.4",
               "spirv1.5", "spirv1.6")


class CompilerName(enum.Enum):
    """The compilers a variant may name with ``compiler`` (docs/COMPILERS.md, "In a build")."""

    GLSLANG = "glslang"                 # the pinned glslangValidator: the default
    SLANG_GLSLANG = "slang-glslang"     # the slangpy wheel's newer glslang, in-process


DEFAULT_COMPILERS = (CompilerName.GLSLANG,)

# Settings a variant may take from the top level, its source's table or itself (lint: its
# suppressions, ``lint = { ignore = [...] }``, which accumulate as flags do).
SETTING_KEYS = {"flags", "target_env", "optimize", "validate", "optional", "preamble", "compiler", "lint"}
LINT_KEYS = {"ignore"}
SHADER_KEYS = {"name", "defines", "matrix", "variants", "meta"} | SETTING_KEYS
VARIANT_KEYS = {"name", "defines", "meta"} | SETTING_KEYS
# Flags the build sets itself; a second copy would break reproducibility or the depfile.
RESERVED_FLAGS = ("-o", "--depfile", "--target-env")
# glslang's -g0: a blob without debug information (OpName, OpMemberName, OpSource, OpString,
# OpLine, OpModuleProcessed). The build compiles with the names, reflects them, then strips
# (docs/RULES.md#manifest-determinism), so the manifest keeps every name.
STRIP_DEBUG_FLAG = "-g0"

DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The stages glslang tells from a file's suffix, besides compute (.comp): genspirv builds compute
# shaders only, so a file of another stage is left alone, and a variant naming one is refused.
OTHER_STAGES = {".vert": "vertex", ".tesc": "tessellation control", ".tese": "tessellation evaluation",
                ".geom": "geometry", ".frag": "fragment", ".mesh": "mesh", ".task": "task",
                ".rgen": "ray generation", ".rint": "ray intersection", ".rahit": "ray any-hit",
                ".rchit": "ray closest-hit", ".rmiss": "ray miss", ".rcall": "ray callable"}


@dataclass(frozen=True)
class Settings:
    """What decides how a variant is compiled besides its source and defines."""

    flags: tuple[str, ...] = ()              # every extra glslang flag (top, then source, then variant)
    target_env: str = DEFAULT_TARGET_ENV
    optimize: bool = False                   # spirv-opt -O, bindings and spec constants preserved
    validate: bool = True                    # spirv-val
    optional: bool = False                   # a missing compiler feature makes it unavailable, not an error
    preamble: Optional[str] = None           # a file (relative to the root) whose text goes before the source
    compilers: tuple[CompilerName, ...] = DEFAULT_COMPILERS     # ``compiler``: the first, then the fallbacks
    lint_ignore: tuple[tuple[str, str], ...] = ()    # (rule, the key that says so), top then source then variant


@dataclass(frozen=True)
class Variant:
    name: str
    source: str                              # posix path relative to the project root
    defines: tuple[tuple[str, str], ...]     # sorted (name, value) pairs
    flags: tuple[str, ...] = ()
    target_env: str = DEFAULT_TARGET_ENV
    optimize: bool = False
    validate: bool = True
    optional: bool = False
    preamble: Optional[str] = None           # posix path relative to the project root
    # The variant's compiler, then the ones that build it, in order, when it is optional and
    # the compilers before lack a feature it needs (docs/COMPILERS.md, "In a build").
    compilers: tuple[CompilerName, ...] = DEFAULT_COMPILERS
    meta_json: str = ""                      # the variant's meta as canonical JSON ("" when none)
    lint_ignore: tuple[tuple[str, str], ...] = ()   # lint rules not reported, with the key that says so

    @property
    def defines_dict(self) -> dict[str, str]:
        return dict(self.defines)

    @property
    def chain(self) -> tuple[CompilerName, ...]:
        """The compilers that may build it: all of ``compilers`` for an optional variant, else the first."""
        return self.compilers if self.optional else self.compilers[:1]

    @property
    def meta(self) -> dict[str, Any]:
        """The variant's meta table ({} when it has none): data for project templates only."""
        return json.loads(self.meta_json) if self.meta_json else {}

    @property
    def strip_debug(self) -> bool:
        """Its flags hold ``-g0``: the committed blob has no debug information."""
        return STRIP_DEBUG_FLAG in self.flags

    @property
    def compiler_flags(self) -> tuple[str, ...]:
        """The flags a compiler is given: ``-g0`` is the build's own step after reflection."""
        return tuple(f for f in self.flags if f != STRIP_DEBUG_FLAG)



# -- small checkers: each names the key it refuses ----------------------------


@dataclass(frozen=True)
class Versions:
    """The versions of a build's compilers (``toolchain.chain.Compilers.versions``): the part of
    every content key that names what compiled it."""

    compiler: str                       # the default compiler's (the pinned glslang's) version
    optimizer: Optional[str] = None     # spirv-opt's, when any variant is optimised
    # (name, label) of each other compiler: "slang-glslang 2026.12 (...)", or "... (not installed)"
    others: tuple[tuple[CompilerName, str], ...] = ()

    def of(self, variant: Variant) -> str:
        """The compiler part of ``variant``'s content key: the default compiler's version alone,
        as every key has always had it; else each compiler of its chain, named, in order
        (docs/COMPILERS.md, "In a build")."""
        if variant.chain == DEFAULT_COMPILERS:
            return self.compiler
        labels = {CompilerName.GLSLANG: f"glslang {self.compiler}", **dict(self.others)}
        return ", else ".join(labels.get(name, f"{name.value} (not installed)") for name in variant.chain)


def type_name(value: Any) -> str:
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a float",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


def expect(value: Any, kind: type, key: str, what: str):
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"{key}: expected {what}, got {type_name(value)} ({value!r})")
    return value


def check_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def relative_path(value: Any, key: str) -> str:
    expect(value, str, key, "a relative posix path")
    p = PurePosixPath(value)
    if not value or p.is_absolute() or ".." in p.parts or "\\" in value:
        raise ConfigError(f"{key}: {value!r} must be a relative posix path inside the project, without '..'")
    return p.as_posix()


def parse_defines(value: Any, key: str) -> dict[str, str]:
    expect(value, dict, key, "a table of NAME = \"value\"")
    out = {}
    for name, v in value.items():
        # The common case checked first, its messages made only for a define that fails.
        if type(v) is str and DEFINE_RE.match(name) and not _CONTROL.search(v) and not v.endswith("\\"):
            out[name] = v
            continue
        if not DEFINE_RE.match(name):
            raise ConfigError(f"{key}.{name}: not a valid preprocessor name")
        out[name] = _define_value(expect(v, str, f"{key}.{name}", "a string"), f"{key}.{name}")
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _define_value(value: str, key: str) -> str:
    # A newline or NUL would end glslang's -D argument early or inject a directive.
    m = _CONTROL.search(value)
    if m:
        raise ConfigError(f"{key}: define value {value!r} holds the control character "
                          f"{m.group()!r}; defines must be one line of text")
    # A trailing backslash splices the line after the #define into it in glslang's preprocessor.
    if value.endswith("\\"):
        raise ConfigError(f"{key}: define value {value!r} ends in a backslash, which would continue the "
                          "#define onto the next line; drop it, or end the value with another character")
    return value


def parse_flags(value: Any, key: str) -> tuple[str, ...]:
    flags = expect(value, list, key, "an array of strings")
    for i, f in enumerate(flags):
        expect(f, str, f"{key}[{i}]", "a string")
        m = _CONTROL.search(f)
        if m:
            # glslang keeps a -P text's first line only: the rest would vanish far from here.
            raise ConfigError(f"{key}[{i}]: {f!r} holds the control character {m.group()!r}; a flag is one "
                              "line (glslang keeps only the first): put lines that go before the source "
                              "in a file and name it with preamble = \"path/header.glsl\"")
        if f in RESERVED_FLAGS:
            raise ConfigError(f"{key}[{i}]: {f!r} is set by genspirv itself")
        if f.startswith("-g") and f != STRIP_DEBUG_FLAG:
            raise ConfigError(f"{key}[{i}]: {f!r} puts debug information with the absolute source path "
                              "into the blob, which then differs from checkout to checkout (check compares "
                              "bytes); genspirv takes -g0, a blob without debug information")
    return tuple(flags)


def parse_target_env(value: Any, key: str) -> str:
    expect(value, str, key, "a string")
    if value not in TARGET_ENVS:
        raise ConfigError(f"{key}: {value!r} is not one of {', '.join(TARGET_ENVS)}")
    return value


def parse_compiler(value: Any, key: str) -> tuple[CompilerName, ...]:
    """``compiler = "slang-glslang"``, or a list: the first builds the variant, the next ones the
    optional variants the ones before cannot build."""
    names = [value] if isinstance(value, str) else expect(value, list, key, 'a compiler name or an array of them')
    if not names:
        raise ConfigError(f"{key}: empty: name at least one compiler ({_compiler_names()})")
    chain = []
    for i, name in enumerate(names):
        where = key if isinstance(value, str) else f"{key}[{i}]"
        expect(name, str, where, "a compiler name")
        try:
            compiler = CompilerName(name)
        except ValueError:
            raise ConfigError(f"{where}: {name!r} is not a compiler genspirv knows ({_compiler_names()})") from None
        if compiler in chain:
            raise ConfigError(f"{where}: {name!r} is listed twice")
        chain.append(compiler)
    return tuple(chain)


def compiler_named(value: Any) -> Optional[CompilerName]:
    """A record's or manifest entry's ``compiler`` (absent: the default); None when it names none."""
    if value is None:
        return CompilerName.GLSLANG
    try:
        return CompilerName(value)
    except ValueError:
        return None


def _compiler_names() -> str:
    return ", ".join(c.value for c in CompilerName)


def parse_preamble(value: Any, key: str, root: Optional[Path] = None) -> Optional[str]:
    """A preamble's path relative to the root; "" (no preamble) turns off an inherited one."""
    if value == "":
        return None
    path = relative_path(value, key)
    if root is not None and not (root / path).is_file():
        raise ConfigError(f"{key}: no such file {path} (a preamble is a path relative to the project root)")
    return path


def settings_of(table: Mapping[str, Any], base: Settings, key: str, root: Optional[Path] = None) -> Settings:
    """``base`` overridden by the setting keys ``table`` holds; flags accumulate."""
    changes: dict[str, Any] = {}
    if "preamble" in table:
        changes["preamble"] = parse_preamble(table["preamble"], f"{key}.preamble", root)
    if "flags" in table:
        changes["flags"] = base.flags + parse_flags(table["flags"], f"{key}.flags")
    if "target_env" in table:
        changes["target_env"] = parse_target_env(table["target_env"], f"{key}.target_env")
    for flag in ("optimize", "validate", "optional"):
        if flag in table:
            changes[flag] = expect(table[flag], bool, f"{key}.{flag}", "true or false")
    if "compiler" in table:
        changes["compilers"] = parse_compiler(table["compiler"], f"{key}.compiler")
    if "lint" in table:
        changes["lint_ignore"] = base.lint_ignore + parse_lint(table["lint"], f"{key}.lint")
    return replace(base, **changes) if changes else base


def parse_lint(value: Any, key: str) -> tuple[tuple[str, str], ...]:
    """``lint = { ignore = ["never-accessed"] }``: (rule, key) pairs, each rule one lint knows."""
    expect(value, dict, key, 'a table such as { ignore = ["never-accessed"] }')
    check_keys(value, LINT_KEYS, key)
    rules = expect(value.get("ignore", []), list, f"{key}.ignore", "an array of lint rule names")
    for i, rule in enumerate(rules):
        expect(rule, str, f"{key}.ignore[{i}]", "a lint rule name")
        if rule not in SUPPRESSIBLE:
            raise ConfigError(f"{key}.ignore[{i}]: {rule!r} is not a lint rule that can be ignored "
                              f"(rules: {', '.join(SUPPRESSIBLE)})")
    return tuple((rule, f"{key}.ignore") for rule in dict.fromkeys(rules))


def make_variant(name: str, source: str, defines: Mapping[str, str], s: Settings,
                 meta: Mapping[str, Any] | None = None) -> Variant:
    return Variant(name, source, tuple(sorted(defines.items())), flags=s.flags, target_env=s.target_env,
                   optimize=s.optimize, validate=s.validate, optional=s.optional, preamble=s.preamble,
                   compilers=s.compilers, meta_json=meta_text(meta or {}), lint_ignore=s.lint_ignore)


# -- meta ---------------------------------------------------------------------


def parse_meta(value: Any, key: str) -> dict[str, Any]:
    """A ``meta`` table: JSON data (tables, arrays, strings, numbers, booleans; null from a
    generator), refused naming the first value that is not, e.g. ``meta.when`` (a TOML date)."""
    expect(value, dict, key, "a table of JSON data (strings, numbers, booleans, arrays, tables)")
    _check_json(value, key)
    return dict(value)


def _check_json(value: Any, key: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{key}: key {k!r} is not a string; JSON objects have string keys")
            _check_json(v, f"{key}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{key}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{key}: {value!r} is not a JSON number; give a finite number or a string")
    elif isinstance(value, (datetime.date, datetime.time)):
        raise ConfigError(f"{key}: a TOML date or time ({value.isoformat()}) is not JSON data; quote it as a string")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise ConfigError(f"{key}: {type_name(value)} ({value!r}) is not JSON data; give a string, number, "
                          "boolean, array or table")


def meta_text(meta: Mapping[str, Any]) -> str:
    """Canonical JSON of a meta table: the same data gives the same bytes (sorted keys)."""
    return json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False) if meta else ""


def merged_meta(base: Mapping[str, Any], table: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``base`` (the source's meta) with the keys of ``table``'s own ``meta`` over it."""
    return {**base, **parse_meta(table["meta"], f"{key}.meta")} if "meta" in table else dict(base)


# -- variants -----------------------------------------------------------------


def _matrix_axes(value: Any, key: str) -> list[list[tuple[str, str, str]]]:
    """Each matrix key as a list of (define name, alias, value), in the order written."""
    expect(value, dict, key, "a table of NAME = { alias = \"value\" } or NAME = [\"value\", ...]")
    axes = []
    for define, choices in value.items():
        k = f"{key}.{define}"
        if not DEFINE_RE.match(define):
            raise ConfigError(f"{k}: not a valid preprocessor name")
        if isinstance(choices, dict):
            axis = [(define, alias, _define_value(expect(v, str, f"{k}.{alias}", "a string"), f"{k}.{alias}"))
                    for alias, v in choices.items()]
        elif isinstance(choices, list):
            axis = [(define, _define_value(expect(v, str, f"{k}[{i}]", "a string"), f"{k}[{i}]"), v)
                    for i, v in enumerate(choices)]
        else:
            raise ConfigError(f"{k}: expected a table of alias = \"value\" or an array of strings, "
                              f"got {type_name(choices)}")
        if not axis:
            raise ConfigError(f"{k}: empty: a matrix key needs at least one value")
        axes.append(axis)
    return axes


def _check_matrix_size(axes: list[list[tuple[str, str, str]]], key: str, limit: Optional[int]) -> None:
    """Refuse, before expanding it, a matrix of more than ``limit`` variants, with its count and axes."""
    count = math.prod(len(axis) for axis in axes)
    if limit is not None and count > limit:
        shape = " x ".join(f"{axis[0][0]} ({len(axis)})" for axis in axes)
        raise ConfigError(f"{key}: {count} variants ({shape}), past GENSPIRV_MATRIX_MAX ({limit}): list the "
                          "combinations it needs under variants = [...], split the axes over sources, or "
                          "raise GENSPIRV_MATRIX_MAX")


def variants_of(source_key: str, source: str, table: Mapping[str, Any], top: Settings,
                 generated: bool = False, root: Optional[Path] = None,
                 matrix_max: Optional[int] = None) -> list[Variant]:
    """The table's variants of one source; its stem variant only when nothing else builds it.
    A ``matrix`` of more than ``matrix_max`` variants is refused before it expands."""
    where = f'tool.genspirv.shaders."{source_key}"'
    expect(table, dict, where, "a table")
    check_keys(table, SHADER_KEYS, where)
    settings = settings_of(table, top, where, root)
    builds_stem = "matrix" not in table and "variants" not in table and not generated
    if "name" in table:
        prefix = check_name(expect(table["name"], str, f"{where}.name", "a string"), f"{where}.name")
    elif "matrix" in table or builds_stem:
        prefix = check_stem(source, source_key)
    common = parse_defines(table.get("defines", {}), f"{where}.defines")
    meta = merged_meta({}, table, where)
    variants = []
    if "matrix" in table:
        axes = _matrix_axes(table["matrix"], f"{where}.matrix")
        _check_matrix_size(axes, f"{where}.matrix", matrix_max)
        for combo in itertools.product(*axes):
            name = "_".join([prefix, *(alias for _, alias, _ in combo)])
            defines = {**common, **{define: value for define, _, value in combo}}
            variants.append(make_variant(check_matrix_name(name, list(combo), f"{where}.matrix"), source,
                                         defines, settings, meta))
    for i, v in enumerate(expect(table.get("variants", []), list, f"{where}.variants", "an array of tables")):
        k = f"{where}.variants[{i}]"
        expect(v, dict, k, "a table")
        check_keys(v, VARIANT_KEYS, k)
        if "name" not in v:
            raise ConfigError(f"{k}.name: missing (every explicit variant needs a name)")
        name = check_name(expect(v["name"], str, f"{k}.name", "a string"), f"{k}.name")
        defines = {**common, **parse_defines(v.get("defines", {}), f"{k}.defines")}
        variants.append(make_variant(name, source, defines, settings_of(v, settings, k, root),
                                     merged_meta(meta, v, k)))
    if builds_stem:
        variants.append(make_variant(prefix, source, common, settings, meta))
    return variants


def source_settings(shaders: Mapping[str, Any], rel: str, top: Settings, root: Optional[Path] = None) -> Settings:
    """The settings a generator variant of ``rel`` starts from: the source's table over the top level."""
    table = shaders.get(rel, {})
    return settings_of(table, top, f'tool.genspirv.shaders."{rel}"', root) if isinstance(table, dict) else top


def check_compute(source: str, key: str) -> None:
    """Refuse a source of another shader stage, naming the stage."""
    stage = OTHER_STAGES.get(PurePosixPath(source).suffix)
    if stage is not None:
        raise ConfigError(f"{key}: {source} is a {stage} shader ({PurePosixPath(source).suffix}); genspirv "
                          "builds compute shaders (.comp) only: remove it from the variants (files of "
                          "other stages are left alone)")


def source_meta(shaders: Mapping[str, Any], rel: str) -> dict[str, Any]:
    """The meta a generator variant of ``rel`` starts from: its source's table's."""
    table = shaders.get(rel, {})
    return merged_meta({}, table, f'tool.genspirv.shaders."{rel}"') if isinstance(table, dict) else {}


def is_excluded(rel: str, exclude: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in exclude)
