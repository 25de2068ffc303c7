"""CLI: entry points, reflect/list/show/lint, usage errors and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from genspirv.manifest import entry_to_dict, load_manifest

REPO = Path(__file__).resolve().parents[1]
BUILD_ONLY = {"name", "source", "defines", "spirv", "inputs", "depends"}   # and provenance

# A binding declared read_write whose code only reads it: one lint finding.
RW_NEVER_WRITTEN = """\
#version 450
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer XBuf { float data[]; } X;
layout(std430, binding = 1) writeonly buffer YBuf { float data[]; } Y;
void main() { Y.data[0] = X.data[0]; }
"""


@pytest.fixture
def built(built_tiny):
    return built_tiny


def test_python_dash_m_runs_the_cli(tiny_project):
    root = tiny_project()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "genspirv", "--root", str(root), "build"],
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "genspirv build: 3 compiled" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "genspirv", "--check", "--root", str(root)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("genspirv") is None, reason="package not installed (pip install -e .)")
def test_console_script_is_the_same_cli(built):
    proc = subprocess.run(["genspirv", "list", "--root", str(built)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].split()[:3] == ["add_f32", "64x1x1", "3"]


def test_reflect_json_is_the_manifest_entry_without_build_fields(built, genspirv):
    entry = load_manifest(built / "manifests/shaders.json").entry("add_i32")
    result = genspirv("reflect", built / "spirv/add_i32.spv", "--json")
    assert result.code == 0, result
    expected = {k: v for k, v in entry_to_dict(entry).items() if k not in BUILD_ONLY | {"sha256", "size"}}
    assert json.loads(result.out) == expected


def test_reflect_text_and_bad_input(built, genspirv, tmp_path):
    result = genspirv("reflect", built / "spirv/neg.spv")
    assert result.code == 0 and "local size 32x1x1" in result.out
    assert "set 0 binding 0: X storage_buffer read_write (written)" in result.out
    bad = tmp_path / "bad.spv"
    bad.write_bytes(b"\x03\x02\x23\x07" + b"\x00" * 6)
    result = genspirv("reflect", bad, "--json")
    assert result.code == 1 and result.err.startswith("genspirv: error:") and "Traceback" not in result.err
    result = genspirv("reflect", tmp_path / "absent.spv")
    assert result.code == 1 and "absent.spv" in result.err


TWO_ENTRY_POINTS = """\
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %a "first"
OpEntryPoint GLCompute %b "second"
OpExecutionMode %a LocalSize 8 1 1
OpExecutionMode %b LocalSize 16 2 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%a = OpFunction %void None %fn
%la = OpLabel
OpReturn
OpFunctionEnd
%b = OpFunction %void None %fn
%lb = OpLabel
OpReturn
OpFunctionEnd
"""


def test_reflect_shows_every_entry_point_or_the_one_asked_for(genspirv, tmp_path):
    from genspirv.toolchain import find_tool
    source, blob = tmp_path / "two.spvasm", tmp_path / "two.spv"
    source.write_text(TWO_ENTRY_POINTS)
    proc = find_tool("spirv-as").run(["--target-env", "vulkan1.2", str(source), "-o", str(blob)], what="spirv-as")
    assert proc.returncode == 0, proc.stderr
    both = json.loads(genspirv("reflect", blob, "--json").out)
    assert [(e["entry_point"], e["local_size"]) for e in both] == [("first", [8, 1, 1]), ("second", [16, 2, 1])]
    one = json.loads(genspirv("reflect", blob, "--json", "--entry", "second").out)
    assert one["entry_point"] == "second" and one["local_size"] == [16, 2, 1]
    text = genspirv("reflect", blob).out
    assert "entry point first: local size 8x1x1" in text and "entry point second: local size 16x2x1" in text


def test_list_and_show(built, genspirv):
    result = genspirv("list", "--root", built)
    assert result.code == 0
    assert [line.split()[0] for line in result.out.splitlines()] == ["name", "add_f32", "add_i32", "neg"]
    result = genspirv("show", "add_f32", "--root", built)
    assert result.code == 0
    shown = json.loads(result.out)
    assert shown["spirv"] == "spirv/add_f32.spv" and shown["defines"] == {"TYPE": "float"}
    result = genspirv("show", "nope", "--root", built)
    assert result.code == 1 and "nope" in result.err and "add_f32" in result.err


def test_lint_exit_codes(tiny_project, genspirv):
    clean = tiny_project({"glsl/copy.comp": RW_NEVER_WRITTEN.replace("buffer XBuf", "readonly buffer XBuf")},
                         pyproject=None)
    assert genspirv("build", "--root", clean, "-q").code == 0
    result = genspirv("lint", "--root", clean)
    assert result.code == 0, result
    dirty = tiny_project({"glsl/copy.comp": RW_NEVER_WRITTEN}, pyproject=None)
    assert genspirv("build", "--root", dirty, "-q").code == 0
    result = genspirv("lint", "--root", dirty)
    assert result.code == 1
    assert "copy: set 0 binding 0" in result.out and "never written" in result.out


def test_usage_errors_exit_2(genspirv, built):
    assert genspirv("frobnicate").code == 2
    assert genspirv("build", "--jobs", "0", "--root", built).code == 2
    assert genspirv().code == 2
    assert genspirv("--check", "build").code == 2
    missing = genspirv("build", "--root", built / "no-such-dir")
    assert missing.code == 2 and "no-such-dir" in missing.err


def test_root_may_come_before_or_after_the_command(built, genspirv, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert genspirv("--root", built, "list").code == 0
    assert genspirv("list", "--root", built).code == 0
    monkeypatch.chdir(built / "glsl")       # no --root: the nearest folder with [tool.genspirv]
    assert genspirv("list").out.splitlines()[1].startswith("add_f32")


# -- habits from ninja, glslc and ruff ----------------------------------------


class _Terminal:
    """A stream that says it is a terminal and keeps what was written."""

    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return True


def test_progress_rewrites_one_line_on_a_terminal_and_prints_full_lines_when_piped():
    import io
    from genspirv.cli import Progress
    tty = _Terminal()
    p = Progress(tty)
    for line in ("[1/3] add_f32", "[2/3] add_i32", "removed spirv/old.spv (no variant old any more)",
                 "[3/3] neg"):
        p(line)
    p.close()
    assert tty.text == ("\r\033[K[1/3] add_f32\r\033[K[2/3] add_i32\r\033[K"
                        "removed spirv/old.spv (no variant old any more)\n\r\033[K[3/3] neg\r\033[K")
    piped = io.StringIO()
    p = Progress(piped)
    p("[1/2] a")
    p("[2/2] b FAILED")
    p.close()
    assert piped.getvalue() == "[1/2] a\n[2/2] b FAILED\n"


def test_verbose_prints_each_compiler_command_line(tiny_project, genspirv):
    root = tiny_project()
    result = genspirv("build", "--root", root, "-v", "--jobs", "1")
    assert result.code == 0, result
    lines = result.out.splitlines()
    compiles = [ln for ln in lines if "glslangValidator -V" in ln]
    assert len(compiles) == 3
    assert any("-DTYPE=float" in ln and ln.endswith(" glsl/add.comp") for ln in compiles)
    assert sum("spirv-val --target-env vulkan1.2" in ln for ln in lines) == 3
    quiet = genspirv("build", "--root", root, "--force")
    assert "glslangValidator" not in quiet.out


def test_errors_use_the_file_line_error_form_and_colour_only_on_a_terminal(built_tiny, genspirv, monkeypatch):
    from genspirv import cli
    (built_tiny / "glsl/neg.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { nope; }\n")
    result = genspirv("build", "--root", built_tiny)
    assert result.code == 1
    assert "glsl/neg.comp:3: error: 'nope' : undeclared identifier" in result.err
    assert "(in variant neg)" in result.err and "ERROR:" not in result.err
    assert "\033[" not in result.err                       # piped: no colour
    assert cli.colourise("glsl/neg.comp:3: error: x") == "glsl/neg.comp:3: \033[1;31merror:\033[0m x"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert cli._use_colour(sys.stderr)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not cli._use_colour(sys.stderr)


def test_a_failed_build_says_how_many_built_failed_and_were_unavailable(built_tiny, genspirv):
    (built_tiny / "glsl/include/common.glsl").write_text("#define ONE 1\nuint gid() { return 2u; }\n")
    (built_tiny / "glsl/neg.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { nope; }\n")
    result = genspirv("build", "--root", built_tiny)
    assert result.code == 1
    assert "genspirv build: 2 compiled, 0 up to date, 1 failed" in result.err
    assert "the compiled variants wait in the cache" in result.err
    (built_tiny / "glsl/neg.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { }\n")
    fixed = genspirv("build", "--root", built_tiny)
    assert "genspirv build: 1 compiled, 2 from cache, 0 up to date" in fixed.out


def test_build_explain_says_why_each_variant_compiles(built_tiny, genspirv):
    (built_tiny / "glsl/neg.comp").write_text((built_tiny / "glsl/neg.comp").read_text() + "// edited\n")
    result = genspirv("build", "--root", built_tiny, "-d", "explain", "--quiet")
    assert result.code == 0 and result.out == "explain: neg: compile: glsl/neg.comp changed\n", result
    result = genspirv("build", "--root", built_tiny, "--explain", "--force")
    assert [ln for ln in result.out.splitlines() if ln.startswith("explain:")] == \
        [f"explain: {v}: compile: --force" for v in ("add_f32", "add_i32", "neg")]
    assert genspirv("build", "--root", built_tiny, "--explain").out.splitlines() == \
        ["genspirv build: 0 compiled, 3 up to date, 0 removed, 0 files written"]
