"""Push-constant members, checked by hand: offsets and strides worked out from the std430
rules (tests/test_oracle.py compares the same records with spirv-cross on every blob),
the choice of block per entry point, and the layouts genspirv refuses to describe.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import tools
from genspirv.errors import ReflectError
from genspirv.reflect import PushMember, reflect, reflect_module

REPO = Path(__file__).resolve().parent.parent


def _flat(members) -> list[tuple]:
    """(name, offset, size, type, vector, columns, array, array_stride, matrix_stride,
    row_major) per member; a struct's members follow it, their names prefixed."""
    out = []
    for m in members:
        out.append((m.name, m.offset, m.size, str(m.type), m.vector, m.columns, m.array,
                    m.array_stride, m.matrix_stride, m.row_major))
        out += [(f"{m.name}.{row[0]}",) + row[1:] for row in _flat(m.members)]
    return out


def test_push_comp_members():
    # std430: a vec3 aligns to 16; struct Inner { vec3 dir; float w; uvec2 ext[2]; } is 32
    # bytes; mat3x2 row-major: 2 rows of 16; mat2x3: 2 columns of 16; N = 3 by default.
    info = reflect(tools.compile_glsl(tools.CORPUS / "push.comp"))
    inner = [(".dir", 0, 12, "float32", 3, 1, (), 0, 0, False),
             (".w", 12, 4, "float32", 1, 1, (), 0, 0, False),
             (".ext", 16, 16, "uint32", 2, 1, (2,), 8, 0, False)]
    assert _flat(info.push_constants) == [
        ("n", 0, 4, "uint32", 1, 1, (), 0, 0, False),
        ("pad3", 16, 12, "float32", 3, 1, (), 0, 0, False),
        ("inner", 32, 32, "struct", 1, 1, (), 0, 0, False),
        *[("inner" + r[0],) + r[1:] for r in inner],
        ("inners", 64, 64, "struct", 1, 1, (2,), 32, 0, False),
        *[("inners" + r[0],) + r[1:] for r in inner],
        ("rm", 128, 32, "float32", 2, 3, (), 0, 16, True),
        ("cm", 160, 32, "float32", 3, 2, (), 0, 16, False),
        ("arr_m", 192, 128, "float32", 4, 4, (2,), 64, 16, False),
        ("spec_sized", 320, 12, "float32", 1, 1, (3,), 4, 0, False),
        ("tail", 336, 12, "float32", 3, 1, (), 0, 0, False),
    ]
    assert info.push_constant_size == 348 == 336 + 12


def test_push_types_members():
    info = reflect(tools.compile_glsl(tools.CORPUS / "push_types.comp"))
    assert _flat(info.push_constants) == [
        ("a", 0, 24, "float32", 1, 1, (2, 3), 12, 0, False),        # float a[2][3]
        ("big", 24, 8, "uint64", 1, 1, (), 0, 0, False),
        ("sv", 32, 6, "int16", 3, 1, (), 0, 0, False),
        ("s", 40, 160, "struct", 1, 1, (2, 2), 80, 0, False),      # S s[2][2], S is 40 bytes
        ("s.h", 0, 2, "float16", 1, 1, (), 0, 0, False),
        ("s.b", 2, 1, "int8", 1, 1, (), 0, 0, False),
        ("s.m", 8, 32, "float32", 2, 2, (2,), 16, 8, False),
        ("dm", 224, 64, "float64", 3, 2, (), 0, 32, False),        # dmat2x3: 2 columns of dvec3
        ("rdm", 288, 128, "float64", 2, 3, (2,), 64, 32, True),    # row-major dmat3x2[2]
        ("ref", 416, 8, "uint64", 1, 1, (), 0, 0, False),          # buffer_reference: an address
        ("bytes", 424, 4, "uint8", 4, 1, (), 0, 0, False),
        ("neg", 432, 8, "int64", 1, 1, (), 0, 0, False),
        ("u16", 440, 2, "uint16", 1, 1, (), 0, 0, False),
        ("iv", 448, 8, "int32", 2, 1, (), 0, 0, False),
    ]


def test_members_in_offset_order_unnamed_and_nested_matrices():
    # push_layouts.spvasm declares PA { uint later @64; Inner inner @0; float @68 (no name) }
    # with Inner { row-major mat3x2 rm (stride 16); column-major mat2 cm (stride 8) @32 }.
    main, other = reflect_module(tools.corpus_blob(tools.CORPUS / "push_layouts.spvasm"))
    assert _flat(main.push_constants) == [
        ("inner", 0, 48, "struct", 1, 1, (), 0, 0, False),
        ("inner.rm", 0, 32, "float32", 2, 3, (), 0, 16, True),
        ("inner.cm", 32, 16, "float32", 2, 2, (), 0, 8, False),
        ("later", 64, 4, "uint32", 1, 1, (), 0, 0, False),
        ("", 68, 4, "float32", 1, 1, (), 0, 0, False),
    ]
    # Each entry point gets the block its interface lists; the size stays module-wide.
    assert _flat(other.push_constants) == [("x", 0, 4, "uint32", 1, 1, (), 0, 0, False),
                                           ("y", 16, 16, "float32", 4, 1, (), 0, 0, False)]
    assert main.push_constant_size == other.push_constant_size == 72


