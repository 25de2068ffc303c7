"""Which compiler builds each variant: the ``compiler`` key and its chain, with compilers in memory.

Two fakes (tests/fake_compiler.py) stand for the pinned glslang, which lacks
``GL_X_new``, and slang-glslang, which has it, so each build takes
milliseconds; tests/test_build_slang.py runs the real slang-glslang. Asserted
through the report, the manifest and each fake's own count of compiles: an
optional variant the default lacks a feature for is built by the next
compiler of its chain (a required one is not: the negative control); the
default compiler's blobs and keys do not move when a second compiler is
configured; a compiler that is not installed makes an optional variant
unavailable and a required one fail before anything compiles, each with the
line that says how to install it; ``--explain`` names a change of compiler.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from fake_compiler import FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.toolchain.chain import Compilers
from genspirv.project.config import load_config
from genspirv.errors import CompileError, ConfigError, ToolchainError
from genspirv.project.variants import CompilerName

SLANG = CompilerName.SLANG_GLSLANG
HINT = "compiler slang-glslang needs the slangpy wheel: pip install 'genspirv[slang-glslang]'"
PLAIN = "#version 450\nvoid main() {}\n"
NEW = "#version 450\n#extension GL_X_new : require\nvoid main() {}\n"


class FakeSlang(FakeCompiler):
    """The second compiler: has every extension; says what the manifest records of it."""

    def manifest_facts(self):
        return {"slang_glslang": "fake-lib 9", "slangpy": "fake-wheel 9"}


def make_project(root: Path, table: str, top: str = "") -> Path:
    for rel, text in {"glsl/plain.comp": PLAIN, "glsl/new.comp": NEW, "glsl/other.comp": PLAIN}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "pyproject.toml").write_text("[tool.genspirv]\n" + top + "\n" + textwrap.dedent(table))
    return root


def fakes(absent: bool = False):
    default, second = FakeCompiler(missing=("GL_X_new",)), FakeSlang(version="fake-slang 1")
    if absent:
        return default, second, Compilers(default, absent={SLANG: HINT})
    return default, second, Compilers(default, {SLANG: second})


def run(root: Path, compilers: Compilers, **kw):
    lines: list[str] = []
    report = build(load_config(root), compiler=compilers, jobs=1, explain=lines.append, **kw)
    return report, lines


def manifest(root: Path) -> dict:
    return json.loads((root / "manifests/shaders.json").read_text())


CHAIN = 'compiler = ["glslang", "slang-glslang"]'
OPTIONAL_NEW = '[tool.genspirv.shaders."new.comp"]\noptional = true\n'


def test_an_optional_variant_the_default_lacks_a_feature_for_is_built_by_the_next_compiler(tmp_path):
    root = make_project(tmp_path / "p", OPTIONAL_NEW, CHAIN)
    default, second, compilers = fakes()
    report, _ = run(root, compilers)
    assert sorted(report.compiled) == ["new", "other", "plain"] and report.unavailable == ()
    assert report.compiled_by == (("new", "slang-glslang"),)
    assert report.summary().startswith("3 compiled (1 by slang-glslang), 0 up to date,")
    # Asked of the compilers: the default first, the second only for what the default lacked.
    assert dict(default.compiles) == {"new": 1, "other": 1, "plain": 1} and dict(second.compiles) == {"new": 1}
    doc = manifest(root)
    assert {e["name"]: e.get("compiler") for e in doc["shaders"]} == {
        "new": "slang-glslang", "other": None, "plain": None}
    assert doc["toolchain"]["slang_glslang"] == "fake-lib 9" and doc["toolchain"]["slangpy"] == "fake-wheel 9"
    # The next build keeps it, knowing which compiler built it; so does a fresh clone.
    default.compiles.clear(), second.compiles.clear()
    report, lines = run(root, compilers)
    assert report.compiled == () and report.written == () and lines == []
    assert not default.compiles and not second.compiles
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".genspirv"))
    report, _ = run(clone, compilers)
    assert report.compiled == () and report.written == () and sorted(report.up_to_date) == ["new", "other", "plain"]


def test_a_required_variant_is_not_passed_to_the_next_compiler(tmp_path):
    """The negative control: the chain goes on only for optional variants."""
    root = make_project(tmp_path / "p", "", CHAIN)
    default, second, compilers = fakes()
    with pytest.raises(CompileError) as err:
        run(root, compilers)
    assert "GL_X_new" in str(err.value) and err.value.report.failed == ("new",)
    assert not second.compiles


def test_each_default_blob_and_key_stays_as_without_a_second_compiler(tmp_path):
    """Configuring the chain moves only the variant it builds: every other blob, content key
    and manifest entry is byte for byte what the default compiler alone gives."""
    alone = make_project(tmp_path / "alone", OPTIONAL_NEW)
    run(alone, Compilers(FakeCompiler(missing=("GL_X_new",))))
    mixed = make_project(tmp_path / "mixed", OPTIONAL_NEW, CHAIN)
    run(mixed, fakes()[2])
    for name in ("plain", "other"):
        assert (mixed / f"spirv/{name}.spv").read_bytes() == (alone / f"spirv/{name}.spv").read_bytes()
    entries = {m: {e["name"]: e for e in manifest(root)["shaders"]} for m, root in (("a", alone), ("m", mixed))}
    assert entries["m"]["plain"] == entries["a"]["plain"] and entries["m"]["other"] == entries["a"]["other"]
    assert "new" not in entries["a"] and manifest(alone)["unavailable"][0]["missing"] == ["GL_X_new"]
    assert "slang_glslang" not in manifest(alone)["toolchain"]


def test_a_compiler_named_for_one_source(tmp_path):
    root = make_project(tmp_path / "p", '[tool.genspirv.shaders."new.comp"]\ncompiler = "slang-glslang"\n')
    default, second, compilers = fakes()
    report, _ = run(root, compilers)
    assert report.compiled_by == (("new", "slang-glslang"),)
    assert "new" not in default.compiles and dict(second.compiles) == {"new": 1}


def test_a_blob_from_the_cache_keeps_the_compiler_that_built_it(tmp_path):
    """The cache holds blobs only: under a new key, a blob is taken from it where the
    variant's chain has one compiler (so which built it is known); a longer chain compiles."""
    root = make_project(tmp_path / "p", '[tool.genspirv.shaders."other.comp"]\ncompiler = "slang-glslang"\n'
                        + OPTIONAL_NEW, CHAIN)
    default, second, compilers = fakes()
    run(root, compilers)
    for rel in ("glsl/other.comp", "glsl/new.comp"):
        (root / rel).write_text((root / rel).read_text() + "// edited\n")
    run(root, compilers)
    for rel in ("glsl/other.comp", "glsl/new.comp"):
        (root / rel).write_text((root / rel).read_text().replace("// edited\n", ""))
    second.compiles.clear()
    report, _ = run(root, compilers)
    assert report.cached == ("other",) and sorted(report.compiled) == ["new"] and dict(second.compiles) == {"new": 1}
    assert {e["name"]: e.get("compiler") for e in manifest(root)["shaders"]} == {
        "new": "slang-glslang", "other": "slang-glslang", "plain": None}


