"""Reflection rules checked by hand on the corpus: what spirv-cross cannot tell.

(tests/test_oracle.py compares the rest with spirv-cross on every blob.)
"""

from __future__ import annotations

import dataclasses

import textwrap
from pathlib import Path

import pytest

from corpus import tools
from genspirv.reflect import spirv as sp
from genspirv.errors import ReflectError, SpirvError
from genspirv.reflect import (ShaderInfo, binding_usage, index_module, reflect, reflect_module,
                              shared_memory_bytes, struct_size)
from genspirv.reflect import usage


def _info(name: str, entry: str | None = None) -> ShaderInfo:
    return reflect(tools.corpus_blob(tools.CORPUS / name), entry)


def _glsl(tmp_path, body: str, name: str = "k.comp") -> bytes:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return tools.compile_glsl(path)


def _bindings(info):
    return {b.binding if b.set == 0 else (b.set, b.binding): b for b in info.bindings}


# -- usage ------------------------------------------------------------------------


def test_usage_through_functions():
    b = _bindings(_info("usage.comp"))
    got = {n: (x.name, x.accessed, x.written) for n, x in b.items()}
    assert got == {
        0: ("a", True, True),     # inout parameter: copied in and back out
        1: ("b", True, False),
        2: ("c", True, True),     # written in a called function
        3: ("d", False, False),   # written only in a function nobody calls
        4: ("e", True, True),     # atomicAdd
        5: ("f", True, False),    # .length() only
        6: ("g", False, False),
        7: ("h", True, False),
    }


def test_pointer_flow_select_phi_copies_parameters_and_cycles():
    usage_ = binding_usage(tools.corpus_blob(tools.CORPUS / "pointer_flow.spvasm"))
    got = {k[1]: (u.accessed, u.read, u.written) for k, u in usage_.items()}
    assert got == {
        0: (True, False, True),   # a / b: stored through OpSelect of either
        1: (True, False, True),
        2: (True, True, False),   # OpPhi + OpCopyObject, source of OpCopyMemory
        3: (True, False, True),   # OpPtrAccessChain, target of OpCopyMemory
        4: (True, False, False),  # OpArrayLength: accessed, neither read nor written
        5: (True, False, True),   # parameter of a function in a call cycle
    }


def test_images_samplers_and_acceleration_structures_usage():
    b = _bindings(_info("descriptors.comp"))
    assert (b[3].accessed, b[3].written) == (True, False)     # imageLoad
    assert (b[4].accessed, b[4].written) == (True, True)      # imageStore
    assert b[(1, 1)].type == "sampler" and b[(1, 1)].accessed
    assert b[(2, 0)].type == "acceleration_structure" and b[(2, 0)].accessed
    assert not b[(2, 0)].written
    assert b[(3, 7)].accessed is False
    usage_ = binding_usage(tools.compile_glsl(tools.CORPUS / "descriptors.comp"))
    assert usage_[(0, 5)].read and not usage_[(0, 5)].written     # rw_img: load only
    assert usage_[(1, 0)].read                                    # sampled through sampler2D()


def test_several_entry_points():
    blob = tools.corpus_blob(tools.CORPUS / "multi_entry.spvasm")
    first, second = reflect_module(blob)
    assert (first.entry_point, first.local_size) == ("first", (64, 1, 1))
    assert (second.entry_point, second.local_size) == ("second", (8, 8, 1))
    assert [(b.accessed, b.written) for b in first.bindings] == [(True, False), (True, True),
                                                                (False, False)]
    assert [(b.accessed, b.written) for b in second.bindings] == [(True, False), (False, False),
                                                                 (False, False)]
    assert reflect(blob) == first and reflect(blob, "second") == second
    with pytest.raises(ReflectError, match="'nope'.*'first', 'second'"):
        reflect(blob, "nope")


# -- access and descriptor declarations ---------------------------------------------


