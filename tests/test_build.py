"""Build: a real project outside this repo, incrementality, atomicity, reproducibility."""

from __future__ import annotations

import fcntl
import os
import re
import shutil

import pytest

from genspirv.settings import SettingError

from genspirv.buildsys.builder import build
from genspirv.statedir import project_lock
from genspirv.project.config import load_config
from genspirv.errors import CompileError, ValidationError
from genspirv.manifest import load_manifest

VARIANTS = ("add_f32", "add_i32", "neg")


def outputs(root):
    files = {p.relative_to(root).as_posix(): p.read_bytes()
             for d in ("spirv", "manifests") for p in sorted((root / d).rglob("*")) if p.is_file()}
    return files


@pytest.mark.slow
def test_build_through_root_on_a_foreign_project(tiny_project, genspirv):
    root = tiny_project()
    result = genspirv("build", "--root", root)
    assert result.code == 0, result
    for i, name in enumerate(sorted(VARIANTS), 1):
        assert f"] {name}\n" in result.out
    assert "[3/3]" in result.out
    assert sorted(outputs(root)) == ["manifests/shaders.json"] + [f"spirv/{v}.spv" for v in VARIANTS]
    manifest = load_manifest(root / "manifests/shaders.json")   # verifies every blob's sha256
    assert [e.name for e in manifest.shaders] == list(VARIANTS)
    add = manifest.entry("add_f32")
    assert (add.source, add.spirv, add.defines_dict) == ("glsl/add.comp", "spirv/add_f32.spv", {"TYPE": "float"})
    assert add.info.local_size == (64, 1, 1) and add.info.binding_count == 3
    assert add.info.writable_mask == 0b100 and add.info.push_constant_size == 4


@pytest.mark.slow
def test_noop_rebuild_compiles_and_writes_nothing(tiny_project, snapshot):
    config = load_config(tiny_project())
    first = build(config)
    assert sorted(first.compiled) == list(VARIANTS) and first.up_to_date == ()
    before = snapshot(config.root)
    again = build(config)
    assert again.compiled == () and sorted(again.up_to_date) == list(VARIANTS)
    assert again.written == () and again.removed == ()
    assert snapshot(config.root) == before          # bytes and mtimes: not even the manifest rewritten


def test_noop_build_skips_reflection_but_repairs_a_touched_output(built_tiny, monkeypatch):
    from genspirv.buildsys import variant_compile       # the loop reads reflect_blob from it at each use
    config = load_config(built_tiny)
    good = (built_tiny / "manifests/shaders.json").read_bytes()
    calls = []
    real = variant_compile.reflect_blob
    monkeypatch.setattr(variant_compile, "reflect_blob", lambda *a: calls.append(a[0]) or real(*a))
    assert build(config).written == () and calls == []      # nothing changed: nothing re-read
    (built_tiny / "manifests/shaders.json").write_text("{}\n")  # edited by hand
    report = build(config)
    assert report.compiled == () and report.written == ("manifests/shaders.json",)
    assert (built_tiny / "manifests/shaders.json").read_bytes() == good
    assert sorted(calls) == list(VARIANTS)                    # the slow path ran
    calls.clear()
    assert build(config).written == () and calls == []


def test_editing_a_header_rebuilds_exactly_its_includers(built_tiny):
    config = load_config(built_tiny)
    header = config.root / "glsl/include/common.glsl"
    header.write_text(header.read_text() + "#define TWO 2\n")
    report = build(config)
    assert sorted(report.compiled) == ["add_f32", "add_i32"]
    assert report.up_to_date == ("neg",)


def test_touching_without_changing_bytes_rebuilds_nothing(built_tiny):
    # Also: a copied project keeps its build state (root-relative), so moving it costs nothing.
    config = load_config(built_tiny)
    os.utime(config.root / "glsl/add.comp")
    assert build(config).compiled == ()


@pytest.mark.slow
def test_force_and_changed_flags_rebuild_everything(built_tiny):
    root = built_tiny
    config = load_config(root)
    assert sorted(build(config, force=True).compiled) == list(VARIANTS)
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text().replace(
        'glslang = "13.1.1"', 'glslang = "13.1.1"\nflags = ["-DEXTRA=1"]'))
    assert sorted(build(load_config(root)).compiled) == list(VARIANTS)


def test_a_changed_blob_on_disk_is_rebuilt(built_tiny):
    config = load_config(built_tiny)
    blob = config.root / "spirv/neg.spv"
    good = blob.read_bytes()
    blob.write_bytes(good[:-4])
    report = build(config)
    # The build cache still holds the good blob under its content key: restored, not recompiled.
    assert report.cached == ("neg",) and report.compiled == () and blob.read_bytes() == good
    shutil.rmtree(config.root / ".genspirv" / "cache")
    blob.write_bytes(good[:-4])
    report = build(config)
    assert report.compiled == ("neg",) and blob.read_bytes() == good


