"""The faults a real project hits on the build side: nothing hangs, outputs stay true, messages name the cause.

Each test feeds one fault (a generator that never returns, a matrix of a
million variants, an include cycle that starts in a preamble, a variant that
became unavailable, names that differ only in case, a byte order mark, a
define that ends in a backslash, a short remote-cache secret, an unwritable
shared cache, a path with spaces and non-ASCII letters) and asserts the one
line that names it, or that the outputs stay true. Most run against the
compiler in memory (tests/fake_compiler.py); the few that need glslang say so.

docs/RELIABILITY.md has one row per test here.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from fake_compiler import FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.errors import CompileError, ConfigError

COMP = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"


def project(root: Path, files: dict[str, str | bytes], pyproject: str | bytes = "[tool.genspirv]\n") -> Path:
    for rel, text in {**files, "pyproject.toml": pyproject}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def one_line(result) -> str:
    """The one ``genspirv: error:`` line of a refused command (no traceback)."""
    assert "Traceback" not in result.err, result.err
    lines = [ln for ln in result.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("genspirv: error: "), result.err
    return lines[0]


# -- 3. nothing hangs, nothing expands to a million variants ---------------------------


HANGING = """\
def variants():
    while True:
        pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", ["build", "check"])
def test_a_generator_that_never_returns_is_stopped_naming_its_file_and_the_setting(tmp_path, genspirv, command):
    root = project(tmp_path, {"glsl/a.comp": COMP, "tools/gen.py": HANGING},
                   '[tool.genspirv]\ngenerator = "tools/gen.py"\n')
    result = genspirv(command, "--root", root, env={"GENSPIRV_GENERATOR_TIMEOUT": "0.5"})
    line = one_line(result)
    assert result.code == 2
    assert "tools/gen.py" in line and "variants()" in line and "0.5 s" in line
    assert "GENSPIRV_GENERATOR_TIMEOUT" in line


def test_a_quick_generator_still_gives_its_variants_and_its_errors(tmp_path):
    """Negative control: run apart, a generator's variants, helpers and failures are as before."""
    root = project(tmp_path, {"glsl/a.comp": COMP, "tools/helper.py": "NAMES = ['x', 'y']\n",
                              "tools/gen.py": """\
                                  import helper
                                  class Odd: pass
                                  def variants():
                                      return [{"name": n, "source": "a.comp", "defines": {"N": n}} for n in helper.NAMES]
                                  """},
                   '[tool.genspirv]\ngenerator = "tools/gen.py"\n')
    assert [(v.name, v.defines) for v in load_config(root).variants] == [("x", (("N", "x"),)), ("y", (("N", "y"),))]
    assert not (root / "tools/__pycache__").exists()
    (root / "tools/gen.py").write_text("class Odd:\n    pass\ndef variants():\n    return [Odd()]\n")
    with pytest.raises(ConfigError, match=r"tools/gen.py: variant #0: expected a mapping, got Odd"):
        load_config(root)
    (root / "tools/gen.py").write_text("def variants():\n    return [1 / 0]\n")
    with pytest.raises(ConfigError, match=r"tools/gen.py:2: the generator failed in variants\(\): ZeroDivision"):
        load_config(root)
    (root / "tools/gen.py").write_text("import os\ndef variants():\n    os._exit(3)\n")
    with pytest.raises(ConfigError, match=r"tools/gen.py: the generator's process ended in variants\(\) without "
                                          r"giving its variants \(exit status 3\)"):
        load_config(root)