@pytest.mark.parametrize("env", ["vulkan1.0", "vulkan1.2"])
def test_access_rules(env):
    info = reflect(tools.compile_glsl(tools.CORPUS / "access.comp", env))
    got = {b.binding: (b.name, b.access) for b in info.bindings}
    assert got == {0: ("r", "read"), 1: ("w", "write"), 2: ("mixed", "read_write"),
                   3: ("members", "read"), 4: ("rwbuf", "read_write"),
                   5: ("vol", "read_write"), 6: ("neither", "read"),
                   7: ("Anon", "read_write")}            # no instance name: the block's name
    assert info.binding_count == 8
    assert info.writable_mask == 0b10110110
    assert info.readable_mask == 0b11111101


def test_variable_decorations_and_mixed_block():
    info = _info("nonwritable_var.spvasm")
    assert [(b.name, b.access) for b in info.bindings] == [
        ("ro", "read"), ("Blk", "write"), ("Mixed", "read_write")]


def test_descriptor_kinds_counts_and_sets():
    info = _info("descriptors.comp")
    got = {(b.set, b.binding): (b.type, b.count) for b in info.bindings}
    assert got == {
        (0, 0): ("storage_buffer", 1), (0, 1): ("storage_buffer", 1),
        (0, 2): ("uniform_buffer", 1), (0, 3): ("storage_image", 1),
        (0, 4): ("storage_image", 1), (0, 5): ("storage_image", 1),
        (1, 0): ("sampled_image", 1), (1, 1): ("sampler", 1),
        (1, 2): ("combined_image_sampler", 1), (1, 3): ("uniform_texel_buffer", 1),
        (1, 4): ("storage_texel_buffer", 1), (1, 5): ("storage_texel_buffer", 1),
        (2, 0): ("acceleration_structure", 1), (2, 1): ("storage_buffer", 3),
        (2, 2): ("storage_buffer", 0), (2, 3): ("sampled_image", 6),
        (3, 7): ("storage_buffer", 1),
    }
    assert [b.access for b in info.bindings if b.type in ("uniform_buffer", "sampler",
                                                          "sampled_image")] == ["read"] * 4


def test_decoration_group_uniform_and_buffer_block():
    info = _info("workgroup_builtin.spvasm")
    assert [(b.set, b.binding, b.name, b.type, b.access) for b in info.bindings] == [
        (2, 0, "params", "uniform_buffer", "read"), (2, 1, "data", "storage_buffer", "read")]


def test_aliased_bindings_merge(tmp_path):
    blob = _glsl(tmp_path, """
        #version 450
        layout(local_size_x = 1) in;
        layout(binding = 0) readonly buffer A { float a[]; };
        layout(binding = 0) writeonly buffer B { vec4 b[]; };
        void main() { b[0] = vec4(a[1]); }
    """)
    (binding,) = reflect(blob).bindings
    assert (binding.binding, binding.access, binding.accessed, binding.written) == \
        (0, "read_write", True, True)


def test_aliases_of_different_kinds_are_refused(tmp_path):
    blob = _glsl(tmp_path, """
        #version 450
        layout(local_size_x = 1) in;
        layout(binding = 0) buffer A { float a[]; };
        layout(binding = 0) uniform B { vec4 b; };
        void main() { a[0] = b.x; }
    """)
    with pytest.raises(ReflectError, match="binding 0.*storage_buffer.*uniform_buffer"):
        reflect(blob)


# -- workgroup size and spec constants ---------------------------------------------


def test_local_size_id():
    info = _info("local_size_id.spvasm")
    assert info.local_size == (32, 4, 2) and info.local_size_spec_ids == (7, None, 9)
    assert [(s.id, s.name, s.default) for s in info.spec_constants] == [(7, "WG_X", 32),
                                                                         (9, "WG_Z", 2)]


def test_workgroup_size_builtin_overrides_local_size():
    info = _info("workgroup_builtin.spvasm")
    assert info.local_size == (4, 4, 2) and info.local_size_spec_ids == (None, None, None)


