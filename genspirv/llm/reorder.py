"""Reorder pass: fewer barriers for a dispatch sequence known in advance.

Takes a sequence of accesses in program order, each with the byte ranges it
reads and writes (objects with ``reads`` / ``writes`` tuples of ranges that have
``memory``, ``offset``, ``size`` — ``genspirv.runtime.hazards.Access`` and
``Range`` fit; for a dispatch they come from the manifest's ``readable_mask`` /
``writable_mask`` and the bound buffer ranges, the same facts the runtime's
hazard tracker uses). Gives a new order: the levels of the dependency DAG, one
after the other.

Node j depends on an earlier node i when j reads what i writes (RAW), writes
what i writes (WAW) or writes what i reads (WAR). Its level is one more than the
highest level it depends on (0 with no dependency). Nodes of one level are
pairwise independent, so the tracker finds no hazard among them and they share
one barrier; every dependent pair keeps its order, so results are unchanged.
ASAP levels are also the fewest possible: a chain of L dependent nodes needs
L - 1 barriers in any order, and the levelled order needs at most that many.

Pure: no Vulkan, no device; the demo and the tests drive it.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class RangeLike(Protocol):
    memory: object
    offset: int
    size: int


class AccessLike(Protocol):
    reads: Sequence[RangeLike]
    writes: Sequence[RangeLike]


def _overlap(a: RangeLike, b: RangeLike) -> bool:
    return (a.size > 0 and b.size > 0 and a.memory == b.memory
            and a.offset < b.offset + b.size and b.offset < a.offset + a.size)


def _any_overlap(xs: Sequence[RangeLike], ys: Sequence[RangeLike]) -> bool:
    return any(_overlap(x, y) for x in xs for y in ys)


def conflicts(earlier: AccessLike, later: AccessLike) -> bool:
    """Must ``later`` stay after ``earlier``? (RAW, WAW or WAR between them.)"""
    return (_any_overlap(later.reads, earlier.writes)
            or _any_overlap(later.writes, earlier.writes)
            or _any_overlap(later.writes, earlier.reads))


def _index_by_memory(nodes: Sequence[AccessLike]):
    """For each node: the earlier nodes touching any of its memory objects."""
    by_memory: dict[object, list[int]] = {}
    for j, node in enumerate(nodes):
        candidates: set[int] = set()
        for r in (*node.reads, *node.writes):
            candidates.update(by_memory.get(r.memory, ()))
        yield j, node, candidates
        for r in (*node.reads, *node.writes):
            lst = by_memory.setdefault(r.memory, [])
            if not lst or lst[-1] != j:
                lst.append(j)


def dependencies(nodes: Sequence[AccessLike]) -> list[frozenset[int]]:
    """For each node, the earlier nodes it conflicts with (its DAG predecessors)."""
    return [frozenset(i for i in candidates if conflicts(nodes[i], node))
            for _, node, candidates in _index_by_memory(nodes)]


def levels(nodes: Sequence[AccessLike]) -> list[list[int]]:
    """Node indices grouped by ASAP level, program order kept within a level."""
    level: list[int] = []
    for _, node, candidates in _index_by_memory(nodes):
        # Only the highest conflicting predecessor matters: try them from the top
        # and stop at the first conflict (usually the producer just before).
        lv = 0
        for i in sorted(candidates, key=level.__getitem__, reverse=True):
            if conflicts(nodes[i], node):
                lv = level[i] + 1
                break
        level.append(lv)
    grouped: list[list[int]] = [[] for _ in range(max(level, default=-1) + 1)]
    for j, lv in enumerate(level):
        grouped[lv].append(j)
    return grouped


def reorder(nodes: Sequence[AccessLike]) -> list[int]:
    """A permutation of ``range(len(nodes))``: the levels, concatenated."""
    return [j for group in levels(nodes) for j in group]


def count_barriers(nodes: Sequence[AccessLike], order: Sequence[int] | None = None) -> int:
    """Barriers the ``smart`` policy records for ``nodes`` issued in ``order``.

    A model of the runtime's tracker (a barrier clears everything pending; one is
    needed before a node that conflicts with anything pending), used to state the
    expected figure from the structure alone. Nothing is pending at the start.
    """
    order = range(len(nodes)) if order is None else order
    barriers = 0
    pending: list[AccessLike] = []
    for j in order:
        if any(conflicts(p, nodes[j]) for p in pending):
            barriers += 1
            pending.clear()
        pending.append(nodes[j])
    return barriers
