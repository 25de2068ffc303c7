"""Malformed and mutated SPIR-V only ever raises SpirvError / ReflectError, and never hangs.

A bounded share of tools/fuzz_spirv.py (the long run mutates 100,000 inputs) under
hypothesis, plus hand-made corruptions reflection must survive: type cycles,
call cycles, entry points naming no function, functions without an end.
"""

from __future__ import annotations

import importlib.util
import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus import tools
from genspirv.reflect import spirv as sp
from genspirv.errors import ReflectError, SpirvError
from genspirv.reflect import reflect, reflect_module

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fuzz_spirv", ROOT / "tools" / "fuzz_spirv.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


@pytest.fixture(scope="module")
def seeds() -> list[bytes]:
    blobs = [tools.corpus_blob(p) for p in tools.corpus_files()]
    blobs += [p.read_bytes() for p in sorted((ROOT / "spirv").glob("*.spv"))[:8]]
    return blobs


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_blobs_raise_only_genspirv_errors(seeds, seed):
    rng = random.Random(seed)
    data = fuzz.mutate(rng.choice(seeds), rng, seeds)
    assert fuzz.check_one(data) in ("ok", "spirv", "reflect")


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=256))
def test_random_bytes(data):
    assert fuzz.check_one(data) in ("spirv", "reflect", "ok")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(tail=st.lists(st.integers(0, 2**32 - 1), max_size=64))
def test_random_words_after_a_valid_header(tail):
    header = [sp.MAGIC, 0x00010500, 0, 100, 0]
    data = struct.pack(f"<{5 + len(tail)}I", *header, *tail)
    assert fuzz.check_one(data) in ("spirv", "reflect", "ok")


@pytest.mark.slow
def test_the_runner_reports_a_foreign_exception(monkeypatch, seeds):
    # Positive control: a bug in the reflection must fail the fuzz run, not be counted.
    def broken(data):
        raise KeyError("bug")
    monkeypatch.setattr(fuzz, "check_one", broken)
    with pytest.raises(AssertionError, match="KeyError"):
        fuzz.run(seeds, 5, seed=0)


@pytest.mark.slow
def test_the_runner_reports_a_hang(monkeypatch, seeds):
    def spin(data):
        while True:
            pass
    monkeypatch.setattr(fuzz, "check_one", spin)
    with pytest.raises(AssertionError, match="hang"):
        fuzz.run(seeds, 1, seed=0, hang_seconds=0.2)


# -- hand-made corruptions ------------------------------------------------------------


def _asm(tmp_path, text: str) -> bytes:
    path = tmp_path / "k.spvasm"
    path.write_text(text)
    return tools.assemble(path)


PRELUDE = """OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 1 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
"""
MAIN = """%main = OpFunction %void None %fn
%l = OpLabel
OpReturn
OpFunctionEnd
"""


def _patch_word(blob: bytes, find_opcode: int, operand: int, value: int, nth: int = 0) -> bytes:
    words = list(struct.unpack(f"<{len(blob) // 4}I", blob))
    insts = [i for i in sp.parse(blob).instructions if i.opcode == find_opcode]
    words[insts[nth].offset + 1 + operand] = value
    return struct.pack(f"<{len(words)}I", *words)


def test_struct_containing_itself(tmp_path):
    # A push-constant struct whose member type is the struct itself (needs a forward id:
    # written valid, then the member patched to point at the struct).
    blob = _asm(tmp_path, PRELUDE + """OpMemberDecorate %S 0 Offset 0
OpDecorate %S Block
%S = OpTypeStruct %uint
%p = OpTypePointer PushConstant %S
%pc = OpVariable %p PushConstant
""" + MAIN)
    struct_id = next(i.result for i in sp.parse(blob).instructions if i.opcode == sp.OP_TYPE_STRUCT)
    cyclic = _patch_word(blob, sp.OP_TYPE_STRUCT, 1, struct_id)
    with pytest.raises(ReflectError, match="deeper"):
        reflect(cyclic)


def test_array_of_itself_as_a_descriptor(tmp_path):
    blob = _asm(tmp_path, PRELUDE + """OpDecorate %v Binding 0
%one = OpConstant %uint 1
%s = OpTypeSampler
%a = OpTypeArray %s %one
%p = OpTypePointer UniformConstant %a
%v = OpVariable %p UniformConstant
""" + MAIN)
    array_id = next(i.result for i in sp.parse(blob).instructions if i.opcode == sp.OP_TYPE_ARRAY)
    cyclic = _patch_word(blob, sp.OP_TYPE_ARRAY, 1, array_id)
    with pytest.raises(ReflectError, match="deeper"):
        reflect(cyclic)


def test_function_calling_itself(tmp_path):
    blob = _asm(tmp_path, PRELUDE + """%main = OpFunction %void None %fn
%l = OpLabel
%r = OpFunctionCall %void %main
OpReturn
OpFunctionEnd
""")
    assert reflect(blob).entry_point == "main"


def test_entry_point_naming_no_function(tmp_path):
    blob = _asm(tmp_path, PRELUDE + MAIN)
    uint_id = next(i.result for i in sp.parse(blob).instructions if i.opcode == sp.OP_TYPE_INT)
    bad = _patch_word(blob, sp.OP_ENTRY_POINT, 1, uint_id)
    with pytest.raises(SpirvError, match="not a function"):
        reflect(bad)


def test_function_without_end(tmp_path):
    blob = _asm(tmp_path, PRELUDE + MAIN)
    words = struct.unpack(f"<{len(blob) // 4}I", blob)
    with pytest.raises(SpirvError, match="no OpFunctionEnd"):
        reflect(struct.pack(f"<{len(words) - 1}I", *words[:-1]))


def test_call_to_a_non_function(tmp_path):
    blob = _asm(tmp_path, PRELUDE + """%main = OpFunction %void None %fn
%l = OpLabel
%r = OpFunctionCall %void %main
OpReturn
OpFunctionEnd
""")
    uint_id = next(i.result for i in sp.parse(blob).instructions if i.opcode == sp.OP_TYPE_INT)
    bad = _patch_word(blob, sp.OP_FUNCTION_CALL, 2, uint_id)
    with pytest.raises(SpirvError, match="not a function"):
        reflect_module(bad)


def test_bool_typed_op_constant(tmp_path):
    blob = _asm(tmp_path, PRELUDE + """OpDecorate %x SpecId 1
%bool = OpTypeBool
%x = OpSpecConstant %uint 3
""" + MAIN)
    bool_id = next(i.result for i in sp.parse(blob).instructions if i.opcode == sp.OP_TYPE_BOOL)
    bad = _patch_word(blob, sp.OP_SPEC_CONSTANT, 0, bool_id)
    with pytest.raises(ReflectError, match="bool"):
        reflect(bad)


def test_pointer_operand_past_the_bound(tmp_path):
    blob = tools.corpus_blob(tools.CORPUS / "usage.comp")
    module = sp.parse(blob)
    store = next(i for i in module.instructions if i.opcode == sp.OP_STORE)
    bad = _patch_word(blob, sp.OP_STORE, 0, module.bound + 3)
    with pytest.raises(SpirvError, match="outside") as info:
        reflect(bad)
    assert info.value.offset == store.offset


def test_workgroup_dimension_zero(tmp_path):
    blob = _asm(tmp_path, PRELUDE + MAIN)
    bad = _patch_word(blob, sp.OP_EXECUTION_MODE, 3, 0)       # LocalSize 1 0 1
    with pytest.raises(ReflectError, match="LocalSize dimension .* is 0"):
        reflect(bad)
