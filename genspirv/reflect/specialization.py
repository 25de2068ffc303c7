"""Reflection, specialisation: an ``Index`` in, spec constants and the workgroup size out.

``spec_constants(index)`` lists every constant decorated with SpecId (type
and default value); ``workgroup_size(index, entry_point)`` gives the
workgroup size from LocalSize, LocalSizeId or the WorkgroupSize built-in,
with the spec id of each dimension a spec constant sets.  Pure; a dimension
of 0 or one that is no constant raises ``ReflectError``.
"""

from __future__ import annotations

from typing import Optional

from . import spirv as sp
from ..errors import ReflectError, SpirvError
from .spirv import Instruction
from .constants import constant_value, non_negative_int, scalar_type_name
from .index import EntryPoint, Index
from .model import SpecConstant, SpecValue


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
