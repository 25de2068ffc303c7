"""Configuration: a project's ``[tool.genspirv]`` table in, a frozen ``Config`` out.

Takes the project root (the folder holding ``pyproject.toml``) and gives a
``Config``: where sources, blobs and the manifest live, the toolchain pin and
flags, optional generated outputs, and every ``Variant`` (name, source, defines)
to build, in name order.

Zero configuration works: with no ``pyproject.toml`` in the root, or one
without a ``[tool.genspirv]`` table, the defaults below apply and every
``*.comp`` under ``glsl/`` (outside ``glsl/include/``) builds once under its
stem. Unknown keys, values of the wrong type and duplicate variant names are
``ConfigError``s naming the key.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass
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

TOP_KEYS = set(DEFAULTS) | {"flags", "generate", "shaders"}
SHADER_KEYS = {"name", "defines", "matrix", "variants"}
VARIANT_KEYS = {"name", "defines"}
GENERATE_KEYS = {"target", "output", "template"}

# Variant names become file names (<spirv_dir>/<name>.spv) and C identifiers in
# generated code, so keep them to a safe alphabet.
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Variant:
    name: str
    source: str                              # posix path relative to the project root
    defines: tuple[tuple[str, str], ...]     # sorted (name, value) pairs

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
        out[name] = _expect(v, str, f"{key}.{name}", "a string")
    return out


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


def _variants_of(source_key: str, source: str, table: Mapping[str, Any]) -> list[Variant]:
    where = f'tool.genspirv.shaders."{source_key}"'
    _expect(table, dict, where, "a table")
    _check_keys(table, SHADER_KEYS, where)
    prefix = _check_name(_expect(table.get("name", PurePosixPath(source).stem), str, f"{where}.name", "a string"),
                         f"{where}.name")
    common = _defines(table.get("defines", {}), f"{where}.defines")
    variants = []
    if "matrix" in table:
        for combo in itertools.product(*_matrix_axes(table["matrix"], f"{where}.matrix")):
            name = "_".join([prefix, *(alias for _, alias, _ in combo)])
            defines = {**common, **{define: value for define, _, value in combo}}
            variants.append(Variant(_check_name(name, f"{where}.matrix"), source, tuple(sorted(defines.items()))))
    for i, v in enumerate(_expect(table.get("variants", []), list, f"{where}.variants", "an array of tables")):
        k = f"{where}.variants[{i}]"
        _expect(v, dict, k, "a table")
        _check_keys(v, VARIANT_KEYS, k)
        if "name" not in v:
            raise ConfigError(f"{k}.name: missing (every explicit variant needs a name)")
        name = _check_name(_expect(v["name"], str, f"{k}.name", "a string"), f"{k}.name")
        defines = {**common, **_defines(v.get("defines", {}), f"{k}.defines")}
        variants.append(Variant(name, source, tuple(sorted(defines.items()))))
    if "matrix" not in table and "variants" not in table:
        variants.append(Variant(prefix, source, tuple(sorted(common.items()))))
    return variants


def discover_sources(root: Path, glsl_dir: str) -> list[str]:
    """Every compilable source under glsl_dir (posix, relative to glsl_dir), includes excluded."""
    base = root / glsl_dir
    found = []
    for path in sorted(base.rglob(f"*{SOURCE_SUFFIX}")):
        rel = path.relative_to(base).as_posix()
        if rel.split("/", 1)[0] == INCLUDE_DIR or not path.is_file():
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
    target_env = _expect(values["target_env"], str, "tool.genspirv.target_env", "a string")
    if target_env not in TARGET_ENVS:
        raise ConfigError(f"tool.genspirv.target_env: {target_env!r} is not one of {', '.join(TARGET_ENVS)}")
    glslang = _expect(values["glslang"], str, "tool.genspirv.glslang", "a version string such as \"13.1.1\"")
    flags = _expect(table.get("flags", []), list, "tool.genspirv.flags", "an array of strings")
    for i, f in enumerate(flags):
        _expect(f, str, f"tool.genspirv.flags[{i}]", "a string")
        # The build sets these itself; a second copy would break reproducibility or the depfile.
        if f in ("-o", "--depfile", "--target-env", "-g") or f.startswith("-g"):
            raise ConfigError(f"tool.genspirv.flags[{i}]: {f!r} is set by genspirv itself "
                              "(-g would also embed absolute paths)")

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
    for key in shaders:
        rel = _relative_dir(key, f'tool.genspirv.shaders."{key}"')
        if not (root / glsl_dir / rel).is_file():
            raise ConfigError(f'tool.genspirv.shaders."{key}": no such source {glsl_dir}/{rel}')
    if not (root / glsl_dir).is_dir():
        raise ConfigError(f"tool.genspirv.glsl_dir: {root / glsl_dir} is not a directory")

    variants: dict[str, Variant] = {}
    sources = sorted(set(discover_sources(root, glsl_dir)) | {PurePosixPath(k).as_posix() for k in shaders})
    for rel in sources:
        table_for = shaders.get(rel, {})
        for v in _variants_of(rel, f"{glsl_dir}/{rel}", table_for):
            if v.name in variants:
                other = variants[v.name]
                raise ConfigError(f"tool.genspirv.shaders: duplicate variant name {v.name!r} "
                                  f"(from {other.source} and {v.source})")
            variants[v.name] = v

    return Config(root=root, glsl_dir=glsl_dir, spirv_dir=values["spirv_dir"], manifest=values["manifest"],
                  target_env=target_env, glslang=glslang, flags=tuple(flags), generate=tuple(generate),
                  variants=tuple(sorted(variants.values(), key=lambda v: v.name)))


def find_root(start: Optional[Path] = None) -> Path:
    """The project root for a run without --root: the nearest folder with [tool.genspirv], else ``start``."""
    from .manifest import find_project_root
    start = Path(start or Path.cwd()).resolve()
    return find_project_root(start) or start
