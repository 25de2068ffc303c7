"""slang-glslang (genspirv/toolchain/slang/): the slangpy wheel's 2026 glslang as a second compiler.

The shaders in tests/slang_shaders/ use what the pinned glslang 13.1.1 lacks:
cooperative matrix 2 (fp16 and 4-bit blocks decoded on load), the integer dot
product and bfloat16. Each compiles, passes the pinned spirv-val, reflects as
spirv-cross says (where spirv-cross parses it) and compiles to the same bytes
twice and from another folder; the default compiler refuses each (the negative
control that these are features it lacks). Errors name the source's file:line;
a worker that dies costs one variant. Skipped without the slangpy wheel.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from corpus import tools
from genspirv.toolchain.slang import library, slang_glslang
from genspirv.toolchain.slang.worker_job import WorkerJob
from genspirv.toolchain.slang.pinned_glslang import library_files
from genspirv.toolchain.slang.probes import Support
from genspirv.toolchain.slang.workers import WorkerPool
from genspirv.errors import CompileError, CompilerCrashError, ConfigError, ToolchainError, UnavailableError
from genspirv.reflect import reflect
from genspirv.toolchain.tools import compile_glsl, find_glslang, find_tool

REPO = Path(__file__).resolve().parent.parent
SHADERS = REPO / "tests" / "slang_shaders"
INCLUDE = ["glsl/include"]

try:
    LIBRARY = library.find_library()
    LIBRARIES = (LIBRARY.path, *library_files(find_glslang("13.1.1").tool.lib_dir, "13.1.1"))
except ToolchainError as exc:
    LIBRARY = LIBRARIES = None
    pytestmark = pytest.mark.skip(reason=f"slang-glslang unavailable: {exc}")

# name -> (source, defines, target_env, bindings' access in binding order, push constant size)
FEATURES = {
    "matmul_cm2_f16": ("glsl/matmul_cm2.comp", {"A_F16": "1", "ACC_TYPE": "float"}, "vulkan1.3",
                       ["read", "read", "write"], 12),
    "matmul_cm2_q4_f16acc": ("glsl/matmul_cm2.comp", {"A_Q4": "1", "ACC_TYPE": "float16_t"}, "vulkan1.3",
                             ["read", "read", "write"], 12),
    "dot_i8": ("glsl/dot_i8.comp", {}, "vulkan1.2", ["read", "read", "write"], 8),
    "scale_bf16": ("glsl/scale_bf16.comp", {}, "vulkan1.2", ["read", "write"], 8),
}


@pytest.fixture(scope="module")
def slang(tmp_path_factory):
    cache = tmp_path_factory.mktemp("slang") / "slang-glslang.json"
    with slang_glslang.open_slang_glslang("13.1.1", jobs=2, cache=cache) as compiler:
        yield compiler


def _compile(slang, name, root=SHADERS):
    source, defines, env, _, _ = FEATURES[name]
    return slang.compile(source, root=root, defines=defines, include_dirs=INCLUDE, target_env=env, what=name)


def _spirv_val(blob: bytes, env: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "blob.spv"
    path.write_bytes(blob)
    return find_tool("spirv-val").run(["--target-env", env, str(path)], what="spirv-val")


@pytest.mark.slow
@pytest.mark.parametrize("name", FEATURES)
def test_feature_variant_compiles_validates_reflects_and_repeats(slang, name, tmp_path):
    source, defines, env, access, push = FEATURES[name]
    result = _compile(slang, name)
    val = _spirv_val(result.blob, env, tmp_path)
    assert val.returncode == 0, (val.stdout + val.stderr).decode()
    info = reflect(result.blob)
    assert [b.access for b in info.bindings] == access
    assert info.push_constant_size == push
    assert _compile(slang, name).blob == result.blob
    try:
        cross = tools.cross_reflect(result.blob)
    except AssertionError as exc:
        # spirv-cross (Debian 12's) cannot parse cooperative matrix 2 tensor loads.
        assert "cm2" in name and "no block to insert opcode" in str(exc)
    else:
        tools.assert_agrees(info, cross, "main", name)
        assert info.push_constant_size == tools.cross_push_constant_size(cross)


@pytest.mark.slow
def test_spirv_val_refuses_a_damaged_blob(slang, tmp_path):
    """Negative control: the validator above does refuse a blob wrong for its target
    (coopmat2 asks SPIR-V 1.6, which vulkan1.2 does not take)."""
    refused = _spirv_val(_compile(slang, "matmul_cm2_f16").blob, "vulkan1.2", tmp_path)
    assert refused.returncode != 0 and b"1.6" in refused.stdout + refused.stderr


@pytest.mark.parametrize("name", FEATURES)
def test_the_default_compiler_lacks_each_feature(name, tmp_path):
    source, defines, env, _, _ = FEATURES[name]
    with pytest.raises(UnavailableError) as err:
        compile_glsl(find_glslang("13.1.1"), source=source, output=tmp_path / "x.spv", depfile=tmp_path / "x.d",
                     cwd=SHADERS, target_env=env, defines=defines, include_dirs=INCLUDE, include_preamble=True)
    assert err.value.missing


@pytest.mark.slow
def test_the_same_bytes_from_another_folder_and_another_compiler(slang, tmp_path):
    copy = tmp_path / "elsewhere" / "project"
    shutil.copytree(SHADERS, copy)
    here = _compile(slang, "matmul_cm2_q4_f16acc")
    with slang_glslang.open_slang_glslang("13.1.1", jobs=1) as fresh:
        there = _compile(fresh, "matmul_cm2_q4_f16acc", root=copy)
    assert there.blob == here.blob and there.depends == here.depends
    assert b"slang_shaders" not in here.blob and b".glsl" not in here.blob and b".comp" not in here.blob


def test_depends_lists_every_include_in_order(slang):
    assert _compile(slang, "matmul_cm2_q4_f16acc").depends == (
        "glsl/matmul_cm2.comp", "glsl/include/decode_q4.glsl", "glsl/include/blocks.glsl")
    assert _compile(slang, "matmul_cm2_f16").depends == ("glsl/matmul_cm2.comp",)


# -- errors keep the source's own file:line ---------------------------------------

HEADER = "#ifndef H\n#define H\nfloat twice(float x) {{ return 2.0 * x; }}\n{bad_header}#endif\n"
SOURCE = """{lead}#version 450
#include "h.glsl"
layout(local_size_x = 1) in;
layout(binding = 0) buffer B {{ float v[]; }};
void main() {{
{bad_source}    v[0] = twice(v[0]);
}}
"""


@pytest.mark.parametrize("lead", ["", "// a comment\n\n"], ids=["first-line", "after-comments"])
@pytest.mark.parametrize("defines", [{}, {"X1": "1", "X2": "2", "X3": "3"}], ids=["no-defines", "three-defines"])
def test_an_error_in_the_source_names_its_line(slang, tmp_path, lead, defines):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.glsl").write_text(HEADER.format(bad_header=""))
    (tmp_path / "s.comp").write_text(SOURCE.format(lead=lead, bad_source="    undeclared_thing = 1;\n"))
    line = lead.count("\n") + 6
    with pytest.raises(CompileError) as err:
        slang.compile("s.comp", root=tmp_path, defines=defines, include_dirs=["inc"], what="v1")
    assert err.value.messages.startswith(f"s.comp:{line}: error: 'undeclared_thing'"), err.value.messages
    assert str(err.value).startswith("v1: s.comp does not compile")


def test_an_error_in_an_include_names_the_include_and_its_line(slang, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.glsl").write_text(HEADER.format(bad_header="float oops() { return nope; }\n"))
    (tmp_path / "s.comp").write_text(SOURCE.format(lead="", bad_source=""))
    with pytest.raises(CompileError) as err:
        slang.compile("s.comp", root=tmp_path, include_dirs=["inc"])
    assert err.value.messages.startswith("inc/h.glsl:4: error: 'nope'"), err.value.messages


def test_a_missing_include_is_the_preprocessors_error_with_its_line(slang, tmp_path):
    (tmp_path / "s.comp").write_text(SOURCE.format(lead="", bad_source=""))
    with pytest.raises(CompileError) as err:
        slang.compile("s.comp", root=tmp_path, include_dirs=[])
    assert "s.comp:2: error:" in err.value.messages and "h.glsl" in err.value.messages


def test_an_extension_this_compiler_lacks_is_unavailable(slang, tmp_path):
    (tmp_path / "s.comp").write_text("#version 450\n#extension GL_EXT_float_e2m1 : require\n"
                                     "layout(local_size_x = 1) in;\nvoid main() {}\n")
    with pytest.raises(UnavailableError) as err:
        slang.compile("s.comp", root=tmp_path)
    assert err.value.missing == ("GL_EXT_float_e2m1",)
    assert "slang-glslang 2026.12 does not support" in str(err.value)


def test_coopmat2_below_spirv_1_6_names_the_target_env_to_set(slang):
    """The class of 42 'extra tokens -- expected newline' failures: the compiler, not -E."""
    source, defines, _, _, _ = FEATURES["matmul_cm2_f16"]
    with pytest.raises(CompileError) as err:
        slang.compile(source, root=SHADERS, defines=defines, include_dirs=INCLUDE, target_env="vulkan1.2")
    assert 'set target_env = "vulkan1.3"' in str(err.value)
    assert "extra tokens -- expected newline" in err.value.messages


def test_flags_without_a_meaning_and_unknown_target_envs_are_refused(slang):
    with pytest.raises(ConfigError, match="flag '-Os' has no meaning for compiler slang-glslang"):
        slang.compile("glsl/dot_i8.comp", root=SHADERS, flags=["-Os"], what="dot")
    with pytest.raises(ConfigError, match="target_env 'vulkan9'"):
        slang.compile("glsl/dot_i8.comp", root=SHADERS, target_env="vulkan9")
    assert len(slang.compile("glsl/dot_i8.comp", root=SHADERS, flags=["-DUNUSED=1"]).blob) > 20


# -- the preprocessor sees the macros the compiler predefines -----------------------

FEATURE_TEST = """#version 450
#ifdef GL_EXT_bfloat16
#extension GL_EXT_bfloat16 : enable
#endif
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer Y { bfloat16_t y[]; };
void main() {
    y[gl_GlobalInvocationID.x] = bfloat16_t(1.5);
}
"""


def test_a_feature_test_macro_takes_the_compilers_branch(slang, tmp_path):
    """13.1.1's -E does not define GL_EXT_bfloat16 (nor 20 more of the newer compiler's
    extension macros, nor VULKAN), so a source that tests one takes its fallback branch. With
    the compiler's macros passed to -E it builds; without them (the negative control: what a
    plain -E gives) the extension line is gone and the compiler refuses the type."""
    (tmp_path / "f.comp").write_text(FEATURE_TEST)
    assert slang.predefined_macros()["GL_EXT_bfloat16"] == "1"
    blob = slang.compile("f.comp", root=tmp_path).blob
    assert reflect(blob).bindings[0].access == "write"
    plain = slang.pool.compile(WorkerJob((1, 5), "f.comp", root=str(tmp_path)), "no predefined macros").result
    assert plain.code != 0 and "f.comp:8: '' :  syntax error, unexpected IDENTIFIER" in plain.diagnostics


VECTOR_DECODE = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable
#extension GL_NV_cooperative_matrix2 : enable
#extension GL_NV_cooperative_matrix_decode_vector : enable
#extension GL_EXT_buffer_reference : enable
#include "decode_q4.glsl"
f16vec2 decode_q4_pair(const in Q4Ref ref, const in uint blockCoords[2], const in uint coordInBlock[2]) {
    return f16vec2(decode_q4(ref, blockCoords, coordInBlock));
}
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { block_q4 blocks[]; };
layout(binding = 1) writeonly buffer D { float16_t d[]; };
void main() {
    tensorLayoutNV<2> t = createTensorLayoutNV(2);
    coopmat<float16_t, gl_ScopeWorkgroup, 32, 32, gl_MatrixUseA> m;
    coopMatLoadTensorNV(m, blocks, 0, t, decode_q4, decode_q4_pair);
    coopMatStoreTensorNV(m, d, 0, t);
}
"""