def test_a_matrix_past_the_limit_is_refused_with_its_count_and_axes(tmp_path):
    axes = ", ".join(f'D{i} = ["1", "2", "3", "4"]' for i in range(10))
    root = project(tmp_path, {"glsl/a.comp": COMP}, f'[tool.genspirv.shaders."a.comp"]\nmatrix = {{ {axes} }}\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    text = str(info.value)
    assert text.startswith('tool.genspirv.shaders."a.comp".matrix: ') and "1048576 variants" in text
    assert "D0 (4) x D1 (4)" in text and "D9 (4)" in text and "GENSPIRV_MATRIX_MAX" in text


def test_a_matrix_at_the_limit_builds(tmp_path, monkeypatch):
    """Negative control: the limit is a setting, and a matrix of exactly that many is taken."""
    root = project(tmp_path, {"glsl/a.comp": COMP},
                   '[tool.genspirv.shaders."a.comp"]\nmatrix = { A = ["1", "2"], B = ["1", "2", "3"] }\n')
    monkeypatch.setenv("GENSPIRV_MATRIX_MAX", "6")
    assert len(load_config(root).variants) == 6
    monkeypatch.setenv("GENSPIRV_MATRIX_MAX", "5")
    with pytest.raises(ConfigError, match=r"6 variants \(A \(2\) x B \(3\)\).* GENSPIRV_MATRIX_MAX \(5\)"):
        load_config(root)


PRE_CYCLE = {
    "glsl/a.comp": COMP.replace("#version 450\n", ""),
    "glsl/include/pre.glsl": '#version 450\n#extension GL_GOOGLE_include_directive : require\n#include "a.glsl"\n',
    "glsl/include/a.glsl": '#include "b.glsl"\n',
    "glsl/include/b.glsl": '#include "a.glsl"\n',
}


def test_an_include_cycle_that_starts_in_a_preamble_is_named_before_glslang_runs(tmp_path, genspirv):
    root = project(tmp_path, PRE_CYCLE, '[tool.genspirv]\npreamble = "glsl/include/pre.glsl"\n')
    # Were glslang to run, it would loop until this limit (or the memory cap) stopped it.
    result = genspirv("build", "--root", root, env={"GENSPIRV_COMPILER_TIMEOUT": "20"})
    assert result.code == 1, result.err
    assert "include cycle glsl/include/a.glsl -> glsl/include/b.glsl -> glsl/include/a.glsl" in result.err
    assert "from the preamble glsl/include/pre.glsl" in result.err
    assert "did not finish" not in result.err and "signal" not in result.err


# -- 4. outputs stay true ------------------------------------------------------------------


OPTIONAL_TABLE = """\
[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int" } }
optional = true
"""
NEW = "#version 450\n#extension GL_X_new : require\nvoid main() {}\n"


def test_a_variant_that_becomes_unavailable_loses_its_old_blob_and_check_reports_it(tmp_path):
    root = project(tmp_path, {"glsl/add.comp": NEW, "glsl/neg.comp": COMP}, "[tool.genspirv]\n" + OPTIONAL_TABLE)
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert (root / "spirv/add_f32.spv").is_file()
    # The compiler changes to one without the extension: add_* become unavailable.
    lacking = FakeCompiler(version="fake 2", missing=("GL_X_new",))
    said: list[str] = []
    report = build(load_config(root), compiler=lacking, jobs=1, log=said.append)
    assert [n for n, _ in report.unavailable] == ["add_f32", "add_i32"]
    assert report.removed == ("spirv/add_f32.spv", "spirv/add_i32.spv")
    assert not (root / "spirv/add_f32.spv").exists() and (root / "spirv/neg.spv").is_file()
    assert "removed spirv/add_f32.spv (variant add_f32 is unavailable)" in said
    assert check(load_config(root), compiler=lacking).ok
    # The old blob put back (a checkout of an older commit): check names it, the build removes it.
    (root / "spirv/add_f32.spv").write_bytes((root / "spirv/neg.spv").read_bytes())
    differences = check(load_config(root), compiler=lacking).differences
    assert [(d.kind, d.path) for d in differences] == [("orphan", "spirv/add_f32.spv")]
    assert "add_f32 is unavailable" in str(differences[0])
    again = build(load_config(root), compiler=lacking, jobs=1)
    assert again.removed == ("spirv/add_f32.spv",) and again.compiled == ()


@pytest.mark.parametrize("files, table, names", [
    ({"glsl/s.comp": COMP}, '[tool.genspirv.shaders."s.comp"]\nmatrix = { T = { a = "1", A = "2" } }\n',
     ("'s_A' (from glsl/s.comp)", "'s_a' (from glsl/s.comp)")),
    ({"glsl/Add.comp": COMP, "glsl/add.comp": COMP}, "",
     ("'Add' (from glsl/Add.comp)", "'add' (from glsl/add.comp)")),
])
def test_variant_names_that_differ_only_in_case_are_refused_naming_both(tmp_path, files, table, names):
    root = project(tmp_path, files, "[tool.genspirv]\n" + table)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    text = str(info.value)
    assert all(n in text for n in names) and "differ only in case" in text
    assert "spirv/" in text and text.count("\n") == 0


# -- 5. messages name the cause --------------------------------------------------------------


BOM = b"\xef\xbb\xbf"


def test_a_byte_order_mark_in_a_source_is_named(tmp_path):
    root = project(tmp_path, {"glsl/a.comp": BOM + COMP.encode(), "glsl/b.comp": COMP})
    with pytest.raises(CompileError) as info:
        build(load_config(root), compiler=FakeCompiler(), jobs=1)
    text = str(info.value)
    assert "glsl/a.comp:1: error: the file starts with a UTF-8 byte order mark" in text
    assert "no #version" not in text and "glsl/b.comp" not in text


def test_a_byte_order_mark_in_pyproject_is_named(tmp_path):
    root = project(tmp_path, {"glsl/a.comp": COMP}, BOM + b'[tool.genspirv]\nglsl_dir = "glsl"\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value).startswith("pyproject.toml:1:1: the file starts with a UTF-8 byte order mark")
    assert "Invalid statement" not in str(info.value)


@pytest.mark.parametrize("table, gen, key", [
    ('[tool.genspirv.shaders."a.comp"]\ndefines = { X = "1 \\\\" }\n', None,
     'tool.genspirv.shaders."a.comp".defines.X'),
    ('[tool.genspirv.shaders."a.comp"]\nmatrix = { X = { one = "1\\\\" } }\n', None,
     'tool.genspirv.shaders."a.comp".matrix.X.one'),
    ('[tool.genspirv.shaders."a.comp"]\nmatrix = { X = ["1\\n#define Y 2"] }\n', None,
     'tool.genspirv.shaders."a.comp".matrix.X[0]'),
    ('[tool.genspirv]\ngenerator = "gen.py"\n',
     'def variants():\n    return [{"name": "g", "source": "a.comp", "defines": {"X": "2\\\\"}}]\n',
     "gen.py: variant 'g': defines.X"),
])
def test_a_define_value_ending_in_a_backslash_or_holding_a_newline_is_refused(tmp_path, table, gen, key):
    files = {"glsl/a.comp": COMP, **({"gen.py": gen} if gen else {})}
    root = project(tmp_path, files, table if table.startswith("[tool.genspirv]") else "[tool.genspirv]\n" + table)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value).startswith(key + ": define value "), str(info.value)


def test_a_define_value_with_a_backslash_inside_is_taken(tmp_path):
    """Negative control: only a backslash at the end continues the line."""
    root = project(tmp_path, {"glsl/a.comp": COMP},
                   '[tool.genspirv]\n[tool.genspirv.shaders."a.comp"]\ndefines = { X = "a\\\\b" }\n')
    assert load_config(root).variants[0].defines == (("X", "a\\b"),)


def test_a_short_secret_is_redacted_only_whole_and_called_weak(monkeypatch):
    from genspirv.remote.cache import RemoteCache, remote_settings
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", "http://127.0.0.1:9/cache")
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_SECRET", "e")
    said: list[str] = []
    cache = RemoteCache(remote_settings(), warn=said.append)
    cache._warn("remote cache entry e ignored (bad signature); compiled here instead")
    cache._warn("the secret was e")
    assert said[0] == ("genspirv: warning: GENSPIRV_REMOTE_CACHE_SECRET is 1 byte long: a secret shorter "
                       "than 16 bytes is weak; use a random one of 32 bytes or more")
    assert said[1:] == ["genspirv: warning: remote cache entry *** ignored (bad signature); compiled here instead",
                        "genspirv: warning: the secret was ***"]
    # A long secret is hidden wherever it appears; no weakness warning for it.
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_SECRET", "0123456789abcdef")
    said.clear()
    cache = RemoteCache(remote_settings(), warn=said.append)
    cache._warn("token=x0123456789abcdefx")
    assert said == ["genspirv: warning: token=x***x"]


def test_an_unwritable_shared_cache_dir_is_one_warning_naming_it(tmp_path, monkeypatch, capsys):
    root = project(tmp_path / "p", {"glsl/a.comp": COMP, "glsl/b.comp": COMP.replace("1", "2")})
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be\n")
    monkeypatch.setenv("GENSPIRV_CACHE_DIR", str(blocker / "cache"))
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"genspirv: warning: GENSPIRV_CACHE_DIR={blocker / 'cache'}: cannot write")
    # Negative control: a writable one is filled without a word.
    monkeypatch.setenv("GENSPIRV_CACHE_DIR", str(tmp_path / "shared"))
    build(load_config(root), compiler=FakeCompiler(), jobs=1, force=True)
    assert "warning" not in capsys.readouterr().err and list((tmp_path / "shared").glob("??/*.spv"))


