"""Synthetic projects for the build benchmarks.

``generate_project(repo_root, dest, variants, header_share)`` takes a genspirv
project (this repo: its ``glsl/`` and its ``[tool.genspirv]`` variants) and
writes, under ``dest``, a bigger project made of copies of its sources:
copy *k* of ``glsl/add.comp`` is ``glsl/add__c<k>.comp`` next to the original,
so its relative ``#include`` lines still resolve, and it builds every variant
the original builds, renamed ``<name>_c<k>`` — several times over, with
distinct salts (``<name>_c<k>_s<j>``), so that a copied source builds about
as many variants as a llama.cpp source does (~10: 1,400 variants from 139
sources). Copies are added until the project holds exactly ``variants``
variants (the last copy may build only some of its own). It gives back a
frozen ``SyntheticProject`` describing what was written.

Two small wrappers make the copies useful as a benchmark:

- every variant gets a distinct ``GENSPIRV_BENCH_SALT`` define that reaches
  the code (a branch that can never be taken: ``gl_NumWorkGroups.x == 0``), so
  each variant compiles to a different blob, as in a real project where no two
  variants are alike;
- a known share of the copied sources include one extra header,
  ``glsl/include/genspirv_bench.glsl``: editing it (``edit_header``) changes
  those variants' blobs and only those, which is the one-header-edit rebuild.

No compiler runs here; this module only reads the repo's configuration and
writes files.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Mapping

from genspirv.errors import ConfigError

HEADER_NAME = "genspirv_bench.glsl"
# llama.cpp's Vulkan backend: about 1,400 variants from 139 sources.
LLAMA_CPP_VARIANTS_PER_SOURCE = 1400 / 139
SALT_DEFINE = "GENSPIRV_BENCH_SALT"
_HEADER_SALT = "GENSPIRV_BENCH_HEADER_SALT"
_INNER_MAIN = "genspirv_bench_main"
_VERSION_LINE = re.compile(r"^[ \t]*#[ \t]*version\b.*$", re.MULTILINE)
_HEADER_VALUE = re.compile(rf"#define {_HEADER_SALT} (\d+)u")


@dataclass(frozen=True)
class BaseVariant:
    """One variant of the original project: source relative to its glsl_dir."""

    name: str
    source: str                      # posix, relative to glsl_dir
    defines: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SyntheticVariant:
    name: str
    source: str                      # posix, relative to the project root
    defines: tuple[tuple[str, str], ...]
    includes_header: bool


@dataclass(frozen=True)
class SyntheticProject:
    root: Path
    glsl_dir: str
    spirv_dir: str
    manifest: str
    target_env: str
    flags: tuple[str, ...]
    variants: tuple[SyntheticVariant, ...]
    source_count: int
    header: str                      # posix, relative to root

    @property
    def header_dependents(self) -> int:
        return sum(v.includes_header for v in self.variants)


def base_variants_from_config(repo_root: Path) -> tuple[tuple[BaseVariant, ...], dict]:
    """The repo's own variants and toolchain settings, through genspirv.project.config."""
    from genspirv.project.config import load_config

    cfg = load_config(Path(repo_root))
    prefix = cfg.glsl_dir + "/"
    # Config sources are relative to the root; copies are made relative to glsl_dir.
    base = tuple(BaseVariant(v.name, v.source[len(prefix):] if v.source.startswith(prefix) else v.source,
                             v.defines) for v in cfg.variants)
    settings = {"glsl_dir": cfg.glsl_dir, "target_env": cfg.target_env, "glslang": cfg.glslang,
                "flags": tuple(cfg.flags)}
    return base, settings