def test_local_size_x_id_from_glslang():
    info = _info("spec.comp")
    assert info.local_size == (1, 2, 1) and info.local_size_spec_ids == (10, None, 12)


def test_spec_constants_of_every_type():
    got = {s.id: (s.name, s.type, s.default) for s in _info("spec.comp").spec_constants}
    assert got == {
        0: ("FLAG_T", "bool", True), 1: ("FLAG_F", "bool", False), 2: ("I32", "int32", -7),
        3: ("U32", "uint32", 4000000000), 4: ("F32", "float32", -0.25),
        5: ("F64", "float64", 3.5e100), 6: ("I64", "int64", -9000000000),
        7: ("U64", "uint64", 18000000000000000000), 8: ("F16", "float16", -1.5),
        9: ("I16", "int16", -300), 10: ("", "uint32", 1), 12: ("", "uint32", 1),
        13: ("U16", "uint16", 65000), 14: ("I8", "int8", -100), 15: ("U8", "uint8", 200),
        20: ("LEN", "uint32", 5),
    }
    assert type(got[0][2]) is bool and type(got[4][2]) is float and type(got[2][2]) is int


def test_constants_sharing_a_spec_id_are_all_listed():
    info = _info("dup_spec_id.spvasm")
    assert [(s.id, s.name, s.type, s.default) for s in info.spec_constants] == [
        (3, "", "uint32", 8), (3, "N", "uint32", 4),           # sorted by (id, name)
        (4, "USE_FAST_PATH", "bool", False)]                    # decorated twice: once
    assert info.bindings[0].count == 8          # array sized by its own constant's default


def test_shared_spec_id_from_glslang(tmp_path):
    # local_size_x_id = 0 with no local_size_x beside constant_id = 0: both constants.
    blob = _glsl(tmp_path, """
        #version 450
        layout(local_size_x_id = 0) in;
        layout(constant_id = 0) const uint BLOCK_SIZE = 64;
        layout(binding = 0) buffer A { uint a[]; };
        void main() { a[gl_LocalInvocationID.x] = BLOCK_SIZE; }
    """)
    info = reflect(blob)
    assert [(s.id, s.name, s.default) for s in info.spec_constants] == [
        (0, "", 1), (0, "BLOCK_SIZE", 64)]
    assert info.local_size == (1, 1, 1) and info.local_size_spec_ids == (0, None, None)


# -- push constants --------------------------------------------------------------


@pytest.mark.parametrize("body, size", [
    ("vec3 a;", 12),
    ("vec3 a; float b;", 16),                      # b packs into vec3's padding
    ("float a; vec3 b;", 28),                      # b aligned to 16
    ("mat3 m;", 48),                               # three columns, stride 16
    ("layout(row_major) mat2x3 m;", 24),           # three rows of vec2, stride 8
    ("layout(column_major) mat2x3 m;", 32),        # two columns of vec3, stride 16
    ("float a[N];", 20),                           # spec-sized: the default, 5
    ("uint64_t x; uint y;", 12),
    ("S s[2];", 32),                               # struct of a vec3: stride 16
    ("uint n; S s;", 28),
    ("dmat2 d;", 32),
])
def test_push_constant_sizes(tmp_path, body, size):
    blob = _glsl(tmp_path, f"""
        #version 450
        #extension GL_EXT_shader_explicit_arithmetic_types : require
        layout(local_size_x = 1) in;
        layout(constant_id = 0) const uint N = 5;
        struct S {{ vec3 v; }};
        layout(push_constant) uniform PC {{ {body} }} pc;
        layout(binding = 0) buffer Out {{ float o[]; }};
        void main() {{ o[0] = float(N); }}
    """)
    assert reflect(blob).push_constant_size == size


