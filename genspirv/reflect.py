"""Reflection: SPIR-V bytes in, a frozen ``ShaderInfo`` out.

``reflect(blob, entry_point=None) -> ShaderInfo`` reads the module with
``genspirv.spirv`` and derives what the runtime and the manifest need:
bindings (set, binding, type, count, access, accessed, written), the
workgroup size and its spec ids, spec constants, the push-constant size.
No Vulkan, no subprocess: pure functions over the parsed module.

The rules are the ones in DESIGN.md ("Reflection rules").  Where DESIGN.md
leaves a choice, this module decides:

- Bindings are module-wide (every variable with a Binding decoration, as
  spirv-cross lists them); ``accessed`` / ``written`` are per entry point.
  Two variables aliasing one (set, binding) merge into one binding whose
  access covers both; aliases of different descriptor kinds are an error.
- ``OpArrayLength`` and image size queries make a binding *accessed* but
  neither read nor written: they need the descriptor, not its contents.
  Loading an image or sampler handle is an access; the image operation on the
  handle decides read or write.
- An instruction this module does not know, touching a tracked pointer or
  handle, counts as a read and a write (over-reporting only costs barriers).
- ``push_constant_size`` is the largest PushConstant block of the module.
- Only GLCompute entry points are reflected; other stages are skipped.
- A binding declared both NonWritable and NonReadable is ``read``.

``reflect_module`` gives every compute entry point; ``binding_usage`` the
per-binding read flag the manifest does not keep (lint uses it); the index,
type-size and usage helpers are public for tests and tools.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Mapping, Optional, Union

from . import spirv as sp
from .errors import ReflectError, SpirvError
from .spirv import Instruction, Module

# Descriptor kinds, as spelled in the manifest.
DESCRIPTOR_TYPES = (
    "storage_buffer",
    "uniform_buffer",
    "storage_image",
    "sampled_image",
    "combined_image_sampler",
    "sampler",
    "uniform_texel_buffer",
    "storage_texel_buffer",
    "acceleration_structure",
)

ACCESS_KINDS = ("read", "write", "read_write")

SPEC_TYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "float16", "float32", "float64")


@dataclass(frozen=True)
class Binding:
    set: int
    binding: int
    name: str
    type: str          # one of DESCRIPTOR_TYPES
    count: int         # array length; 1 for a non-array, 0 for a runtime array
    access: str        # one of ACCESS_KINDS, from the declarations
    accessed: bool     # statically reachable load/store/atomic from the entry point
    written: bool      # statically reachable store/atomic/image write

    @property
    def readable(self) -> bool:
        return self.access in ("read", "read_write")

    @property
    def writable(self) -> bool:
        return self.access in ("write", "read_write")


SpecValue = Union[bool, int, float]


@dataclass(frozen=True)
class SpecConstant:
    id: int
    name: str
    type: str          # one of SPEC_TYPES
    default: SpecValue


@dataclass(frozen=True)
class ShaderInfo:
    entry_point: str
    local_size: tuple[int, int, int]
    local_size_spec_ids: tuple[Optional[int], Optional[int], Optional[int]]
    bindings: tuple[Binding, ...]            # sorted by (set, binding)
    spec_constants: tuple[SpecConstant, ...]  # sorted by id
    push_constant_size: int

    @property
    def binding_count(self) -> int:
        return len(self.bindings)

    @property
    def writable_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.bindings) if b.writable)

    @property
    def readable_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.bindings) if b.readable)


# -- the id index (one pass over the parsed module) ---------------------------

# A type or constant chain deeper than this is a corrupted (cyclic) module.
MAX_TYPE_DEPTH = 64


@dataclass(frozen=True)
class EntryPoint:
    model: int              # spirv.EXECUTION_MODELS key
    function: int           # id of the OpFunction
    name: str
    interface: tuple[int, ...]
    offset: int             # word offset of the OpEntryPoint


@dataclass(frozen=True)
class Function:
    id: int
    params: tuple[int, ...]
    body: tuple[Instruction, ...]   # everything between the parameters and OpFunctionEnd


@dataclass(frozen=True)
class Index:
    """The module's ids sorted into the dicts reflection looks things up in."""
    module: Module
    names: Mapping[int, str]
    member_names: Mapping[tuple[int, int], str]
    decorations: Mapping[int, Mapping[int, tuple[int, ...]]]      # id -> decoration -> operands
    member_decorations: Mapping[tuple[int, int], Mapping[int, tuple[int, ...]]]
    entry_points: tuple[EntryPoint, ...]
    modes: Mapping[int, tuple[Instruction, ...]]                  # function id -> execution modes
    functions: Mapping[int, Function]
    variables: tuple[Instruction, ...]                             # global OpVariables, in order
    ext_inst_sets: Mapping[int, str]

    def define(self, id_: int, user: Instruction) -> Instruction:
        return self.module.define(id_, user)

    def decoration(self, id_: int, decoration: int) -> Optional[tuple[int, ...]]:
        return self.decorations.get(id_, {}).get(decoration)

    def member_decoration(self, struct: int, member: int,
                          decoration: int) -> Optional[tuple[int, ...]]:
        return self.member_decorations.get((struct, member), {}).get(decoration)


