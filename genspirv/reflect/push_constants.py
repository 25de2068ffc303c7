"""Reflection, push constants: an ``Index`` (and an entry point) in, the push-constant block out.

``push_constant_size(index)`` is the bytes of the largest PushConstant block
of the module.  ``push_constants(index, entry_point)`` gives the members of
the entry point's block as ``PushMember`` records in offset order: name
(OpMemberName, "" when there is none), offset, size, scalar type, vector
and matrix shape, array lengths (outermost first) and strides, and
``length_spec``, the outermost length's expression where a spec constant sizes
it (genspirv/reflect/spec_sizes.py); a nested struct carries its own members,
offsets relative to it.  The runtime packs
named push values from these (genspirv.runtime.push), so a layout the
records cannot say exactly is refused here rather than mis-packed later:
docs/RULES.md#reflection-rules lists what is refused and why.
Pure; refusals are ``ReflectError`` / ``SpirvError`` with the word offset.
"""

from __future__ import annotations

from typing import Optional

from . import spirv as sp
from ..errors import ReflectError, SpirvError
from .spirv import Instruction
from .constants import array_length, scalar_type_name
from .index import MAX_TYPE_DEPTH, EntryPoint, Index
from .layout import member_count, struct_size, type_size
from .model import SCALAR_BYTES, STRUCT, PushMember, ScalarType, SpecExpr, SpecValues
from .spec_sizes import SYMBOLIC, maximum
from .usage import usage

# The bytes of a PhysicalStorageBuffer pointer (a buffer_reference): a device address.
_ADDRESS = ScalarType.UINT64


def _block_type(index: Index, var: Instruction) -> int:
    pointer = index.define(var.result_type, var)
    if pointer.opcode != sp.OP_TYPE_POINTER:
        raise SpirvError(f"push constant %{var.result} has a non-pointer type", var.offset)
    return pointer.operand(2)


def _push_variables(index: Index) -> list[Instruction]:
    return [v for v in index.variables if v.operand(2) == sp.STORAGE_PUSH_CONSTANT]


def push_constant_size(index: Index, values: Optional[SpecValues] = None) -> SpecExpr:
    """Largest PushConstant block of the module (one per entry point is allowed); with
    ``SYMBOLIC`` values, its expression over spec ids where a spec-sized array changes it."""
    size: SpecExpr = 0
    for var in _push_variables(index):
        type_id = _block_type(index, var)
        size = maximum(size, type_size(index, type_id, index.define(var.result_type, var),
                                       values=values))
    return size


def _entry_block(index: Index, ep: EntryPoint) -> Optional[Instruction]:
    """The PushConstant variable ``ep`` uses: from SPIR-V 1.4 the one its interface lists;
    among several, the one its code reaches, else the largest (as ``push_constant_size``)."""
    found = _push_variables(index)
    if index.module.version >= (1, 4):
        found = [v for v in found if v.result in ep.interface]
    if len(found) > 1:
        reached = usage(index, ep.function, {v.result: False for v in found}).accessed
        found = [v for v in found if v.result in reached] or found
    if not found:
        return None

    def size(var: Instruction) -> int:
        return type_size(index, _block_type(index, var), var)
    return max(found, key=size)


def push_constants(index: Index, ep: EntryPoint) -> tuple[PushMember, ...]:
    """The members of ``ep``'s push-constant block, in offset order (() without one)."""
    var = _entry_block(index, ep)
    if var is None:
        return ()
    block = index.define(_block_type(index, var), var)
    name = index.names.get(var.result, "") or index.names.get(block.result, "")
    if block.opcode != sp.OP_TYPE_STRUCT:
        raise ReflectError(f"push constant %{var.result} ({name!r}) at word {var.offset} "
                           "is not a struct")
    return _members(index, block, f"push constant block {name!r}", 0)


def _members(index: Index, struct: Instruction, where: str, depth: int) -> tuple[PushMember, ...]:
    if depth > MAX_TYPE_DEPTH:
        raise ReflectError(f"{where}: structs nest deeper than {MAX_TYPE_DEPTH} levels")
    members = [_member(index, struct, m, where, depth) for m in range(member_count(struct))]
    return tuple(sorted(members, key=lambda m: m.offset))


