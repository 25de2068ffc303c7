"""Reflection, the index: a parsed SPIR-V ``Module`` in, an ``Index`` of its ids out.

``index_module(module) -> Index`` makes one pass over the instructions and
sorts what reflection looks up into dicts: names, decorations (decoration
groups applied), entry points, execution modes, functions with their
parameters and bodies, global variables and imported instruction sets.
Malformed function structure raises ``SpirvError`` with the word offset; a
module whose resources reflection cannot see raises ``ReflectError`` naming
the extension (docs/RULES.md#reflection-rules, "Descriptor heaps").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from . import spirv as sp
from ..errors import ReflectError, SpirvError
from .spirv import Instruction, Module

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


# Extensions whose resources are no variables with a Binding: reflection would see none.
_HEAP_EXTENSIONS = {"SPV_EXT_descriptor_heap": "descriptor heaps"}


def _refuse_extension(inst: Instruction) -> None:
    name = inst.string(0)[0]
    if name in _HEAP_EXTENSIONS:
        raise ReflectError(f"the module declares {name} (OpExtension at word {inst.offset}): its "
                           f"{_HEAP_EXTENSIONS[name]} hold resources genspirv cannot reflect, so no "
                           "binding or barrier would be known; compile the shader with descriptor "
                           "set bindings instead")


def _refuse_untyped(inst: Instruction) -> None:
    """An untyped (SPV_KHR_untyped_pointers) variable in a resource's storage class: as a
    descriptor, a push block or shared memory it has no type reflection could read."""
    storage = inst.operands[2] if len(inst.operands) > 2 else None
    if storage in sp.STORAGE_NAMES:
        raise ReflectError(f"the module uses SPV_KHR_untyped_pointers: OpUntypedVariableKHR "
                           f"%{inst.operands[1]} at word {inst.offset} is a {sp.STORAGE_NAMES[storage]} "
                           "variable (a descriptor heap or untyped resource) genspirv cannot "
                           "reflect; declare the resource as a typed variable")


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
        elif op == sp.OP_EXTENSION and inst.operands:
            _refuse_extension(inst)
        elif op == sp.OP_UNTYPED_VARIABLE_KHR:
            _refuse_untyped(inst)
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

