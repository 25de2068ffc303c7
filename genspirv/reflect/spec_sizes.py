"""Reflection, spec-dependent sizes: expressions over spec ids in, bytes at given spec values out.

An array whose length is a spec constant (``float w[N]``, ``shared float t[N * 2]``)
makes a size depend on the values a pipeline is specialised with.  Reflection
records such a size as a ``SpecExpr`` (docs/RULES.md#reflection-rules,
"Spec-sized arrays"), a nested tuple:

- an ``int``: a fixed number;
- ``("spec", id, default)``: the value of spec id ``id`` (``default`` when not given);
- ``("add", a, b)``, ``("mul", a, b)``, ``("max", a, b)``: the layout's own arithmetic;
- ``("len", a)``: an array length, refused unless a positive integer;
- ``("op", opcode, type, widths, *args)``: an ``OpSpecConstantOp`` of SPIR-V opcode
  ``opcode`` with result type ``type`` (a ``ScalarType`` spelling) over operands of
  bit widths ``widths`` (0: a bool), computed as the driver computes it.

The manifest spells one as text, ``to_text``'s S-expression (``(mul (len (spec 0 2)) 4)``),
read back by ``from_text``.

``evaluate(expr, values)`` gives an expression's value for ``values`` (spec id ->
value; ids left out keep the defaults written in the expression).  On a
``ShaderInfo``: ``shared_memory_at``, ``push_constant_size_at`` and
``specialise`` (every size of the record at the given values).  Pure: no
module, no Vulkan; an expression that cannot be evaluated (division by zero,
a length that is not positive) raises ``ReflectError``.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

from ..errors import ReflectError
from .model import Binding, PushMember, ShaderInfo, SpecExpr, SpecValue

# The ``values`` that make reflection build expressions instead of numbers
# (genspirv/reflect/constants.py, layout.py): a spec constant stays ("spec", id, default).
SYMBOLIC: Mapping[int, SpecValue] = type("Symbolic", (dict,), {"__repr__": lambda s: "SYMBOLIC"})()
_NO_VALUES: Mapping[int, SpecValue] = {}


# -- the operations of OpSpecConstantOp on integers and bools ------------------

_U, _S = "u", "s"      # how an operation reads its operands: unsigned or signed


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _srem(a: int, b: int) -> int:
    return a - b * _div(a, b)


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    return a % b


# opcode -> (arity, how the operands are read, function of their two's-complement values)
SPEC_OPS = {
    113: (1, _U, lambda a: a),                 # OpUConvert
    114: (1, _S, lambda a: a),                 # OpSConvert
    126: (1, _S, lambda a: -a),                # OpSNegate
    200: (1, _U, lambda a: ~a),                # OpNot
    128: (2, _U, lambda a, b: a + b),          # OpIAdd
    130: (2, _U, lambda a, b: a - b),          # OpISub
    132: (2, _U, lambda a, b: a * b),          # OpIMul
    134: (2, _U, _div),                        # OpUDiv
    135: (2, _S, _div),                        # OpSDiv
    137: (2, _U, _mod),                        # OpUMod
    138: (2, _S, _srem),                       # OpSRem
    139: (2, _S, _mod),                        # OpSMod (sign of the divisor, as Python's %)
    194: (2, _U, lambda a, b: a >> b),         # OpShiftRightLogical
    195: (2, _S, lambda a, b: a >> b),         # OpShiftRightArithmetic
    196: (2, _U, lambda a, b: a << b),         # OpShiftLeftLogical
    197: (2, _U, lambda a, b: a | b),          # OpBitwiseOr
    198: (2, _U, lambda a, b: a ^ b),          # OpBitwiseXor
    199: (2, _U, lambda a, b: a & b),          # OpBitwiseAnd
    164: (2, _U, lambda a, b: a == b),         # OpLogicalEqual
    165: (2, _U, lambda a, b: a != b),         # OpLogicalNotEqual
    166: (2, _U, lambda a, b: a or b),         # OpLogicalOr
    167: (2, _U, lambda a, b: a and b),        # OpLogicalAnd
    168: (1, _U, lambda a: not a),             # OpLogicalNot
    170: (2, _U, lambda a, b: a == b),         # OpIEqual
    171: (2, _U, lambda a, b: a != b),         # OpINotEqual
    172: (2, _U, lambda a, b: a > b),          # OpUGreaterThan
    173: (2, _S, lambda a, b: a > b),          # OpSGreaterThan
    174: (2, _U, lambda a, b: a >= b),         # OpUGreaterThanEqual
    175: (2, _S, lambda a, b: a >= b),         # OpSGreaterThanEqual
    176: (2, _U, lambda a, b: a < b),          # OpULessThan
    177: (2, _S, lambda a, b: a < b),          # OpSLessThan
    178: (2, _U, lambda a, b: a <= b),         # OpULessThanEqual
    179: (2, _S, lambda a, b: a <= b),         # OpSLessThanEqual
}
OP_SELECT = 169
SHIFTS = (194, 195, 196)


def bits_as(value: SpecValue, width: Optional[int], how: str) -> int:
    """An int or bool's bits read as unsigned (``"u"``) or signed (``"s"``) at ``width``."""
    if isinstance(value, bool) or not width:
        return int(value)
    bits = value & ((1 << width) - 1)
    if how == _S and bits >> (width - 1):
        return bits - (1 << width)
    return bits


