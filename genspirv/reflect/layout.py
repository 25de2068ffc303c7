"""Reflection, layout: type ids in, the bytes they span in an explicitly laid-out block out.

``type_size`` and ``struct_size`` follow the Offset, ArrayStride and
MatrixStride decorations (and RowMajor) as spirv-cross's ``block_size``
does; a type without layout decorations (Workgroup memory) is sized
tightly.  Spec-constant array lengths take given spec values, else their
defaults; with ``SYMBOLIC`` values a size that depends on them is a
``SpecExpr`` (genspirv/reflect/spec_sizes.py), a fixed one still an int.  Pure functions; types with no size raise ``ReflectError`` with
the word offset.
"""

from __future__ import annotations

from typing import Optional

from . import spirv as sp
from ..errors import ReflectError
from .spirv import Instruction
from .constants import array_length
from .index import MAX_TYPE_DEPTH, Index
from .model import SpecExpr, SpecValues
from .spec_sizes import add, maximum, mul


def member_count(struct: Instruction) -> int:
    return len(struct.operands) - 1


def type_size(index: Index, type_id: int, user: Instruction, depth: int = 0,
              values: Optional[SpecValues] = None) -> SpecExpr:
    """Bytes a value of ``type_id`` spans in an explicitly laid-out block.

    A type without layout decorations (Workgroup memory) is sized tightly: an
    array as length x element, a struct without Offsets as the sum of its members.
    """
    if depth > MAX_TYPE_DEPTH:
        raise ReflectError(f"type %{type_id} nests deeper than {MAX_TYPE_DEPTH} levels "
                           f"(cyclic module?), reached from word {user.offset}")
    t = index.define(type_id, user)
    op = t.opcode
    if op in (sp.OP_TYPE_INT, sp.OP_TYPE_FLOAT):
        return max(t.operand(1) // 8, 1)
    if op == sp.OP_TYPE_BOOL:
        return 4
    if op in (sp.OP_TYPE_VECTOR, sp.OP_TYPE_MATRIX):   # a matrix outside a struct: packed columns
        return t.operand(2) * type_size(index, t.operand(1), t, depth + 1)
    if op == sp.OP_TYPE_POINTER:      # PhysicalStorageBuffer address
        return 8
    if op in (sp.OP_TYPE_ARRAY, sp.OP_TYPE_RUNTIME_ARRAY):
        length = array_length(index, t, values)
        stride = index.decoration(type_id, sp.DECORATION_ARRAY_STRIDE)
        if stride:
            return mul(length, stride[0])
        return mul(length, type_size(index, t.operand(1), t, depth + 1, values))
    if op == sp.OP_TYPE_STRUCT:
        if member_count(t) and index.member_decoration(t.result, 0, sp.DECORATION_OFFSET) is None:
            total: SpecExpr = 0
            for m in t.operands[1:]:
                total = add(total, type_size(index, m, t, depth + 1, values))
            return total
        return struct_size(index, t, depth + 1, values)
    raise ReflectError(f"type %{type_id} (opcode {op}) at word {t.offset} has no size in a block")


def struct_size(index: Index, struct: Instruction, depth: int = 0,
                values: Optional[SpecValues] = None) -> SpecExpr:
    """max over members of Offset + member size (matrices by MatrixStride and major order)."""
    size: SpecExpr = 0
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
            member_size = type_size(index, member_type, struct, depth + 1, values)
        size = maximum(size, add(offset[0], member_size))
    return size