def test_before_spirv_1_4_the_block_the_code_reaches():
    # SPIR-V 1.0 lists no push-constant block in an interface: usage decides.
    blob = tools.assemble(tools.CORPUS / "push_layouts.spvasm", "spv1.0")
    main, other = reflect_module(blob)
    assert [m.name for m in main.push_constants] == ["inner", "later", ""]
    assert [m.name for m in other.push_constants] == ["x", "y"]


def _blocks_of(members) -> int:
    return max((m.offset + m.size for m in members), default=0)


@pytest.mark.parametrize("path", sorted((REPO / "spirv").glob("*.spv"))
                         + sorted((REPO / "tests" / "shaders_rt" / "spirv").glob("*.spv")),
                         ids=lambda p: p.name)
def test_members_span_the_push_constant_size(path):
    for info in reflect_module(path.read_bytes()):
        assert _blocks_of(info.push_constants) == info.push_constant_size, info.entry_point
        assert all(m.name for m in info.push_constants)
        offsets = [m.offset for m in info.push_constants]
        assert offsets == sorted(offsets)


def test_the_scaffold_mismatch_is_visible_in_the_members():
    # The library's scale_f32 and `genspirv init`'s scale.comp declare the same two
    # members in the other order: the records say so.
    info = reflect((REPO / "spirv" / "scale_f32.spv").read_bytes())
    assert [(m.name, m.offset, str(m.type)) for m in info.push_constants] == [
        ("n", 0, "uint32"), ("alpha", 4, "float32")]


def test_no_push_constants():
    info = reflect(tools.compile_glsl(tools.CORPUS / "usage.comp"))
    assert info.push_constants == () and info.push_constant_size == 0


_TEMPLATE = """\
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %pc
               OpExecutionMode %main LocalSize 1 1 1
               OpMemberName %PC 0 "m"
               OpDecorate %PC Block
{decorations}
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
     %uint_2 = OpConstant %uint 2
     %uint_3 = OpConstant %uint 3
    %v2float = OpTypeVector %float 2
{types}
         %PC = OpTypeStruct %member
     %ptr_PC = OpTypePointer PushConstant %PC
         %pc = OpVariable %ptr_PC PushConstant
       %main = OpFunction %void None %fn
         %l0 = OpLabel
               OpReturn
               OpFunctionEnd
"""

REFUSED = {
    "nested strides that do not nest": (
        "OpMemberDecorate %PC 0 Offset 0\nOpDecorate %inner ArrayStride 4\nOpDecorate %member ArrayStride 16",
        "%inner = OpTypeArray %float %uint_3\n%member = OpTypeArray %inner %uint_2",
        r"member 0 \('m'\): array strides \[16, 4\] do not nest"),
    "an array without ArrayStride": (
        "OpMemberDecorate %PC 0 Offset 0", "%member = OpTypeArray %float %uint_2",
        r"member 0 \('m'\): array type %\d+ at word \d+ has no ArrayStride"),
    "a runtime array": (
        "OpMemberDecorate %PC 0 Offset 0\nOpDecorate %member ArrayStride 4",
        "%member = OpTypeRuntimeArray %float",
        r"member 0 \('m'\): a runtime array in a push-constant block"),
    "a matrix without MatrixStride": (
        "OpMemberDecorate %PC 0 Offset 0", "%member = OpTypeMatrix %v2float 2",
        r"member 0 \('m'\): a matrix member without MatrixStride"),
    "a member without Offset": (
        "", "%member = OpTypeInt 32 0",
        r"member 0 \('m'\) of struct %\d+ at word \d+ has no Offset"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_layouts_that_records_cannot_say_are_refused(tmp_path, case):
    decorations, types, message = REFUSED[case]
    path = tmp_path / f"{case.replace(' ', '_')}.spvasm"
    path.write_text(_TEMPLATE.format(decorations=decorations, types=types))
    with pytest.raises(ReflectError, match=message):
        reflect(tools.assemble(path))


def test_the_template_reflects_when_nothing_is_wrong(tmp_path):
    # Positive control for the refusals above: the same module, well decorated.
    path = tmp_path / "fine.spvasm"
    path.write_text(_TEMPLATE.format(
        decorations="OpMemberDecorate %PC 0 Offset 0\nOpDecorate %inner ArrayStride 4\n"
                    "OpDecorate %member ArrayStride 12",
        types="%inner = OpTypeArray %float %uint_3\n%member = OpTypeArray %inner %uint_2"))
    assert reflect(tools.assemble(path)).push_constants == (
        PushMember("m", 0, 24, "float32", array=(2, 3), array_stride=12),)