def type_width(type_name: str) -> int:
    """Bits of a scalar type spelling; 1 for bool."""
    return 1 if type_name == "bool" else int("".join(ch for ch in type_name if ch.isdigit()))


def apply_op(opcode: int, type_name: str, operands: list, where: str) -> SpecValue:
    """``OpSpecConstantOp opcode`` over operands already read at their widths."""
    if opcode == OP_SELECT:
        cond, a, b = operands
        return a if cond else b
    _, _, fn = SPEC_OPS[opcode]
    width = type_width(type_name)
    if opcode in SHIFTS and not 0 <= operands[1] < width:
        raise ReflectError(f"{where} shifts a {width}-bit value by {operands[1]}")
    try:
        result = fn(*operands)
    except ZeroDivisionError:
        raise ReflectError(f"{where} divides by zero") from None
    if isinstance(result, bool) or type_name == "bool":
        return bool(result)
    return bits_as(result, width, _S if type_name.startswith("int") else _U)


# -- building expressions (each folds what is already a number) ----------------


def add(a: SpecExpr, b: SpecExpr) -> SpecExpr:
    if type(a) is int and type(b) is int:
        return a + b
    return b if a == 0 else a if b == 0 else ("add", a, b)


def mul(a: SpecExpr, b: SpecExpr) -> SpecExpr:
    if type(a) is int and type(b) is int:
        return a * b
    if a == 0 or b == 0:
        return 0
    return b if a == 1 else a if b == 1 else ("mul", a, b)


def maximum(a: SpecExpr, b: SpecExpr) -> SpecExpr:
    """The larger of two sizes (sizes are never negative, so max(0, x) is x)."""
    if type(a) is int and type(b) is int:
        return max(a, b)
    return b if a == 0 else a if b == 0 else ("max", a, b)


# -- evaluating ----------------------------------------------------------------


def evaluate(expr: SpecExpr, values: Mapping[int, SpecValue] = _NO_VALUES) -> SpecValue:
    """The value of ``expr`` with spec id -> value ``values`` (others at their defaults)."""
    if type(expr) is int or isinstance(expr, bool):
        return expr
    kind = expr[0]
    if kind == "spec":
        return values.get(expr[1], expr[2])
    if kind == "len":
        n = evaluate(expr[1], values)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ReflectError(f"an array length evaluates to {n!r}; a length must be a "
                                "positive integer")
        return n
    if kind in ("add", "mul", "max"):
        a, b = evaluate(expr[1], values), evaluate(expr[2], values)
        return a + b if kind == "add" else a * b if kind == "mul" else max(a, b)
    if kind == "op":
        _, opcode, type_name, widths, *args = expr
        how = _U if opcode == OP_SELECT else SPEC_OPS[opcode][1]
        operands = [bits_as(evaluate(a, values), w, how) if opcode != OP_SELECT or i == 0
                    else evaluate(a, values) for i, (a, w) in enumerate(zip(args, widths))]
        return apply_op(opcode, type_name, operands, f"OpSpecConstantOp {opcode}")
    raise ReflectError(f"{expr!r} is not a spec-size expression")


_KINDS = {"spec": 2, "len": 1, "add": 2, "mul": 2, "max": 2}     # kind -> operands


def to_text(expr: SpecExpr) -> str:
    """The manifest's spelling: ``(mul (len (spec 0 2)) 4)``; an op's operand widths in
    brackets, ``(op 132 uint32 [32 32] (spec 0 2) 2)``."""
    if type(expr) is not tuple:
        return str(int(expr)) if not isinstance(expr, bool) else str(expr).lower()
    if expr[0] == "op":
        _, opcode, type_name, widths, *args = expr
        head = [f"op {opcode} {type_name} [{' '.join(map(str, widths))}]"]
        return "(" + " ".join(head + [to_text(a) for a in args]) + ")"
    return "(" + " ".join([expr[0]] + [to_text(a) for a in expr[1:]]) + ")"


