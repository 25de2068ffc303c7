"""Reorder pass: fewer barriers for a dispatch sequence known in advance.

Takes a sequence of accesses in program order (``genspirv.runtime.hazards.Access``
or anything with ``reads`` / ``writes`` tuples of ranges that have ``memory``,
``offset``, ``size``; for a dispatch they come from ``access_of(entry, ranges)``,
the same facts the device's tracker sees). Gives a new order: the levels of the
dependency DAG, one after the other.

Whether a later access must stay after an earlier one is the runtime's own
``HazardTracker.hazards`` (RAW, WAW or WAR on overlapping bytes), not a copy of
its rules. Node j's level is one more than the highest level of a node it
conflicts with (0 with none). Nodes of one level are pairwise independent, so
the tracker finds no hazard among them and they share one barrier; every
dependent pair keeps its order, so results are unchanged. ASAP levels are also
the fewest possible: a chain of L dependent nodes needs L - 1 barriers in any
order, and the levelled order needs at most that many.

Pure: no Vulkan, no device (``genspirv.runtime.hazards`` imports neither).
"""

from __future__ import annotations

from typing import Protocol, Sequence

from ..runtime.hazards import Access, HazardTracker


class AccessLike(Protocol):
    reads: Sequence
    writes: Sequence


def _as_access(node: AccessLike) -> Access:
    if isinstance(node, Access):
        return node
    return Access("compute", tuple(node.reads), tuple(node.writes))


def _tracker_of(nodes: Sequence[Access]) -> HazardTracker:
    """A tracker holding ``nodes`` as pending (no barrier among them is asked for)."""
    t = HazardTracker("smart")
    for n in nodes:
        t.add_pending(n)
    return t


def dependencies(nodes: Sequence[AccessLike]) -> list[frozenset[int]]:
    """For each node, the earlier nodes it conflicts with (its DAG predecessors)."""
    accesses = [_as_access(n) for n in nodes]
    alone = [_tracker_of([a]) for a in accesses]
    return [frozenset(i for i in range(j) if alone[i].hazards(a)) for j, a in enumerate(accesses)]


def levels(nodes: Sequence[AccessLike]) -> list[list[int]]:
    """Node indices grouped by ASAP level, program order kept within a level.

    One tracker per level holds that level's nodes as pending; a node's level is
    one above the highest level whose tracker finds a hazard with it.
    """
    grouped: list[list[int]] = []
    trackers: list[HazardTracker] = []
    for j, node in enumerate(nodes):
        access = _as_access(node)
        lv = 0
        for level in range(len(trackers) - 1, -1, -1):
            if trackers[level].hazards(access):
                lv = level + 1
                break
        if lv == len(trackers):
            trackers.append(HazardTracker("smart"))
            grouped.append([])
        trackers[lv].add_pending(access)
        grouped[lv].append(j)
    return grouped


def reorder(nodes: Sequence[AccessLike]) -> list[int]:
    """A permutation of ``range(len(nodes))``: the levels, concatenated."""
    return [j for group in levels(nodes) for j in group]


def count_barriers(nodes: Sequence[AccessLike], order: Sequence[int] | None = None) -> int:
    """Barriers the ``smart`` policy records for ``nodes`` issued in ``order``:
    the runtime's tracker, fed the accesses, counted. Nothing is pending at the start."""
    order = range(len(nodes)) if order is None else order
    tracker = HazardTracker("smart")
    return sum(tracker.access(_as_access(nodes[j]))[0] is not None for j in order)