def _decorate(table: dict, key, decoration: int, operands: tuple[int, ...]) -> None:
    # The first decoration of a kind wins: a duplicate is invalid SPIR-V anyway.
    table.setdefault(key, {}).setdefault(decoration, operands)


def index_module(module: Module) -> Index:
    """One pass over the module: names, decorations (groups applied), entry points,
    execution modes, functions with their parameters and bodies, global variables."""
    names: dict[int, str] = {}
    member_names: dict[tuple[int, int], str] = {}
    decorations: dict[int, dict[int, tuple[int, ...]]] = {}
    member_decorations: dict[tuple[int, int], dict[int, tuple[int, ...]]] = {}
    group_members: list[Instruction] = []
    entry_points = []
    modes: dict[int, list[Instruction]] = {}
    functions: dict[int, Function] = {}
    variables = []
    ext_inst_sets = {}

    current: Optional[Instruction] = None   # the open OpFunction
    params: list[int] = []
    body: list[Instruction] = []
    for inst in module.instructions:
        op = inst.opcode
        if current is not None:
            if op == sp.OP_FUNCTION:
                raise SpirvError("OpFunction inside a function (missing OpFunctionEnd)",
                                 inst.offset)
            if op == sp.OP_FUNCTION_END:
                functions[current.result] = Function(current.result, tuple(params), tuple(body))
                current = None
            elif op == sp.OP_FUNCTION_PARAMETER and not body:
                params.append(inst.result)
            else:
                body.append(inst)
            continue
        if op == sp.OP_FUNCTION:
            current, params, body = inst, [], []
        elif op == sp.OP_FUNCTION_END:
            raise SpirvError("OpFunctionEnd outside a function", inst.offset)
        elif op == sp.OP_NAME:
            names[inst.operand(0)] = inst.string(1)[0]
        elif op == sp.OP_MEMBER_NAME:
            member_names[(inst.operand(0), inst.operand(1))] = inst.string(2)[0]
        elif op in (sp.OP_DECORATE, sp.OP_DECORATE_ID, sp.OP_DECORATE_STRING):
            _decorate(decorations, inst.operand(0), inst.operand(1), inst.operands[2:])
        elif op in (sp.OP_MEMBER_DECORATE, sp.OP_MEMBER_DECORATE_STRING):
            _decorate(member_decorations, (inst.operand(0), inst.operand(1)), inst.operand(2),
                      inst.operands[3:])
        elif op in (sp.OP_GROUP_DECORATE, sp.OP_GROUP_MEMBER_DECORATE):
            group_members.append(inst)
        elif op == sp.OP_ENTRY_POINT:
            name, after = inst.string(2)
            entry_points.append(EntryPoint(inst.operand(0), inst.operand(1), name,
                                           inst.operands[after:], inst.offset))
        elif op in (sp.OP_EXECUTION_MODE, sp.OP_EXECUTION_MODE_ID):
            modes.setdefault(inst.operand(0), []).append(inst)
        elif op == sp.OP_VARIABLE:
            variables.append(inst)
        elif op == sp.OP_EXT_INST_IMPORT:
            ext_inst_sets[inst.result] = inst.string(1)[0]
    if current is not None:
        raise SpirvError(f"function %{current.result} has no OpFunctionEnd", current.offset)

    # Decoration groups (deprecated, still valid): copy the group's decorations.
    for inst in group_members:
        group = decorations.get(inst.operand(0), {})
        if inst.opcode == sp.OP_GROUP_DECORATE:
            for target in inst.operands[1:]:
                for dec, ops in group.items():
                    _decorate(decorations, target, dec, ops)
        else:
            pairs = inst.operands[1:]
            for i in range(0, len(pairs) - 1, 2):
                for dec, ops in group.items():
                    _decorate(member_decorations, (pairs[i], pairs[i + 1]), dec, ops)

    for ep in entry_points:
        target = module.defs.get(ep.function)
        if target is None or target.opcode != sp.OP_FUNCTION or ep.function not in functions:
            raise SpirvError(f"entry point {ep.name!r} names %{ep.function}, not a function",
                             ep.offset)
    return Index(module, names, member_names, decorations, member_decorations,
                 tuple(entry_points), {k: tuple(v) for k, v in modes.items()}, functions,
                 tuple(variables), ext_inst_sets)


