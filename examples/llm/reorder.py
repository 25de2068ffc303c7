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

``ScheduleCache`` keeps the order of a step shape once computed: a decode
issues the same kernels over the same buffers at every token (only positions
inside the KV cache and the token slots move), so the pass runs once per shape,
not once per token.

Pure: no Vulkan, no device (``genspirv.runtime.hazards`` imports neither).
"""

from __future__ import annotations

from typing import Callable, Hashable, Protocol, Sequence

from genspirv.runtime.hazards import Access, HazardTracker


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


class ScheduleCache:
    """Orders by step shape: ``order(shape, nodes)`` runs ``reorder`` the first
    time a shape is met and returns the stored order after that.

    ``shape`` must fix the dependency DAG: two sequences of one shape must
    conflict pair for pair alike (the caller's key; the decode driver's is the
    kernel and buffer of every argument, with views that keep their overlaps
    from one position to the next). ``nodes`` is called only on a miss.
    """

    def __init__(self) -> None:
        self._orders: dict[Hashable, tuple[int, ...]] = {}
        self.misses = 0

    def order(self, shape: Hashable, nodes: Callable[[], Sequence[AccessLike]]) -> tuple[int, ...]:
        found = self._orders.get(shape)
        if found is None:
            found = self._orders[shape] = tuple(reorder(nodes()))
            self.misses += 1
        return found
