"""Preambles: a file's text before a source's first line (genspirv/toolchain/preamble.py, docs/RULES.md "Preambles").

The composition and the way back from its lines are pure and tested on
strings; the config key is tested through ``load_config``; the content key
and ``depends`` through builds with the in-memory compiler
(tests/fake_compiler.py), asserting on the report and the plan's reasons; the
bytes, the messages' ``file:line`` and the working tree through real glslang.
A synthetic backend of the shape that motivated the feature is in
tests/test_preamble_backend.py.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from fake_compiler import ERROR_MARK, FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.buildsys.keys import KeyInputs
from genspirv.project.config import load_config
from genspirv.errors import CompileError, ConfigError
from genspirv.buildsys.plan import Action, Reason
from genspirv.toolchain.preamble import compose, missing_version, version_line

HEADER = "#version 450\n#define FLOAT float\n"
HEADER16 = ("#version 450\n#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
            "#define FLOAT float16_t\n")
BODY = "layout(local_size_x = 1) in;\nvoid main() {}\n"


# -- composing, and the way back ------------------------------------------------


def test_the_preamble_goes_before_the_first_line_and_each_line_maps_back_to_its_file():
    c = compose("glsl/h.glsl", "#version 450\n// two", "glsl/a.comp", "line one\nline two\n")
    assert c.text == "#version 450\n// two\nline one\nline two\n"      # a newline added, nothing else
    assert [c.origin(n) for n in (1, 2, 3, 4)] == [("glsl/h.glsl", 1), ("glsl/h.glsl", 2),
                                                   ("glsl/a.comp", 1), ("glsl/a.comp", 2)]
    said = ("/tmp/w/a.comp:2: error: 'x' : undeclared identifier\n"
            "/tmp/w/a.comp:4: error: 'y' : undeclared identifier\n"
            "glsl/include/c.glsl:9: error: 'z' : kept as glslang named it")
    assert c.remap(said, "/tmp/w/a.comp").splitlines() == [
        "glsl/h.glsl:2: error: 'x' : undeclared identifier",
        "glsl/a.comp:2: error: 'y' : undeclared identifier",
        "glsl/include/c.glsl:9: error: 'z' : kept as glslang named it"]


def test_a_version_in_both_files_is_refused_naming_both():
    with pytest.raises(CompileError) as caught:
        compose("glsl/h.glsl", "// header\n#version 450\n", "glsl/a.comp", "\n#version 450\n" + BODY, "a_f32")
    assert caught.value.messages == (
        "glsl/a.comp:2: error: #version here and in its preamble glsl/h.glsl:2: the preamble's text goes "
        "before the source's first line, so keep one: delete the source's #version line (or the preamble's)")
    assert "\n" not in caught.value.messages and caught.value.source == "glsl/a.comp"
    # Negative controls: #version in one of the two is what a preamble is for.
    compose("glsl/h.glsl", "#version 450\n", "glsl/a.comp", BODY)
    compose("glsl/h.glsl", "// a licence\n/* and a\n   block */\n", "glsl/a.comp", "#version 450\n" + BODY)


def test_a_source_version_after_preamble_text_is_refused():
    with pytest.raises(CompileError, match=r"^a: glsl/a.comp does not compile:\nglsl/a.comp:1: error: #version "
                                           r"must come first, but its preamble glsl/h.glsl goes before it: move"):
        compose("glsl/h.glsl", "#define FLOAT float\n", "glsl/a.comp", "#version 450\n" + BODY, "a")


def test_version_lines_in_comments_do_not_count():
    assert version_line("// #version 450\n/* #version 450\n*/\n  # version 450 core\n") == 4
    assert version_line("/*\n#version 450\n*/ void main() {}") is None


def test_the_missing_version_hint_replaces_glslang_s_fileless_complaint():
    said = ("ERROR: #version: compute shaders require es profile with version 310 or above, or non-es "
            "profile with version 420 or above\nglsl/a.comp:2: error: '' :  syntax error, unexpected IDENTIFIER")
    assert missing_version(said, BODY, "glsl/a.comp").splitlines() == [
        "glsl/a.comp:1: error: no #version line: add `#version 450` as its first line, or give it a preamble "
        "that holds one (preamble = \"path/header.glsl\" in [tool.genspirv])",
        "glsl/a.comp:2: error: '' :  syntax error, unexpected IDENTIFIER"]
    assert missing_version(said, BODY, "glsl/a.comp", "glsl/h.glsl").startswith(
        "glsl/h.glsl:1: error: no #version line, neither in this preamble nor in glsl/a.comp")
    # Negative controls: a text with #version, or a failure glslang gave another cause, keeps its messages.
    assert missing_version(said, "#version 450\n" + BODY, "glsl/a.comp") is None
    assert missing_version("glsl/a.comp:2: error: 'x' : undeclared identifier", BODY, "glsl/a.comp") is None


# -- the config key --------------------------------------------------------------


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


GEN = """\
def variants():
    return [{"name": "g16", "source": "b.comp", "preamble": "glsl/h16.glsl"},
            {"name": "g_none", "source": "b.comp", "preamble": ""}]
