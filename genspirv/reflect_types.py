"""Reflection, step 2: type and constant ids in, sizes and values out.

Takes an ``Index`` and gives scalar type names (the manifest's spellings),
the values of (spec) constants, array lengths and the bytes a type spans in
an explicitly laid-out block (``type_size``, ``struct_size``: offsets,
array and matrix strides).  Pure functions; bad ids raise ``SpirvError``,
types with no size raise ``ReflectError``, both with the word offset.
"""

from __future__ import annotations

import struct
from typing import Optional, Union

from . import spirv as sp
from .errors import ReflectError, SpirvError
from .reflect_index import MAX_TYPE_DEPTH, Index
from .spirv import Instruction

SPEC_TYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "float16", "float32", "float64")

SpecValue = Union[bool, int, float]


def scalar_type_name(index: Index, type_id: int, user: Instruction) -> str:
    """``bool``, ``int32``, ``float16``... for a scalar type id."""
    t = index.define(type_id, user)
    if t.opcode == sp.OP_TYPE_BOOL:
        return "bool"
    if t.opcode == sp.OP_TYPE_INT:
        width, signed = t.operand(1), t.operand(2)
        name = f"{'int' if signed else 'uint'}{width}"
    elif t.opcode == sp.OP_TYPE_FLOAT:
        if len(t.operands) > 2:      # an FP encoding such as BFloat16KHR
            raise ReflectError(f"float type %{type_id} with encoding {t.operands[2]} "
                               "has no manifest spelling")
        name = f"float{t.operand(1)}"
    else:
        raise ReflectError(f"%{type_id} (opcode {t.opcode}) at word {t.offset} "
                           "is not a scalar type")
    if name not in SPEC_TYPES:
        raise ReflectError(f"scalar type %{type_id} at word {t.offset} is {name}, "
                           "which has no manifest spelling")
    return name


def _literal_value(type_name: str, words: tuple[int, ...], inst: Instruction) -> SpecValue:
    if type_name == "bool":
        raise ReflectError(f"OpConstant/OpSpecConstant at word {inst.offset} has type bool "
                           "(bools are OpConstantTrue/False)")
    width = int("".join(ch for ch in type_name if ch.isdigit()))
    need = 2 if width == 64 else 1
    if len(words) < need:
        raise SpirvError(f"{type_name} constant needs {need} value word(s), has {len(words)}",
                         inst.offset)
    raw = words[0] | (words[1] << 32) if need == 2 else words[0]
    raw &= (1 << width) - 1          # the high bits of narrow literals are sign/zero fill
    if type_name.startswith("float"):
        fmt = {16: "<e", 32: "<f", 64: "<d"}[width]
        return struct.unpack(fmt, raw.to_bytes(width // 8, "little"))[0]
    if type_name.startswith("int") and raw >> (width - 1):
        return raw - (1 << width)
    return raw


def constant_value(index: Index, id_: int, user: Instruction) -> tuple[SpecValue, Optional[int]]:
    """The value of a scalar (spec) constant id and its SpecId (None for a plain constant)."""
    c = index.define(id_, user)
    spec = index.decoration(id_, sp.DECORATION_SPEC_ID)
    spec_id = spec[0] if spec else None
    if c.opcode in (sp.OP_CONSTANT_TRUE, sp.OP_SPEC_CONSTANT_TRUE):
        return True, spec_id
    if c.opcode in (sp.OP_CONSTANT_FALSE, sp.OP_SPEC_CONSTANT_FALSE):
        return False, spec_id
    if c.opcode == sp.OP_CONSTANT_NULL:
        return 0, None
    if c.opcode in (sp.OP_CONSTANT, sp.OP_SPEC_CONSTANT):
        return _literal_value(scalar_type_name(index, c.result_type, c), c.operands[2:], c), spec_id
    raise ReflectError(f"%{id_} at word {c.offset} (opcode {c.opcode}) is not a scalar constant; "
                       f"used at word {user.offset}")


def non_negative_int(value: SpecValue, what: str, inst: Instruction) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReflectError(f"{what} at word {inst.offset} is {value!r}, not a non-negative integer")
    return value


def array_length(index: Index, array_type: Instruction) -> int:
    """Length of an OpTypeArray (a spec-constant length: its default); 0 for a runtime array."""
    if array_type.opcode == sp.OP_TYPE_RUNTIME_ARRAY:
        return 0
    value, _ = constant_value(index, array_type.operand(2), array_type)
    return non_negative_int(value, "array length", array_type)


def member_count(struct: Instruction) -> int:
    return len(struct.operands) - 1


def type_size(index: Index, type_id: int, user: Instruction, depth: int = 0) -> int:
    """Bytes a value of ``type_id`` spans in an explicitly laid-out block."""
    if depth > MAX_TYPE_DEPTH:
        raise ReflectError(f"type %{type_id} nests deeper than {MAX_TYPE_DEPTH} levels "
                           f"(cyclic module?), reached from word {user.offset}")
    t = index.define(type_id, user)
    op = t.opcode
    if op in (sp.OP_TYPE_INT, sp.OP_TYPE_FLOAT):
        return max(t.operand(1) // 8, 1)
    if op == sp.OP_TYPE_BOOL:
        return 4
    if op == sp.OP_TYPE_VECTOR:
        return t.operand(2) * type_size(index, t.operand(1), t, depth + 1)
    if op == sp.OP_TYPE_MATRIX:       # outside a struct member: tightly packed columns
        return t.operand(2) * type_size(index, t.operand(1), t, depth + 1)
    if op == sp.OP_TYPE_POINTER:      # PhysicalStorageBuffer address
        return 8
    if op in (sp.OP_TYPE_ARRAY, sp.OP_TYPE_RUNTIME_ARRAY):
        length = array_length(index, t)
        stride = index.decoration(type_id, sp.DECORATION_ARRAY_STRIDE)
        if stride:
            return length * stride[0]
        return length * type_size(index, t.operand(1), t, depth + 1)
    if op == sp.OP_TYPE_STRUCT:
        return struct_size(index, t, depth + 1)
    raise ReflectError(f"type %{type_id} (opcode {op}) at word {t.offset} has no size in a block")


def struct_size(index: Index, struct: Instruction, depth: int = 0) -> int:
    """max over members of Offset + member size (matrices by MatrixStride and major order)."""
    size = 0
    for member in range(member_count(struct)):
        member_type = struct.operands[1 + member]
        offset = index.member_decoration(struct.result, member, sp.DECORATION_OFFSET)
        if not offset:
            raise ReflectError(f"member {member} of struct %{struct.result} "
                               f"({index.names.get(struct.result, '')!r}) at word {struct.offset} "
                               "has no Offset")
        t = index.define(member_type, struct)
        stride = index.member_decoration(struct.result, member, sp.DECORATION_MATRIX_STRIDE)
        if t.opcode == sp.OP_TYPE_MATRIX and stride:
            columns = t.operand(2)
            rows = index.define(t.operand(1), t).operand(2)
            row_major = index.member_decoration(struct.result, member, sp.DECORATION_ROW_MAJOR)
            member_size = stride[0] * (rows if row_major is not None else columns)
        else:
            member_size = type_size(index, member_type, struct, depth + 1)
        size = max(size, offset[0] + member_size)
    return size

