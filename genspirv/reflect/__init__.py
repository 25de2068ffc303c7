"""Reflection: SPIR-V bytes in, a frozen ``ShaderInfo`` out.

``reflect(blob, entry_point=None) -> ShaderInfo`` reads the module with
``genspirv.reflect.spirv`` and derives what the runtime and the manifest need:
bindings (set, binding, type, count, access, accessed, written, min_size,
array_stride), the workgroup size and its spec ids, spec constants, the
push-constant size and members, and the workgroup (shared) memory, with
the expression of each size a spec-sized array changes.
No Vulkan, no subprocess: pure functions over the parsed module.

One module per part, in the order the data flows:

- ``model``: the closed sets (``DescriptorType``, ``BindingAccess``, ``ScalarType``)
  and the frozen records (``ShaderInfo``, ``Binding``, ``SpecConstant``,
  ``PushMember``);
- ``index``: the module's ids sorted into dicts (names, decorations, entry
  points, functions, variables);
- ``spec_sizes``: sizes that depend on spec constants, as expressions, and
  their values at given spec values (``shared_memory_at``, ``specialise``);
- ``constants``: scalar type names, constant values, spec-constant expressions;
- ``layout``: the bytes a type spans in an explicitly laid-out block;
- ``descriptors``: the variables with a Binding decoration, as declared;
- ``usage``: what an entry point's code does with each of them;
- ``specialization``: spec constants and the workgroup size;
- ``push_constants``: the push-constant block's size and members;
- ``workgroup_memory``: the shared memory an entry point declares;
- ``shader_info``: the parts put together (``reflect`` and friends);
- ``verify``: a manifest entry proven against its blob (imported on its own,
  ``genspirv.reflect.verify``).

The rules, and the choices made where SPIR-V leaves one, are written in
docs/RULES.md#reflection-rules.  This package's names are the
public ones; the helpers below are public for tests and tools.
"""

from __future__ import annotations

from .constants import array_length, constant_value, scalar_type_name
from .descriptors import Descriptor, descriptors
from .index import EntryPoint, Function, Index, index_module
from .layout import struct_size, type_size
from .model import (ACCESS_KINDS, DESCRIPTOR_TYPES, PUSH_TYPES, SCALAR_BYTES, SPEC_TYPES, STRUCT,
                    Binding, BindingAccess, BindingUsage, DescriptorType, PushMember, ScalarType,
                    ShaderInfo, SpecConstant, SpecValue)
from .push_constants import push_constant_size, push_constants
from .shader_info import binding_usage, reflect, reflect_module, shared_memory_bytes
from .spec_sizes import (SpecExpr, min_size_at, push_constant_size_at, shared_memory_at,
                         specialise)
from .specialization import spec_constants, workgroup_size
from .usage import Usage, reachable_functions, usage

__all__ = [
    "ACCESS_KINDS", "DESCRIPTOR_TYPES", "PUSH_TYPES", "SCALAR_BYTES", "SPEC_TYPES", "STRUCT",
    "Binding", "BindingAccess", "BindingUsage", "Descriptor", "DescriptorType", "EntryPoint",
    "Function", "Index", "PushMember", "ScalarType", "ShaderInfo", "SpecConstant", "SpecExpr", "SpecValue",
    "Usage", "array_length", "binding_usage", "constant_value", "descriptors", "index_module",
    "min_size_at", "push_constant_size", "push_constant_size_at", "push_constants",
    "reachable_functions", "reflect", "reflect_module", "scalar_type_name", "shared_memory_at",
    "shared_memory_bytes", "spec_constants", "specialise", "struct_size", "type_size", "usage",
    "workgroup_size",
]