"""


def test_preamble_resolves_variant_over_source_over_top_level(tmp_path):
    root = write(tmp_path, {"glsl/h.glsl": HEADER, "glsl/h16.glsl": HEADER16, "glsl/a.comp": BODY,
                            "glsl/b.comp": BODY, "glsl/c.comp": "#version 450\n" + BODY, "gen.py": GEN,
                            "pyproject.toml": """\
        [tool.genspirv]
        preamble = "glsl/h.glsl"
        generator = "gen.py"
        [tool.genspirv.shaders."a.comp"]
        variants = [ { name = "a32" }, { name = "a16", preamble = "glsl/h16.glsl" } ]
        [tool.genspirv.shaders."c.comp"]
        preamble = ""
        """})
    got = {v.name: v.preamble for v in load_config(root).variants}
    assert got == {"a32": "glsl/h.glsl", "a16": "glsl/h16.glsl", "g16": "glsl/h16.glsl", "g_none": None,
                   "c": None}


@pytest.mark.parametrize("line, said", [
    ('preamble = "glsl/nope.glsl"', "tool.genspirv.preamble: no such file glsl/nope.glsl (a preamble is a path "
                                    "relative to the project root)"),
    ('preamble = "../h.glsl"', "tool.genspirv.preamble: '../h.glsl' must be a relative posix path inside the "
                               "project, without '..'"),
    ("preamble = 1", "tool.genspirv.preamble: expected a relative posix path, got an integer (1)"),
])
def test_a_bad_preamble_names_the_key(tmp_path, line, said):
    write(tmp_path, {"glsl/a.comp": BODY, "pyproject.toml": f"[tool.genspirv]\n{line}\n"})
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value) == said


def test_a_generator_variant_with_a_missing_preamble_is_named(tmp_path):
    write(tmp_path, {"glsl/a.comp": BODY, "gen.py": 'def variants():\n    return [{"name": "x", "source": '
                     '"a.comp", "preamble": "glsl/fp16.glsl"}]\n', "pyproject.toml": '[tool.genspirv]\ngenerator = "gen.py"\n'})
    with pytest.raises(ConfigError, match=r"^gen.py: variant 'x'.preamble: no such file glsl/fp16.glsl"):
        load_config(tmp_path)


def test_an_output_cannot_overwrite_a_preamble(tmp_path):
    write(tmp_path, {"glsl/a.comp": BODY, "manifests/h.glsl": HEADER,
                     "pyproject.toml": '[tool.genspirv]\npreamble = "manifests/h.glsl"\nmanifest = "manifests/h.glsl"\n'})
    with pytest.raises(ConfigError, match="would overwrite the preamble of variant a"):
        load_config(tmp_path)


def test_cmake_reruns_the_build_when_a_preamble_outside_the_shader_folder_changes(tmp_path):
    from genspirv.emit.cmake import depfile_inputs
    write(tmp_path, {"glsl/a.comp": BODY, "headers/h.glsl": HEADER,
                     "pyproject.toml": '[tool.genspirv]\npreamble = "headers/h.glsl"\n'})
    assert tmp_path / "headers/h.glsl" in depfile_inputs(load_config(tmp_path))     # no manifest yet


# -- flags that hold a line break --------------------------------------------------


@pytest.mark.parametrize("where, flags, said", [
    ("top", '["-P#extension X : enable\\n#define FLOAT float"]', "tool.genspirv.flags[0]: "),
    ("variant", '["-DA=1", "-Pa\\rb"]', "tool.genspirv.shaders.\"a.comp\".variants[0].flags[1]: "),
])
def test_a_flag_with_a_control_character_is_refused_naming_the_key_and_the_preamble(tmp_path, where, flags, said):
    table = f"flags = {flags}\n" if where == "top" else \
        f'[tool.genspirv.shaders."a.comp"]\nvariants = [ {{ name = "a16", flags = {flags} }} ]\n'
    write(tmp_path, {"glsl/a.comp": BODY, "pyproject.toml": "[tool.genspirv]\n" + table})
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert message.startswith(said) and "holds the control character" in message and "\n" not in message
    assert message.endswith('put lines that go before the source in a file and name it with '
                            'preamble = "path/header.glsl"')


def test_a_generator_flag_with_a_newline_names_the_variant(tmp_path):
    write(tmp_path, {"glsl/a.comp": BODY, "pyproject.toml": '[tool.genspirv]\ngenerator = "gen.py"\n',
                     "gen.py": 'def variants():\n    return [{"name": "mm_f16", "source": "a.comp", '
                               '"flags": ["-P#define A 1\\n#define B 2"]}]\n'})
    with pytest.raises(ConfigError, match=r"^gen.py: variant 'mm_f16'.flags\[0\]: .* holds the control character"):
        load_config(tmp_path)
    # Negative control: the same text in one line is a flag like any other.
    (tmp_path / "gen.py").write_text('def variants():\n    return [{"name": "mm_f16", "source": "a.comp", '
                                     '"flags": ["-P#define A 1"]}]\n')
    assert load_config(tmp_path).variants[0].flags == ("-P#define A 1",)


# -- files of other stages ----------------------------------------------------------


def test_other_stage_files_are_listed_and_never_variants(tmp_path):
    write(tmp_path, {"glsl/a.comp": "#version 450\n" + BODY, "glsl/blit.frag": "", "glsl/fx/quad.vert": "",
                     "glsl/include/x.geom": "", "glsl/wip/trace.rgen": "",
                     "pyproject.toml": '[tool.genspirv]\nexclude = ["wip/*"]\n'})
    config = load_config(tmp_path)
    assert [v.name for v in config.variants] == ["a"]
    assert config.other_stages == ("glsl/blit.frag", "glsl/fx/quad.vert")    # include/ and excluded left out
    assert config.other_stages_note() == ("genspirv builds compute shaders: 2 other-stage files left alone: "
                                          "glsl/blit.frag, glsl/fx/quad.vert")
    assert config.other_stages_note(shown=1).endswith("left alone: glsl/blit.frag, and 1 more")


def test_a_variant_naming_another_stage_is_refused_naming_the_stage(tmp_path):
    write(tmp_path, {"glsl/a.comp": BODY, "glsl/blit.frag": "",
                     "pyproject.toml": '[tool.genspirv.shaders."blit.frag"]\n'})
    with pytest.raises(ConfigError, match=r'^tool.genspirv.shaders."blit.frag": glsl/blit.frag is a fragment '
                                          r"shader \(.frag\); genspirv builds compute shaders \(.comp\) only"):
        load_config(tmp_path)
    write(tmp_path, {"pyproject.toml": '[tool.genspirv]\ngenerator = "gen.py"\n',
                     "gen.py": 'def variants():\n    return [{"name": "blit", "source": "blit.frag"}]\n'})
    with pytest.raises(ConfigError, match=r"^gen.py: variant 'blit': source: glsl/blit.frag is a fragment shader"):
        load_config(tmp_path)


def test_the_build_names_other_stage_files_once_in_its_summary(tiny_project, genspirv):
    root = tiny_project(extra={"glsl/blit.frag": "#version 450\nvoid main() {}\n"})
    result = genspirv("build", "--quiet", "--root", root)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "genspirv build: genspirv builds compute shaders: 1 other-stage file left alone: glsl/blit.frag",
        "genspirv build: 3 compiled, 0 up to date, 0 removed, 4 files written"]


# -- the content key and depends (fake compiler) -----------------------------------


TABLE = """\
[tool.genspirv]
preamble = "glsl/fp32.glsl"
[tool.genspirv.shaders."unary.comp"]
variants = [ { name = "unary_f32" }, { name = "unary_f16", preamble = "glsl/fp16.glsl" } ]
[tool.genspirv.shaders."binary.comp"]
variants = [ { name = "binary_f32" }, { name = "binary_f16", preamble = "glsl/fp16.glsl" } ]
"""
FILES = {"glsl/fp32.glsl": HEADER, "glsl/fp16.glsl": HEADER16, "glsl/include/common.glsl": "// common\n",
         "glsl/unary.comp": '#include "common.glsl"\n' + BODY, "glsl/binary.comp": BODY, "glsl/plain.comp":
         "#version 450\n" + BODY, "pyproject.toml": TABLE + '[tool.genspirv.shaders."plain.comp"]\npreamble = ""\n'}


def fake_build(root: Path, fake: FakeCompiler):
    lines: list[str] = []
    return build(load_config(root), compiler=fake, jobs=1, explain=lines.append), lines


@pytest.fixture
def fake_built(tmp_path):
    root = write(tmp_path / "proj", FILES)
    report, _ = fake_build(root, FakeCompiler())
    assert len(report.compiled) == 5
    return root


def test_editing_a_preamble_rebuilds_exactly_the_variants_that_use_it(fake_built):
    (fake_built / "glsl/fp16.glsl").write_text(HEADER16 + "#define FLOAT4 f16vec4\n")
    fake = FakeCompiler()
    report, lines = fake_build(fake_built, fake)
    assert sorted(report.compiled) == ["binary_f16", "unary_f16"] and sorted(fake.compiles) == sorted(report.compiled)
    assert sorted(report.up_to_date) == ["binary_f32", "plain", "unary_f32"]
    assert {s.name: s.reason for s in report.plan.steps if s.action is Action.COMPILE} == {
        "binary_f16": Reason.PREAMBLE_CHANGED, "unary_f16": Reason.PREAMBLE_CHANGED}
    assert "explain: unary_f16: compile: glsl/fp16.glsl changed" in lines
    # Negative control: editing the source rebuilds both of its variants, for the source.
    (fake_built / "glsl/binary.comp").write_text(BODY + "// edited\n")
    report, _ = fake_build(fake_built, FakeCompiler())
    assert sorted(report.compiled) == ["binary_f16", "binary_f32"]
    assert {s.reason for s in report.plan.steps if s.action is Action.COMPILE} == {Reason.SOURCE_CHANGED}


def test_switching_or_dropping_a_preamble_says_which(fake_built):
    (fake_built / "pyproject.toml").write_text(FILES["pyproject.toml"].replace(
        '{ name = "unary_f32" }', '{ name = "unary_f32", preamble = "glsl/fp16.glsl" }').replace(
        '{ name = "binary_f32" }', '{ name = "binary_f32", preamble = "" }'))
    report, lines = fake_build(fake_built, FakeCompiler())
    assert "explain: unary_f32: compile: preamble changed: glsl/fp32.glsl -> glsl/fp16.glsl" in lines
    assert any(line.startswith("explain: binary_f32: compile: preamble changed: glsl/fp32.glsl -> none")
               for line in lines)


def test_the_preamble_follows_the_source_in_depends_and_keys_without_one_are_unchanged(fake_built):
    manifest = json.loads((fake_built / "manifests/shaders.json").read_text())
    depends = {e["name"]: e["depends"] for e in manifest["shaders"]}
    assert depends["unary_f16"] == ["glsl/unary.comp", "glsl/fp16.glsl", "glsl/include/common.glsl"]
    assert depends["binary_f32"] == ["glsl/binary.comp", "glsl/fp32.glsl"]
    assert depends["plain"] == ["glsl/plain.comp"]
    inputs = dict(source="a.comp", defines=(), compiler="c", flags=(), target_env="vulkan1.2", include_dirs=(),
                  include_directive=True, validate=True, files=(("a.comp", "00"),))
    assert "preamble" not in KeyInputs(**inputs).doc                 # the document keys have always hashed
    assert KeyInputs(**inputs, preamble="h.glsl").key != KeyInputs(**inputs).key
    assert KeyInputs.from_doc(KeyInputs(**inputs, preamble="h.glsl").doc).preamble == "h.glsl"


def test_a_fresh_clone_with_preambles_builds_nothing(fake_built):
    import shutil
    shutil.rmtree(fake_built / ".genspirv")            # only the committed manifest's inputs and depends
    fake = FakeCompiler()
    report, _ = fake_build(fake_built, fake)
    assert report.compiled == () and not fake.compiles and len(report.up_to_date) == 5


def test_an_extension_the_compiler_lacks_in_a_preamble_keys_the_unavailable_variant_on_it(tmp_path):
    table = FILES["pyproject.toml"].replace('.comp"]\n', '.comp"]\noptional = true\n')
    root = write(tmp_path, {**FILES, "pyproject.toml": table})
    fake = FakeCompiler(missing=("GL_EXT_shader_explicit_arithmetic_types_float16",))
    report, _ = fake_build(root, fake)
    assert [name for name, _ in report.unavailable] == ["binary_f16", "unary_f16"]
    manifest = json.loads((root / "manifests/shaders.json").read_text())
    assert manifest["unavailable"][0]["depends"] == ["glsl/binary.comp", "glsl/fp16.glsl"]
    assert manifest["unavailable"][1]["depends"] == ["glsl/unary.comp", "glsl/fp16.glsl"]
    # The header no longer needs it: the variant builds, without an edit to its source.
    (root / "glsl/fp16.glsl").write_text(HEADER)
    report, lines = fake_build(root, fake)
    assert "binary_f16" in report.compiled and report.unavailable == ()
    assert "explain: binary_f16: compile: glsl/fp16.glsl changed" in lines


def test_an_error_marked_in_a_preamble_fails_exactly_its_variants(fake_built):
    (fake_built / "glsl/fp16.glsl").write_text(HEADER16 + ERROR_MARK + "\n")
    with pytest.raises(CompileError) as caught:
        fake_build(fake_built, FakeCompiler())
    assert sorted(caught.value.report.failed) == ["binary_f16", "unary_f16"]
    assert "glsl/fp16.glsl:4: error:" in str(caught.value)


# -- real glslang: bytes, messages, the working tree -----------------------------------


MAIN = """\
#include "near.glsl"
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Buf { FLOAT data[]; };
void main() { data[gl_GlobalInvocationID.x] = FLOAT(NEAR + COMMON); }
"""
# near.glsl in include/ too: found there, not beside the source, the bytes would differ.
REAL = {"glsl/headers/fp32.glsl": HEADER, "glsl/ops/near.glsl": "#define NEAR 2\n",
        "glsl/include/near.glsl": "#define NEAR 7\n", "glsl/include/common.glsl": "#define COMMON 3\n",
        "glsl/ops/k.comp": MAIN,
        "pyproject.toml": '[tool.genspirv]\npreamble = "glsl/headers/fp32.glsl"\n'}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_bytes_equal_the_hand_written_concatenation_and_the_working_tree_stays_clean(tmp_path, genspirv):
    root = write(tmp_path / "proj", {**REAL, ".gitignore": ".genspirv/\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sources")
    assert genspirv("build", "--root", root).code == 0
    # Only the committed outputs are new: the composed file stayed in .genspirv/.
    assert git(root, "status", "--porcelain", "--untracked-files=all").split() == [
        "??", "manifests/shaders.json", "??", "spirv/k.spv"]
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "outputs")
    assert genspirv("check", "--root", root).code == 0
    assert genspirv("build", "--root", root).out.endswith("0 compiled, 1 up to date, 0 removed, 0 files written\n")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    # The same text written by hand beside the source, built as a source of its own: the same bytes
    # (its includes found where the source's are: near.glsl beside it, common.glsl in include/).
    hand = tmp_path / "hand"
    write(hand, {**REAL, "glsl/ops/k.comp": HEADER + MAIN, "pyproject.toml": "[tool.genspirv]\n"})
    assert genspirv("build", "--root", hand).code == 0
    assert (hand / "spirv/k.spv").read_bytes() == (root / "spirv/k.spv").read_bytes()


@pytest.mark.slow
def test_errors_keep_the_source_s_and_the_preamble_s_own_lines(tmp_path, genspirv):
    root = write(tmp_path, {**REAL, "glsl/ops/k.comp": MAIN.replace("NEAR + COMMON", "NEAR + nope")})
    result = genspirv("build", "--quiet", "--root", root)
    assert result.code == 1
    assert "glsl/ops/k.comp:5: error: 'nope' : undeclared identifier" in result.err.splitlines()
    write(root, {"glsl/ops/k.comp": MAIN, "glsl/headers/fp32.glsl": HEADER + "oops here;\n"})
    result = genspirv("build", "--quiet", "--root", root)
    assert result.code == 1
    assert "glsl/headers/fp32.glsl:3: error: '' :  syntax error, unexpected IDENTIFIER" in result.err.splitlines()
    write(root, {"glsl/headers/fp32.glsl": HEADER, "glsl/ops/k.comp": "#version 450\n" + MAIN})
    result = genspirv("build", "--quiet", "--root", root)
    assert result.code == 1 and ("glsl/ops/k.comp:1: error: #version here and in its preamble "
                                 "glsl/headers/fp32.glsl:1: ") in result.err


def test_a_source_without_version_is_told_where_and_how(tmp_path, genspirv):
    root = write(tmp_path, {"glsl/a.comp": BODY, "glsl/b.comp": "#version 450\n" + BODY})
    result = genspirv("build", "--quiet", "--root", root)
    assert result.code == 1
    lines = result.err.splitlines()
    assert lines[:2] == ["genspirv: error: glsl/a.comp does not compile:",
                         "glsl/a.comp:1: error: no #version line: add `#version 450` as its first line, or give "
                         "it a preamble that holds one (preamble = \"path/header.glsl\" in [tool.genspirv])"]
    assert not any(line.startswith("ERROR: #version") for line in lines)