def test_push_constant_size_matches_the_same_block_as_a_buffer():
    # push.comp declares one body as push constants and as a std430 buffer;
    # spirv-cross gives the buffer's block_size, genspirv both sizes.
    blob = tools.compile_glsl(tools.CORPUS / "push.comp")
    cross = tools.cross_reflect(blob)
    mirror = next(s for s in cross["ssbos"] if s["name"] == "Mirror")
    info = reflect(blob)
    assert info.push_constant_size == mirror["block_size"] == 348
    index = index_module(sp.parse(blob))
    for ssbo in cross["ssbos"]:
        struct_id = int(ssbo["type"].lstrip("_"))
        assert struct_size(index, index.module.defs[struct_id]) == ssbo["block_size"], ssbo


def test_uniform_block_sizes_match_spirv_cross():
    blob = tools.compile_glsl(tools.CORPUS / "descriptors.comp")
    index = index_module(sp.parse(blob))
    (ubo,) = tools.cross_reflect(blob)["ubos"]
    assert struct_size(index, index.module.defs[int(ubo["type"].lstrip("_"))]) == ubo["block_size"]


# -- errors and complexity ----------------------------------------------------------


def test_module_without_compute_entry_point(tmp_path):
    frag = tmp_path / "f.frag"
    frag.write_text("#version 450\nlayout(location=0) out vec4 c;\nvoid main(){ c = vec4(1); }\n")
    blob = tools.compile_glsl(frag)
    with pytest.raises(ReflectError, match="no GLCompute entry point.*'main' \\(Fragment\\)"):
        reflect(blob)
    with pytest.raises(ReflectError):
        reflect_module(blob)


def test_garbage_after_a_valid_header_is_a_spirv_error():
    blob = tools.compile_glsl(tools.CORPUS / "usage.comp")
    with pytest.raises(SpirvError):
        reflect(blob[:20] + bytes(range(200, 240)))


def _chain_module(n: int) -> bytes:
    """n functions, each storing to the buffer and calling the next one."""
    lines = ["OpCapability Shader", "OpMemoryModel Logical GLSL450",
             'OpEntryPoint GLCompute %f0 "main" %buf', "OpExecutionMode %f0 LocalSize 1 1 1",
             "OpDecorate %rta ArrayStride 4", "OpMemberDecorate %Buf 0 Offset 0",
             "OpDecorate %Buf Block", "OpDecorate %buf DescriptorSet 0",
             "OpDecorate %buf Binding 0",
             "%void = OpTypeVoid", "%fn = OpTypeFunction %void", "%uint = OpTypeInt 32 0",
             "%u0 = OpConstant %uint 0", "%rta = OpTypeRuntimeArray %uint",
             "%Buf = OpTypeStruct %rta", "%pBuf = OpTypePointer StorageBuffer %Buf",
             "%pu = OpTypePointer StorageBuffer %uint", "%buf = OpVariable %pBuf StorageBuffer"]
    for i in range(n):
        lines += [f"%f{i} = OpFunction %void None %fn", f"%l{i} = OpLabel",
                  f"%p{i} = OpAccessChain %pu %buf %u0 %u0", f"%v{i} = OpLoad %uint %p{i}",
                  f"OpStore %p{i} %v{i}"]
        if i + 1 < n:
            lines.append(f"%c{i} = OpFunctionCall %void %f{i + 1}")
        lines += ["OpReturn", "OpFunctionEnd"]
    return "\n".join(lines) + "\n"


def test_usage_work_is_linear_in_the_module(tmp_path):
    visits = {}
    for n in (100, 200, 400):
        src = tmp_path / f"chain{n}.spvasm"
        src.write_text(_chain_module(n))
        index = index_module(sp.parse(tools.assemble(src)))
        fn = index.entry_points[0].function
        var = index.variables[0].result
        result = usage(index, fn, {var: False})
        assert result.written == {var}
        visits[n] = result.visits
    # doubling the module doubles the work (within a constant), never squares it
    assert 1.8 < visits[200] / visits[100] < 2.2
    assert 1.8 < visits[400] / visits[200] < 2.2


