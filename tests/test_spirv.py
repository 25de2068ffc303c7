"""The SPIR-V reader: header, instruction stream, id map, capabilities, malformed input."""

from __future__ import annotations

import re
import struct

import pytest

from corpus import tools
from genspirv.reflect import spirv as sp
from genspirv.errors import GenspirvError, SpirvError


def _blob(name: str = "usage.comp") -> bytes:
    return tools.corpus_blob(tools.CORPUS / name)


def _words(blob: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(blob) // 4}I", blob))


def _pack(words) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


# -- against spirv-dis ------------------------------------------------------------


@pytest.mark.parametrize("path", tools.corpus_files(), ids=lambda p: p.name)
def test_instructions_and_ids_agree_with_spirv_dis(path):
    blob = tools.corpus_blob(path)
    module = sp.parse(blob)
    text = tools.disassemble(blob)
    header = dict(re.findall(r"^; (Version|Generator|Bound|Schema): (.*)$", text, re.M))
    assert int(header["Bound"]) == module.bound
    assert header["Version"] == f"{module.version[0]}.{module.version[1]}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(";")]
    assert len(lines) == len(module.instructions)
    dis_defs = {}
    for line, inst in zip(lines, module.instructions):
        m = re.match(r"%(\d+) = (Op\w+)", line)
        name = m.group(2) if m else line.split()[0]
        # Every named opcode constant used here carries the specification's number.
        constant = "OP_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name[2:]).upper()
        if hasattr(sp, constant):
            assert getattr(sp, constant) == inst.opcode, (line, inst)
        if m:
            dis_defs[int(m.group(1))] = inst.opcode
    assert {i: inst.opcode for i, inst in module.defs.items()} == dis_defs


@pytest.mark.parametrize("path", tools.corpus_files(), ids=lambda p: p.name)
def test_capabilities_agree_with_spirv_dis(path):
    blob = tools.corpus_blob(path)
    printed = set(re.findall(r"OpCapability (\w+)", tools.disassemble(blob)))
    assert sp.capabilities(blob) == printed


def test_capability_table_agrees_with_spirv_as(tmp_path):
    # spirv-as knows every capability of the grammar; assembling our names gives our numbers.
    source = tmp_path / "caps.spvasm"
    items = sorted(sp.CAPABILITIES.items())
    source.write_text("".join(f"OpCapability {name}\n" for _, name in items))
    module = sp.parse(tools.assemble(source, "spv1.6"))
    assert [inst.operand(0) for inst in module.instructions] == [n for n, _ in items]


def test_glslang_kernels_report_16bit_capabilities():
    blob = tools.compile_glsl(tools.CORPUS / "spec.comp")
    caps = sp.capabilities(blob)
    assert {"Shader", "Float16", "Float64", "Int64", "Int16", "Int8"} <= caps
    assert sp.capability_name(999999) == "Capability999999"


def test_extensions_and_strings():
    blob = tools.assemble(tools.CORPUS / "nonwritable_var.spvasm")
    assert sp.extensions(blob) == {"SPV_GOOGLE_decorate_string", "SPV_GOOGLE_hlsl_functionality1"}


def test_big_endian_module_reads_the_same():
    blob = _blob()
    swapped = b"".join(blob[i:i + 4][::-1] for i in range(0, len(blob), 4))
    a, b = sp.parse(blob), sp.parse(swapped)
    assert b.big_endian and not a.big_endian
    assert a.instructions == b.instructions and a.bound == b.bound


def test_instruction_offsets_are_word_offsets():
    blob = _blob()
    words = _words(blob)
    for inst in sp.parse(blob).instructions:
        assert words[inst.offset] == (inst.word_count << 16) | inst.opcode
        assert tuple(words[inst.offset + 1:inst.offset + inst.word_count]) == inst.operands


# -- malformed input -------------------------------------------------------------


def _raises_at(data, offset: int, match: str = ""):
    with pytest.raises(SpirvError, match=match) as info:
        sp.parse(data)
    assert info.value.offset == offset, str(info.value)
    assert f"(at word {offset})" in str(info.value)
    return info.value


def test_header_errors():
    blob = _blob()
    words = _words(blob)
    _raises_at(b"", 0, "truncated header")
    _raises_at(blob[:16], 4, "truncated header")
    _raises_at(blob[:23], 5, "multiple of 4")
    _raises_at(_pack([0xDEADBEEF] + words[1:]), 0, "bad magic")
    _raises_at(_pack(words[:1] + [0x00020000] + words[2:]), 1, "version")
    _raises_at(_pack(words[:3] + [0] + words[4:]), 3, "bound")
    _raises_at(_pack(words[:3] + [sp.MAX_BOUND + 1] + words[4:]), 3, "bound")
    _raises_at(_pack(words[:4] + [7] + words[5:]), 4, "schema")
    with pytest.raises(SpirvError):
        sp.parse("not bytes")


def test_word_count_zero_and_past_the_end():
    words = _words(_blob())
    module = sp.parse(_pack(words))
    victim = module.instructions[10].offset
    zero = list(words)
    zero[victim] &= 0xFFFF
    _raises_at(_pack(zero), victim, "word count 0")
    past = list(words)
    past[victim] = (0xFFFF << 16) | (past[victim] & 0xFFFF)
    _raises_at(_pack(past), victim, "past the end")


def test_truncation_inside_an_instruction():
    blob = _blob()
    module = sp.parse(blob)
    for inst in module.instructions[::7]:
        if inst.word_count > 1:
            cut = _pack(_words(blob)[:inst.offset + inst.word_count - 1])
            _raises_at(cut, inst.offset, "past the end")


def test_ids_past_the_bound_and_duplicates():
    blob = _blob()
    words = _words(blob)
    module = sp.parse(blob)
    var = next(i for i in module.instructions if i.opcode == sp.OP_VARIABLE)
    past = list(words)
    past[var.offset + 2] = module.bound + 5       # the result id
    _raises_at(_pack(past), var.offset, "outside")
    zero = list(words)
    zero[var.offset + 2] = 0
    _raises_at(_pack(zero), var.offset, "outside")
    dup = list(words)
    other = next(i for i in module.instructions if i.opcode == sp.OP_VARIABLE and i is not var)
    dup[other.offset + 2] = var.result
    err = _raises_at(_pack(dup), max(var.offset, other.offset), "defined twice")
    assert str(min(var.offset, other.offset)) in str(err)
    bad_type = list(words)
    bad_type[var.offset + 1] = module.bound
    _raises_at(_pack(bad_type), var.offset, "result type")


def test_string_without_terminator():
    words = _words(_blob())
    module = sp.parse(_pack(words))
    name = next(i for i in module.instructions if i.opcode == sp.OP_NAME
                and i.word_count == 3)             # one word of text: 1..3 chars and a NUL
    words[name.offset + 2] = 0x41414141               # "AAAA", no NUL inside the instruction
    inst = sp.parse(_pack(words)).instructions[module.instructions.index(name)]
    with pytest.raises(SpirvError, match="no terminating NUL") as info:
        inst.string(1)
    assert info.value.offset == name.offset


def test_too_short_typed_instruction_and_operand_access():
    words = _words(_blob())
    header = words[:5]
    # OpTypeFloat (result only) with no operands; OpLoad with only a result type
    _raises_at(_pack(header + [(1 << 16) | sp.OP_TYPE_FLOAT]), 5, "needs a result id")
    _raises_at(_pack(header + [(2 << 16) | sp.OP_LOAD, 1]), 5, "result type and id")
    inst = sp.parse(_pack(header + [(1 << 16) | sp.OP_CAPABILITY])).instructions[0]
    with pytest.raises(SpirvError, match="operand words") as info:
        inst.operand(0)
    assert info.value.offset == 5


def test_a_long_run_of_one_word_instructions_parses():
    words = _words(_blob())
    nops = [(1 << 16) | sp.OP_NOP] * 50_000
    module = sp.parse(_pack(words + nops))
    assert len(module.instructions) == len(sp.parse(_blob()).instructions) + 50_000


def test_spirv_error_is_a_genspirv_error():
    assert issubclass(SpirvError, GenspirvError)
    err = SpirvError("x", 12)
    assert err.offset == 12 and "word 12" in str(err)