# -- types and constants ------------------------------------------------------


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


def _positive_int(value: SpecValue, what: str, inst: Instruction) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReflectError(f"{what} at word {inst.offset} is {value!r}, not a non-negative integer")
    return value


def array_length(index: Index, array_type: Instruction) -> int:
    """Length of an OpTypeArray (a spec-constant length: its default); 0 for a runtime array."""
    if array_type.opcode == sp.OP_TYPE_RUNTIME_ARRAY:
        return 0
    value, _ = constant_value(index, array_type.operand(2), array_type)
    return _positive_int(value, "array length", array_type)


def _member_count(struct: Instruction) -> int:
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
    for member in range(_member_count(struct)):
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


# -- descriptors --------------------------------------------------------------


@dataclass(frozen=True)
class Descriptor:
    """A global variable with a Binding decoration, as declared."""
    variable: int          # id of the OpVariable
    set: int
    binding: int
    name: str
    type: str
    count: int
    access: str


def _strip_arrays(index: Index, type_id: int, user: Instruction) -> tuple[Instruction, int]:
    """The element type under any descriptor arrays, and the total count (0: runtime)."""
    count = 1
    t = index.define(type_id, user)
    for _ in range(MAX_TYPE_DEPTH):
        if t.opcode not in (sp.OP_TYPE_ARRAY, sp.OP_TYPE_RUNTIME_ARRAY):
            return t, count
        count *= array_length(index, t)
        t = index.define(t.operand(1), t)
    raise ReflectError(f"descriptor type at word {user.offset} nests arrays deeper than "
                       f"{MAX_TYPE_DEPTH} levels")


def _declared_access(index: Index, var: int, block: Optional[Instruction]) -> str:
    def everywhere(decoration: int) -> bool:
        if index.decoration(var, decoration) is not None:
            return True
        if block is None or _member_count(block) == 0:
            return False
        return all(index.member_decoration(block.result, m, decoration) is not None
                   for m in range(_member_count(block)))

    if everywhere(sp.DECORATION_NON_WRITABLE):
        return "read"
    if everywhere(sp.DECORATION_NON_READABLE):
        return "write"
    return "read_write"


