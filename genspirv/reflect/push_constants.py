"""Reflection, push constants: an ``Index`` in, the push-constant block's size out.

``push_constant_size(index)`` is the bytes of the largest PushConstant block
of the module, from its members' offsets and their types' strides and sizes.
"""

from __future__ import annotations

from .. import spirv as sp
from ..errors import SpirvError
from .index import Index
from .layout import type_size


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
