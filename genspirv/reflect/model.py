"""Reflection's results: the closed sets and frozen records reflection gives.

Takes nothing; gives the enums of the manifest's closed sets
(``DescriptorType``, ``BindingAccess``, ``ScalarType``) and the records
``ShaderInfo`` is made of: ``Binding``, ``SpecConstant``, ``PushMember``.
No parsing here: the manifest reads these back from JSON without a blob.

An enum member *is* its manifest spelling: it compares, hashes, prints and
serialises as that string, so ``binding.type == "storage_buffer"`` and
``json.dumps`` keep working; constructing a record from a spelling gives the
member, and an unknown spelling is a ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Mapping, Optional, Union


class _Spelling(str, Enum):
    """A closed set of manifest spellings; each member behaves as its string."""

    __str__ = str.__str__
    __format__ = str.__format__
    __repr__ = str.__repr__
    __hash__ = str.__hash__


class DescriptorType(_Spelling):
    STORAGE_BUFFER = "storage_buffer"
    UNIFORM_BUFFER = "uniform_buffer"
    STORAGE_IMAGE = "storage_image"
    SAMPLED_IMAGE = "sampled_image"
    COMBINED_IMAGE_SAMPLER = "combined_image_sampler"
    SAMPLER = "sampler"
    UNIFORM_TEXEL_BUFFER = "uniform_texel_buffer"
    STORAGE_TEXEL_BUFFER = "storage_texel_buffer"
    ACCELERATION_STRUCTURE = "acceleration_structure"


class BindingAccess(_Spelling):
    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"


class ScalarType(_Spelling):
    BOOL = "bool"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    UINT32 = "uint32"
    INT64 = "int64"
    UINT64 = "uint64"
    FLOAT16 = "float16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"


# The spellings, in declaration order (the manifest schema lists them so).
DESCRIPTOR_TYPES = tuple(t.value for t in DescriptorType)
ACCESS_KINDS = tuple(a.value for a in BindingAccess)
SPEC_TYPES = tuple(s.value for s in ScalarType)

# Bytes of one scalar in a block; a bool is a 32-bit VkBool32 (0 or 1).
SCALAR_BYTES = {
    ScalarType.BOOL: 4, ScalarType.INT8: 1, ScalarType.UINT8: 1, ScalarType.INT16: 2,
    ScalarType.UINT16: 2, ScalarType.INT32: 4, ScalarType.UINT32: 4, ScalarType.INT64: 8,
    ScalarType.UINT64: 8, ScalarType.FLOAT16: 2, ScalarType.FLOAT32: 4, ScalarType.FLOAT64: 8,
}

# A push-constant member is a scalar type (with its vector/matrix/array shape) or a struct.
STRUCT = "struct"
PUSH_TYPES = SPEC_TYPES + (STRUCT,)

SpecValue = Union[bool, int, float]
SpecValues = Mapping[int, SpecValue]      # spec id -> value, for specialised sizes
# A size that depends on spec values: an int, or a nested tuple (genspirv/reflect/spec_sizes.py).
SpecExpr = Union[int, tuple]


def _normalise(record, **kinds) -> None:
    """Store each named field of a frozen record as its enum member."""
    for field_name, kind in kinds.items():
        object.__setattr__(record, field_name, kind(getattr(record, field_name)))


@dataclass(frozen=True)
class Binding:
    set: int
    binding: int
    name: str
    type: DescriptorType
    count: int              # array length; 1 for a non-array, 0 for a runtime array
    access: BindingAccess   # from the declarations
    accessed: bool          # statically reachable load/store/atomic from the entry point
    written: bool           # statically reachable store/atomic/image write
    min_size: int = 0      # bytes of the block without its trailing runtime array (0: no block)
    array_stride: int = 0  # bytes per element of the block's trailing runtime array (0: none)
    min_size_spec: Optional[SpecExpr] = None   # min_size at any spec values; None: fixed

    def __post_init__(self) -> None:
        _normalise(self, type=DescriptorType, access=BindingAccess)

    @property
    def readable(self) -> bool:
        return self.access in (BindingAccess.READ, BindingAccess.READ_WRITE)

    @property
    def writable(self) -> bool:
        return self.access in (BindingAccess.WRITE, BindingAccess.READ_WRITE)


@dataclass(frozen=True)
class SpecConstant:
    id: int
    name: str
    type: ScalarType
    default: SpecValue

    def __post_init__(self) -> None:
        _normalise(self, type=ScalarType)


@dataclass(frozen=True)
class PushMember:
    """One member of the push-constant block (or of a struct inside it).

    A value is ``array`` (outermost first) of ``columns`` columns of ``vector``
    components of ``type``; a struct member (``type`` "struct") holds
    ``members`` instead, their offsets relative to the struct.  docs/GUIDE.md
    ("The manifest") defines each field.
    """
    name: str                  # "" when the module names no member
    offset: int                # bytes from the start of the enclosing block or struct
    size: int                  # bytes the member spans, by its type and strides
    type: str                  # a ScalarType spelling, or STRUCT
    vector: int = 1            # components (rows of a matrix); 1 for a scalar
    columns: int = 1           # matrix columns; 1 for a non-matrix
    array: tuple[int, ...] = ()    # lengths, outermost first; () for a non-array
    array_stride: int = 0      # bytes between elements of the outermost dimension
    matrix_stride: int = 0     # bytes between columns (rows when row_major)
    row_major: bool = False    # a matrix laid out row by row
    members: tuple["PushMember", ...] = ()    # a struct's members, in offset order
    length_spec: Optional[SpecExpr] = None   # the outermost length at any spec values; None: fixed

    def __post_init__(self) -> None:
        if self.type != STRUCT:
            _normalise(self, type=ScalarType)


@dataclass(frozen=True)
class ShaderInfo:
    entry_point: str
    local_size: tuple[int, int, int]
    local_size_spec_ids: tuple[Optional[int], Optional[int], Optional[int]]
    bindings: tuple[Binding, ...]            # sorted by (set, binding)
    spec_constants: tuple[SpecConstant, ...]  # sorted by (id, name); several may share an id
    push_constant_size: int
    shared_memory: int = 0    # bytes of Workgroup memory at the spec constants' defaults
    push_constants: tuple[PushMember, ...] = ()   # the entry point's block, in offset order
    # The two sizes at any spec values (genspirv/reflect/spec_sizes.py); None: fixed.
    shared_memory_spec: Optional[SpecExpr] = None
    push_constant_size_spec: Optional[SpecExpr] = None
    # The module's OpCapability and OpExtension names, sorted: what a device must enable.
    capabilities: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()

    @property
    def binding_count(self) -> int:
        return len(self.bindings)

    @property
    def writable_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.bindings) if b.writable)

    @property
    def readable_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.bindings) if b.readable)

    @property
    def set_count(self) -> int:
        """Descriptor sets a pipeline layout needs: 0 .. the highest set used (gaps get empty ones)."""
        return max((b.set for b in self.bindings), default=-1) + 1

    def descriptors(self, set_number: Optional[int] = None) -> dict[DescriptorType, int]:
        """Descriptors per type, in one set or (``None``) all of them; a runtime array counts 1."""
        out: dict[DescriptorType, int] = {}
        for b in self.bindings:
            if set_number is None or b.set == set_number:
                out[b.type] = out.get(b.type, 0) + max(b.count, 1)
        return out


@dataclass(frozen=True)
class BindingUsage:
    accessed: bool
    read: bool       # contents loaded, sampled, fetched, copied from or atomically updated
    written: bool
