"""Configuration: a project's ``[tool.genspirv]`` table in, a frozen ``Config`` out.

Takes the project root (the folder holding ``pyproject.toml``) and gives a
``Config``: where sources, blobs and the manifest live, the toolchain pin and
flags, optional generated outputs, and every ``Variant`` (name, source, defines)
to build, in name order, each with its resolved toolchain settings (flags,
target env, optimise, validate, optional: variant over source over top level,
flags accumulating). Variants come from the shader table and from an optional
``generator`` file (``genspirv.generator``); ``exclude`` globs keep sources out.

Zero configuration works: with no ``pyproject.toml`` in the root, or one
without a ``[tool.genspirv]`` table, the defaults below apply and every
``*.comp`` under ``glsl/`` (outside ``glsl/include/``) builds once under its
stem. Unknown keys, values of the wrong type and duplicate variant names are
``ConfigError``s naming the key.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .errors import ConfigError

DEFAULTS = {
    "glsl_dir": "glsl",
    "spirv_dir": "spirv",
    "manifest": "manifests/shaders.json",
    "target_env": "vulkan1.2",
    "glslang": "13.1.1",
}
INCLUDE_DIR = "include"          # under glsl_dir; headers there are never compiled on their own
SOURCE_SUFFIX = ".comp"
TARGET_ENVS = ("vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3", "spirv1.3", "spirv1.4",
               "spirv1.5", "spirv1.6")

# Toolchain settings a variant may take from the top level, its source's table or itself.
SETTING_KEYS = {"flags", "target_env", "optimize", "validate", "optional"}
TOP_KEYS = set(DEFAULTS) | {"flags", "generate", "shaders", "generator", "exclude", "include_directive",
                            "optimize", "validate", "remote_cache"}
SHADER_KEYS = {"name", "defines", "matrix", "variants"} | SETTING_KEYS
VARIANT_KEYS = {"name", "defines"} | SETTING_KEYS
GENERATE_KEYS = {"target", "output", "template"}
# Flags the build sets itself; a second copy would break reproducibility or the depfile.
RESERVED_FLAGS = ("-o", "--depfile", "--target-env", "-g")

# Variant names become file names (<spirv_dir>/<name>.spv) and C identifiers in
# generated code, so keep them to a safe alphabet.
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Settings:
    """What decides how a variant is compiled besides its source and defines."""

    flags: tuple[str, ...] = ()              # every extra glslang flag (top, then source, then variant)
    target_env: str = DEFAULTS["target_env"]
    optimize: bool = False                   # spirv-opt -O, bindings and spec constants preserved
    validate: bool = True                    # spirv-val
    optional: bool = False                   # a missing compiler feature makes it unavailable, not an error


@dataclass(frozen=True)
class Variant:
    name: str
    source: str                              # posix path relative to the project root
    defines: tuple[tuple[str, str], ...]     # sorted (name, value) pairs
    flags: tuple[str, ...] = ()
    target_env: str = DEFAULTS["target_env"]
    optimize: bool = False
    validate: bool = True
    optional: bool = False

    @property
    def defines_dict(self) -> dict[str, str]:
        return dict(self.defines)


@dataclass(frozen=True)
class Generate:
    target: str       # codegen target, e.g. "c"; "template" for a project's own template
    output: str       # posix path relative to the root (without extension for target "c")
    template: Optional[str] = None   # the jinja2 file, relative to the root


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
    remote_cache: Optional[str] = None       # a remote compile cache's URL (GENSPIRV_REMOTE_CACHE overrides)

    def path(self, relative: str) -> Path:
        """An absolute path for a posix path relative to the root."""
        return self.root / relative

    def blob_relpath(self, variant: Variant) -> str:
        return f"{self.spirv_dir}/{variant.name}.spv"

    @property
    def include_dir(self) -> str:
        return f"{self.glsl_dir}/{INCLUDE_DIR}"


# -- small checkers: each names the key it refuses ----------------------------


def _type_name(value: Any) -> str:
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a float",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


def _expect(value: Any, kind: type, key: str, what: str):
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"{key}: expected {what}, got {_type_name(value)} ({value!r})")
    return value


def _check_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def _relative_dir(value: Any, key: str) -> str:
    _expect(value, str, key, "a relative posix path")
    p = PurePosixPath(value)
    if not value or p.is_absolute() or ".." in p.parts or "\\" in value:
        raise ConfigError(f"{key}: {value!r} must be a relative posix path inside the project, without '..'")
    return p.as_posix()


def _defines(value: Any, key: str) -> dict[str, str]:
    _expect(value, dict, key, "a table of NAME = \"value\"")
    out = {}
    for name, v in value.items():
        if not DEFINE_RE.match(name):
            raise ConfigError(f"{key}.{name}: not a valid preprocessor name")
        out[name] = _define_value(_expect(v, str, f"{key}.{name}", "a string"), f"{key}.{name}")
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _define_value(value: str, key: str) -> str:
    # A newline or NUL would end glslang's -D argument early or inject a directive.
    m = _CONTROL.search(value)
    if m:
        raise ConfigError(f"{key}: define value {value!r} holds the control character "
                          f"{m.group()!r}; defines must be one line of text")
    return value


def _flags(value: Any, key: str) -> tuple[str, ...]:
    flags = _expect(value, list, key, "an array of strings")
    for i, f in enumerate(flags):
        _expect(f, str, f"{key}[{i}]", "a string")
        if f in RESERVED_FLAGS or f.startswith("-g"):
            raise ConfigError(f"{key}[{i}]: {f!r} is set by genspirv itself "
                              "(-g would also embed absolute paths)")
    return tuple(flags)


def _target_env(value: Any, key: str) -> str:
    _expect(value, str, key, "a string")
    if value not in TARGET_ENVS:
        raise ConfigError(f"{key}: {value!r} is not one of {', '.join(TARGET_ENVS)}")
    return value


def settings_of(table: Mapping[str, Any], base: Settings, key: str) -> Settings:
    """``base`` overridden by the setting keys ``table`` holds; flags accumulate."""
    s = base
    if "flags" in table:
        s = replace(s, flags=s.flags + _flags(table["flags"], f"{key}.flags"))
    if "target_env" in table:
        s = replace(s, target_env=_target_env(table["target_env"], f"{key}.target_env"))
    for flag in ("optimize", "validate", "optional"):
        if flag in table:
            s = replace(s, **{flag: _expect(table[flag], bool, f"{key}.{flag}", "true or false")})
    return s


def make_variant(name: str, source: str, defines: Mapping[str, str], s: Settings) -> Variant:
    return Variant(name, source, tuple(sorted(defines.items())), flags=s.flags, target_env=s.target_env,
                   optimize=s.optimize, validate=s.validate, optional=s.optional)


def _check_name(name: str, key: str) -> str:
    if not NAME_RE.match(name):
        raise ConfigError(f"{key}: variant name {name!r} must match {NAME_RE.pattern}")
    return name


# -- variants -----------------------------------------------------------------


def _matrix_axes(value: Any, key: str) -> list[list[tuple[str, str, str]]]:
    """Each matrix key as a list of (define name, alias, value), in the order written."""
    _expect(value, dict, key, "a table of NAME = { alias = \"value\" } or NAME = [\"value\", ...]")
    axes = []
    for define, choices in value.items():
        k = f"{key}.{define}"
        if not DEFINE_RE.match(define):
            raise ConfigError(f"{k}: not a valid preprocessor name")
        if isinstance(choices, dict):
            axis = [(define, alias, _expect(v, str, f"{k}.{alias}", "a string")) for alias, v in choices.items()]
        elif isinstance(choices, list):
            axis = [(define, _expect(v, str, f"{k}[{i}]", "a string"), v) for i, v in enumerate(choices)]
        else:
            raise ConfigError(f"{k}: expected a table of alias = \"value\" or an array of strings, "
                              f"got {_type_name(choices)}")
        if not axis:
            raise ConfigError(f"{k}: empty: a matrix key needs at least one value")
        axes.append(axis)
    return axes


def _variants_of(source_key: str, source: str, table: Mapping[str, Any], top: Settings,
                 generated: bool = False) -> list[Variant]:
    """The table's variants of one source; its stem variant only when nothing else builds it."""
    where = f'tool.genspirv.shaders."{source_key}"'
    _expect(table, dict, where, "a table")
    _check_keys(table, SHADER_KEYS, where)
    settings = settings_of(table, top, where)
    prefix = _check_name(_expect(table.get("name", PurePosixPath(source).stem), str, f"{where}.name", "a string"),
                         f"{where}.name")
    common = _defines(table.get("defines", {}), f"{where}.defines")
    variants = []
    if "matrix" in table:
        for combo in itertools.product(*_matrix_axes(table["matrix"], f"{where}.matrix")):
            name = "_".join([prefix, *(alias for _, alias, _ in combo)])
            defines = {**common, **{define: value for define, _, value in combo}}
            variants.append(make_variant(_check_name(name, f"{where}.matrix"), source, defines, settings))
    for i, v in enumerate(_expect(table.get("variants", []), list, f"{where}.variants", "an array of tables")):
        k = f"{where}.variants[{i}]"
        _expect(v, dict, k, "a table")
        _check_keys(v, VARIANT_KEYS, k)
        if "name" not in v:
            raise ConfigError(f"{k}.name: missing (every explicit variant needs a name)")
        name = _check_name(_expect(v["name"], str, f"{k}.name", "a string"), f"{k}.name")
        defines = {**common, **_defines(v.get("defines", {}), f"{k}.defines")}
        variants.append(make_variant(name, source, defines, settings_of(v, settings, k)))
    if "matrix" not in table and "variants" not in table and not generated:
        variants.append(make_variant(prefix, source, common, settings))
    return variants