def describe_variable(index: Index, var: Instruction) -> Descriptor:
    binding = index.decoration(var.result, sp.DECORATION_BINDING)
    dset = index.decoration(var.result, sp.DECORATION_DESCRIPTOR_SET)
    where = f"variable %{var.result} ({index.names.get(var.result, '')!r}) at word {var.offset}"
    if not binding or (dset is not None and not dset):
        raise SpirvError(f"{where}: Binding/DescriptorSet decoration without its number",
                         var.offset)
    where = f"set {dset[0] if dset else 0} binding {binding[0]}, {where}"
    storage = var.operand(2)
    pointer = index.define(var.result_type, var)
    if pointer.opcode != sp.OP_TYPE_POINTER:
        raise SpirvError(f"{where}: type %{var.result_type} is not a pointer", var.offset)
    element, count = _strip_arrays(index, pointer.operand(2), pointer)
    op = element.opcode
    block = None
    if storage in (sp.STORAGE_STORAGE_BUFFER, sp.STORAGE_UNIFORM) and op == sp.OP_TYPE_STRUCT:
        block = element
        if storage == sp.STORAGE_STORAGE_BUFFER or index.decoration(
                element.result, sp.DECORATION_BUFFER_BLOCK) is not None:
            kind = "storage_buffer"
        elif index.decoration(element.result, sp.DECORATION_BLOCK) is not None:
            kind = "uniform_buffer"
        else:
            raise ReflectError(f"{where}: Uniform struct with neither Block nor BufferBlock")
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_IMAGE:
        dim, sampled = element.operand(2), element.operand(6)
        if dim == sp.IMAGE_DIM_SUBPASS_DATA:
            raise ReflectError(f"{where}: input attachments have no compute descriptor kind")
        if dim == sp.IMAGE_DIM_BUFFER:
            kind = "storage_texel_buffer" if sampled == 2 else "uniform_texel_buffer"
        else:
            kind = "storage_image" if sampled == 2 else "sampled_image"
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_SAMPLED_IMAGE:
        image = index.define(element.operand(1), element)
        # GLSL's samplerBuffer: Vulkan binds a sampled buffer-dim image as a texel buffer.
        is_buffer = image.opcode == sp.OP_TYPE_IMAGE and image.operand(2) == sp.IMAGE_DIM_BUFFER
        kind = "uniform_texel_buffer" if is_buffer else "combined_image_sampler"
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_SAMPLER:
        kind = "sampler"
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_ACCELERATION_STRUCTURE_KHR:
        kind = "acceleration_structure"
    else:
        raise ReflectError(f"{where}: storage class {storage} with element opcode {op} "
                           "is no descriptor kind genspirv knows")

    if kind in ("storage_buffer", "storage_image", "storage_texel_buffer"):
        access = _declared_access(index, var.result, block)
    else:
        access = "read"
    name = index.names.get(var.result, "")
    if not name:
        name = index.names.get(element.result, "")
    return Descriptor(var.result, dset[0] if dset else 0, binding[0], name, kind, count, access)


def descriptors(index: Index) -> tuple[Descriptor, ...]:
    """Every global variable with a Binding decoration, in declaration order."""
    return tuple(describe_variable(index, v) for v in index.variables
                 if index.decoration(v.result, sp.DECORATION_BINDING) is not None)


# -- static usage over the call graph -----------------------------------------

USE_ACCESS, USE_READ, USE_WRITE, USE_LOAD = 1, 2, 4, 8

_ATOMIC_RMW = frozenset(list(range(sp.OP_ATOMIC_EXCHANGE, sp.OP_ATOMIC_XOR + 1))
                        + [sp.OP_ATOMIC_FLAG_TEST_AND_SET, sp.OP_ATOMIC_FMIN_EXT,
                           sp.OP_ATOMIC_FMAX_EXT, sp.OP_ATOMIC_FADD_EXT])
_IMAGE_READS = frozenset(list(range(sp.OP_IMAGE_SAMPLE_IMPLICIT_LOD, sp.OP_IMAGE_READ + 1))
                         + list(range(sp.OP_IMAGE_SPARSE_SAMPLE_IMPLICIT_LOD,
                                      sp.OP_IMAGE_SPARSE_DREF_GATHER + 1))
                         + [sp.OP_IMAGE_SPARSE_READ])
_IMAGE_QUERIES = frozenset(range(sp.OP_IMAGE_QUERY_FORMAT, sp.OP_IMAGE_QUERY_SAMPLES + 1))
_DERIVES_FROM_OPERAND_2 = frozenset([sp.OP_ACCESS_CHAIN, sp.OP_IN_BOUNDS_ACCESS_CHAIN,
                                     sp.OP_PTR_ACCESS_CHAIN, sp.OP_IN_BOUNDS_PTR_ACCESS_CHAIN,
                                     sp.OP_COPY_OBJECT, sp.OP_BITCAST, sp.OP_IMAGE,
                                     sp.OP_IMAGE_TEXEL_POINTER])