def test_garbage_collector_state_is_restored():
    import gc
    blob = tools.compile_glsl(tools.CORPUS / "usage.comp")
    assert gc.isenabled()
    reflect(blob)
    with pytest.raises(SpirvError):
        reflect(blob[:40])
    assert gc.isenabled()
    gc.disable()
    try:
        reflect(blob)
        assert not gc.isenabled()      # a caller's choice is left as it was
    finally:
        gc.enable()


@pytest.mark.parametrize("name", ["usage.comp", "descriptors.comp"])
def test_debug_info_changes_nothing(name):
    # -gVS: NonSemantic.Shader.DebugInfo.100, whose instructions name every variable.
    plain = reflect(tools.compile_glsl(tools.CORPUS / name))
    debug_blob = tools.compile_glsl(tools.CORPUS / name, "vulkan1.2", ("-gVS",))
    assert any(s.startswith("NonSemantic.") for s in
               index_module(sp.parse(debug_blob)).ext_inst_sets.values())
    # ... and the extension those instructions need, which a device must support too.
    debug = reflect(debug_blob)
    assert set(debug.extensions) - set(plain.extensions) == {"SPV_KHR_non_semantic_info"}
    assert dataclasses.replace(debug, extensions=plain.extensions) == plain


def test_image_atomics_queries_and_stores_in_callees():
    usage_ = binding_usage(tools.corpus_blob(tools.CORPUS / "image_usage.comp"))
    got = {k[1]: (u.accessed, u.read, u.written) for k, u in usage_.items()}
    assert got == {
        0: (True, True, True),     # imageAtomicAdd: OpImageTexelPointer + OpAtomicIAdd
        1: (True, False, False),   # imageSize: the descriptor, not the contents
        2: (True, True, False),    # sampled through sampler2D(tex, samp)
        3: (True, True, False),
        4: (True, False, True),    # imageStore in a called function
        5: (True, False, False),   # textureSize: OpImage + OpImageQuerySizeLod
    }


# -- block sizes and workgroup memory ----------------------------------------------


def test_min_size_and_array_stride():
    got = {(b.set, b.binding): (b.min_size, b.array_stride) for b in _info("sizes.comp").bindings}
    assert got == {
        (0, 0): (32, 16),     # uint, vec3 padded to 16, then vec4 data[]
        (0, 1): (64, 0),      # std140 uniform: vec3 + float, mat3 of three 16-byte columns
        (0, 2): (28, 0),      # float f[7]: no runtime array
        (0, 3): (8, 12),      # uvec2, then float rows[][3]: 12 bytes per element
        (1, 0): (8, 4),       # per descriptor of an array of two
    }


def test_non_buffer_bindings_have_no_block_sizes():
    info = _info("descriptors.comp")
    for b in info.bindings:
        if b.type not in ("storage_buffer", "uniform_buffer"):
            assert (b.min_size, b.array_stride) == (0, 0), b


def test_shared_memory_sums_workgroup_variables():
    blob = tools.corpus_blob(tools.CORPUS / "sizes.comp")
    # tile[BLOCK * ROWS + 1] floats + vec3[2] + struct{uint, bool, vec2}[4] + bool
    assert reflect(blob).shared_memory == (64 * 3 + 1) * 4 + 24 + 64 + 4
    assert shared_memory_bytes(blob, {0: 10, 1: 2}) == (10 * 2 + 1) * 4 + 24 + 64 + 4
    assert shared_memory_bytes(blob, {1: 0}) == 4 + 24 + 64 + 4      # ids left out: defaults
    assert shared_memory_bytes(blob) == reflect(blob).shared_memory