def test_the_vector_decode_form_is_unavailable_not_a_mystery(slang, tmp_path):
    """'coopMatLoadTensorNV: no matching overloaded function found' comes from the compiler when a
    load passes a scalar and a vector decode function: that form is GL_NV_cooperative_matrix_decode_vector,
    which the 2026.12 library lacks (its own warning says so); reported as unavailable, naming it."""
    shutil.copytree(SHADERS / "glsl" / "include", tmp_path / "include")
    (tmp_path / "v.comp").write_text(VECTOR_DECODE)
    with pytest.raises(UnavailableError) as err:
        slang.compile("v.comp", root=tmp_path, include_dirs=["include"], target_env="vulkan1.3")
    assert err.value.missing == ("GL_NV_cooperative_matrix_decode_vector",)
    assert "v.comp:18: error: 'coopMatLoadTensorNV' : no matching overloaded function found" in err.value.messages


def test_the_client_macro_matches_the_compilers(slang, tmp_path):
    (tmp_path / "v.comp").write_text("#version 450\n#if VULKAN != 100\n#error not vulkan 100\n#endif\n"
                                     "layout(local_size_x = 1) in;\nvoid main() {}\n")
    # The pinned preprocessor runs under Vulkan rules, so it defines VULKAN itself, as the compiler does.
    assert "VULKAN" not in slang.predefined_macros()
    slang.compile("v.comp", root=tmp_path)
    (tmp_path / "w.comp").write_text((tmp_path / "v.comp").read_text().replace("!= 100", "== 100"))
    with pytest.raises(CompileError, match="not vulkan 100"):       # the control: the #error can fire
        slang.compile("w.comp", root=tmp_path)