# Opcodes that touch no memory and take no pointer or handle: values only.
_PURE = (frozenset(list(range(77, 83)) + [84] + list(range(109, 216)) + list(range(333, 367))
                   + [sp.OP_UNDEF])
         - {117, 120, 121, 122, 123, sp.OP_BITCAST, sp.OP_SELECT})   # these move pointers
# Opcodes that take ids or literals but never access a descriptor.
_INERT = frozenset([sp.OP_NOP, sp.OP_LINE, sp.OP_NO_LINE, sp.OP_LABEL, sp.OP_BRANCH,
                    sp.OP_BRANCH_CONDITIONAL, sp.OP_SWITCH, sp.OP_SELECTION_MERGE,
                    sp.OP_LOOP_MERGE, sp.OP_RETURN, sp.OP_RETURN_VALUE, sp.OP_KILL,
                    sp.OP_UNREACHABLE, sp.OP_TERMINATE_INVOCATION, sp.OP_LIFETIME_START,
                    sp.OP_LIFETIME_STOP, sp.OP_CONTROL_BARRIER, sp.OP_MEMORY_BARRIER,
                    sp.OP_VARIABLE, sp.OP_NAME, sp.OP_DECORATE,
                    401, 402, 403])     # OpPtrEqual, OpPtrNotEqual, OpPtrDiff compare addresses


_SKIP = _PURE | _INERT


@dataclass(frozen=True)
class Usage:
    """Per descriptor variable id: what the entry point's reachable code does with it."""
    accessed: frozenset[int]
    read: frozenset[int]
    written: frozenset[int]
    visits: int          # instructions looked at plus propagation steps: linear in the module


def reachable_functions(index: Index, entry: int) -> list[Function]:
    """Functions reachable from ``entry`` through OpFunctionCall (iterative: cycles are safe)."""
    seen = {entry}
    order = []
    todo = [entry]
    while todo:
        fn = index.functions[todo.pop()]
        order.append(fn)
        for inst in fn.body:
            if inst.opcode == sp.OP_FUNCTION_CALL:
                callee = inst.operand(2)
                if callee not in index.functions:
                    raise SpirvError(f"OpFunctionCall calls %{callee}, which is not a function",
                                     inst.offset)
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
    return order


