"""Reflection, constants: type and constant ids in, scalar names and values out.

Takes an ``Index`` and gives scalar type names (the manifest's spellings,
``ScalarType``), the values of (spec) constants, array lengths, and the
value of a spec-constant expression (``OpSpecConstantOp`` on integers and
bools) for given spec values, or, with ``SYMBOLIC`` values, the expression
itself (``genspirv.reflect.spec_sizes``).  Pure functions; bad ids raise ``SpirvError``,
what has no manifest spelling or no value raises ``ReflectError``, both with
the word offset.
"""

from __future__ import annotations

import struct
from typing import Optional

from . import spirv as sp
from ..errors import ReflectError, SpirvError
from .spirv import Instruction
from .index import MAX_TYPE_DEPTH, Index
from .model import ScalarType, SpecExpr, SpecValue, SpecValues
from .spec_sizes import OP_SELECT, SPEC_OPS, SYMBOLIC, apply_op, bits_as


# (width, signedness) of OpTypeInt, and the width of OpTypeFloat -> the manifest's spelling.
_INT_TYPES = {
    (8, 1): ScalarType.INT8, (8, 0): ScalarType.UINT8,
    (16, 1): ScalarType.INT16, (16, 0): ScalarType.UINT16,
    (32, 1): ScalarType.INT32, (32, 0): ScalarType.UINT32,
    (64, 1): ScalarType.INT64, (64, 0): ScalarType.UINT64,
}
_FLOAT_TYPES = {16: ScalarType.FLOAT16, 32: ScalarType.FLOAT32, 64: ScalarType.FLOAT64}


def scalar_type_name(index: Index, type_id: int, user: Instruction) -> ScalarType:
    """``bool``, ``int32``, ``float16``... for a scalar type id."""
    t = index.define(type_id, user)
    if t.opcode == sp.OP_TYPE_BOOL:
        return ScalarType.BOOL
    if t.opcode == sp.OP_TYPE_INT:
        width, signed = t.operand(1), t.operand(2)
        name = _INT_TYPES.get((width, signed))
        spelled = f"{'int' if signed else 'uint'}{width}"
    elif t.opcode == sp.OP_TYPE_FLOAT:
        if len(t.operands) > 2:      # an FP encoding such as BFloat16KHR
            raise ReflectError(f"float type %{type_id} with encoding {t.operands[2]} "
                               "has no manifest spelling")
        name = _FLOAT_TYPES.get(t.operand(1))
        spelled = f"float{t.operand(1)}"
    else:
        raise ReflectError(f"%{type_id} (opcode {t.opcode}) at word {t.offset} "
                           "is not a scalar type")
    if name is None:
        raise ReflectError(f"scalar type %{type_id} at word {t.offset} is {spelled}, "
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


def array_length(index: Index, array_type: Instruction,
                 values: Optional[SpecValues] = None) -> SpecExpr:
    """Length of an OpTypeArray, 0 for a runtime array.  A spec-constant length takes
    ``values[spec_id]`` where given, else its default (OpSpecConstantOp is evaluated);
    with ``values`` SYMBOLIC it is a ``("len", expression)`` (spec_sizes.py)."""
    if array_type.opcode == sp.OP_TYPE_RUNTIME_ARRAY:
        return 0
    value = evaluate_constant(index, array_type.operand(2), array_type, values)
    if type(value) is tuple:
        return ("len", value)
    return non_negative_int(value, "array length", array_type)


# -- spec constant expressions ------------------------------------------------
# (the operations themselves are genspirv/reflect/spec_sizes.py's, shared with evaluate())


def _int_width(index: Index, type_id: int, user: Instruction) -> Optional[int]:
    t = index.define(type_id, user)
    return t.operand(1) if t.opcode == sp.OP_TYPE_INT else None


def evaluate_constant(index: Index, id_: int, user: Instruction,
                      values: Optional[SpecValues] = None, depth: int = 0,
                      memo: Optional[dict] = None) -> SpecValue:
    """The value of a scalar constant id: a spec constant takes ``values[spec_id]`` where
    given, else its default; OpSpecConstantOp on integers and bools is evaluated
    (each id once: a module reusing an operand many times stays linear)."""
    if memo is None:
        memo = {}
    if id_ in memo:
        return memo[id_]
    memo[id_] = value = _evaluate(index, id_, user, values, depth, memo)
    return value


def _evaluate(index: Index, id_: int, user: Instruction, values: Optional[SpecValues],
              depth: int, memo: dict) -> SpecValue:
    if depth > MAX_TYPE_DEPTH:
        raise ReflectError(f"constant %{id_} nests deeper than {MAX_TYPE_DEPTH} levels "
                           f"(cyclic module?), reached from word {user.offset}")
    c = index.define(id_, user)
    if c.opcode != sp.OP_SPEC_CONSTANT_OP:
        value, spec_id = constant_value(index, id_, user)
        if values is SYMBOLIC and spec_id is not None:
            return ("spec", spec_id, value)
        if values is not None and spec_id is not None and spec_id in values:
            return values[spec_id]
        return value
    opcode = c.operand(2)
    if opcode != OP_SELECT and opcode not in SPEC_OPS:
        raise ReflectError(f"OpSpecConstantOp %{id_} at word {c.offset} uses opcode {opcode}, "
                           "which genspirv does not evaluate (used as a size at word "
                           f"{user.offset}); size it with a spec constant or integer arithmetic "
                           "on them")
    arity, how = (3, "u") if opcode == OP_SELECT else SPEC_OPS[opcode][:2]
    args = c.operands[3:3 + arity]
    if len(args) != arity:
        raise SpirvError(f"OpSpecConstantOp opcode {opcode} needs {arity} operand(s)", c.offset)
    raw = [evaluate_constant(index, arg, c, values, depth + 1, memo) for arg in args]
    widths = tuple(_int_width(index, index.define(arg, c).result_type, c) or 0 for arg in args)
    type_name = scalar_type_name(index, c.result_type, c)
    if any(type(v) is tuple for v in raw):     # depends on a spec constant: an expression
        return ("op", opcode, str(type_name), widths, *raw)
    if opcode == OP_SELECT:
        operands = [bool(raw[0]), raw[1], raw[2]]
    else:
        operands = [bits_as(v, w, how) for v, w in zip(raw, widths)]
    return apply_op(opcode, type_name, operands, f"OpSpecConstantOp %{id_} at word {c.offset}")