def from_text(text: str) -> SpecExpr:
    """``to_text``'s spelling read back; ``ValueError`` saying what is wrong."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").replace("[", " [ ").replace("]", " ] ").split()
    expr, end = _parse(tokens, 0, text)
    if end != len(tokens):
        raise ValueError(f"{text!r:.60}: text after the expression")
    return expr


def _parse(tokens: list, i: int, text: str) -> tuple[SpecExpr, int]:
    bad = ValueError(f"{text!r:.60} is not a spec-size expression")
    if i >= len(tokens):
        raise bad
    token = tokens[i]
    if token != "(":
        return _number(token, bad), i + 1
    if i + 1 >= len(tokens) or tokens[i + 1] not in (*_KINDS, "op"):
        raise bad
    kind, i = tokens[i + 1], i + 2
    head: list = []
    if kind == "op":
        if i + 2 >= len(tokens) or tokens[i + 2] != "[":
            raise bad
        opcode, type_name, i = _number(tokens[i], bad), tokens[i + 1], i + 3
        widths = []
        while i < len(tokens) and tokens[i] != "]":
            widths.append(_number(tokens[i], bad))
            i += 1
        head, i = [opcode, type_name, tuple(widths)], i + 1
        if opcode not in SPEC_OPS and opcode != OP_SELECT:
            raise ValueError(f"{text!r:.60}: opcode {opcode} is no operation genspirv evaluates")
    args = []
    while i < len(tokens) and tokens[i] != ")":
        arg, i = _parse(tokens, i, text)
        args.append(arg)
    if i >= len(tokens):
        raise bad
    if kind == "op" and len(args) != len(head[2]):
        raise ValueError(f"{text!r:.60}: an op needs one width per operand")
    if kind != "op" and len(args) != _KINDS[kind]:
        raise ValueError(f"{text!r:.60}: ({kind} ...) takes {_KINDS[kind]} operand(s)")
    if kind == "spec" and (type(args[0]) is not int):
        raise bad
    return (kind, *head, *args), i + 1


def _number(token: str, bad: ValueError):
    if token in ("true", "false"):
        return token == "true"
    try:
        return int(token)
    except ValueError:
        raise bad from None


def spec_ids(expr: SpecExpr) -> frozenset:
    """The spec ids ``expr`` depends on."""
    if type(expr) is not tuple:
        return frozenset()
    if expr[0] == "spec":
        return frozenset((expr[1],))
    args = expr[4:] if expr[0] == "op" else expr[1:]
    return frozenset().union(*(spec_ids(a) for a in args))


# -- a ShaderInfo at given spec values -----------------------------------------


def shared_memory_at(info: ShaderInfo, values: Mapping[int, SpecValue]) -> int:
    """Bytes of workgroup (shared) memory ``info``'s entry point declares once specialised
    with ``values`` (spec id -> value; ids left out keep their defaults): the figure
    ``maxComputeSharedMemorySize`` is checked against."""
    if info.shared_memory_spec is None:
        return info.shared_memory
    return evaluate(info.shared_memory_spec, values)


def push_constant_size_at(info: ShaderInfo, values: Mapping[int, SpecValue]) -> int:
    """Bytes of the push-constant block once specialised with ``values``."""
    if info.push_constant_size_spec is None:
        return info.push_constant_size
    return evaluate(info.push_constant_size_spec, values)


def min_size_at(binding: Binding, values: Mapping[int, SpecValue]) -> int:
    """Bytes a view bound to ``binding`` needs at least, once specialised with ``values``."""
    if binding.min_size_spec is None:
        return binding.min_size
    return evaluate(binding.min_size_spec, values)


def _member_at(m: PushMember, values: Mapping[int, SpecValue]) -> PushMember:
    if m.length_spec is None:
        return m
    n = evaluate(m.length_spec, values)
    return dataclasses.replace(m, array=(n,) + m.array[1:], size=n * m.array_stride)


def depends_on_spec(info: ShaderInfo) -> bool:
    """Whether any size of ``info`` changes with its spec values."""
    return (info.shared_memory_spec is not None or info.push_constant_size_spec is not None
            or any(b.min_size_spec is not None for b in info.bindings)
            or any(m.length_spec is not None for m in info.push_constants))


def specialise(info: ShaderInfo, values: Mapping[int, SpecValue]) -> ShaderInfo:
    """``info`` with every spec-dependent size at ``values`` (the expressions kept, so the
    record still says what depends on what); ``info`` itself when nothing does."""
    if not depends_on_spec(info):
        return info
    return dataclasses.replace(
        info, shared_memory=shared_memory_at(info, values),
        push_constant_size=push_constant_size_at(info, values),
        push_constants=tuple(_member_at(m, values) for m in info.push_constants),
        bindings=tuple(dataclasses.replace(b, min_size=min_size_at(b, values))
                       if b.min_size_spec is not None else b for b in info.bindings))


def overlapping_members(members: tuple[PushMember, ...]) -> Optional[tuple[PushMember, PushMember]]:
    """Two top-level push members whose bytes overlap (a spec-sized array grown into the
    next member: a block's layout is fixed at the defaults), or None."""
    ordered = sorted(members, key=lambda m: m.offset)
    for a, b in zip(ordered, ordered[1:]):
        if a.offset + a.size > b.offset:
            return a, b
    return None

