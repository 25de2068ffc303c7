"""Reflection, usage: an ``Index``, an entry point and root variables in; their static usage out.

``usage(index, entry_function, roots) -> Usage`` follows pointers and
opaque handles from each root variable through access chains, copies, phis,
selects and call arguments over the functions reachable from the entry
point, and says which roots are accessed, read and written.  Linear in the
module; cyclic call graphs are safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import spirv as sp
from ..errors import SpirvError
from .spirv import Instruction
from .index import Function, Index

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