def usage(index: Index, entry: int, roots: Mapping[int, bool]) -> Usage:
    """Static usage of the variables ``roots`` (id -> is an opaque handle: image, sampler...).

    Pointers and handles flow from each variable along access chains, copies,
    phis, selects, image/sampler combination and call arguments into
    parameters; every load, store, atomic, copy, image operation or unknown
    instruction touching one of them marks its variables.  Masks of variable
    bits propagate through a work list, so each id is revisited only when its
    mask grows (at most once per variable).
    """
    bit = {var: 1 << i for i, var in enumerate(roots)}
    opaque = sum(bit[v] for v, is_opaque in roots.items() if is_opaque)
    everything = (1 << len(bit)) - 1
    edges: dict[int, list[tuple[int, int]]] = {}
    uses: list[tuple[int, int]] = []
    visits = 0

    bound = index.module.bound

    def checked(id_: int, inst: Instruction) -> int:
        if not 0 < id_ < bound:
            raise SpirvError(f"opcode {inst.opcode} refers to %{id_}, outside 1..{bound - 1}",
                             inst.offset)
        return id_

    def edge(inst: Instruction, src: int, dst: int, keep: int = everything) -> None:
        edges.setdefault(checked(src, inst), []).append((dst, keep))

    def use(id_: int, kind: int, inst: Instruction) -> None:
        uses.append((checked(id_, inst), kind))

    for fn in reachable_functions(index, entry):
        for inst in fn.body:
            visits += 1
            op, ops = inst.opcode, inst.operands
            if op in _SKIP:
                continue
            if op in _DERIVES_FROM_OPERAND_2:
                edge(inst, inst.operand(2), inst.result)
            elif op == sp.OP_SAMPLED_IMAGE:
                edge(inst, inst.operand(2), inst.result)
                edge(inst, inst.operand(3), inst.result)
            elif op == sp.OP_PHI:
                for i in range(2, len(ops), 2):
                    edge(inst, ops[i], inst.result)
            elif op == sp.OP_SELECT:
                edge(inst, inst.operand(3), inst.result)
                edge(inst, inst.operand(4), inst.result)
            elif op == sp.OP_FUNCTION_CALL:
                params = index.functions[inst.operand(2)].params
                args = ops[3:]
                if len(args) != len(params):
                    raise SpirvError(f"call passes {len(args)} arguments to a function of "
                                     f"{len(params)} parameters", inst.offset)
                for arg, param in zip(args, params):
                    edge(inst, arg, param)
            elif op == sp.OP_LOAD:
                use(inst.operand(2), USE_LOAD, inst)
                edge(inst, inst.operand(2), inst.result, opaque)   # a loaded image: still the image
            elif op == sp.OP_ATOMIC_LOAD:
                use(inst.operand(2), USE_READ, inst)
            elif op == sp.OP_STORE or op == sp.OP_ATOMIC_STORE or op == sp.OP_ATOMIC_FLAG_CLEAR:
                use(inst.operand(0), USE_WRITE, inst)
            elif op in (sp.OP_COPY_MEMORY, sp.OP_COPY_MEMORY_SIZED):
                use(inst.operand(0), USE_WRITE, inst)
                use(inst.operand(1), USE_READ, inst)
            elif op in _ATOMIC_RMW:
                use(inst.operand(2), USE_READ | USE_WRITE, inst)
            elif op in _IMAGE_READS:
                use(inst.operand(2), USE_READ, inst)
            elif op == sp.OP_IMAGE_WRITE:
                use(inst.operand(0), USE_WRITE, inst)
            elif op in _IMAGE_QUERIES or op == sp.OP_ARRAY_LENGTH:
                # Sizes come from the descriptor, not from the contents.
                use(inst.operand(2), USE_ACCESS, inst)
            elif op == sp.OP_RAY_QUERY_INITIALIZE_KHR:
                use(inst.operand(1), USE_READ, inst)     # the acceleration structure
            elif op == sp.OP_COOPERATIVE_MATRIX_LOAD_KHR:
                use(inst.operand(2), USE_READ, inst)
            elif op == sp.OP_COOPERATIVE_MATRIX_STORE_KHR:
                use(inst.operand(0), USE_WRITE, inst)
            elif op == sp.OP_EXT_INST and index.ext_inst_sets.get(
                    inst.operand(2), "").startswith("NonSemantic."):
                continue     # debug info refers to variables without touching them
            else:
                # Unknown here: whatever it does with a descriptor, assume it reads and writes.
                start = 4 if op == sp.OP_EXT_INST else (2 if inst.result_type else 0)
                for word in ops[start:]:
                    uses.append((word, USE_READ | USE_WRITE))

    masks = dict(bit)
    todo = list(bit)
    while todo:
        src = todo.pop()
        mask = masks[src]
        for dst, keep in edges.get(src, ()):
            visits += 1
            new = mask & keep & ~masks.get(dst, 0)
            if new:
                masks[dst] = masks.get(dst, 0) | new
                todo.append(dst)

    accessed = read = written = 0
    for id_, kind in uses:
        visits += 1
        m = masks.get(id_, 0)
        if not m:
            continue
        accessed |= m
        if kind & USE_LOAD:
            read |= m & ~opaque      # loading an image or sampler handle reads no contents
        elif kind & USE_READ:
            read |= m
        if kind & USE_WRITE:
            written |= m

    def ids(mask: int) -> frozenset[int]:
        return frozenset(v for v, b in bit.items() if mask & b)

    return Usage(ids(accessed), ids(read), ids(written), visits)


# -- workgroup size, spec constants, push constants ---------------------------


def _dimension(value: SpecValue, what: str, inst: Instruction) -> int:
    if _positive_int(value, f"{what} dimension", inst) == 0:
        raise ReflectError(f"{what} dimension at word {inst.offset} is 0 (at least 1)")
    return value