def _member(index: Index, struct: Instruction, m: int, where: str, depth: int) -> PushMember:
    name = index.member_names.get((struct.result, m), "")
    where = f"{where}, member {m} ({name!r})"
    offset = index.member_decoration(struct.result, m, sp.DECORATION_OFFSET)
    if not offset:
        raise ReflectError(f"{where} of struct %{struct.result} at word {struct.offset} "
                           "has no Offset")
    dims, stride, element, length_spec = _arrays(index, struct.operands[1 + m], struct, where)
    if length_spec is not None and depth:
        raise ReflectError(f"{where}: an array sized by a spec constant inside a struct of the "
                           "push-constant block (the struct's layout is fixed at the defaults); "
                           "make it a member of the block itself, or size it with a constant")
    shape: dict = {}
    if element.opcode == sp.OP_TYPE_STRUCT:
        shape = {"type": STRUCT, "members": _members(index, element, where, depth + 1)}
        element_size = struct_size(index, element, depth + 1)
    elif element.opcode == sp.OP_TYPE_MATRIX:
        shape, element_size = _matrix(index, struct, m, element, where)
    elif element.opcode == sp.OP_TYPE_VECTOR:
        scalar = scalar_type_name(index, element.operand(1), element)
        shape = {"type": scalar, "vector": element.operand(2)}
        element_size = element.operand(2) * SCALAR_BYTES[scalar]
    elif element.opcode == sp.OP_TYPE_POINTER:
        if element.operand(1) != sp.STORAGE_PHYSICAL_STORAGE_BUFFER:
            raise ReflectError(f"{where}: a pointer of storage class {element.operand(1)} has no "
                               "push-constant layout")
        shape, element_size = {"type": _ADDRESS}, SCALAR_BYTES[_ADDRESS]
    elif element.opcode in (sp.OP_TYPE_INT, sp.OP_TYPE_FLOAT, sp.OP_TYPE_BOOL):
        scalar = scalar_type_name(index, element.result, struct)
        shape, element_size = {"type": scalar}, SCALAR_BYTES[scalar]
    else:
        raise ReflectError(f"{where}: type %{element.result} (opcode {element.opcode}) at word "
                           f"{element.offset} has no push-constant layout")
    size = dims[0] * stride if dims else element_size
    return PushMember(name=name, offset=offset[0], size=size, array=dims,
                      array_stride=stride, length_spec=length_spec, **shape)


def _arrays(index: Index, type_id: int, user: Instruction,
            where: str) -> tuple[tuple[int, ...], int, Instruction, Optional[SpecExpr]]:
    """(lengths outermost first, the outermost ArrayStride, the element type, the outermost
    length's expression over spec ids or None).  Only the outermost length may depend on
    spec values: the ArrayStride of an outer dimension is fixed at the defaults."""
    dims: list[int] = []
    length_spec: Optional[SpecExpr] = None
    strides: list[int] = []
    t = index.define(type_id, user)
    while t.opcode in (sp.OP_TYPE_ARRAY, sp.OP_TYPE_RUNTIME_ARRAY):
        if t.opcode == sp.OP_TYPE_RUNTIME_ARRAY:
            raise ReflectError(f"{where}: a runtime array in a push-constant block")
        if len(dims) >= MAX_TYPE_DEPTH:
            raise ReflectError(f"{where}: arrays nest deeper than {MAX_TYPE_DEPTH} levels")
        stride = index.decoration(t.result, sp.DECORATION_ARRAY_STRIDE)
        if not stride:
            raise ReflectError(f"{where}: array type %{t.result} at word {t.offset} "
                               "has no ArrayStride")
        dims.append(array_length(index, t))
        spec = array_length(index, t, SYMBOLIC)
        if type(spec) is tuple:
            if dims[1:]:
                raise ReflectError(f"{where}: inner array dimension {len(dims) - 1} is sized by a "
                                   "spec constant (the outer stride is fixed at its default); "
                                   "only the outermost length may be")
            length_spec = spec
        strides.append(stride[0])
        t = index.define(t.operand(1), t)
    # One stride per member: an inner dimension must be its outer one's element, whole.
    for i in range(1, len(dims)):
        if strides[i - 1] != dims[i] * strides[i]:
            raise ReflectError(f"{where}: array strides {strides} do not nest (an outer stride "
                               "must be the inner length times the inner stride)")
    return tuple(dims), (strides[0] if strides else 0), t, length_spec


def _matrix(index: Index, struct: Instruction, m: int, matrix: Instruction,
            where: str) -> tuple[dict, int]:
    column = index.define(matrix.operand(1), matrix)
    if column.opcode != sp.OP_TYPE_VECTOR:
        raise SpirvError(f"matrix %{matrix.result}'s column type is not a vector", matrix.offset)
    columns, rows = matrix.operand(2), column.operand(2)
    stride = index.member_decoration(struct.result, m, sp.DECORATION_MATRIX_STRIDE)
    if not stride:
        raise ReflectError(f"{where}: a matrix member without MatrixStride")
    row_major = index.member_decoration(struct.result, m, sp.DECORATION_ROW_MAJOR) is not None
    shape = {"type": scalar_type_name(index, column.operand(1), column), "vector": rows,
             "columns": columns, "matrix_stride": stride[0], "row_major": row_major}
    return shape, stride[0] * (rows if row_major else columns)
