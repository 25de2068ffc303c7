"""CLI: entry points, reflect/list/show/lint, usage errors and exit codes."""

from __future__ import annotations

import json
import os
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


@pytest.mark.slow
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


# The console script of the environment running the tests (.venv/bin/genspirv after ci/setup.sh),
# not whatever `genspirv` another environment puts on PATH.
CONSOLE_SCRIPT = Path(sys.executable).parent / "genspirv"


@pytest.mark.skipif(not CONSOLE_SCRIPT.is_file(), reason="package not installed in this environment (pip install -e .)")
def test_console_script_is_the_same_cli(built):
    proc = subprocess.run([str(CONSOLE_SCRIPT), "list", "--root", str(built)], capture_output=True, text=True,
                          timeout=60)
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
    from genspirv.toolchain.tools import find_tool
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- a new user's first hour: each refusal one line, naming the file and the fix ----


def one_error_line(result) -> str:
    """The single line a refusal prints (and nothing else on stderr, no traceback)."""
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("genspirv: error: "), result.err
    return lines[0][len("genspirv: error: "):]


@pytest.mark.slow
def test_quiet_drops_the_progress_lines_but_keeps_the_summary(tiny_project, genspirv):
    root = tiny_project()
    loud = genspirv("build", "--root", root, "--jobs", "1")
    assert [ln for ln in loud.out.splitlines() if ln.startswith("[")] == \
        ["[1/3] add_f32", "[2/3] add_i32", "[3/3] neg"]           # piped: the lines -q leaves out
    quiet = genspirv("build", "--root", root, "--force", "-q")
    assert quiet.code == 0 and quiet.err == ""
    assert quiet.out.splitlines() == ["genspirv build: 3 compiled, 0 up to date, 0 removed, 0 files written"]
    check = genspirv("check", "--root", root, "-q")
    assert check.out.splitlines() == ["genspirv check: 4 files up to date"]


def test_quiet_keeps_what_the_build_removed(built_tiny, genspirv):
    (built_tiny / "glsl/neg.comp").unlink()
    result = genspirv("build", "--root", built_tiny, "-q")
    assert result.out.splitlines() == ["removed spirv/neg.spv (no variant neg any more)",
                                       "genspirv build: 0 compiled, 2 up to date, 1 removed, 1 files written"]


def test_every_subcommand_lists_root_in_its_help(capsys):
    from genspirv.cli import COMMANDS, make_parser
    parser = make_parser()
    for command in COMMANDS:
        with pytest.raises(SystemExit):
            parser.parse_args([command.name, "--help"])
        assert "--root DIR" in capsys.readouterr().out, command.name


def test_reflect_errors_name_the_file(built, genspirv):
    message = one_error_line(genspirv("reflect", built / "pyproject.toml"))
    assert message.startswith(f"{built / 'pyproject.toml'}: ") and "(at word " in message
    result = genspirv("reflect", built / "spirv/neg.spv", "--entry", "nope")
    assert result.code == 1
    assert one_error_line(result) == f"{built / 'spirv/neg.spv'}: no GLCompute entry point named 'nope' (known: 'main')"


def test_a_depfile_in_a_missing_folder_is_refused_before_the_build(built, genspirv, tmp_path):
    depfile = tmp_path / "no" / "such" / "x.d"
    result = genspirv("build", "--root", built, "--depfile", depfile)
    assert result.code == 2 and result.out == ""
    assert one_error_line(result) == f"--depfile {depfile}: no folder {depfile.parent}; create it first"
    assert not (tmp_path / "no").exists()
    result = genspirv("check", "--root", built, "--json", depfile)       # the same check, before any run
    assert result.code == 2 and one_error_line(result).startswith(f"--json {depfile}: no folder")
    # Negative control: a depfile in a folder that exists is written.
    result = genspirv("build", "--root", built, "--depfile", tmp_path / "x.d")
    assert result.code == 0 and (tmp_path / "x.d").is_file()


def test_an_empty_folder_is_told_to_run_init(tmp_path, genspirv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in ("build", "check", "list", "lint"):
        result = genspirv(command)
        assert result.code == 2
        assert "run `genspirv init` to start a project" in one_error_line(result), command


def test_list_before_the_first_build_says_to_build(tiny_project, genspirv):
    result = genspirv("list", "--root", tiny_project())
    assert result.code == 1
    assert one_error_line(result) == "manifests/shaders.json: no manifest yet; run `genspirv build` to make it"


def test_a_config_error_names_the_file_relative_to_the_root(tiny_project, genspirv):
    root = tiny_project({"glsl/my-kernel.comp": "void main() {}\n"}, pyproject=None)
    message = one_error_line(genspirv("build", "--root", root))
    assert message.startswith("glsl/my-kernel.comp: the file stem 'my-kernel' is not a valid variant name")
    assert str(root) not in message


def test_a_bad_setting_is_one_line_before_any_compile(built, genspirv):
    result = genspirv("build", "--root", built, "--force", env={"GENSPIRV_COMPILER_TIMEOUT": "abc"})
    assert result.code == 2 and result.out == ""
    assert one_error_line(result) == "GENSPIRV_COMPILER_TIMEOUT must be a positive number of seconds, not 'abc'"


@pytest.mark.slow
def test_a_build_error_names_its_file_relative_to_the_project(built, genspirv, tmp_path, monkeypatch):
    (built / "spirv/neg.spv").unlink()
    (built / "spirv/neg.spv").mkdir()           # a folder where the blob goes: the write fails
    result = genspirv("build", "--root", built, "--force", "-q")
    assert result.code == 2
    assert one_error_line(result) == "spirv/neg.spv: cannot write: Is a directory"
    monkeypatch.chdir(built / "glsl")           # found without --root: the same
    assert one_error_line(genspirv("build", "--force", "-q")) == "spirv/neg.spv: cannot write: Is a directory"


def test_paths_outside_the_project_stay_as_they_are(tmp_path):
    from genspirv.cli import relative_to_project
    root = tmp_path / "proj"
    assert relative_to_project(f"{root}/spirv/a.spv: bad", root) == "spirv/a.spv: bad"
    assert relative_to_project(f"{tmp_path}/other/a.spv: bad", root) == f"{tmp_path}/other/a.spv: bad"
    assert relative_to_project(f"{root}x/a.spv: bad", root) == f"{root}x/a.spv: bad"     # a sibling, not inside
    assert relative_to_project("/etc/x: bad", None) == "/etc/x: bad"


@pytest.mark.slow
def test_build_explain_says_why_each_variant_compiles(built_tiny, genspirv):
    (built_tiny / "glsl/neg.comp").write_text((built_tiny / "glsl/neg.comp").read_text() + "// edited\n")
    result = genspirv("build", "--root", built_tiny, "-d", "explain", "--quiet")
    assert result.code == 0 and result.out.splitlines() == [
        "explain: neg: compile: glsl/neg.comp changed",
        "genspirv build: 1 compiled, 2 up to date, 0 removed, 1 files written"], result   # --quiet keeps the summary
    result = genspirv("build", "--root", built_tiny, "--explain", "--force")
    assert [ln for ln in result.out.splitlines() if ln.startswith("explain:")] == \
        [f"explain: {v}: compile: --force" for v in ("add_f32", "add_i32", "neg")]
    assert genspirv("build", "--root", built_tiny, "--explain").out.splitlines() == \
        ["genspirv build: 0 compiled, 3 up to date, 0 removed, 0 files written"]