def workgroup_size(index: Index, ep: EntryPoint) -> tuple[tuple[int, int, int],
                                                          tuple[Optional[int], ...]]:
    """(local_size, local_size_spec_ids); the WorkgroupSize built-in overrides the mode."""
    sizes: list[int] = [1, 1, 1]
    spec_ids: list[Optional[int]] = [None, None, None]
    for mode in index.modes.get(ep.function, ()):
        kind = mode.operand(1)
        if kind == sp.EXECUTION_MODE_LOCAL_SIZE:
            sizes = [_dimension(mode.operand(2 + i), "LocalSize", mode) for i in range(3)]
            spec_ids = [None, None, None]
        elif kind == sp.EXECUTION_MODE_LOCAL_SIZE_ID:
            sizes, spec_ids = [], []
            for i in range(3):
                value, spec = constant_value(index, mode.operand(2 + i), mode)
                sizes.append(_dimension(value, "LocalSizeId", mode))
                spec_ids.append(spec)
    for id_, decs in index.decorations.items():
        builtin = decs.get(sp.DECORATION_BUILTIN)
        if not builtin or builtin[0] != sp.BUILTIN_WORKGROUP_SIZE:
            continue
        composite = index.module.defs.get(id_)
        if composite is None or composite.opcode not in (sp.OP_CONSTANT_COMPOSITE,
                                                         sp.OP_SPEC_CONSTANT_COMPOSITE):
            continue     # an input variable: the mode already says it
        if len(composite.operands) != 5:
            raise SpirvError("WorkgroupSize composite needs three constituents", composite.offset)
        sizes, spec_ids = [], []
        for i in range(3):
            value, spec = constant_value(index, composite.operands[2 + i], composite)
            sizes.append(_dimension(value, "WorkgroupSize", composite))
            spec_ids.append(spec)
    return (sizes[0], sizes[1], sizes[2]), (spec_ids[0], spec_ids[1], spec_ids[2])


def spec_constants(index: Index) -> tuple[SpecConstant, ...]:
    """One per SpecId, sorted by id; duplicates keep the first type and default, any name."""
    found: dict[int, SpecConstant] = {}
    for inst in index.module.instructions:
        if inst.opcode not in (sp.OP_SPEC_CONSTANT, sp.OP_SPEC_CONSTANT_TRUE,
                               sp.OP_SPEC_CONSTANT_FALSE):
            continue
        spec = index.decoration(inst.result, sp.DECORATION_SPEC_ID)
        if not spec:
            continue
        value, _ = constant_value(index, inst.result, inst)
        sc = SpecConstant(spec[0], index.names.get(inst.result, ""),
                          scalar_type_name(index, inst.result_type, inst), value)
        first = found.get(sc.id)
        if first is None:
            found[sc.id] = sc
        elif not first.name and sc.name:
            found[sc.id] = SpecConstant(first.id, sc.name, first.type, first.default)
    return tuple(found[k] for k in sorted(found))


def push_constant_size(index: Index) -> int:
    """Largest PushConstant block of the module (one per entry point is allowed)."""
    size = 0
    for var in index.variables:
        if var.operand(2) != sp.STORAGE_PUSH_CONSTANT:
            continue
        pointer = index.define(var.result_type, var)
        if pointer.opcode != sp.OP_TYPE_POINTER:
            raise SpirvError(f"push constant %{var.result} has a non-pointer type", var.offset)
        size = max(size, type_size(index, pointer.operand(2), pointer))
    return size


# -- putting it together ------------------------------------------------------


def _merge(a: Binding, b: Binding) -> Binding:
    """Two variables aliasing one (set, binding): one binding that does what both do."""
    if a.type != b.type:
        raise ReflectError(f"set {a.set} binding {a.binding} is declared both as {a.type} "
                           f"({a.name!r}) and {b.type} ({b.name!r})")
    readable = a.readable or b.readable
    writable = a.writable or b.writable
    access = "read_write" if readable and writable else ("read" if readable else "write")
    return Binding(a.set, a.binding, a.name or b.name, a.type, max(a.count, b.count), access,
                   a.accessed or b.accessed, a.written or b.written)