def source_settings(shaders: Mapping[str, Any], rel: str, top: Settings) -> Settings:
    """The settings a generator variant of ``rel`` starts from: the source's table over the top level."""
    table = shaders.get(rel, {})
    return settings_of(table, top, f'tool.genspirv.shaders."{rel}"') if isinstance(table, dict) else top


def is_excluded(rel: str, exclude: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in exclude)


def discover_sources(root: Path, glsl_dir: str, exclude: tuple[str, ...] = ()) -> list[str]:
    """Every compilable source under glsl_dir (posix, relative to glsl_dir), includes and exclusions left out."""
    base = root / glsl_dir
    found = []
    for path in sorted(base.rglob(f"*{SOURCE_SUFFIX}")):
        rel = path.relative_to(base).as_posix()
        if rel.split("/", 1)[0] == INCLUDE_DIR or not path.is_file() or is_excluded(rel, exclude):
            continue
        found.append(rel)
    return found


def _read_table(root: Path) -> dict[str, Any]:
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("genspirv", {})
    return _expect(table, dict, "tool.genspirv", "a table")


def load_config(root: Path | str) -> Config:
    """Read and check the config of the project at ``root``."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise ConfigError(f"--root: {root} is not a directory")
    table = _read_table(root)
    _check_keys(table, TOP_KEYS, "tool.genspirv")
    values = {k: table.get(k, d) for k, d in DEFAULTS.items()}
    for k in ("glsl_dir", "spirv_dir", "manifest"):
        values[k] = _relative_dir(values[k], f"tool.genspirv.{k}")
    target_env = _target_env(values["target_env"], "tool.genspirv.target_env")
    glslang = _expect(values["glslang"], str, "tool.genspirv.glslang", "a version string such as \"13.1.1\"")
    flags = _flags(table.get("flags", []), "tool.genspirv.flags")
    top = settings_of({k: table[k] for k in ("optimize", "validate") if k in table},
                      Settings(flags=flags, target_env=target_env), "tool.genspirv")
    include_directive = _expect(table.get("include_directive", True), bool,
                                "tool.genspirv.include_directive", "true or false")
    exclude = _expect(table.get("exclude", []), list, "tool.genspirv.exclude", "an array of globs")
    for i, pattern in enumerate(exclude):
        _expect(pattern, str, f"tool.genspirv.exclude[{i}]", "a glob relative to glsl_dir")

    remote_cache = table.get("remote_cache")
    if remote_cache is not None:
        from .remote_cache import URL_FORM, parse_url
        _expect(remote_cache, str, "tool.genspirv.remote_cache", f"a URL, {URL_FORM}")
        parse_url(remote_cache, "tool.genspirv.remote_cache", allow_credentials=False)

    generate = []
    for i, g in enumerate(_expect(table.get("generate", []), list, "tool.genspirv.generate", "an array of tables")):
        k = f"tool.genspirv.generate[{i}]"
        _expect(g, dict, k, "a table")
        _check_keys(g, GENERATE_KEYS, k)
        if "output" not in g:
            raise ConfigError(f"{k}.output: missing")
        if ("target" in g) == ("template" in g):
            raise ConfigError(f"{k}: give either target = \"c\" or template = \"path/x.j2\"")
        template = _relative_dir(g["template"], f"{k}.template") if "template" in g else None
        if template is not None and not (root / template).is_file():
            raise ConfigError(f"{k}.template: no such file {template}")
        generate.append(Generate(_expect(g.get("target", "template"), str, f"{k}.target", "a string"),
                                 _relative_dir(g["output"], f"{k}.output"), template))

    glsl_dir = values["glsl_dir"]
    shaders = _expect(table.get("shaders", {}), dict, "tool.genspirv.shaders", "a table")
    if not (root / glsl_dir).is_dir():
        raise ConfigError(f"tool.genspirv.glsl_dir: {root / glsl_dir} is not a directory")
    for key in shaders:
        rel = _relative_dir(key, f'tool.genspirv.shaders."{key}"')
        if not (root / glsl_dir / rel).is_file():
            raise ConfigError(f'tool.genspirv.shaders."{key}": no such source {glsl_dir}/{rel}')
        if is_excluded(rel, tuple(exclude)):
            raise ConfigError(f'tool.genspirv.shaders."{key}": the source is excluded by tool.genspirv.exclude')

    generator = None
    generated: list[Variant] = []
    if "generator" in table:
        from .generator import run_generator
        generator = _relative_dir(table["generator"], "tool.genspirv.generator")
        generated = run_generator(root, generator, glsl_dir, tuple(exclude),
                                  lambda rel: source_settings(shaders, rel, top))
    generated_sources = {v.source for v in generated}

    variants: dict[str, Variant] = {}
    sources = sorted(set(discover_sources(root, glsl_dir, tuple(exclude)))
                     | {PurePosixPath(k).as_posix() for k in shaders})
    table_variants = [v for rel in sources
                      for v in _variants_of(rel, f"{glsl_dir}/{rel}", shaders.get(rel, {}), top,
                                            generated=f"{glsl_dir}/{rel}" in generated_sources)]
    for v in table_variants + generated:
        if v.name in variants:
            other = variants[v.name]
            raise ConfigError(f"tool.genspirv.shaders: duplicate variant name {v.name!r} "
                              f"(from {other.source} and {v.source})")
        variants[v.name] = v

    config = Config(root=root, glsl_dir=glsl_dir, spirv_dir=values["spirv_dir"], manifest=values["manifest"],
                    target_env=target_env, glslang=glslang, flags=flags, generate=tuple(generate),
                    variants=tuple(sorted(variants.values(), key=lambda v: v.name)),
                    include_directive=include_directive, generator=generator, remote_cache=remote_cache)
    _check_collisions(config)
    return config


def _check_collisions(config: Config) -> None:
    """A generated file must not land on the manifest or a blob (it would overwrite it)."""
    taken = {config.manifest: "the manifest tool.genspirv.manifest"}
    taken.update({config.blob_relpath(v): f"the blob of variant {v.name}" for v in config.variants})
    for i, g in enumerate(config.generate):
        for suffix in ("", ".h", ".c"):   # what codegen writes for an output
            if g.output + suffix in taken:
                raise ConfigError(f"tool.genspirv.generate[{i}].output: {g.output!r} writes "
                                  f"{g.output + suffix}, which is {taken[g.output + suffix]}")


def find_root(start: Optional[Path] = None) -> Path:
    """The project root for a run without --root: the nearest folder with [tool.genspirv], else ``start``."""
    from .manifest import find_project_root
    start = Path(start or Path.cwd()).resolve()
    return find_project_root(start) or start
