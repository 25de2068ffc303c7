"""Template-driven backends: generated sources and headers that never touch the working tree.

The backend is tests/template_backend.py (51 variants rendered from four
templates by its own generator, no glsl/ folder). Planning tests run against
the fake compiler (tests/fake_compiler.py) and assert through the build's
report and the fake's count of compiles; two small tests run real glslang
over a float-only listing (the generated files on the include path, check's
temporary folder naming them as the build does).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from fake_compiler import ERROR_MARK, FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.emit.cmake import depfile_inputs
from genspirv.errors import CompileError, ConfigError
from template_backend import LISTING, make_backend, names_by_template

GIT = shutil.which("git")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def fake_build(root: Path, **kw):
    compiler = FakeCompiler()
    report = build(load_config(root), compiler=compiler, jobs=1, **kw)
    return report, compiler


@pytest.fixture
def backend(tmp_path):
    root = make_backend(tmp_path / "backend")
    fake_build(root)
    return root


def test_the_backend_has_no_glsl_folder_and_51_variants_from_its_generator(backend):
    config = load_config(backend)
    assert not (backend / "glsl").exists()
    assert len(config.variants) == 51 and {k: len(v) for k, v in names_by_template(config).items()} == \
        {"binary": 18, "unary": 15, "reduce": 18}
    assert config.include_dirs == (".genspirv/generated",)
    entry = json.loads((backend / "manifests/shaders.json").read_text())["shaders"][0]
    assert entry["source"] == ".genspirv/generated/binary_op_add_float.comp"
    # depends: what was compiled, then the templates it came from and the generator.
    assert entry["depends"] == [".genspirv/generated/binary_op_add_float.comp", ".genspirv/generated/indexing.glslh",
                                "codegen/gen.py", "templates/binary_op.glsl.in", "templates/indexing.glslh.in",
                                "templates/variants.yaml"]


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="needs git")
def test_build_check_noop_and_a_fresh_clone_leave_git_status_clean(tmp_path):
    root = make_backend(tmp_path / "backend")
    git(root, "init", "-q")
    fake_build(root)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "backend")
    committed = set(git(root, "ls-files").split())
    assert not any(p.startswith(".genspirv") or p.endswith(".comp") for p in committed)   # no rendered GLSL
    assert not any("__pycache__" in p for p in committed)                # loading the generator wrote none
    assert (root / ".genspirv/generated/indexing.glslh").is_file()      # kept, but not in the tree

    report, compiler = fake_build(root)                                  # the no-op
    assert sum(compiler.compiles.values()) == 0 and report.written == ()
    assert check(load_config(root), compiler=FakeCompiler()).ok
    assert git(root, "status", "--porcelain", "--ignored=no") == ""

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    report, compiler = fake_build(clone)                                 # a fresh clone: nothing to do
    assert sum(compiler.compiles.values()) == 0 and report.written == () and len(report.up_to_date) == 51
    assert check(load_config(clone), compiler=FakeCompiler()).ok
    assert not (clone / ".genspirv/generated").exists()                  # check wrote nothing here
    assert git(clone, "status", "--porcelain") == ""

    # Negative control: a build that does change an output shows in git status.
    (clone / "templates/unary_op.glsl.in").write_text((clone / "templates/unary_op.glsl.in").read_text() + "// x\n")
    fake_build(clone)
    changed = {line[3:] for line in git(clone, "status", "--porcelain").splitlines()}
    assert "templates/unary_op.glsl.in" in changed and "manifests/shaders.json" in changed
    assert not any(p.startswith(".genspirv") for p in changed)


def test_editing_a_template_rebuilds_exactly_its_variants(backend):
    names = names_by_template(load_config(backend))
    unary = backend / "templates/unary_op.glsl.in"
    unary.write_text(unary.read_text().replace("void main", "// tuned\nvoid main"))
    report, compiler = fake_build(backend)
    assert set(report.compiled) == set(compiler.compiles) == names["unary"]

    header = backend / "templates/indexing.glslh.in"
    header.write_text(header.read_text().replace("#endif", "// shared\n#endif"))
    report, _ = fake_build(backend, explain=(lines := []).append)
    assert set(report.compiled) == names["binary"] | names["reduce"]       # its includers, not unary
    assert "explain: binary_op_add_float: compile: .genspirv/generated/indexing.glslh changed" in lines


def test_a_generator_edit_that_changes_no_text_recompiles_nothing(backend):
    gen = backend / "codegen/gen.py"
    gen.write_text(gen.read_text() + "\n# a comment: the generated text is the same\n")
    report, compiler = fake_build(backend)
    assert sum(compiler.compiles.values()) == 0 and report.written == ()


def test_changing_meta_in_the_variant_list_rerenders_the_registry_without_recompiling(backend):
    (backend / "codegen/gen.py").write_text((backend / "codegen/gen.py").read_text().replace(
        '"op": op,', '"op": op.upper(),'))
    report, compiler = fake_build(backend)
    assert sum(compiler.compiles.values()) == 0
    assert set(report.written) == {"manifests/shaders.json", "src/registry.inc"}
    registry = (backend / "src/registry.inc").read_text()
    assert 'REGISTER_SHADER(unary_op_neg_float, 32, "NEG", "float")' in registry
    # The subgroup size is in the text too (local_size_x): changing it recompiles that kind.
    (backend / "templates/variants.yaml").write_text(LISTING.replace("subgroup: 32", "subgroup: 16"))
    report, _ = fake_build(backend)
    assert set(report.compiled) == names_by_template(load_config(backend))["unary"]
    assert 'REGISTER_SHADER(unary_op_neg_float, 16, "NEG", "float")' in (backend / "src/registry.inc").read_text()


def test_a_broken_shared_header_is_one_block_naming_every_variant_and_its_template(backend):
    header = backend / "templates/indexing.glslh.in"
    header.write_text(header.read_text().replace("#endif", ERROR_MARK + "\n#endif"))
    with pytest.raises(CompileError) as info:
        fake_build(backend)
    text = str(info.value)
    hit = sorted(names_by_template(load_config(backend))["binary"] | names_by_template(load_config(backend))["reduce"])
    assert text.count("the fake refuses this line") == 1, text
    assert text.startswith("36 sources do not compile:\n.genspirv/generated/indexing.glslh:4: error:")
    assert "(.genspirv/generated/indexing.glslh is generated by codegen/gen.py from templates/indexing.glslh.in)" in text
    assert f"(in 36 variants: {', '.join(hit)})" in text
    assert "compilation terminated" not in text and "(1 more line from the compiler; -v prints them)" in text
    assert len(text.splitlines()) == 6          # header, error, origin, follow-on count, variants, summary
    with pytest.raises(CompileError) as info:
        fake_build(backend, verbose=True)
    assert "compilation terminated" in str(info.value)      # -v: the compiler's follow-on lines too


def test_errors_at_different_places_are_different_blocks(backend):
    # The negative control of the one above: an error in each unary source (15 generated
    # files, each its own) is 15 blocks beside the header's one.
    for rel in ("templates/indexing.glslh.in", "templates/unary_op.glsl.in"):
        path = backend / rel
        path.write_text(path.read_text().replace("void main", ERROR_MARK + "\nvoid main")
                        .replace("#endif", ERROR_MARK + "\n#endif"))
    with pytest.raises(CompileError) as info:
        fake_build(backend)
    text = str(info.value)
    assert text.count("the fake refuses this line") == 1 + 15
    assert text.count("(in 36 variants:") == 1 and "(in variant unary_op_abs_float)" in text
    assert ".genspirv/generated/unary_op_abs_float.comp:5: error:" in text


def test_the_depfile_lists_templates_and_the_generator_not_generated_files(backend):
    inputs = {p.relative_to(backend).as_posix() for p in depfile_inputs(load_config(backend))}
    assert {"templates/indexing.glslh.in", "templates/unary_op.glsl.in", "templates/variants.yaml",
            "codegen/gen.py", "pyproject.toml"} <= inputs
    assert not any(p.startswith(".genspirv") or p == "glsl" for p in inputs)


def test_a_generated_file_gone_from_the_generator_is_deleted_before_a_compile(backend):
    (backend / ".genspirv/generated/stale.glslh").write_text("// the generator gave this once\n")
    unary = backend / "templates/unary_op.glsl.in"
    unary.write_text(unary.read_text() + "// edit\n")
    fake_build(backend)
    assert not (backend / ".genspirv/generated/stale.glslh").exists()


GEN_ONE = """\
def files():
    return FILES

