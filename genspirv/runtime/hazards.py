"""Hazard tracking: which accesses need a barrier before them. No Vulkan here.

Takes a stream of ``Access`` records (memory object, byte range, read or write,
pipeline stage) in command order and gives, for each one, either ``None`` (no
barrier needed) or a ``Barrier`` describing the stages and access kinds the
barrier must cover. The device turns a ``Barrier`` into one global
``VkMemoryBarrier`` and records it before the access.

Rules (DESIGN.md, "HazardTracker"): the tracker holds the byte ranges read and
written since the last recorded barrier. An access with reads R and writes W
is a hazard iff R overlaps a pending write (RAW), or W overlaps a pending write
(WAW) or a pending read (WAR). Overlap means same memory object and
intersecting ``[offset, offset + size)``. Only a recorded barrier clears the
pending sets: not a flush, a submit or a fence wait, because none of those is
a memory dependency between two commands on the device.

Policies: ``smart`` reports exactly the hazards; ``always`` asks for a barrier
before every access while anything is pending; ``none`` (tests only) never
does, to prove the tests can see a missing barrier.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Optional

POLICIES = ("smart", "always", "none")


@dataclass(frozen=True)
class Range:
    """Bytes ``[offset, offset + size)`` of one memory object (any hashable key)."""

    memory: object
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size

    def overlaps(self, other: "Range") -> bool:
        return (self.memory == other.memory and self.offset < other.end
                and other.offset < self.end)


@dataclass(frozen=True)
class Access:
    """One command's memory use: the ranges it reads and writes, in one stage."""

    stage: str
    reads: tuple[Range, ...] = ()
    writes: tuple[Range, ...] = ()


@dataclass(frozen=True)
class Barrier:
    """What one global memory barrier must cover.

    ``src_*``: everything pending (the barrier clears it all, so all of it must
    be in the first scope). ``dst_stages``: every stage the runtime uses on
    the device plus the new access's own, because an access after the barrier
    finds nothing pending and gets no barrier of its own.
    """

    src_stages: frozenset[str]
    src_writes: frozenset[str]      # stages whose writes must be made available
    dst_stages: frozenset[str]
    dst_reads: frozenset[str]       # stages whose reads must see them
    dst_writes: frozenset[str]
    kinds: frozenset[str]           # subset of {"RAW", "WAW", "WAR"}; empty for policy "always"


def access_of(entry, ranges, stage: str = "compute") -> Access:
    """The access a dispatch makes: binding *i* reads ``ranges[i]`` if bit *i* of
    ``entry.readable_mask`` is set, writes it if bit *i* of ``writable_mask`` is.

    ``entry`` is anything with the manifest's two masks (a manifest entry, a
    ``ShaderInfo``, a loaded kernel); ``ranges`` the bound ranges in binding
    order. The one place the manifest's masks become an ``Access``.
    """
    reads = tuple(r for i, r in enumerate(ranges) if entry.readable_mask >> i & 1)
    writes = tuple(r for i, r in enumerate(ranges) if entry.writable_mask >> i & 1)
    return Access(stage, reads, writes)


DEVICE_STAGES = frozenset({"compute", "transfer"})
_NO_KINDS: frozenset[str] = frozenset()
# hazards() answers with one of these eight, indexed by (raw, waw, war).
_KINDS = {(raw, waw, war): frozenset(k for k, on in (("RAW", raw), ("WAW", waw), ("WAR", war)) if on)
          for raw in (False, True) for waw in (False, True) for war in (False, True)}
_BARRIERS: dict[tuple, Barrier] = {}