def test_removed_variant_blob_is_deleted_and_reported(built_tiny, genspirv):
    root = built_tiny
    (root / "glsl/neg.comp").unlink()
    result = genspirv("build", "--root", root)
    assert result.code == 0
    assert "removed spirv/neg.spv" in result.out
    assert not (root / "spirv/neg.spv").exists()
    assert "neg" not in [e.name for e in load_manifest(root / "manifests/shaders.json").shaders]


@pytest.mark.slow
def test_failed_compile_leaves_committed_files_untouched(built_tiny, snapshot):
    root = built_tiny
    before = snapshot(root)
    (root / "glsl/neg.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { nope; }\n")
    (root / "glsl/include/common.glsl").write_text("#define ONE 1\nuint gid() { return 7u; }\n")
    with pytest.raises(CompileError, match="glsl/neg.comp:3"):
        build(load_config(root))
    after = snapshot(root)
    del before["glsl/neg.comp"], before["glsl/include/common.glsl"]
    del after["glsl/neg.comp"], after["glsl/include/common.glsl"]
    assert after == before                  # no blob, no manifest, no temp file left behind


@pytest.mark.slow
def test_two_directories_give_identical_bytes(tiny_project, tmp_path, genspirv):
    first = tiny_project()
    second = tmp_path / "elsewhere" / "deeper path"
    shutil.copytree(first, second)
    assert genspirv("build", "--root", first, "-q", "--jobs", "1").code == 0
    assert genspirv("build", "--root", second, "-q").code == 0
    assert outputs(first) == outputs(second)


@pytest.mark.slow
def test_quiet_prints_only_the_summary(tiny_project, genspirv):
    result = genspirv("build", "--root", tiny_project(), "--quiet")
    assert result.code == 0 and result.err == ""
    assert result.out == "genspirv build: 3 compiled, 0 up to date, 0 removed, 4 files written\n"


def test_written_files_get_ordinary_permissions(built_tiny):
    config = load_config(built_tiny)
    umask = os.umask(0)
    os.umask(umask)
    assert (config.root / "spirv/neg.spv").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.slow