def variants():
    return VARIANTS
"""


@pytest.mark.parametrize("files, variants, said", [
    ('[{"path": "h.glslh", "text": "x", "template": "nowhere.in"}]', "[]",
     "gen.py: file 'h.glslh': template 'nowhere.in': no such file"),
    ('[{"path": "h.glslh", "text": b"x"}]', "[]", "gen.py: file 'h.glslh': 'text' must be a string of GLSL"),
    ('[{"path": "../h.glslh", "text": "x"}]', "[]", "'path' '../h.glslh' must be a normalised relative posix path"),
    ('[{"path": "h.glslh", "text": "x", "from": "t.in"}]', "[]", "gen.py: file 'h.glslh': unknown key 'from'"),
    ('[{"path": "a.comp", "text": "one"}]', '[{"name": "a", "source": "a.comp", "source_text": "two"}]',
     "gen.py: variant 'a': a different text for the generated file 'a.comp' than gen.py: file 'a.comp' gives"),
    ("[]", '[{"name": "a", "source": "a.comp", "template": "t.in"}]', "this variant has no source_text"),
    ("[]", '[{"name": "a", "source": "b.comp"}]', "no such source glsl/b.comp (and no generated file of that name)"),
    ('[{"path": "common.glsl", "text": "x"}]', "[]",
     "gen.py: the generated file 'common.glsl' has the name of glsl/include/common.glsl"),
    ('{"path": "h"}', "[]", "gen.py: files() must return a list of mappings, not dict"),
])
def test_bad_generated_files_are_refused_naming_the_generator_and_the_file(tmp_path, files, variants, said):
    (tmp_path / "glsl/include").mkdir(parents=True)
    (tmp_path / "glsl/include/common.glsl").write_text("// a real header\n")
    (tmp_path / "t.in").write_text("")
    (tmp_path / "gen.py").write_text(GEN_ONE.replace("FILES", files, 1).replace("VARIANTS", variants, 1))
    (tmp_path / "pyproject.toml").write_text('[tool.genspirv]\ngenerator = "gen.py"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert said in str(info.value)


def test_an_output_may_not_overwrite_a_template(tmp_path):
    root = make_backend(tmp_path / "backend")
    (root / "pyproject.toml").write_text(
        '[tool.genspirv]\ngenerator = "codegen/gen.py"\nmanifest = "templates/variants.yaml"\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert "tool.genspirv.manifest: 'templates/variants.yaml' would overwrite a template of the generated " \
           ".genspirv/generated/" in str(info.value)


def test_one_generated_source_may_serve_several_variants_and_real_sources_may_include_generated_headers(tmp_path):
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl/real.comp").write_text('#version 450\n#include "gen.glslh"\nvoid main() {}\n')
    (tmp_path / "gen.py").write_text(textwrap.dedent("""\
        def files():
            return [{"path": "gen.glslh", "text": "// generated\\n"},
                    {"path": "shared.comp", "text": "#version 450\\nvoid main() {}\\n"}]

        def variants():
            return [{"name": "s_a", "source": "shared.comp", "defines": {"A": "1"}},
                    {"name": "s_b", "source": "shared.comp", "defines": {"A": "2"}},
                    {"name": "real", "source": "real.comp"}]
        """))
    (tmp_path / "pyproject.toml").write_text('[tool.genspirv]\ngenerator = "gen.py"\n')
    config = load_config(tmp_path)
    assert {v.name: v.source for v in config.variants} == {
        "real": "glsl/real.comp", "s_a": ".genspirv/generated/shared.comp", "s_b": ".genspirv/generated/shared.comp"}
    report, _ = fake_build(tmp_path)
    assert len(report.compiled) == 3
    doc = json.loads((tmp_path / "manifests/shaders.json").read_text())
    real = next(e for e in doc["shaders"] if e["name"] == "real")
    assert real["depends"] == ["glsl/real.comp", ".genspirv/generated/gen.glslh", "gen.py"]


# -- real glslang --------------------------------------------------------------

FLOAT_ONLY = """\
binary_op:
  ops: [add, max]
  dtypes: [float]
  subgroup: 64
