"""Sizes a spec-sized array changes: recorded as expressions, evaluated at a kernel's values.

Reflection records the outermost length of a push-constant member, a binding's
min_size and the workgroup memory as ``genspirv.reflect.spec_sizes`` expressions
(docs/RULES.md#reflection-rules, "Spec-sized arrays"); ``shared_memory_at``,
``push_constant_size_at`` and ``specialise`` give them at given spec values.  Checked against spirv-cross
(which of them are spec-sized, tests/test_oracle.py), against the blob re-reflected
at the same values, and against numbers worked by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import tools
from genspirv.errors import ReflectError
from genspirv.reflect import reflect, reflect_module, shared_memory_bytes
from genspirv.reflect.spec_sizes import (evaluate, from_text, min_size_at, push_constant_size_at,
                                         shared_memory_at, spec_ids, specialise, to_text)

REPO = Path(__file__).resolve().parent.parent
BLOBS = sorted((REPO / "spirv").glob("*.spv")) + sorted((REPO / "tests" / "shaders_rt" / "spirv").glob("*.spv"))


def _blobs():
    return [(p.name, p.read_bytes()) for p in BLOBS] + [
        (p.name, tools.corpus_blob(p)) for p in tools.corpus_files()]


@pytest.mark.slow
def test_every_expression_is_its_field_at_the_defaults_and_the_blob_at_other_values():
    seen = 0
    for name, blob in _blobs():
        for info in reflect_module(blob):
            assert shared_memory_at(info, {}) == info.shared_memory, name
            assert push_constant_size_at(info, {}) == info.push_constant_size, name
            for b in info.bindings:
                assert min_size_at(b, {}) == b.min_size, (name, b.name)
            if info.shared_memory_spec is None:
                continue
            seen += 1
            # Each spec id the figure depends on, doubled: the blob itself, re-reflected
            # at those values by the concrete path, says the same.
            values = {sid: 2 * s.default for s in info.spec_constants
                      for sid in spec_ids(info.shared_memory_spec) if s.id == sid}
            assert shared_memory_at(info, values) == shared_memory_bytes(
                blob, values, info.entry_point), name
            assert from_text(to_text(info.shared_memory_spec)) == info.shared_memory_spec
    assert seen >= 5


def test_shared_memory_at_values_worked_by_hand():
    info = reflect(tools.corpus_blob(tools.CORPUS / "sizes.comp"))
    # tile[BLOCK * ROWS + 1u] floats, then 24 + 64 + 4 fixed bytes.
    assert shared_memory_at(info, {}) == (64 * 3 + 1) * 4 + 92 == info.shared_memory
    assert shared_memory_at(info, {0: 8, 1: 2}) == (8 * 2 + 1) * 4 + 92
    assert shared_memory_at(info, {1: 0}) == 4 + 92          # ids left out keep defaults
    info = reflect(tools.corpus_blob(tools.CORPUS / "spec.comp"))
    assert info.shared_memory_spec == ("mul", ("len", ("spec", 20, 5)), 4)
    assert shared_memory_at(info, {20: 7}) == 28


def test_push_member_and_mirror_block_record_their_spec_length():
    info = reflect(tools.corpus_blob(tools.CORPUS / "push.comp"))
    member = next(m for m in info.push_constants if m.name == "spec_sized")
    assert member.length_spec == ("len", ("spec", 0, 3)) and member.array == (3,)
    assert all(m.length_spec is None for m in info.push_constants if m is not member)
    mirror = next(b for b in info.bindings if b.name == "mirror")
    # float spec_sized[N] at offset 320; vec3 tail at 336 ends the block at 348.
    assert min_size_at(mirror, {0: 3}) == 348 and min_size_at(mirror, {0: 10}) == 360
    assert push_constant_size_at(info, {0: 10}) == 360
    special = specialise(info, {0: 10})
    grown = next(m for m in special.push_constants if m.name == "spec_sized")
    assert (grown.array, grown.size, special.push_constant_size) == ((10,), 40, 360)
    assert next(b for b in special.bindings if b.name == "mirror").min_size == 360
    assert specialise(reflect(tools.corpus_blob(tools.CORPUS / "access.comp")), {0: 1}) is not None


def test_an_expression_length_is_evaluated_as_the_driver_does():
    # N * 2 - 1 as OpSpecConstantOp IMul then ISub, 32-bit unsigned.
    length = ("len", ("op", 130, "uint32", (32, 32),
                      ("op", 132, "uint32", (32, 32), ("spec", 0, 2), 2), 1))
    assert evaluate(length, {}) == 3 and evaluate(length, {0: 8}) == 15
    assert evaluate(length, {0: 0}) == 2 ** 32 - 1      # an unsigned 0 - 1 wraps, as on the GPU
    with pytest.raises(ReflectError, match="positive"):
        evaluate(("len", ("op", 132, "uint32", (32, 32), ("spec", 0, 2), 2)), {0: 0})
    with pytest.raises(ReflectError, match="divides by zero"):
        evaluate(("op", 134, "uint32", (32, 32), 4, ("spec", 0, 2)), {0: 0})


def test_manifest_text_is_refused_when_malformed():
    for bad in ("(mul 1)", "(spec x 1)", "(op 999 uint32 [32] 1)", "(add 1 2) 3", "(add 1"):
        with pytest.raises(ValueError):
            from_text(bad)


def _compile(tmp_path, body: str) -> bytes:
    source = tmp_path / "k.comp"
    source.write_text("#version 450\nlayout(local_size_x = 1) in;\n"
                      "layout(constant_id = 0) const uint N = 2u;\n" + body +
                      "\nlayout(binding = 0) buffer O { float v[]; } o;\nvoid main() { o.v[0] = 1.0; }\n")
    return tools.compile_glsl(source)


INNER_SPEC = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %pc
               OpExecutionMode %main LocalSize 1 1 1
               OpDecorate %N SpecId 0
               OpDecorate %inner ArrayStride 4
               OpDecorate %outer ArrayStride 8
               OpDecorate %P Block
               OpMemberDecorate %P 0 Offset 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
          %N = OpSpecConstant %uint 2
     %uint_4 = OpConstant %uint 4
      %inner = OpTypeArray %float %N
      %outer = OpTypeArray %inner %uint_4
          %P = OpTypeStruct %outer
        %ptr = OpTypePointer PushConstant %P
         %pc = OpVariable %ptr PushConstant
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
"""