def test_shared_memory_of_aliased_blocks_and_spec_expressions():
    blob = tools.corpus_blob(tools.CORPUS / "workgroup_layout.spvasm")
    assert reflect(blob).shared_memory == 92              # max(23 * 4, 4 * 4): aliased
    assert shared_memory_bytes(blob, {0: 2}) == 20         # N <= 4: N + 3 uints; B still 16
    assert shared_memory_bytes(blob, {0: 2, 1: -20}) == 44  # B: -(-20 / 2) + 1 = 11 floats
    with pytest.raises(ReflectError, match="array length at word .* is -2"):
        shared_memory_bytes(blob, {1: 7})                  # -(7 / 2) + 1 = -2


def test_attention_shared_memory_follows_max_ctx():
    blob = (Path(__file__).resolve().parent.parent / "spirv" / "attention.spv").read_bytes()
    info = reflect(blob)
    max_ctx = next(s for s in info.spec_constants if s.name == "MAX_CTX")
    block = next(s for s in info.spec_constants if s.name == "BLOCK_SIZE")
    # scores[MAX_CTX] and the reduction's partial sums [BLOCK_SIZE], floats
    assert info.shared_memory == 4 * (max_ctx.default + block.default)
    assert shared_memory_bytes(blob, {max_ctx.id: 8192}) == 4 * (8192 + block.default)


def test_no_workgroup_memory():
    assert _info("push.comp").shared_memory == 0


def _workgroup_array_module(tmp_path, lines: list[str], length: str) -> bytes:
    """A module whose one Workgroup variable is a uint array of ``length`` (an id)."""
    path = tmp_path / f"k{len(list(tmp_path.glob('*.spvasm')))}.spvasm"   # assemble() caches by path
    path.write_text("\n".join([
        "OpCapability Shader", "OpMemoryModel Logical GLSL450",
        'OpEntryPoint GLCompute %main "main"', "OpExecutionMode %main LocalSize 1 1 1",
        "OpDecorate %n SpecId 0",
        "%void = OpTypeVoid", "%fn = OpTypeFunction %void", "%uint = OpTypeInt 32 0",
        "%n = OpSpecConstant %uint 1", "%u1 = OpConstant %uint 1", "%u40 = OpConstant %uint 40",
        *lines,
        f"%arr = OpTypeArray %uint {length}", "%ptr = OpTypePointer Workgroup %arr",
        "%w = OpVariable %ptr Workgroup",
        "%main = OpFunction %void None %fn", "%entry = OpLabel", "OpReturn", "OpFunctionEnd", ""]))
    return tools.assemble(path, "spv1.0")


def test_spec_expression_reused_many_times_stays_linear(tmp_path):
    # %d60 = 2^60 * n through 60 IAdds of an id with itself: 2^60 paths, 60 evaluations.
    # Wrapped to 32 bits it is 0; "+ 1" makes it an array of one.
    lines = ["%d0 = OpSpecConstantOp %uint IAdd %n %n"]
    lines += [f"%d{i} = OpSpecConstantOp %uint IAdd %d{i - 1} %d{i - 1}" for i in range(1, 60)]
    lines += ["%len = OpSpecConstantOp %uint IAdd %d59 %u1"]
    blob = _workgroup_array_module(tmp_path, lines, "%len")
    assert reflect(blob).shared_memory == 4
    assert shared_memory_bytes(blob, {0: 3}) == 4


def test_spec_expression_errors_are_named(tmp_path):
    shift = _workgroup_array_module(tmp_path, ["%len = OpSpecConstantOp %uint ShiftLeftLogical %n %u40"],
                                    "%len")
    with pytest.raises(ReflectError, match="shifts a 32-bit value by 40"):
        reflect(shift)
    div = _workgroup_array_module(tmp_path, ["%len = OpSpecConstantOp %uint UDiv %u40 %n"], "%len")
    assert reflect(div).shared_memory == 40 * 4
    with pytest.raises(ReflectError, match="divides by zero"):
        shared_memory_bytes(div, {0: 0})