# -- what the compiler builds, asked of the compiler ----------------------------------

def test_supports_asks_the_compiler_and_remembers(slang):
    asked = ["GL_NV_cooperative_matrix2", "GL_EXT_integer_dot_product", "GL_EXT_bfloat16",
             "GL_EXT_float_e4m3", "GL_EXT_float_e2m1", "GL_NOT_an_extension"]
    assert slang.supports(asked, "vulkan1.2") == {
        "GL_NV_cooperative_matrix2": Support.NEEDS_NEWER_TARGET,
        "GL_EXT_integer_dot_product": Support.SUPPORTED, "GL_EXT_bfloat16": Support.SUPPORTED,
        "GL_EXT_float_e4m3": Support.SUPPORTED, "GL_EXT_float_e2m1": Support.UNSUPPORTED,
        "GL_NOT_an_extension": Support.UNSUPPORTED}
    assert slang.supports(["GL_NV_cooperative_matrix2"], "vulkan1.3") == {
        "GL_NV_cooperative_matrix2": Support.SUPPORTED}
    # Another compiler with the same cache file answers without starting a worker.
    with slang_glslang.SlangGlslang(slang.preprocessor, slang.library, jobs=1, cache=slang.cache) as again:
        assert again.supports(asked, "vulkan1.2") == slang.supports(asked, "vulkan1.2")
        again.predefined_macros()
        assert again.pool.started == 0