ODD_DIR = "glsl/dir with space"
ODD = f"{ODD_DIR}/ünï.comp"
ODD_TABLE = f"""\
[tool.genspirv]
generate = [ {{ target = "c", output = "gen/shaders" }} ]

[tool.genspirv.shaders."dir with space/ünï.comp"]
name = "uni"
"""


def test_a_source_path_with_spaces_and_non_ascii_letters_builds_and_is_named_right(tmp_path, genspirv):
    root = project(tmp_path, {ODD: '#version 450\n#include "hdr #1.glsl"\nvoid main() {}\n',
                              f"{ODD_DIR}/hdr #1.glsl": "// a header\n"}, ODD_TABLE)
    config = load_config(root)
    build(config, compiler=FakeCompiler(), jobs=1)
    entry = json.loads((root / "manifests/shaders.json").read_text(encoding="utf-8"))["shaders"][0]
    assert entry["source"] == ODD and f"{ODD_DIR}/hdr #1.glsl" in entry["depends"]
    # The C table names it in a comment, its UTF-8 bytes as octal escapes (c_escape).
    assert "glsl/dir with space/\\303\\274n\\303\\257.comp" in (root / "gen/shaders.c").read_text()
    from genspirv.emit.cmake import write_depfile
    write_depfile(config, tmp_path / "out.d", str(tmp_path / "out"))
    words = (tmp_path / "out.d").read_text(encoding="utf-8").replace(" \\\n", "\n").splitlines()
    assert f" {root}/glsl/dir\\ with\\ space/ünï.comp" in words
    assert f" {root}/glsl/dir\\ with\\ space/hdr\\ \\#1.glsl" in words
    assert check(load_config(root), compiler=FakeCompiler()).ok
    (root / ODD).write_text("#version 450\n// fake: error\nvoid main() {}\n", encoding="utf-8")
    with pytest.raises(CompileError, match=f"{ODD}:2: error"):
        build(load_config(root), compiler=FakeCompiler(), jobs=1)


