"""Lint suppressions: the config's lint.ignore at every level, GLSL comments, and the unused ones reported.

One small project is built once with real glslang (lint reads real blobs);
each test then rewrites only what lint reads besides them (the config, the
GLSL's comments: the bindings stay as built) and lints again.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from genspirv.buildsys.builder import build
from genspirv.project.config import load_config
from genspirv.errors import ConfigError
from genspirv.manifest import load_manifest
from genspirv.project.lint_rules import Rule
from genspirv.lint.suppress import lint_project

K = """\
#version 450
#include "common.glsl"
#define SPARE_BINDING 3
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) writeonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer Unused { float u[]; } unused;{c2}
layout(std430, binding = SPARE_BINDING) readonly buffer Spare {{ float s[]; }} spare;{c3}
void main() {{ b[gl_GlobalInvocationID.x] = a[gl_GlobalInvocationID.x] * SCALE; }}
"""
CLEAN = """\
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
void main() { x[gl_GlobalInvocationID.x] += 1.0; }
"""
COMMON = "#define SCALE 2.0\n"
TABLE = """\
[tool.genspirv.shaders."k.comp"]
variants = [ { name = "k_one"{v1} }, {{ name = "k_two"{v2} }} ]
"""


def glsl(c2: str = "", c3: str = "") -> str:
    return K.replace("{c2}", c2).replace("{c3}", c3).replace("{{", "{").replace("}}", "}")


def table(v1: str = "", v2: str = "") -> str:
    return TABLE.replace("{v1}", v1).replace("{v2}", v2).replace("{{", "{").replace("}}", "}")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("suppress") / "proj"
    for rel, text in {"glsl/k.comp": glsl(), "glsl/clean.comp": CLEAN, "glsl/include/common.glsl": COMMON,
                      "pyproject.toml": "[tool.genspirv]\n" + table()}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    build(load_config(root))
    return root


@pytest.fixture
def proj(built, tmp_path):
    return shutil.copytree(built, tmp_path / "proj")


def lint_with(root: Path, top: str = "", tables: str = "", k: str | None = None, common: str | None = None,
              kinds: tuple[str, ...] | None = None):
    """The findings as lines; those of ``kinds`` only when given (k_one and k_two are also
    byte-identical, an identical-blobs finding the tests of binding suppressions leave out)."""
    (root / "pyproject.toml").write_text("[tool.genspirv]\n" + top + "\n" + (tables or table()))
    if k is not None:
        (root / "glsl/k.comp").write_text(k)
    if common is not None:
        (root / "glsl/include/common.glsl").write_text(common)
    config = load_config(root)
    kinds = kinds or tuple(r.value for r in Rule if r is not Rule.IDENTICAL_BLOBS)
    return [str(f) for f in lint_project(load_manifest(root / config.manifest), config) if f.kind in kinds]


def test_identical_blobs_is_found_and_can_be_suppressed_like_any_rule(proj):
    every = tuple(r.value for r in Rule)
    found = lint_with(proj, kinds=every)
    assert [f for f in found if f.endswith("[identical-blobs]")] != []
    quiet = lint_with(proj, top='lint = { ignore = ["identical-blobs"] }', kinds=every)
    assert [f for f in quiet if "identical-blobs" in f] == [] and len(quiet) == len(found) - 1


NEVER_2 = "storage_buffer 'unused' is never accessed"
NEVER_3 = "storage_buffer 'spare' is never accessed"


def test_without_suppressions_each_unused_binding_is_a_finding(proj):
    found = lint_with(proj)
    assert len(found) == 4 and sum(NEVER_2 in f for f in found) == 2 and sum(NEVER_3 in f for f in found) == 2
    assert "suppress it: // genspirv: ignore[never-accessed]" in found[0]    # the advice says how


def test_a_comment_on_the_binding_line_silences_that_binding_only(proj):
    found = lint_with(proj, k=glsl(c2="  // genspirv: ignore[never-accessed]"))
    assert found == [f"k_one: set 0 binding 3: {NEVER_3} by 'main'; use it or remove it (where binding numbers "
                     "must stay, suppress it: // genspirv: ignore[never-accessed]) [never-accessed]",
                     f"k_two: set 0 binding 3: {NEVER_3} by 'main'; use it or remove it (where binding numbers "
                     "must stay, suppress it: // genspirv: ignore[never-accessed]) [never-accessed]"]


def test_a_binding_numbered_by_a_macro_is_matched_by_its_name(proj):
    found = lint_with(proj, k=glsl(c3=" // genspirv: ignore[never-accessed]"))
    assert [f for f in found if NEVER_3 in f] == [] and sum(NEVER_2 in f for f in found) == 2


def test_a_comment_that_silences_nothing_is_reported_with_its_file_and_line(proj):
    found = lint_with(proj, k=glsl(c2="  // genspirv: ignore[never-accessed, never-read]",
                                   c3=" // genspirv: ignore[never-acessed]"))
    assert "glsl/k.comp:7: genspirv: ignore[never-read] silences nothing on this line; remove it " \
           "[unused-suppression]" in found
    assert any(f.startswith("glsl/k.comp:8: genspirv: ignore names no lint rule 'never-acessed' (rules: ")
               for f in found)
    assert sum(NEVER_3 in f for f in found) == 2 and not any(NEVER_2 in f for f in found)


def test_ignore_file_in_an_include_covers_every_shader_that_includes_it(proj):
    found = lint_with(proj, common=COMMON + "// genspirv: ignore-file[never-accessed]\n")
    assert found == []
    found = lint_with(proj, common=COMMON + "// genspirv: ignore-file[never-written]\n")
    assert found[-1] == "glsl/include/common.glsl:2: genspirv: ignore-file[never-written] silences nothing " \
                        "on this file; remove it [unused-suppression]"


def test_top_level_source_and_variant_ignores_and_their_unused_ones(proj):
    assert lint_with(proj, top='lint = { ignore = ["never-accessed"] }') == []
    found = lint_with(proj, top='lint.ignore = ["never-accessed", "never-read"]')
    assert found == ["tool.genspirv.lint.ignore: ignoring 'never-read' silences nothing: no shader it covers "
                     "has that finding; remove it [unused-suppression]"]
    # Per source: k.comp's variants only; clean.comp's ignore silences nothing.
    found = lint_with(proj, tables=table() + 'lint.ignore = ["never-accessed"]\n'
                      '[tool.genspirv.shaders."clean.comp"]\nlint = { ignore = ["never-accessed"] }\n')
    assert found == ['tool.genspirv.shaders."clean.comp".lint.ignore: ignoring \'never-accessed\' silences '
                     'nothing: no shader it covers has that finding; remove it [unused-suppression]']
    # Per variant: k_two's findings go, k_one's stay.
    found = lint_with(proj, tables=table(v2=', lint = { ignore = ["never-accessed"] }'))
    assert len(found) == 2 and all(f.startswith("k_one:") for f in found)


def test_a_generator_variant_may_carry_lint_ignore(proj):
    (proj / "gen.py").write_text(textwrap.dedent("""\
        def variants():
            return [{"name": "k_one", "source": "k.comp", "lint": {"ignore": ["never-accessed"]}},
                    {"name": "k_two", "source": "k.comp"}]
        """))
    found = lint_with(proj, top='generator = "gen.py"', tables=" ")
    assert len(found) == 2 and all(f.startswith("k_two:") for f in found)


@pytest.mark.parametrize("text, said", [
    ('lint = { ignore = ["never-acessed"] }', "tool.genspirv.lint.ignore[0]: 'never-acessed' is not a lint rule"),
    ('lint = { ignore = ["unused-suppression"] }', "tool.genspirv.lint.ignore[0]: 'unused-suppression' is not"),
    ('lint = { skip = ["never-read"] }', "tool.genspirv.lint.skip: unknown key (allowed: ignore)"),
    ('lint = ["never-read"]', "tool.genspirv.lint: expected a table such as { ignore = "),
])
def test_a_bad_lint_table_is_refused_naming_the_key(proj, text, said):
    with pytest.raises(ConfigError) as info:
        lint_with(proj, top=text)
    assert said in str(info.value)


def test_the_cli_exits_0_when_every_finding_is_silenced_and_1_for_an_unused_suppression(proj, genspirv):
    (proj / "pyproject.toml").write_text('[tool.genspirv]\nlint.ignore = ["never-accessed", "identical-blobs"]\n' + table())
    result = genspirv("lint", "--root", proj)
    assert result.code == 0 and result.out == "genspirv lint: no findings\n"
    (proj / "pyproject.toml").write_text('[tool.genspirv]\nlint.ignore = ["never-accessed", "identical-blobs", '
                                         '"never-read"]\n' + table())
    result = genspirv("lint", "--root", proj)
    assert result.code == 1 and "[unused-suppression]" in result.out


def test_a_generated_source_is_linted_with_its_comments_from_the_generators_text(tmp_path):
    root = tmp_path / "gen"
    root.mkdir()
    text = glsl(c2="  // genspirv: ignore[never-accessed]").replace('#include "common.glsl"\n', "#define SCALE 2.0\n")
    (root / "gen.py").write_text(f"TEXT = {text!r}\n\ndef variants():\n"
                                 '    return [{"name": "g", "source": "g.comp", "source_text": TEXT}]\n')
    (root / "pyproject.toml").write_text('[tool.genspirv]\ngenerator = "gen.py"\n')
    build(load_config(root))
    shutil.rmtree(root / ".genspirv")            # a fresh clone: no generated file on disk
    config = load_config(root)
    found = [str(f) for f in lint_project(load_manifest(root / config.manifest), config)]
    assert len(found) == 1 and found[0].startswith("g: set 0 binding 3:")