class _RangeSet:
    """Disjoint, sorted, merged intervals of one memory object."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, lo: int, hi: int) -> bool:
        # The last interval starting before hi is the only candidate; disjoint
        # and sorted means earlier ones end before it starts.
        i = bisect.bisect_left(self.starts, hi) - 1
        return i >= 0 and self.ends[i] > lo

    def add(self, lo: int, hi: int) -> None:
        # Ends are sorted too (disjoint intervals): [i, j) are the intervals that
        # overlap or touch [lo, hi), replaced by their union.
        starts, ends = self.starts, self.ends
        i = bisect.bisect_left(ends, lo)
        j = bisect.bisect_right(starts, hi)
        if i == j:
            starts.insert(i, lo)
            ends.insert(i, hi)
            return
        starts[i:j] = [min(lo, starts[i])]
        ends[i:j] = [max(hi, ends[j - 1])]

    def __bool__(self) -> bool:
        return bool(self.starts)


class HazardTracker:
    """Pending reads and writes since the last barrier, per memory object."""

    def __init__(self, policy: str = "smart") -> None:
        self.policy = check_policy(policy)
        self._reads: dict[object, _RangeSet] = {}
        self._writes: dict[object, _RangeSet] = {}
        self._read_stages: set[str] = set()
        self._write_stages: set[str] = set()

    # -- queries --------------------------------------------------------------

    @property
    def pending(self) -> bool:
        return bool(self._read_stages or self._write_stages)

    def hazards(self, access: Access) -> frozenset[str]:
        """The hazard kinds ``access`` has against what is pending."""
        raw = waw = war = False
        for r in access.reads:
            if r.size > 0 and _hit(self._writes, r):
                raw = True
                break
        for w in access.writes:
            if w.size <= 0:
                continue
            if not waw and _hit(self._writes, w):
                waw = True
            if not war and _hit(self._reads, w):
                war = True
        return _KINDS[raw, waw, war]

    # -- the one entry point the device uses ----------------------------------

    def access(self, access: Access) -> tuple[Optional[Barrier], bool]:
        """Decide for one access, then record it as pending.

        Returns ``(barrier, skipped)``: ``barrier`` to record before the access
        (the pending sets are then cleared first), or None; ``skipped`` is True
        when something was pending and no barrier was needed — a barrier the
        policy ``always`` would have emitted.
        """
        barrier = None
        skipped = False
        if self._read_stages or self._write_stages:
            if self.policy == "always":
                barrier = self._barrier_for(access, _NO_KINDS)
            elif self.policy == "smart" or access.stage == "host":
                # Host reads of mapped memory are never left unsynchronised,
                # even under "none": that policy exists to test device hazards.
                kinds = self.hazards(access)
                if kinds:
                    barrier = self._barrier_for(access, kinds)
                else:
                    skipped = True
            else:
                skipped = True
        if barrier is not None:
            self.clear()
        self._record(access)
        return barrier, skipped

    def barrier_all(self) -> Optional[Barrier]:
        """A barrier ordering everything pending before everything after, or None."""
        if not self.pending:
            return None
        b = Barrier(src_stages=frozenset(self._read_stages | self._write_stages),
                    src_writes=frozenset(self._write_stages), dst_stages=DEVICE_STAGES,
                    dst_reads=DEVICE_STAGES, dst_writes=DEVICE_STAGES, kinds=frozenset())
        self.clear()
        return b

    def add_pending(self, access: Access) -> None:
        """Record an access ordered by other means (its own barriers) as pending."""
        self._record(access)

    def clear(self) -> None:
        """Forget everything pending: call only when a barrier has been recorded."""
        self._reads.clear()
        self._writes.clear()
        self._read_stages.clear()
        self._write_stages.clear()

    # -- internals ------------------------------------------------------------

    def _barrier_for(self, access: Access, kinds: frozenset[str]) -> Barrier:
        # A barrier is a function of these four small sets: each distinct one is
        # built once, and the device can keep its Vulkan form beside it.
        key = (frozenset(self._read_stages), frozenset(self._write_stages), access.stage, kinds)
        b = _BARRIERS.get(key)
        if b is None:
            dst = DEVICE_STAGES | {access.stage}
            b = _BARRIERS[key] = Barrier(src_stages=key[0] | key[1], src_writes=key[1],
                                         dst_stages=dst, dst_reads=dst, dst_writes=DEVICE_STAGES,
                                         kinds=kinds)
        return b

    def _record(self, access: Access) -> None:
        for r in access.reads:
            if r.size > 0:
                _ranges_of(self._reads, r.memory).add(r.offset, r.offset + r.size)
                self._read_stages.add(access.stage)
        for w in access.writes:
            if w.size > 0:
                _ranges_of(self._writes, w.memory).add(w.offset, w.offset + w.size)
                self._write_stages.add(access.stage)


def _ranges_of(sets: dict[object, _RangeSet], memory) -> _RangeSet:
    s = sets.get(memory)
    if s is None:
        s = sets[memory] = _RangeSet()
    return s


def _hit(sets: dict[object, _RangeSet], r: Range) -> bool:
    s = sets.get(r.memory)
    return s is not None and s.overlaps(r.offset, r.offset + r.size)


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        from ..errors import GenspirvError
        raise GenspirvError(f"unknown barrier policy {policy!r} (known: {', '.join(POLICIES)})")
    return policy