def _info(index: Index, ep: EntryPoint, descs: tuple[Descriptor, ...],
          specs: tuple[SpecConstant, ...], push_size: int) -> ShaderInfo:
    roots = {d.variable: d.type not in ("storage_buffer", "uniform_buffer") for d in descs}
    use = usage(index, ep.function, roots)
    merged: dict[tuple[int, int], Binding] = {}
    for d in descs:
        b = Binding(d.set, d.binding, d.name, d.type, d.count, d.access,
                    d.variable in use.accessed, d.variable in use.written)
        key = (d.set, d.binding)
        merged[key] = _merge(merged[key], b) if key in merged else b
    local_size, spec_ids = workgroup_size(index, ep)
    return ShaderInfo(entry_point=ep.name, local_size=local_size, local_size_spec_ids=spec_ids,
                      bindings=tuple(merged[k] for k in sorted(merged)),
                      spec_constants=specs, push_constant_size=push_size)


def _compute_entry_points(index: Index) -> list[EntryPoint]:
    return [ep for ep in index.entry_points if ep.model == sp.EXECUTION_MODEL_GLCOMPUTE]


def _no_compute_message(index: Index) -> str:
    others = ", ".join(f"{ep.name!r} ({sp.EXECUTION_MODELS.get(ep.model, ep.model)})"
                       for ep in index.entry_points)
    return "module has no GLCompute entry point" + (f" (it has {others})" if others else "")


def _select_entry_point(index: Index, entry_point: Optional[str]) -> EntryPoint:
    eps = _compute_entry_points(index)
    if not eps:
        raise ReflectError(_no_compute_message(index))
    if entry_point is None:
        return eps[0]
    for ep in eps:
        if ep.name == entry_point:
            return ep
    known = ", ".join(repr(e.name) for e in eps)
    raise ReflectError(f"no GLCompute entry point named {entry_point!r} (known: {known})")


def reflect_module(blob: bytes) -> list[ShaderInfo]:
    """A ``ShaderInfo`` per GLCompute entry point, in declaration order."""
    with sp.without_gc():
        return _reflect_module(blob)


def _reflect_module(blob: bytes) -> list[ShaderInfo]:
    index = index_module(sp.parse(blob))
    eps = _compute_entry_points(index)
    if not eps:
        raise ReflectError(_no_compute_message(index))
    descs, specs, push = descriptors(index), spec_constants(index), push_constant_size(index)
    return [_info(index, ep, descs, specs, push) for ep in eps]


def reflect(blob: bytes, entry_point: Optional[str] = None) -> ShaderInfo:
    """Reflect one entry point of a SPIR-V module (the first compute one if None)."""
    with sp.without_gc():
        return _reflect(blob, entry_point)


def _reflect(blob: bytes, entry_point: Optional[str]) -> ShaderInfo:
    index = index_module(sp.parse(blob))
    ep = _select_entry_point(index, entry_point)
    return _info(index, ep, descriptors(index), spec_constants(index), push_constant_size(index))


@dataclass(frozen=True)
class BindingUsage:
    accessed: bool
    read: bool       # contents loaded, sampled, fetched, copied from or atomically updated
    written: bool


def binding_usage(blob: bytes, entry_point: Optional[str] = None
                  ) -> dict[tuple[int, int], BindingUsage]:
    """What the entry point's code does with each (set, binding): more than the manifest keeps.

    ``OpArrayLength`` and image size queries count as accessed but neither read
    nor written: they need the descriptor bound, not its contents.
    """
    with sp.without_gc():
        index = index_module(sp.parse(blob))
        ep = _select_entry_point(index, entry_point)
        descs = descriptors(index)
        use = usage(index, ep.function, {d.variable: d.type not in ("storage_buffer",
                                                                    "uniform_buffer")
                                         for d in descs})
    out: dict[tuple[int, int], BindingUsage] = {}
    for d in descs:
        key = (d.set, d.binding)
        prev = out.get(key, BindingUsage(False, False, False))
        out[key] = BindingUsage(prev.accessed or d.variable in use.accessed,
                                prev.read or d.variable in use.read,
                                prev.written or d.variable in use.written)
    return out