def test_explain_names_a_change_of_compiler(tmp_path):
    root = make_project(tmp_path / "p", OPTIONAL_NEW.replace("new.comp", "other.comp"))
    default, second, compilers = fakes()
    with pytest.raises(CompileError):
        run(root, compilers)        # new.comp is required and the default lacks GL_X_new
    (root / "glsl/new.comp").unlink()
    run(root, compilers)
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text()
                                         + 'compiler = "slang-glslang"\n')
    report, lines = run(root, compilers)
    assert report.compiled_by == (("other", "slang-glslang"),)
    assert lines == ["explain: other: compile: compiler changed: glslang fake 1 -> slang-glslang fake-slang 1"]
    # Only the version of the same compiler: the sentence says so.
    _, _, later = fakes()
    later.by_name[SLANG] = FakeSlang(version="fake-slang 2")
    report, lines = run(root, later)
    assert lines == ["explain: other: compile: compiler version changed: "
                     "slang-glslang fake-slang 1 -> slang-glslang fake-slang 2"]


# -- a compiler that is not installed ---------------------------------------------------


def test_without_the_second_compiler_optional_variants_are_unavailable_saying_how_to_install_it(tmp_path):
    root = make_project(tmp_path / "p", OPTIONAL_NEW + '[tool.genspirv.shaders."other.comp"]\noptional = true\n'
                        'compiler = "slang-glslang"\n', CHAIN)
    default, _, compilers = fakes(absent=True)
    report, _ = run(root, compilers)
    assert sorted(report.compiled) == ["plain"]
    assert dict(report.unavailable_because) == {
        "new": f"the pinned compiler lacks GL_X_new; {HINT}",
        "other": HINT}
    doc = manifest(root)
    assert {u["name"]: (u["missing"], u.get("compiler")) for u in doc["unavailable"]} == {
        "new": (["GL_X_new"], None), "other": (["slang-glslang"], "slang-glslang")}
    # Installed later: the variants it may build are stale (their keys named it not installed).
    _, second, installed = fakes()
    report, lines = run(root, installed)
    assert sorted(report.compiled) == ["new", "other"] and report.unavailable == ()
    assert "explain: other: compile: compiler version changed: slang-glslang (not installed) -> " \
           "slang-glslang fake-slang 1" in lines


