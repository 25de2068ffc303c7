"""Reflection, descriptors: an ``Index`` in, the module's descriptor variables out.

``descriptors(index)`` gives one ``Descriptor`` per global variable with a
Binding decoration, in declaration order: its set and binding, name,
descriptor type (``DescriptorType``, from the storage class and the type
under any descriptor arrays), array count (0 for a runtime array), declared
access (``BindingAccess``: NonWritable / NonReadable on the variable or on every
member of its block) and, for a buffer block, ``min_size`` and
``array_stride`` of its trailing runtime array, and ``min_size_spec``, the
expression of min_size where a spec-sized array changes it (spec_sizes.py).  Module-wide: which entry
point uses which is ``usage``'s business.  Pure; what has no descriptor kind
raises ``ReflectError``, malformed decorations ``SpirvError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import spirv as sp
from ..errors import ReflectError, SpirvError
from .spirv import Instruction
from .constants import array_length
from .index import MAX_TYPE_DEPTH, Index
from .layout import member_count, struct_size
from .model import BindingAccess, DescriptorType, SpecExpr
from .spec_sizes import SYMBOLIC


# The kinds a shader may write through; the others are read-only by nature.
_STORAGE_KINDS = (DescriptorType.STORAGE_BUFFER, DescriptorType.STORAGE_IMAGE,
                  DescriptorType.STORAGE_TEXEL_BUFFER)


@dataclass(frozen=True)
class Descriptor:
    """A global variable with a Binding decoration, as declared."""
    variable: int          # id of the OpVariable
    set: int
    binding: int
    name: str
    type: DescriptorType
    count: int
    access: BindingAccess
    min_size: int = 0
    array_stride: int = 0
    min_size_spec: Optional[SpecExpr] = None    # min_size at any spec values; None: fixed


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


def _declared_access(index: Index, var: int, block: Optional[Instruction]) -> BindingAccess:
    def everywhere(decoration: int) -> bool:
        if index.decoration(var, decoration) is not None:
            return True
        if block is None or member_count(block) == 0:
            return False
        return all(index.member_decoration(block.result, m, decoration) is not None
                   for m in range(member_count(block)))

    if everywhere(sp.DECORATION_NON_WRITABLE):
        return BindingAccess.READ
    if everywhere(sp.DECORATION_NON_READABLE):
        return BindingAccess.WRITE
    return BindingAccess.READ_WRITE


def describe_variable(index: Index, var: Instruction, has_spec: bool = True) -> Descriptor:
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
            kind = DescriptorType.STORAGE_BUFFER
        elif index.decoration(element.result, sp.DECORATION_BLOCK) is not None:
            kind = DescriptorType.UNIFORM_BUFFER
        else:
            raise ReflectError(f"{where}: Uniform struct with neither Block nor BufferBlock")
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_IMAGE:
        dim, sampled = element.operand(2), element.operand(6)
        if dim == sp.IMAGE_DIM_SUBPASS_DATA:
            raise ReflectError(f"{where}: input attachments have no compute descriptor kind")
        if dim == sp.IMAGE_DIM_BUFFER:
            kind = DescriptorType.STORAGE_TEXEL_BUFFER if sampled == 2 else DescriptorType.UNIFORM_TEXEL_BUFFER
        else:
            kind = DescriptorType.STORAGE_IMAGE if sampled == 2 else DescriptorType.SAMPLED_IMAGE
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_SAMPLED_IMAGE:
        image = index.define(element.operand(1), element)
        # GLSL's samplerBuffer: Vulkan binds a sampled buffer-dim image as a texel buffer.
        is_buffer = image.opcode == sp.OP_TYPE_IMAGE and image.operand(2) == sp.IMAGE_DIM_BUFFER
        kind = DescriptorType.UNIFORM_TEXEL_BUFFER if is_buffer else DescriptorType.COMBINED_IMAGE_SAMPLER
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_SAMPLER:
        kind = DescriptorType.SAMPLER
    elif storage == sp.STORAGE_UNIFORM_CONSTANT and op == sp.OP_TYPE_ACCELERATION_STRUCTURE_KHR:
        kind = DescriptorType.ACCELERATION_STRUCTURE
    else:
        raise ReflectError(f"{where}: storage class {storage} with element opcode {op} "
                           "is no descriptor kind genspirv knows")

    if kind in _STORAGE_KINDS:
        access = _declared_access(index, var.result, block)
    else:
        access = BindingAccess.READ
    name = index.names.get(var.result, "")
    if not name:
        name = index.names.get(element.result, "")
    min_size, array_stride = _block_sizes(index, block, where) if block is not None else (0, 0)
    spec = struct_size(index, block, values=SYMBOLIC) if block is not None and has_spec else 0
    return Descriptor(var.result, dset[0] if dset else 0, binding[0], name, kind, count, access,
                      min_size, array_stride, spec if type(spec) is tuple else None)


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
    has_spec = has_spec_constants(index)
    return tuple(describe_variable(index, v, has_spec) for v in index.variables
                 if index.decoration(v.result, sp.DECORATION_BINDING) is not None)


def has_spec_constants(index: Index) -> bool:
    """Whether any id carries a SpecId: without one no size can depend on spec values."""
    return any(sp.DECORATION_SPEC_ID in d for d in index.decorations.values())