def test_a_held_lock_times_out_with_a_clear_message(tiny_project, genspirv):
    root = tiny_project()
    (root / ".genspirv").mkdir()
    with open(root / ".genspirv/lock", "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        result = genspirv("build", "--root", root, env={"GENSPIRV_LOCK_TIMEOUT": "0.3"})
    assert result.code == 2, result
    assert "waiting for" in result.err and "still held by another build" in result.err
    assert not (root / "spirv").exists()
    with project_lock(root, timeout=0.3):     # released: taking it again works at once
        pass



@pytest.mark.slow
def test_generated_code_is_written_by_build_and_verified_by_check(tiny_project, genspirv):
    root = tiny_project(pyproject=TINY_WITH_C)
    result = genspirv("build", "--root", root)
    assert result.code == 0, result
    assert (root / "manifests/shaders.h").is_file()
    header = root / "manifests/shaders.c"
    assert b"add_f32" in header.read_bytes()
    assert genspirv("build", "--root", root).out.endswith("0 files written\n")
    assert genspirv("check", "--root", root).code == 0
    header.write_bytes(header.read_bytes().replace(b"add_f32", b"add_f99", 1))
    result = genspirv("check", "--root", root)
    assert result.code == 1 and "manifests/shaders.c: differs" in result.err


TINY_WITH_C = """\
[tool.genspirv]
generate = [ { target = "c", output = "manifests/shaders" } ]

[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int" } }
"""


@pytest.mark.slow
def test_include_directive_is_on_by_default_and_can_be_turned_off(tiny_project):
    files = {"glsl/include/h.glsl": "#define N 4u\n",
             "glsl/a.comp": "#version 450\n#include \"h.glsl\"\nlayout(local_size_x = 1) in;\n"
                            "layout(std430, binding = 0) buffer B { uint b[]; };\n"
                            "void main() { b[0] = N; }\n"}
    root = tiny_project(files, pyproject="[tool.genspirv]\n")
    assert build(load_config(root)).compiled == ("a",)
    (root / "pyproject.toml").write_text("[tool.genspirv]\ninclude_directive = false\n")
    with pytest.raises(CompileError, match="glsl/a.comp:2: error: .*GL_GOOGLE_include_directive"):
        build(load_config(root))


def test_a_bad_cache_size_setting_is_refused_by_name(built_tiny, monkeypatch):
    monkeypatch.setenv("GENSPIRV_CACHE_MAX_MB", "lots")
    (built_tiny / "glsl/neg.comp").write_text(
        (built_tiny / "glsl/neg.comp").read_text().replace("-X.data", "2.0 * X.data"))
    before = (built_tiny / "manifests/shaders.json").read_bytes()
    with pytest.raises(SettingError, match="GENSPIRV_CACHE_MAX_MB"):
        build(load_config(built_tiny))
    assert (built_tiny / "manifests/shaders.json").read_bytes() == before     # refused before any work


# validate = false reaches spirv-opt: a scalar-layout buffer (vec3 at offset 4) that glslang
# 13.1.1 compiles and the pinned spirv-val refuses without --scalar-block-layout; spirv-opt
# validates its input too, so without --skip-validation it refused the same blob.
SCALAR = """\
#version 450
#extension GL_EXT_scalar_block_layout : require
layout(local_size_x = 64) in;
layout(scalar, set = 0, binding = 0) buffer B { float x; vec3 v[]; };
void main() { v[gl_GlobalInvocationID.x] = vec3(x); }
"""
SCALAR_LEVELS = {   # validate = false set at one level; optimize = true at the source
    "top": ("validate = false\n", "", "scalar"),
    "source": ("", "validate = false\n", "scalar"),
    "variant": ("", 'variants = [ { name = "scalar_v", defines = { N = "1" }, validate = false } ]\n', "scalar_v"),
    "generator": ('generator = "variants.py"\n', "", "scalar_g"),
}
GENERATOR = 'def variants():\n    return [{"name": "scalar_g", "source": "scalar.comp", "validate": False}]\n'


@pytest.mark.slow
@pytest.mark.parametrize("level", list(SCALAR_LEVELS))
def test_validate_false_reaches_the_optimiser_at_every_level(tiny_project, level):
    top, source, name = SCALAR_LEVELS[level]
    pyproject = f'[tool.genspirv]\n{top}\n[tool.genspirv.shaders."scalar.comp"]\noptimize = true\n{source}'
    root = tiny_project({"glsl/scalar.comp": SCALAR, "variants.py": GENERATOR}, pyproject=pyproject)
    report = build(load_config(root))
    assert report.compiled == (name,)
    entry = load_manifest(root / "manifests/shaders.json").entry(name)
    assert (entry.validated, entry.optimized) == (False, True)
    # The control: validated, the same blob is refused (by spirv-opt's own validation first).
    (root / "pyproject.toml").write_text(pyproject.replace("validate = false", "validate = true"))
    (root / "variants.py").write_text(GENERATOR.replace("False", "True"))
    with pytest.raises(ValidationError, match=rf"{name}: glslang made invalid SPIR-V: spirv-opt -O refused it "
                                              r"and spirv-val --target-env vulkan1.2 does too .*:\n.*not aligned to 16"):
        build(load_config(root))


POW_HALF = """\
#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer A { float16_t a[]; };
void main() { uint i = gl_GlobalInvocationID.x; a[i] = pow(a[i], a[i]); }
"""


@pytest.mark.slow
def test_an_optimiser_refusal_of_glslangs_invalid_blob_shows_the_instruction_and_what_to_set(tiny_project):
    # glslang 13.1.1 makes a 16-bit Pow spirv-val refuses; spirv-opt -O refuses it first.
    pyproject = '[tool.genspirv.shaders."pow.comp"]\nvariants = [ { name = "binary_pow_buffer_half", optimize = true } ]\n'
    root = tiny_project({"glsl/pow.comp": POW_HALF}, pyproject=pyproject)
    with pytest.raises(ValidationError) as info:
        build(load_config(root))
    text = str(info.value)
    assert "binary_pow_buffer_half: glslang made invalid SPIR-V: spirv-opt -O refused it and spirv-val " \
           "--target-env vulkan1.2 does too (an invalid input, not an optimiser bug):" in text
    assert "  error: Invalid use of 8- or 16-bit result\n" in text
    assert re.search(r"\n    %\w+ = OpExtInst %half %\w+ Pow %\w+ %\w+\n", text), text     # the instruction
    assert not re.search(r"line \d+", text)                  # a disassembly's line number names nothing
    assert "set validate = false and optimize = false for variant binary_pow_buffer_half" in text
    # What it says to set builds it.
    (root / "pyproject.toml").write_text(pyproject.replace("optimize = true", "optimize = false, validate = false"))
    assert build(load_config(root)).compiled == ("binary_pow_buffer_half",)


def test_an_optimiser_failure_on_a_valid_blob_is_called_one_and_says_optimize_false(tiny_project, tmp_path, monkeypatch):
    opt = tmp_path / "bin/spirv-opt"
    opt.parent.mkdir()
    opt.write_text('#!/bin/sh\ncase "$1" in --version) echo "SPIRV-Tools v2025.5"; exit 0;; esac\n'
                   'echo "error: line 12: the optimiser tripped" >&2\necho "  %5 = OpLoad %float %4" >&2\nexit 1\n')
    opt.chmod(0o755)
    monkeypatch.setenv("GENSPIRV_SPIRV_OPT", str(opt))
    root = tiny_project(pyproject='[tool.genspirv]\noptimize = true\n[tool.genspirv.shaders."add.comp"]\n'
                                  'matrix = { TYPE = { f32 = "float" } }\n')
    with pytest.raises(ValidationError) as info:
        build(load_config(root))
    text = str(info.value)
    assert "spirv-opt -O failed on a blob spirv-val accepts (an optimiser failure, not a shader error):\n" \
           "  error: the optimiser tripped\n    %5 = OpLoad %float %4\n" in text
    assert "set optimize = false for variant add_f32" in text and "invalid" not in text