def test_can_build_answers_for_what_the_default_compiler_left_unavailable(slang, tmp_path):
    source, defines, env, _, _ = FEATURES["scale_bf16"]
    with pytest.raises(UnavailableError) as err:
        compile_glsl(find_glslang("13.1.1"), source=source, output=tmp_path / "x.spv", depfile=tmp_path / "x.d",
                     cwd=SHADERS, target_env=env, defines=defines)
    assert slang.can_build(err.value, env) == {"GL_EXT_bfloat16": Support.SUPPORTED}


def test_the_pin_is_the_extra_in_pyproject():
    text = (REPO / "pyproject.toml").read_text()
    assert f'slang-glslang = ["slangpy=={library.PIN}"]' in text
    assert LIBRARY.wheel_version == library.PIN and LIBRARY.version == "2026.12"


# -- a worker that dies costs one variant ----------------------------------------------

def _slow(statements: int) -> bytes:
    body = "\n".join(f"    x = x * 1.0001 + float({i});" for i in range(statements))
    return (f"#version 450\nlayout(local_size_x = 1) in;\nlayout(binding = 0) buffer B {{ float v[]; }};\n"
            f"void main() {{\n    float x = v[0];\n{body}\n    v[0] = x;\n}}\n").encode()


SMALL = WorkerJob((1, 5), "small.comp", text=_slow(1))


