"""Reflection: SPIR-V bytes in, a frozen ``ShaderInfo`` out.

``reflect(blob, entry_point=None) -> ShaderInfo`` reads the module with
``genspirv.spirv`` and derives what the runtime and the manifest need:
bindings (set, binding, type, count, access, accessed, written, min_size,
array_stride), the workgroup size and its spec ids, spec constants, the
push-constant size and the workgroup (shared) memory.
No Vulkan, no subprocess: pure functions over the parsed module.

The steps live in their own modules: ``reflect_index`` (the id index),
``reflect_types`` (sizes, constants, spec-constant expressions),
``reflect_usage`` (static access analysis), ``reflect_shared`` (workgroup
memory) and ``reflect_verify`` (a manifest entry proven against its blob);
this module puts them together, and its names are the public ones.

The rules are stated in docs/RULES.md#reflection-rules; in detail, this
module decides:

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
- Every constant decorated with SpecId is listed, sorted by (id, name): ids
  may repeat (``local_size_x_id`` beside ``constant_id``), names may be empty.
- ``min_size`` is spirv-cross's ``block_size``: the largest member offset plus
  that member's size, a trailing runtime array counting 0.

``reflect_module`` gives every compute entry point; ``binding_usage`` the
per-binding read flag the manifest does not keep (lint uses it); the index,
type-size and usage helpers are public for tests and tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import spirv as sp
from .errors import ReflectError, SpirvError
from .reflect_index import MAX_TYPE_DEPTH, EntryPoint, Function, Index, index_module
from .reflect_shared import workgroup_memory_bytes
from .reflect_types import (SPEC_TYPES, SpecValue, SpecValues, array_length, constant_value,
                            member_count, non_negative_int, scalar_type_name, struct_size,
                            type_size)
from .reflect_usage import Usage, reachable_functions, usage
from .spirv import Instruction

__all__ = [
    "ACCESS_KINDS", "DESCRIPTOR_TYPES", "SPEC_TYPES", "Binding", "BindingUsage", "Descriptor",
    "EntryPoint", "Function", "Index", "ShaderInfo", "SpecConstant", "SpecValue", "Usage",
    "array_length", "binding_usage", "constant_value", "descriptors", "index_module",
    "push_constant_size", "reachable_functions", "reflect", "reflect_module",
    "scalar_type_name", "shared_memory_bytes", "spec_constants", "struct_size", "type_size",
    "usage", "workgroup_size",
]

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
    min_size: int = 0      # bytes of the block without its trailing runtime array (0: no block)
    array_stride: int = 0  # bytes per element of the block's trailing runtime array (0: none)

    @property
    def readable(self) -> bool:
        return self.access in ("read", "read_write")

    @property
    def writable(self) -> bool:
        return self.access in ("write", "read_write")


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
    spec_constants: tuple[SpecConstant, ...]  # sorted by (id, name); several may share an id
    push_constant_size: int
    shared_memory: int = 0    # bytes of Workgroup memory at the spec constants' defaults

    @property
    def binding_count(self) -> int:
        return len(self.bindings)

    @property
    def writable_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.bindings) if b.writable)

    @property
    def readable_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.bindings) if b.readable)


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
    min_size: int = 0
    array_stride: int = 0


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
        if block is None or member_count(block) == 0:
            return False
        return all(index.member_decoration(block.result, m, decoration) is not None
                   for m in range(member_count(block)))

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
    min_size, array_stride = _block_sizes(index, block, where) if block is not None else (0, 0)
    return Descriptor(var.result, dset[0] if dset else 0, binding[0], name, kind, count, access,
                      min_size, array_stride)


def _block_sizes(index: Index, block: Instruction, where: str) -> tuple[int, int]:
    """(min_size, array_stride): the block's bytes with its trailing runtime array empty,
    and the bytes per element of that array (0 when the block has none)."""
    stride = 0
    if member_count(block):
        last = index.define(block.operands[-1], block)
        if last.opcode == sp.OP_TYPE_RUNTIME_ARRAY:
            decorated = index.decoration(last.result, sp.DECORATION_ARRAY_STRIDE)
            if not decorated:
                raise ReflectError(f"{where}: the block's runtime array %{last.result} "
                                   "has no ArrayStride")
            stride = decorated[0]
    return struct_size(index, block), stride


def descriptors(index: Index) -> tuple[Descriptor, ...]:
    """Every global variable with a Binding decoration, in declaration order."""
    return tuple(describe_variable(index, v) for v in index.variables
                 if index.decoration(v.result, sp.DECORATION_BINDING) is not None)


# -- workgroup size, spec constants, push constants ---------------------------


def _dimension(value: SpecValue, what: str, inst: Instruction) -> int:
    if non_negative_int(value, f"{what} dimension", inst) == 0:
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
    """One per constant decorated with SpecId, sorted by (id, name), declaration order
    among equals.  Constants sharing an id are all listed: ``local_size_x_id = 0`` beside
    ``constant_id = 0`` gives an unnamed one (the workgroup size) and the named one."""
    found: list[SpecConstant] = []
    for inst in index.module.instructions:
        if inst.opcode not in (sp.OP_SPEC_CONSTANT, sp.OP_SPEC_CONSTANT_TRUE,
                               sp.OP_SPEC_CONSTANT_FALSE):
            continue
        spec = index.decoration(inst.result, sp.DECORATION_SPEC_ID)
        if not spec:
            continue
        value, _ = constant_value(index, inst.result, inst)
        found.append(SpecConstant(spec[0], index.names.get(inst.result, ""),
                                  scalar_type_name(index, inst.result_type, inst), value))
    return tuple(sorted(found, key=lambda s: (s.id, s.name)))


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
                   a.accessed or b.accessed, a.written or b.written,
                   max(a.min_size, b.min_size), _finest_stride(a.array_stride, b.array_stride))


def _finest_stride(a: int, b: int) -> int:
    """Aliased views of one runtime array with other element types: the finest stride
    (the unit a view's size must be counted in); 0 means no runtime array."""
    return min(a, b) if a and b else a or b


def _info(index: Index, ep: EntryPoint, descs: tuple[Descriptor, ...],
          specs: tuple[SpecConstant, ...], push_size: int) -> ShaderInfo:
    roots = {d.variable: d.type not in ("storage_buffer", "uniform_buffer") for d in descs}
    use = usage(index, ep.function, roots)
    merged: dict[tuple[int, int], Binding] = {}
    for d in descs:
        b = Binding(d.set, d.binding, d.name, d.type, d.count, d.access,
                    d.variable in use.accessed, d.variable in use.written,
                    d.min_size, d.array_stride)
        key = (d.set, d.binding)
        merged[key] = _merge(merged[key], b) if key in merged else b
    local_size, spec_ids = workgroup_size(index, ep)
    return ShaderInfo(entry_point=ep.name, local_size=local_size, local_size_spec_ids=spec_ids,
                      bindings=tuple(merged[k] for k in sorted(merged)),
                      spec_constants=specs, push_constant_size=push_size,
                      shared_memory=workgroup_memory_bytes(index, ep))


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



def shared_memory_bytes(blob: bytes, spec_values: Optional[SpecValues] = None,
                        entry_point: Optional[str] = None) -> int:
    """Workgroup memory the entry point declares once specialised with ``spec_values``
    (spec id -> value; ids left out keep each constant's default).  Pure: the runtime
    checks the result against ``maxComputeSharedMemorySize``."""
    with sp.without_gc():
        index = index_module(sp.parse(blob))
        return workgroup_memory_bytes(index, _select_entry_point(index, entry_point), spec_values)
