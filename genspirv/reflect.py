"""Reflection: SPIR-V bytes in, a frozen ``ShaderInfo`` out.

``reflect(blob, entry_point=None) -> ShaderInfo`` reads the module with
``genspirv.spirv`` and derives what the runtime and the manifest need:
bindings (set, binding, type, count, access, accessed, written), the
workgroup size and its spec ids, spec constants, the push-constant size.
No Vulkan, no subprocess: pure functions over the parsed module.

The rules are the ones in DESIGN.md ("Reflection rules").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

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


def reflect(blob: bytes, entry_point: Optional[str] = None) -> ShaderInfo:
    """Reflect one entry point of a SPIR-V module (the first compute one if None)."""
    raise NotImplementedError("reflection engine not written yet")