@pytest.mark.slow
def test_a_worker_killed_mid_compile_costs_that_variant_only():
    pool = WorkerPool(LIBRARIES, 2, timeout_s=60, memory_bytes=2048 << 20)
    try:
        pool.compile(SMALL, "warm-up")
        results = {}

        def run(name, job):
            try:
                results[name] = pool.compile(job, name)
            except CompilerCrashError as exc:
                results[name] = exc

        victim = threading.Thread(target=run, args=("slow_variant", WorkerJob((1, 5), "slow.comp", text=_slow(100000))))
        victim.start()
        time.sleep(0.3)         # the slow compile (~2 s) is under way in the one worker started
        busy = pool.worker_pids()
        assert len(busy) == 1
        os.kill(busy[0], signal.SIGKILL)
        victim.join(30)
        others = [threading.Thread(target=run, args=(f"other{i}", SMALL)) for i in range(4)]
        for t in others:
            t.start()
        for t in others:
            t.join(30)
        err = results["slow_variant"]
        assert isinstance(err, CompilerCrashError) and not isinstance(err, ToolchainError)
        assert str(err).startswith("slow_variant: the slang-glslang worker crashed (signal 9, SIGKILL) "
                                   "compiling slow.comp")
        assert "only this variant is lost" in str(err)
        assert all(results[f"other{i}"].result.code == 0 for i in range(4))
        assert busy[0] not in pool.worker_pids()
    finally:
        pool.close()
    assert pool.worker_pids() == []


@pytest.mark.slow
def test_a_compile_past_the_timeout_is_stopped_and_the_next_one_runs():
    pool = WorkerPool(LIBRARIES, 1, timeout_s=60, memory_bytes=2048 << 20)
    try:
        pool.compile(SMALL, "warm-up")      # the first compile also builds the library's tables
        pool.timeout_s = 0.3
        started = time.monotonic()
        with pytest.raises(CompilerCrashError, match=r"slow: slang-glslang did not finish within 0.3 s"):
            pool.compile(WorkerJob((1, 5), "slow.comp", text=_slow(100000)), "slow")
        assert time.monotonic() - started < 1.5
        pool.timeout_s = 60                 # a new worker builds its tables first
        assert pool.compile(SMALL, "next").result.code == 0
        assert pool.started == 2
    finally:
        pool.close()


@pytest.mark.slow
def test_a_compile_past_the_memory_cap_fails_alone():
    pool = WorkerPool(LIBRARIES, 1, timeout_s=60, memory_bytes=256 << 20)
    try:
        assert pool.compile(SMALL, "fits").result.code == 0        # the worker itself fits in 256 MiB
        with pytest.raises(CompilerCrashError, match=r"may have run out of its 256 MiB"):
            pool.compile(WorkerJob((1, 5), "big.comp", text=_slow(100000)), "big")
        assert pool.compile(SMALL, "next").result.code == 0
    finally:
        pool.close()


def test_an_unexpected_preprocessor_output_is_refused_not_misnumbered():
    from genspirv.toolchain.slang.preprocess import strip_preamble_echo
    echo = "#extension GL_GOOGLE_include_directive : enable\n"
    assert strip_preamble_echo("\n\n" + echo + "#version 450\n", "v") == "#version 450\n"
    with pytest.raises(ToolchainError, match="line numbers would be wrong"):
        strip_preamble_echo("#version 450\n" + echo, "v")