@pytest.mark.slow
def test_a_source_path_with_spaces_and_non_ascii_letters_builds_with_glslang(tmp_path, genspirv):
    root = project(tmp_path, {ODD: '#version 450\n#extension GL_GOOGLE_include_directive : require\n'
                                   '#include "hdr #1.glsl"\nlayout(local_size_x = 1) in;\nvoid main() {}\n',
                              f"{ODD_DIR}/hdr #1.glsl": "// a header\n"}, ODD_TABLE)
    result = genspirv("build", "--root", root, "--depfile", tmp_path / "out.d")
    assert result.code == 0, result.err
    entry = json.loads((root / "manifests/shaders.json").read_text(encoding="utf-8"))["shaders"][0]
    assert entry["source"] == ODD and entry["depends"] == [ODD, f"{ODD_DIR}/hdr #1.glsl"]
    assert f"{root}/glsl/dir\\ with\\ space/hdr\\ \\#1.glsl" in (tmp_path / "out.d").read_text(encoding="utf-8")
    assert genspirv("check", "--root", root).code == 0
    (root / ODD).write_text("#version 450\nvoid main() { undefined_thing(); }\n", encoding="utf-8")
    failed = genspirv("build", "--root", root)
    assert failed.code == 1 and f"{ODD}:2: error:" in failed.err, failed.err


def test_the_include_graph_is_walked_from_the_preamble_too(tmp_path):
    """The shared check glslang and slang-glslang both run: a cycle only the preamble reaches is found."""
    from genspirv.toolchain.includes import find_include_cycle, unguarded_include_cycle
    root = project(tmp_path, PRE_CYCLE)
    glsl, inc = root / "glsl", root / "glsl/include"
    assert find_include_cycle(glsl / "a.comp", [inc]) is None                  # from the source alone: none
    cycle = unguarded_include_cycle(glsl / "a.comp", [inc], inc / "pre.glsl")
    assert [p.name for p in cycle] == ["a.glsl", "b.glsl", "a.glsl"]
    (inc / "b.glsl").write_text('#ifndef B\n#define B\n#include "a.glsl"\n#endif\n')
    assert unguarded_include_cycle(glsl / "a.comp", [inc], inc / "pre.glsl") is None     # a guard ends it
