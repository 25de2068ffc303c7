"""Reflection, workgroup memory: an ``Index`` and an entry point in, shared-memory bytes out.

``workgroup_memory_bytes(index, entry_point, values)`` sums the sizes of the
``Workgroup`` storage-class variables the entry point can use, with
spec-constant-sized arrays taken from ``values`` (spec id -> value) where
given, else from the constants' defaults (OpSpecConstantOp evaluated); with
``SYMBOLIC`` values it is the expression the manifest records as
``shared_memory_spec``, which ``spec_sizes.shared_memory_at`` evaluates for the
values a kernel is specialised with.

Sizing follows the Khronos validation layers: types without explicit layout
are packed tightly (a bool counts 4 bytes, a vec3 12); with
WorkgroupMemoryExplicitLayoutKHR the laid-out size counts, and variables
decorated ``Aliased`` overlap, so they count as the largest of them.  A
driver may pad further; this is the figure ``maxComputeSharedMemorySize``
is checked against.  From SPIR-V 1.4 the entry point's interface lists the
variables it uses; before that every Workgroup variable of the module counts.
"""

from __future__ import annotations

from typing import Optional

from . import spirv as sp
from ..errors import SpirvError
from .index import EntryPoint, Index
from .layout import type_size
from .model import SpecExpr, SpecValues
from .spec_sizes import add, maximum


def workgroup_memory_bytes(index: Index, ep: EntryPoint,
                           values: Optional[SpecValues] = None) -> SpecExpr:
    """Bytes of Workgroup memory ``ep`` declares, specialised with ``values`` (with
    ``SYMBOLIC`` values: the expression over spec ids, an int when none matters)."""
    interface = set(ep.interface) if index.module.version >= (1, 4) else None
    separate: SpecExpr = 0
    aliased: SpecExpr = 0
    for var in index.variables:
        if var.operand(2) != sp.STORAGE_WORKGROUP:
            continue
        if interface is not None and var.result not in interface:
            continue
        pointer = index.define(var.result_type, var)
        if pointer.opcode != sp.OP_TYPE_POINTER:
            raise SpirvError(f"workgroup variable %{var.result} has a non-pointer type",
                             var.offset)
        size = type_size(index, pointer.operand(2), pointer, values=values)
        if index.decoration(var.result, sp.DECORATION_ALIASED) is not None:
            aliased = maximum(aliased, size)
        else:
            separate = add(separate, size)
    return add(separate, aliased)