def test_without_the_second_compiler_a_required_variant_fails_before_anything_compiles(tmp_path):
    root = make_project(tmp_path / "p", '[tool.genspirv.shaders."other.comp"]\ncompiler = "slang-glslang"\n')
    (root / "glsl/new.comp").unlink()
    default, _, compilers = fakes(absent=True)
    with pytest.raises(ToolchainError) as err:
        run(root, compilers)
    assert str(err.value) == f"variant other (not optional) needs compiler slang-glslang: {HINT}"
    assert not default.compiles and not (root / "manifests/shaders.json").exists()


def test_the_cli_prints_one_line_per_unavailable_variant_and_the_summary(tmp_path, genspirv, monkeypatch):
    from genspirv.toolchain.slang import slang_glslang

    def not_installed():
        raise ToolchainError(HINT)

    monkeypatch.setattr(slang_glslang, "find_library", not_installed)
    root = make_project(tmp_path / "p", '[tool.genspirv.shaders."other.comp"]\noptional = true\n'
                        'compiler = "slang-glslang"\n')
    (root / "glsl/new.comp").unlink()
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"genspirv build: other unavailable: {HINT}",
        "genspirv build: 1 compiled, 0 up to date, 1 unavailable, 0 removed, 2 files written"]
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text().replace("optional = true\n", ""))
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 2 and result.err == (
        f"genspirv: error: variant other (not optional) needs compiler slang-glslang: {HINT}\n")


# -- the config key --------------------------------------------------------------------


@pytest.mark.parametrize("value, error", [
    ('"glslc"', "tool.genspirv.compiler: 'glslc' is not a compiler genspirv knows (glslang, slang-glslang)"),
    ("[]", "tool.genspirv.compiler: empty: name at least one compiler (glslang, slang-glslang)"),
    ('["glslang", "glslang"]', "tool.genspirv.compiler[1]: 'glslang' is listed twice"),
    ("1", "tool.genspirv.compiler: expected a compiler name or an array of them, got an integer (1)"),
    ('["glslang", 2]', "tool.genspirv.compiler[1]: expected a compiler name, got an integer (2)"),
])
def test_a_bad_compiler_value_is_refused_naming_the_key(tmp_path, value, error):
    root = make_project(tmp_path / "p", "", f"compiler = {value}")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert str(err.value) == error


def test_compiler_resolves_variant_over_source_over_top_level_and_from_a_generator(tmp_path):
    root = make_project(tmp_path / "p", """\
        [tool.genspirv.shaders."new.comp"]
        compiler = "slang-glslang"
        variants = [ { name = "new_a" }, { name = "new_b", compiler = ["glslang", "slang-glslang"] } ]
        """, 'generator = "gen.py"')
    (root / "gen.py").write_text('def variants():\n    return [{"name": "gen_x", "source": "new.comp"},\n'
                                 '            {"name": "gen_y", "source": "plain.comp", "compiler": "slang-glslang"}]\n')
    chains = {v.name: tuple(c.value for c in v.compilers) for v in load_config(root).variants}
    assert chains == {"new_a": ("slang-glslang",), "new_b": ("glslang", "slang-glslang"),
                      "gen_x": ("slang-glslang",), "gen_y": ("slang-glslang",),
                      "other": ("glslang",)}     # plain.comp: only the generator builds it
    (root / "gen.py").write_text('def variants():\n    return [{"name": "gen_x", "source": "new.comp", '
                                 '"compiler": "glslc"}]\n')
    with pytest.raises(ConfigError, match=r"gen\.py.*gen_x.*compiler: 'glslc' is not a compiler"):
        load_config(root)