def generate_project(repo_root, dest, variants: int, header_share: float = 0.25,
                     per_source: float = LLAMA_CPP_VARIANTS_PER_SOURCE) -> SyntheticProject:
    """Write a synthetic project of exactly ``variants`` variants under ``dest``.

    ``per_source`` is the number of variants a copied source aims at: each base
    variant is built with ``round(per_source / base variants per source)``
    salts (at least 1), so the project has llama.cpp's shape by default, not
    one file per variant. ``dest`` must not exist or be empty.
    """
    repo_root = Path(repo_root)
    dest = Path(dest)
    if variants < 1:
        raise ConfigError(f"bench: a synthetic project needs at least 1 variant, not {variants}")
    if not 0.0 <= header_share <= 1.0:
        raise ConfigError(f"bench: header share must lie in [0, 1], not {header_share}")
    base, settings = base_variants_from_config(repo_root)
    if not base:
        raise ConfigError(f"bench: {repo_root} has no variants to copy")
    glsl_dir = settings["glsl_dir"]
    src_glsl = repo_root / glsl_dir
    if dest.exists() and any(dest.iterdir()):
        raise ConfigError(f"bench: {dest} is not empty")

    # The tree minus the sources: includes and anything else they may read.
    shutil.copytree(src_glsl, dest / glsl_dir, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.comp"))
    header_rel = f"{glsl_dir}/include/{HEADER_NAME}"
    _write(dest / header_rel, _header_text(0))

    by_source: dict[str, list[BaseVariant]] = {}
    for v in base:
        by_source.setdefault(v.source, []).append(v)
    salts = max(1, round(per_source * len(by_source) / len(base)))
    originals = {s: (src_glsl / s).read_text(encoding="utf-8") for s in by_source}

    chosen: list[SyntheticVariant] = []
    tables: list[tuple[str, list[SyntheticVariant]]] = []
    copy = 0
    source_index = 0
    while len(chosen) < variants:
        for src, members in by_source.items():
            if len(chosen) >= variants:
                break
            with_header = _spread(source_index, header_share)
            source_index += 1
            stem = PurePosixPath(src)
            copy_src = str(stem.with_name(f"{stem.stem}__c{copy}{stem.suffix}"))
            header_from_copy = os.path.relpath(
                header_rel, PurePosixPath(glsl_dir, copy_src).parent.as_posix())
            text = _wrap_source(originals[src], src, header_from_copy if with_header else None)
            _write(dest / glsl_dir / copy_src, text)
            table = []
            fanned = [(v, j) for v in members for j in range(salts)]
            for v, j in fanned[: variants - len(chosen)]:
                salt = len(chosen)
                sv = SyntheticVariant(
                    name=f"{v.name}_c{copy}" + (f"_s{j}" if salts > 1 else ""),
                    source=f"{glsl_dir}/{copy_src}",
                    defines=tuple(sorted(dict(v.defines, **{SALT_DEFINE: f"{salt}u"}).items())),
                    includes_header=with_header,
                )
                table.append(sv)
                chosen.append(sv)
            tables.append((copy_src, table))
        copy += 1

    spirv_dir, manifest = "spirv", "manifests/shaders.json"
    _write(dest / "pyproject.toml", _pyproject_text(settings, spirv_dir, manifest, tables))
    return SyntheticProject(
        root=dest, glsl_dir=glsl_dir, spirv_dir=spirv_dir, manifest=manifest,
        target_env=settings["target_env"], flags=tuple(settings.get("flags", ())),
        variants=tuple(chosen), source_count=len(tables), header=header_rel,
    )


def edit_header(project: SyntheticProject) -> int:
    """Bump the shared header's salt (a real change of the dependents' code); return it."""
    path = project.root / project.header
    m = _HEADER_VALUE.search(path.read_text(encoding="utf-8"))
    value = int(m.group(1)) + 1 if m else 1
    _write(path, _header_text(value))
    return value


def _spread(index: int, share: float) -> bool:
    """True for an evenly spread ``share`` of the indices 0, 1, 2, ..., index 0 included."""
    return math.ceil((index + 1) * share) > math.ceil(index * share)


def _header_text(value: int) -> str:
    return (
        "// Shared by a known share of the benchmark's sources; the benchmark edits it.\n"
        f"#define {_HEADER_SALT} {value}u\n"
    )


def _wrap_source(text: str, name: str, header_include: str | None) -> str:
    m = _VERSION_LINE.search(text)
    if not m:
        raise ConfigError(f"bench: {name} has no #version line to copy it behind")
    if header_include is not None:
        salt_source = (
            "#extension GL_GOOGLE_include_directive : enable\n"
            f'#include "{header_include}"\n'
        )
    else:
        salt_source = f"#define {_HEADER_SALT} 0u\n"
    prologue = (
        f"// genspirv bench: a copy of {name}; main renamed, wrapped below.\n"
        f"{salt_source}"
        f"#define main {_INNER_MAIN}\n"
    )
    epilogue = (
        "\n#undef main\n"
        "// Never taken (no dispatch has zero groups), but it puts the salts in the blob.\n"
        "void main() {\n"
        f"    if (gl_NumWorkGroups.x == 0u && gl_WorkGroupID.x == {SALT_DEFINE} + {_HEADER_SALT}) {{\n"
        "        return;\n"
        "    }\n"
        f"    {_INNER_MAIN}();\n"
        "}\n"
    )
    end = m.end()
    return text[:end] + "\n" + prologue + text[end:].lstrip("\n") + epilogue


def _toml_str(s: str) -> str:
    # A JSON string with only BMP escapes is a valid TOML basic string.
    return json.dumps(s, ensure_ascii=False)


def _pyproject_text(settings: Mapping, spirv_dir: str, manifest: str,
                    tables: list[tuple[str, list[SyntheticVariant]]]) -> str:
    lines = [
        "# Synthetic project written by genspirv's build benchmark.",
        "[tool.genspirv]",
        f"glsl_dir = {_toml_str(settings['glsl_dir'])}",
        f"spirv_dir = {_toml_str(spirv_dir)}",
        f"manifest = {_toml_str(manifest)}",
        f"target_env = {_toml_str(settings['target_env'])}",
        f"glslang = {_toml_str(settings['glslang'])}",
        "flags = [" + ", ".join(_toml_str(f) for f in settings.get("flags", ())) + "]",
        "",
    ]
    for src, table in tables:
        lines.append(f"[tool.genspirv.shaders.{_toml_str(src)}]")
        lines.append("variants = [")
        for v in table:
            defines = ", ".join(f"{_toml_str(k)} = {_toml_str(val)}" for k, val in v.defines)
            lines.append(f"  {{ name = {_toml_str(v.name)}, defines = {{ {defines} }} }},")
        lines.append("]")
        lines.append("")
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# -- generator-driven projects (a real backend's shape) -------------------------

# llama.cpp's Vulkan backend optimises 1,380 of its 1,979 variants and builds 125 for vulkan1.3.
OPTIMIZED_SHARE = 1380 / 1979
VULKAN13_SHARE = 125 / 1979
GENERATOR_FILE = "shaders/variants.py"


# A real backend's generated code: one C++ file per source and one header, all from one
# project template that writes every blob with hex_bytes (llama.cpp's ggml-vulkan-shaders).
OUTPUTS_TEMPLATE = "tools/shaders.j2"
OUTPUTS_DIR = "src/shaders"
OUTPUTS_HEADER = "shaders.hpp"
_OUTPUTS_TEMPLATE_TEXT = """\
// {{ banner }}
{% set name = output.rsplit('/', 1)[1] %}
{% if name == 'HEADER' %}
#pragma once
#include <cstdint>

{% for s in shaders %}
extern const unsigned char {{ s.ident }}_data[{{ s.size }}];
extern const uint64_t {{ s.ident }}_len;
{% endfor %}
{% else %}
#include "HEADER"
{% set stem = name.rsplit('.', 1)[0] %}
{% for s in shaders if s.source.rsplit('/', 1)[1] == stem ~ '.comp' %}
BLOB
const uint64_t {{ s.ident }}_len = {{ s.size }};
{% endfor %}
{% endif %}
""".replace("HEADER", OUTPUTS_HEADER)
# Each blob's array: its bytes as hex (any genspirv's template filters can render it), or
# under blobs = "files" the blob file itself.
_BLOB_TEXT = {"arrays": """\
const unsigned char {{ s.ident }}_data[{{ s.size }}] = {
    {{ s.blob | hex_bytes | join(",\\n    ") }}
};""", "files": "{{ s | blob_array(s.ident ~ '_data') }}"}


def outputs_template(blobs: str) -> str:
    """The project template of ``generate_generator_project``'s outputs, for that ``blobs``."""
    return _OUTPUTS_TEMPLATE_TEXT.replace("BLOB", _BLOB_TEXT[blobs])


@dataclass(frozen=True)
class GeneratorProject:
    """A synthetic project whose variants come from a generator file, not the TOML table."""

    project: SyntheticProject
    optimized: frozenset[str]        # names of the variants built with optimize = true
    vulkan13: frozenset[str]         # names built for vulkan1.3
    outputs: tuple[str, ...] = ()    # generated files (root-relative): one per source and a header

    @property
    def root(self) -> Path:
        return self.project.root


def generate_generator_project(repo_root, dest, variants: int, header_share: float = 0.25,
                               per_source: float = LLAMA_CPP_VARIANTS_PER_SOURCE,
                               optimized_share: float = OPTIMIZED_SHARE,
                               vulkan13_share: float = VULKAN13_SHARE, outputs: str = "") -> GeneratorProject:
    """``generate_project``'s sources and variants, listed by a generator file (``shaders/variants.py``)
    with a share of the variants optimised and a share built for vulkan1.3, as in llama.cpp.
    ``outputs`` ("arrays" or "files", the entries' ``blobs``): also generated code in a real
    backend's shape, ``OUTPUTS_DIR/<source stem>.cpp`` for every source and ``OUTPUTS_HEADER``,
    from the one template ``OUTPUTS_TEMPLATE``."""
    project = generate_project(repo_root, dest, variants, header_share, per_source)
    glsl_prefix = project.glsl_dir + "/"
    optimized, vulkan13, rows = set(), set(), []
    for i, v in enumerate(project.variants):
        row = {"name": v.name, "source": v.source[len(glsl_prefix):], "defines": dict(v.defines)}
        if _spread(i, optimized_share):
            row["optimize"] = True
            optimized.add(v.name)
        if _spread(i, vulkan13_share):
            row["target_env"] = "vulkan1.3"
            vulkan13.add(v.name)
        rows.append(row)
    _write(Path(dest) / GENERATOR_FILE, _generator_text(rows))
    settings = {"glsl_dir": project.glsl_dir, "target_env": project.target_env, "glslang": "13.1.1",
                "flags": project.flags}
    text = _pyproject_text(settings, project.spirv_dir, project.manifest, [])
    generated: tuple[str, ...] = ()
    if outputs:
        stems = sorted({PurePosixPath(v.source).stem for v in project.variants})
        generated = tuple(f"{OUTPUTS_DIR}/{stem}.cpp" for stem in stems) + (f"{OUTPUTS_DIR}/{OUTPUTS_HEADER}",)
        _write(Path(dest) / OUTPUTS_TEMPLATE, outputs_template(outputs))
        blobs = "" if outputs == "arrays" else f", blobs = {_toml_str(outputs)}"    # arrays: any genspirv reads it
        entries = ",\n".join(f"  {{ template = {_toml_str(OUTPUTS_TEMPLATE)}, output = {_toml_str(out)}{blobs} }}"
                             for out in generated)
        text += f"generate = [\n{entries},\n]\n"
    _write(Path(dest) / "pyproject.toml", text + f"generator = {_toml_str(GENERATOR_FILE)}\n")
    return GeneratorProject(project, frozenset(optimized), frozenset(vulkan13), generated)


def _generator_text(rows: list[dict]) -> str:
    # The variants as data and a loop over them, the way a backend's generator reads its tables.
    return ("# Written by genspirv's build benchmark: the synthetic backend's variants.\n"
            "import json\n\n"
            f"_TABLE = json.loads({json.dumps(json.dumps(rows))})\n\n\n"
            "def variants():\n"
            "    return [dict(row) for row in _TABLE]\n")