def test_a_spec_length_the_fixed_layout_cannot_follow_is_refused(tmp_path):
    # glslang refuses float w[4][N] itself; a hand-written module need not.
    source = tmp_path / "inner.spvasm"
    source.write_text(INNER_SPEC)
    with pytest.raises(ReflectError, match="inner array dimension 1 is sized by a spec") as exc:
        reflect(tools.assemble(source, "spv1.5"))
    assert "push constant block" in str(exc.value)
    body = "struct S { float a[N]; }; layout(push_constant) uniform P { S s; } pc;"
    with pytest.raises(ReflectError, match="inside a struct") as exc:
        reflect(_compile(tmp_path, body))
    assert "push constant block" in str(exc.value) and "\n" not in str(exc.value)


def test_a_spec_length_the_fixed_layout_can_follow_is_recorded(tmp_path):
    # Negative control of the two above: the outermost length of a block member.
    info = reflect(_compile(tmp_path, "layout(push_constant) uniform P { float w[N][4]; } pc;"))
    (w,) = info.push_constants
    assert (w.array, w.length_spec, push_constant_size_at(info, {0: 3})) == ((2, 4), ("len", ("spec", 0, 2)), 48)


def test_a_manifest_holds_the_expressions_and_refuses_a_bad_one():
    from genspirv.errors import ManifestError
    from genspirv.manifest import info_from_dict, info_to_dict
    info = reflect(tools.corpus_blob(tools.CORPUS / "push.comp"))
    d = json.loads(json.dumps(info_to_dict(info)))
    assert d["push_constant_size_spec"].startswith("(max ") and "length_spec" in d["push_constants"][-2]
    assert info_from_dict(d, "m.json") == info
    d["bindings"][0]["min_size_spec"] = "(mul 4)"
    with pytest.raises(ManifestError, match=r"m.json, binding #0: field 'min_size_spec': .*takes 2"):
        info_from_dict(d, "m.json")


def test_a_hand_edited_expression_is_a_mismatch_with_the_blob():
    import dataclasses

    from genspirv.reflect.verify import verify_entry
    blob = tools.corpus_blob(tools.CORPUS / "spec.comp")
    info = reflect(blob)
    assert verify_entry(info, blob) == []
    edited = dataclasses.replace(info, shared_memory_spec=("mul", ("len", ("spec", 20, 5)), 2))
    assert [m.field for m in verify_entry(edited, blob)] == ["shared_memory_spec"]