unary_op:
  ops: [neg]
  dtypes: [float]
  subgroup: 32
reduce:
  ops: [sum]
  dtypes: [float]
  dims: [row, col]
  subgroup: 64
"""


@pytest.fixture(scope="module")
def glslang_backend(tmp_path_factory):
    root = make_backend(tmp_path_factory.mktemp("glslang") / "backend", FLOAT_ONLY)
    if GIT is not None:
        git(root, "init", "-q")
    build(load_config(root))
    return root


@pytest.mark.slow
def test_glslang_builds_generated_sources_and_check_agrees_from_its_temporary_folder(glslang_backend):
    root = glslang_backend
    if GIT is not None:     # the real toolchain's files (its version cache too) stay out of git's sight
        listed = git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
        assert listed and not [line for line in listed if ".genspirv" in line or line.endswith(".comp")], listed
    doc = json.loads((root / "manifests/shaders.json").read_text())
    assert len(doc["shaders"]) == 5
    assert all(".genspirv/generated/indexing.glslh" in e["depends"] for e in doc["shaders"]
               if not e["name"].startswith("unary"))
    report = check(load_config(root))
    assert report.ok, report.differences


@pytest.mark.slow
def test_glslang_errors_name_the_generated_file_and_line_and_its_template(glslang_backend, tmp_path):
    root = shutil.copytree(glslang_backend, tmp_path / "copy")
    header = root / "templates/indexing.glslh.in"
    header.write_text(header.read_text().replace("gl_GlobalInvocationID.x;", "gl_GlobalInvocationID.x + nope;"))
    for run in (lambda: build(load_config(root)), lambda: check(load_config(root))):
        with pytest.raises(CompileError) as info:
            run()
        text = str(info.value)
        assert text.startswith("4 sources do not compile:\n"
                               ".genspirv/generated/indexing.glslh:3: error: 'nope' : undeclared identifier\n"
                               "  (.genspirv/generated/indexing.glslh is generated by codegen/gen.py from "
                               "templates/indexing.glslh.in)\n"), text
        assert "/tmp" not in text and "genspirv-check" not in text     # check names files as the build does
